"""The remote layer against a real sshd on loopback: host keys verified, timeouts, NODELAY, sudo -n."""

import os
import shutil
import socket
import time

import pytest

from gb10check.cluster import Link, Node, Ssh
from gb10check.remote import CommandTimeout, NodeUnreachable, RemoteError, RemoteNode

from .local_sshd import LocalSshd, free_port, keygen


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


def test_unknown_host_key_is_refused(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    node = make_node(sshd, known_hosts=str(empty))
    with pytest.raises(NodeUnreachable, match=rf"^node pgx-a unreachable at 127\.0\.0\.1: host key unknown: \[127\.0\.0\.1\]:{sshd.port} "
                                              rf"is not in {empty}; check its fingerprint"):
        node.output("true")


def test_changed_host_key_is_refused(sshd, tmp_path):
    other = keygen(tmp_path / "other")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{sshd.port} {' '.join(other.split()[:2])}\n")
    node = make_node(sshd, known_hosts=str(kh))
    with pytest.raises(NodeUnreachable, match=r"host key CHANGED: expected ssh-ed25519 SHA256:\S+, got ssh-ed25519 SHA256:\S+; "
                                              r"if the node was reinstalled"):
        node.output("true")


def test_missing_known_hosts_is_refused(sshd, tmp_path):
    node = make_node(sshd, known_hosts=str(tmp_path / "absent"))
    with pytest.raises(NodeUnreachable, match=r"known_hosts file .*absent does not exist; host keys cannot be verified"):
        node.output("true")


def test_unreachable_node_fails_fast_and_stays_failed(sshd):
    node = make_node(sshd, port=free_port())
    start = time.monotonic()
    with pytest.raises(NodeUnreachable, match=r"^node pgx-a unreachable at 127\.0\.0\.1: Connection refused$"):
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
