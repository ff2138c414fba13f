"""The one way to reach a node: a testinfra host over paramiko with verified host keys, or, for a node with
`connection: local` (the machine the suite runs on), testinfra's local backend under the same rules.

testinfra's own paramiko backend accepts unknown host keys with a warning and has no command
timeout. This backend:
- checks the node's key against the configured known_hosts only (unknown or changed: an error
  that says what to do, never a silent accept);
- tells why a connection failed, once, where it is made (`reach_error`): no route, refused, timed out, name not
  resolved, host key unknown or changed, key refused; each a NodeUnreachable subclass with its own code and fix;
- sets TCP_NODELAY on the transport (paramiko leaves Nagle on: ~44 ms per command, ~2 ms without);
- bounds the connect, the authentication and every command;
- runs sudo non-interactively (`sudo -n`): a password prompt would hang, so it fails instead.
One connection per node for the whole run; testinfra's modules (host.file, host.service ...) work.
A local node runs its commands here through `BoundedLocalBackend`: the same command timeout (the
command's whole process group is killed when it runs over), the same `sudo -n`, the same RemoteNode.
"""

import contextlib
import errno
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
from .remedies import Code
from .remedies import fix as remedy


class RemoteError(Exception):
    """A node could not be reached or a command could not complete; the message says which and why.

    `node` (a RemoteNode) and `command` say where, for the "not checked" report; set where raised."""

    node: "RemoteNode | None" = None
    command: str | None = None

    def at(self, node: "RemoteNode", command: str | None = None) -> "RemoteError":
        self.node, self.command = node, command
        return self


class NodeUnreachable(RemoteError):
    """The node could not be reached or would not let the runner in; `code` says which way (each its own fix), `params`
    fill that fix (address, port, user, known_hosts ...). This class itself: a connection lost mid-run, or a failure of
    the SSH session of no kind below."""

    code = Code.NODE_UNREACHABLE
    reached = False  # whether the node answered (the login kinds): "node N at ADDR: ..." rather than "unreachable at"

    def __init__(self, message: str, **params: Any):
        super().__init__(message)
        self.params = params

    def at(self, node: "RemoteNode", command: str | None = None) -> "NodeUnreachable":
        self.params = {**reach_params(node), **self.params}  # a failure read back from another worker has none of its own
        return super().at(node, command)  # type: ignore[return-value]

    @property
    def fix(self) -> str:
        """Its kind's fix, filled in (for a helper's one-line error; a check's finding carries the same)."""
        return remedy(self.code, **self.params)

    def named(self, node: "RemoteNode") -> "NodeUnreachable":
        """The same failure, its message led by the node's name and address."""
        where = "at" if self.reached else "unreachable at"
        return type(self)(f"node {node.name} {where} {node.spec.address}: {self}", **self.params).at(node)


def reach_params(node: "RemoteNode") -> dict[str, Any]:
    """What the fix of a node that cannot be reached names, from the cluster file: address, port, user, key, known_hosts."""
    spec, ssh = getattr(node, "spec", None), getattr(node, "ssh", None)
    if spec is None or ssh is None:
        return {}
    port = spec.ssh_port or ssh.port
    return {"node": spec.name, "address": spec.address, "port": port, "user": ssh.user, "known_hosts": ssh.known_hosts,
            "kh_name": spec.address if port == 22 else f"[{spec.address}]:{port}", "identity": ssh.identity_file}


class SshNoRoute(NodeUnreachable):
    code = Code.SSH_NO_ROUTE


class SshRefused(NodeUnreachable):
    code = Code.SSH_REFUSED


class SshTimeout(NodeUnreachable):
    code = Code.SSH_TIMEOUT


class SshNameUnresolved(NodeUnreachable):
    code = Code.SSH_NAME_UNRESOLVED


class HostKeyUnknown(NodeUnreachable):
    code, reached = Code.HOST_KEY_UNKNOWN, True


class HostKeyChanged(NodeUnreachable):
    code, reached = Code.HOST_KEY_CHANGED, True


class SshKeyRefused(NodeUnreachable):
    code, reached = Code.SSH_KEY_REFUSED, True


NO_ROUTE = (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EHOSTDOWN)


