"""The one way to reach a node: a testinfra host over paramiko with verified host keys, or, for a node with
`connection: local` (the machine the suite runs on), testinfra's local backend under the same rules.

testinfra's own paramiko backend accepts unknown host keys with a warning and has no command
timeout. This backend:
- checks the node's key against the configured known_hosts only (unknown or changed: an error
  that says what to do, never a silent accept);
- sets TCP_NODELAY on the transport (paramiko leaves Nagle on: ~44 ms per command, ~2 ms without);
- bounds the connect, the authentication and every command;
- runs sudo non-interactively (`sudo -n`): a password prompt would hang, so it fails instead.
One connection per node for the whole run; testinfra's modules (host.file, host.service ...) work.
A local node runs its commands here through `BoundedLocalBackend`: the same command timeout (the
command's whole process group is killed when it runs over), the same `sudo -n`, the same RemoteNode.
"""

import contextlib
import functools
import os
import signal
import socket
import subprocess
import time
from typing import Any

import paramiko
import testinfra.host
from testinfra.backend.base import CommandResult
from testinfra.backend.local import LocalBackend
from testinfra.backend.paramiko import ParamikoBackend

from .cluster import Node, Ssh


class RemoteError(Exception):
    """A node could not be reached or a command could not complete; the message says which and why.

    `node` (a RemoteNode) and `command` say where, for the "not checked" report; set where raised."""

    node: "RemoteNode | None" = None
    command: str | None = None

    def at(self, node: "RemoteNode", command: str | None = None) -> "RemoteError":
        self.node, self.command = node, command
        return self


class NodeUnreachable(RemoteError):
    pass


class CommandTimeout(RemoteError):
    pass


class NotRecorded(RemoteError):
    """Judging from a recording (--facts-from): what the check asked for was not recorded, and no node is reached."""


def fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} SHA256:{key.fingerprint.split(':', 1)[-1]}" if hasattr(key, "fingerprint") else key.get_name()


