"""The remote layer against a real sshd on loopback: host keys verified, timeouts, NODELAY, sudo -n."""

import os
import shutil
import socket
import time

import pytest

from gb10check.cluster import Link, Node, Ssh
from gb10check.remote import CommandTimeout, NodeUnreachable, RemoteError, RemoteNode, SshRefused

from .local_sshd import LocalSshd, free_port


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    if not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")) or os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run as root with openssh-server installed (.ci/run installs it)")
        pytest.skip("needs root and OpenSSH's sshd (apt-get install openssh-server) to start a loopback sshd")
    server = LocalSshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


def make_node(sshd, address="127.0.0.1", port=None, name="pgx-a", **ssh_overrides) -> RemoteNode:
    ssh = Ssh(user=sshd.user, port=port or sshd.port, identity_file=str(sshd.identity), known_hosts=str(sshd.known_hosts),
              connect_timeout_s=3, command_timeout_s=10).model_copy(update=ssh_overrides)
    spec = Node(name=name, address=address, rank=0, links=[Link(netdev="enp1s0f0np0", address="192.0.2.1/24")])
    return RemoteNode(spec, ssh)


def test_runs_a_command(sshd):
    node = make_node(sshd)
    result = node.run("echo out; echo err >&2; exit 3")
    assert (result.rc, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert node.output("hostname").strip() == socket.gethostname()


def test_testinfra_modules_work(sshd):
    node = make_node(sshd)
    assert node.host.file("/etc/hostname").exists
    assert node.host.user().name == sshd.user


def test_nagle_is_off(sshd):
    node = make_node(sshd)
    sock = node.host.backend.client.get_transport().sock
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_one_connection_per_node(sshd):
    node = make_node(sshd)
    node.output("true")
    transport = node.host.backend.client.get_transport()
    node.output("true")
    assert node.host.backend.client.get_transport() is transport


# Unknown, changed or missing host keys, and every other way a login fails: test_ssh_failures.py.


def test_unreachable_node_fails_fast_and_stays_failed(sshd):
    node = make_node(sshd, port=free_port())
    start = time.monotonic()
    with pytest.raises(SshRefused, match=r"^node pgx-a unreachable at 127\.0\.0\.1: Connection refused$"):
        node.output("true")
    with pytest.raises(NodeUnreachable):  # the second test of this node does not wait again
        node.output("true")
    assert time.monotonic() - start < 3  # wall-clock is what "fails fast" means: refused at once, never waited for


def test_command_timeout(sshd):
    node = make_node(sshd)
    start = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"^pgx-a: command did not finish within 0\.5 s: sleep 5"):
        node.run("sleep 5", timeout=0.5)
    assert time.monotonic() - start < 2  # wall-clock is what a command timeout bounds: 0.5 s, not the 5 s sleep
    assert node.output("echo still usable") == "still usable\n"


def test_failed_command_names_node_and_status(sshd):
    node = make_node(sshd)
    with pytest.raises(RemoteError, match=r"^pgx-a: `ls /nonexistent` exited 2: .*No such file or directory"):
        node.output("ls /nonexistent")


def test_sudo_never_prompts(sshd, monkeypatch):
    node = make_node(sshd)
    if not shutil.which("sudo"):
        pytest.skip("sudo is not installed on this machine")
    monkeypatch.setattr(RemoteNode, "is_root", False)  # the path of a user who is not root (this bed logs in as root)
    result = node.run("id -u", sudo=True)
    assert result.command.startswith(b"sudo -n ")
    assert result.stdout.strip() == "0"


def test_a_root_login_runs_root_commands_without_sudo(sshd):
    """Root needs no sudo: a node reached as root, with sudo not installed, still runs its root commands."""
    node = make_node(sshd)
    if sshd.user != "root":
        pytest.skip("the loopback sshd logs in as the user running the self-tests, who is not root")
    assert node.is_root
    result = node.run("id -u; command -v sudo >/dev/null || echo no-sudo-needed", sudo=True)
    assert result.command.startswith(b"/bin/sh -c ") and b"sudo" not in result.command.split(b"'")[0]
    assert result.stdout.splitlines()[0] == "0"


def test_arguments_are_quoted(sshd):
    node = make_node(sshd)
    assert node.output("printf %%s %s", "a b; echo injected") == "a b; echo injected"


def test_a_connection_lost_mid_run_is_node_unreachable(sshd):
    """The node answered, then its session died (a reboot, an OOM kill): node-unreachable, and that node fails fast after."""
    import re
    import signal
    from pathlib import Path

    from gb10check.plugin import _remote_finding
    from gb10check.remedies import Code

    node = make_node(sshd)
    assert node.output("echo up") == "up\n"
    def parent(pid: Path) -> str:
        try:
            return re.search(r"\nPPid:\t(\d+)\n", (pid / "status").read_text())[1]
        except OSError:  # gone meanwhile
            return ""

    sessions = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and parent(p) == str(sshd.proc.pid)]
    assert sessions, "no sshd session serves this connection"
    for pid in sessions:  # the sessions of this test's server, which this module started
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(NodeUnreachable) as caught:
        for _ in range(3):  # the first command may still find the transport open
            node.output("true")
    exc = caught.value
    assert type(exc) is NodeUnreachable and exc.code == Code.NODE_UNREACHABLE
    assert str(exc).startswith("node pgx-a unreachable at 127.0.0.1: "), str(exc)
    assert exc.fix.startswith(f"the SSH connection to pgx-a (127.0.0.1:{sshd.port}) broke")  # for the helpers' one line
    text = _remote_finding(exc).text
    assert text.startswith("[node-unreachable] pgx-a: could not check: node pgx-a unreachable at 127.0.0.1: "), text
    assert (f"check by hand: the SSH connection to pgx-a (127.0.0.1:{sshd.port}) broke: check that pgx-a is still up "
            "(it may have rebooted or run out of memory") in text
    with pytest.raises(NodeUnreachable):
        node.output("true")