def reach_error(exc: BaseException, timeout: float, **params: Any) -> NodeUnreachable:
    """What a failed connection attempt (socket, paramiko) means for the user: one kind, one fix. The one place that
    reads socket and paramiko errors; `params` fill the fix (address, port, user, known_hosts, kh_name, identity)."""
    if isinstance(exc, NodeUnreachable):
        return exc
    if isinstance(exc, paramiko.BadHostKeyException):
        return HostKeyChanged(f"host key CHANGED: {params.get('known_hosts')} holds {fingerprint(exc.expected_key)} for "
                              f"{params.get('kh_name')}, the node offers {fingerprint(exc.key)}", **params)
    if isinstance(exc, paramiko.AuthenticationException) or (
            isinstance(exc, paramiko.SSHException) and "No authentication methods available" in str(exc)):
        return SshKeyRefused(f"login as {params.get('user')!r} with {params.get('identity')} refused ({str(exc).rstrip('.')})",
                             **params)
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        codes = {e.errno for e in exc.errors.values()}
        reason = "; ".join(sorted({e.strerror or str(e) for e in exc.errors.values()}))
        return (SshRefused if errno.ECONNREFUSED in codes else SshNoRoute)(reason, **params)
    if isinstance(exc, socket.gaierror):
        return SshNameUnresolved(f"name {params.get('address')!r} not resolved ({exc.strerror or exc})", **params)
    if isinstance(exc, (socket.timeout, TimeoutError)) or getattr(exc, "errno", None) == errno.ETIMEDOUT:
        return SshTimeout(f"no answer within {timeout:g} s (connect timed out)", **params)
    if isinstance(exc, OSError) and exc.errno in NO_ROUTE:
        return SshNoRoute(exc.strerror or str(exc), **params)
    if isinstance(exc, OSError) and exc.errno == errno.ECONNREFUSED:
        return SshRefused(exc.strerror or str(exc), **params)
    if isinstance(exc, OSError):
        return NodeUnreachable(exc.strerror or str(exc) or type(exc).__name__, **params)
    return NodeUnreachable(f"SSH session failed: {str(exc) or type(exc).__name__}", **params)


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

    @property
    def params(self) -> dict[str, Any]:
        """What a failure's fix names: where, as whom, with which key and known_hosts."""
        port = int(self.host.port or 22)
        return {"address": self.host.name, "port": port, "user": self.host.user, "known_hosts": self.known_hosts,
                "kh_name": self._kh_name(port), "identity": self._identity or "the ssh-agent's keys"}

    @property
    def _identity(self) -> str | None:
        return self.ssh_identity_file if self.ssh_identity_file and os.path.exists(self.ssh_identity_file) else None

    @functools.cached_property
    def client(self) -> paramiko.SSHClient:
        if not os.path.exists(self.known_hosts):
            raise HostKeyUnknown(f"known_hosts file {self.known_hosts} does not exist; host keys cannot be verified",
                                 **self.params)
        client = paramiko.SSHClient()
        client.load_host_keys(self.known_hosts)
        client.set_missing_host_key_policy(_Unknown(self.params))
        key = self._identity
        try:
            client.connect(
                hostname=self.host.name, port=int(self.host.port or 22), username=self.host.user, key_filename=key,
                timeout=self.connect_timeout, banner_timeout=self.connect_timeout, auth_timeout=self.connect_timeout,
                channel_timeout=self.connect_timeout, look_for_keys=False, allow_agent=key is None,
            )
        except (NodeUnreachable, paramiko.SSHException, OSError, EOFError) as exc:
            client.close()
            raise reach_error(exc, self.connect_timeout, **self.params) from None
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


class _Unknown(paramiko.MissingHostKeyPolicy):
    """Refuse a host whose key known_hosts does not hold, naming the key it offered (to compare on the node)."""

    def __init__(self, params: dict[str, Any]):
        self.params = params

    def missing_host_key(self, client, hostname, key):
        raise HostKeyUnknown(f"host key unknown: {self.params['kh_name']} is not in {self.params['known_hosts']}; the node "
                             f"offers {fingerprint(key)}", **self.params)


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
                self._error = exc.named(self)
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
        except NodeUnreachable as exc:
            self._error = NodeUnreachable(str(exc), **getattr(backend, "params", {})).named(self)
            raise self._error from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._error = NodeUnreachable(f"connection lost ({exc})", **getattr(backend, "params", {})).named(self)
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