class VerifiedParamikoBackend(ParamikoBackend):
    NAME = "gb10check"

    def __init__(self, hostspec: str, *, known_hosts: str, identity_file: str | None,
                 connect_timeout: float, command_timeout: float, **kwargs: Any):
        super().__init__(hostspec, ssh_identity_file=identity_file, timeout=int(max(1, connect_timeout)), **kwargs)
        self.known_hosts = known_hosts
        self.connect_timeout = connect_timeout
        self.command_timeout = command_timeout

    @property
    def where(self) -> str:
        port = self.host.port or 22
        return f"{self.host.name}:{port}" if int(port) != 22 else self.host.name

    @functools.cached_property
    def client(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        if not os.path.exists(self.known_hosts):
            raise NodeUnreachable(f"known_hosts file {self.known_hosts} does not exist; host keys cannot be verified")
        client.load_host_keys(self.known_hosts)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        port = int(self.host.port or 22)
        key = self.ssh_identity_file if self.ssh_identity_file and os.path.exists(self.ssh_identity_file) else None
        try:
            client.connect(
                hostname=self.host.name, port=port, username=self.host.user, key_filename=key,
                timeout=self.connect_timeout, banner_timeout=self.connect_timeout, auth_timeout=self.connect_timeout,
                channel_timeout=self.connect_timeout, look_for_keys=False, allow_agent=key is None,
            )
        except paramiko.BadHostKeyException as exc:
            raise NodeUnreachable(
                f"host key CHANGED: expected {fingerprint(exc.expected_key)}, got {fingerprint(exc.key)}; if the node was "
                f"reinstalled, remove the old key (ssh-keygen -f {self.known_hosts} -R '{self._kh_name(port)}') and verify "
                "the new one before adding it"
            ) from None
        except paramiko.SSHException as exc:
            if "not found in known_hosts" in str(exc):
                raise NodeUnreachable(
                    f"host key unknown: {self._kh_name(port)} is not in {self.known_hosts}; check its fingerprint on the "
                    f"node (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub) and add it "
                    f"(ssh-keyscan -p {port} {self.host.name} >> {self.known_hosts})"
                ) from None
            raise NodeUnreachable(str(exc) or type(exc).__name__) from None
        except paramiko.ssh_exception.NoValidConnectionsError as exc:
            reason = "; ".join(sorted({e.strerror or str(e) for e in exc.errors.values()}))
            raise NodeUnreachable(reason) from None
        except (OSError, EOFError) as exc:
            reason = "timed out" if isinstance(exc, (socket.timeout, TimeoutError)) else (exc.strerror or str(exc) or type(exc).__name__)
            raise NodeUnreachable(reason) from None
        transport = client.get_transport()
        assert transport is not None
        transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        transport.set_keepalive(15)
        return client

    def _kh_name(self, port: int) -> str:
        return self.host.name if port == 22 else f"[{self.host.name}]:{port}"

    def get_sudo_command(self, command: str, sudo_user: str | None) -> str:
        if sudo_user is None:
            return self.quote("sudo -n /bin/sh -c %s", command)
        return self.quote("sudo -n -u %s /bin/sh -c %s", sudo_user, command)

    def _exec_command(self, command: bytes, timeout: float | None = None) -> tuple[int, bytes, bytes]:
        timeout = timeout or self.command_timeout
        transport = self.client.get_transport()
        if transport is None or not transport.is_active():
            raise NodeUnreachable("connection lost")
        chan = transport.open_session(timeout=self.connect_timeout)
        deadline = time.monotonic() + timeout
        try:
            chan.exec_command(command)
            stdout = _read(chan, chan.recv, deadline)
            stderr = _read(chan, chan.recv_stderr, deadline)
            chan.settimeout(max(0.001, deadline - time.monotonic()))
            if not chan.status_event.wait(max(0.001, deadline - time.monotonic())):
                raise socket.timeout()
            return chan.recv_exit_status(), stdout, stderr
        except socket.timeout:
            raise CommandTimeout(f"command did not finish within {timeout:g} s: {command.decode(errors='replace')[:200]}") from None
        finally:
            chan.close()

    def run(self, command: str, *args: str, timeout: float | None = None, **kwargs: Any) -> CommandResult:
        cmd = self.encode(self.get_command(command, *args))
        rc, stdout, stderr = self._exec_command(cmd, timeout)
        return self.result(rc, cmd, stdout, stderr)


def _read(chan: paramiko.Channel, recv, deadline: float) -> bytes:
    buf = bytearray()
    while True:
        chan.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = recv(65536)
        if not chunk:
            return bytes(buf)
        buf += chunk


class BoundedLocalBackend(LocalBackend):
    """testinfra's local backend with the SSH path's rules: every command bounded, sudo never prompts."""

    NAME = "gb10check-local"

    def __init__(self, *, command_timeout: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.command_timeout = command_timeout

    def get_sudo_command(self, command: str, sudo_user: str | None) -> str:
        return VerifiedParamikoBackend.get_sudo_command(self, command, sudo_user)  # type: ignore[arg-type]

    def run(self, command: str, *args: str, timeout: float | None = None, **kwargs: Any) -> CommandResult:
        timeout = timeout or self.command_timeout
        cmd = self.encode(self.get_command(command, *args))
        # Its own session, so that a command that runs over is killed with everything it started.
        proc = subprocess.Popen(cmd, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise CommandTimeout(f"command did not finish within {timeout:g} s: {cmd.decode(errors='replace')[:200]}") from None
        return self.result(proc.returncode, cmd, stdout, stderr)


def connect(node: Node, ssh: Ssh) -> testinfra.host.Host:
    """A testinfra Host for `node`. The connection opens on first use and is kept (a local node needs none)."""
    if node.connection == "local":
        return testinfra.host.Host(BoundedLocalBackend(command_timeout=ssh.command_timeout_s))
    port = node.ssh_port or ssh.port
    backend = VerifiedParamikoBackend(
        f"{ssh.user}@{node.address}:{port}",
        known_hosts=ssh.known_hosts,
        identity_file=ssh.identity_file,
        connect_timeout=ssh.connect_timeout_s,
        command_timeout=ssh.command_timeout_s,
    )
    return testinfra.host.Host(backend)


class RemoteNode:
    """A node of the cluster and its host; every failure names the node.

    `run` returns testinfra's CommandResult; errors raise RemoteError subclasses whose message
    starts with the node's name, and an unreachable node fails fast after the first attempt.
    """

    def __init__(self, spec: Node, ssh: Ssh):
        self.spec = spec
        self.ssh = ssh
        self._host = connect(spec, ssh)
        self._error: RemoteError | None = None

    name = property(lambda self: self.spec.name)
    rank = property(lambda self: self.spec.rank)
    links = property(lambda self: self.spec.links)

    def __repr__(self) -> str:
        where = "local (this machine)" if self.spec.connection == "local" else self.spec.address
        return f"<node {self.name} rank {self.rank} at {where}>"

    @property
    def host(self) -> testinfra.host.Host:
        if self._error is None and isinstance(self._host.backend, VerifiedParamikoBackend):
            try:
                self._host.backend.client  # noqa: B018 - opens the connection once
            except NodeUnreachable as exc:
                self._error = NodeUnreachable(f"node {self.name} unreachable at {self.spec.address}: {exc}").at(self)
        if self._error is not None:
            raise self._error
        return self._host

    def run(self, command: str, *args: str, timeout: float | None = None, sudo: bool = False) -> CommandResult:
        if getattr(getattr(self, "fleet", None), "replay", None) is not None:  # judging a recording: never reach the node
            raise NotRecorded(f"{self.name}: `{command[:200]}` is not in the recording (a command run live)").at(self, command)
        backend = self.host.backend
        if sudo:  # wrapped here, not with host.sudo(): that flips the backend's state under another thread's command
            command, args = (backend.quote("/bin/sh -c %s", backend.quote(command, *args)) if self.is_root
                             else backend.get_sudo_command(backend.quote(command, *args), None)), ()
        try:
            return backend.run(command, *args, timeout=timeout)
        except CommandTimeout as exc:
            raise CommandTimeout(f"{self.name}: {exc}").at(self, command) from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._error = NodeUnreachable(f"node {self.name} unreachable at {self.spec.address}: connection lost ({exc})").at(self)
            raise self._error from None

    @property
    def is_root(self) -> bool:
        """Whether commands already run as root here (a root login, or the runner itself as root): no sudo then."""
        return os.geteuid() == 0 if self.spec.connection == "local" else self.ssh.user == "root"

    def output(self, command: str, *args: str, timeout: float | None = None, sudo: bool = False) -> str:
        """stdout of a command that must succeed; otherwise RemoteError with its exit status and stderr."""
        result = self.run(command, *args, timeout=timeout, sudo=sudo)
        if result.rc != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise RemoteError(f"{self.name}: `{result.command.decode(errors='replace')}` exited {result.rc}: "
                              f"{detail[-1] if detail else 'no output'}").at(self, command)
        return result.stdout

    def close(self) -> None:
        backend = self._host.backend
        if "client" in backend.__dict__:
            backend.client.close()
