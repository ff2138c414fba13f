"""`connection: local`: a node whose commands run on the machine the suite runs on, through testinfra's local backend,
under the SSH path's rules (every command bounded, `sudo -n`), behind the same RemoteNode; a local-only cluster needs no
known_hosts or key. Needs no root: the suite runs in a subprocess against a one-node cluster whose head is this machine."""

import getpass
import socket
import time
from pathlib import Path

import pytest
import yaml

from gb10check.cluster import ClusterError, Link, Node, Ssh, parse_cluster, runner_problems
from gb10check.remote import BoundedLocalBackend, CommandTimeout, RemoteError, RemoteNode

from .inner_pytest import run_pytest

REPO = Path(__file__).resolve().parent.parent


def local_node(**ssh) -> RemoteNode:
    spec = Node(name="here", address="127.0.0.1", rank=0, connection="local",
                links=[Link(netdev="enp1s0f0np0", address="192.0.2.1/24")])
    return RemoteNode(spec, Ssh(user=getpass.getuser(), **{"command_timeout_s": 10, **ssh}))


def local_cluster(directory: Path, **ssh) -> Path:
    """The example's head alone, as this machine: missing known_hosts and key, and the user running the suite."""
    data = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
    data["nodes"] = [dict(data["nodes"][0], connection="local")]
    data["deploy"]["tensor_parallel_size"] = 1
    data["ssh"].update({"user": getpass.getuser(), "known_hosts": str(directory / "nope" / "known_hosts"),
                        "identity_file": str(directory / "nope" / "id_ed25519"), **ssh})
    path = directory / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_runs_here_with_the_same_interface():
    node = local_node()
    result = node.run("echo out; echo err >&2; exit 3")
    assert (result.rc, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert node.output("hostname").strip() == socket.gethostname()
    assert node.host.file("/etc/hostname").exists  # testinfra's modules work
    assert isinstance(node.host.backend, BoundedLocalBackend)
    assert repr(node) == "<node here rank 0 at local (this machine)>"
    with pytest.raises(RemoteError) as err:
        node.output("cat /nonexistent/gb10check")
    assert err.value.node is node and str(err.value).startswith("here: `cat /nonexistent/gb10check` exited 1: ")
    node.close()


def test_a_command_that_runs_over_is_killed_with_its_children(tmp_path):
    node = local_node(command_timeout_s=1)
    started = time.monotonic()
    with pytest.raises(CommandTimeout) as err:
        node.run(f"sleep 30 & echo $! > {tmp_path}/child; wait")
    assert time.monotonic() - started < 5  # wall-clock is what a command timeout bounds: 1 s, not the 30 s sleep
    assert str(err.value) == f"here: command did not finish within 1 s: sleep 30 & echo $! > {tmp_path}/child; wait"
    assert err.value.node is node and err.value.command.startswith("sleep 30")
    child = (tmp_path / "child").read_text().strip()
    time.sleep(0.2)
    status = Path(f"/proc/{child}/status")
    state = status.read_text().split("State:")[1].split()[0] if status.exists() else "gone"
    assert state in ("gone", "Z"), state  # the background child was killed too (a zombie until its new parent reaps it)


def test_sudo_never_prompts():
    node = local_node()
    assert node.host.backend.get_sudo_command("id -un", None) == "sudo -n /bin/sh -c 'id -un'"
    result = node.run("id -un", sudo=True)
    if result.rc == 0:  # root, or passwordless sudo here: sudo ran as root without asking
        assert result.stdout.strip() == "root"
    else:  # a password would be needed (or no sudo at all): refused at once, not a hang
        assert "password" in result.stderr or "not found" in result.stderr, result.stderr


def test_connection_is_validated_with_a_clear_error(tmp_path):
    data = yaml.safe_load(local_cluster(tmp_path).read_text())
    data["nodes"][0]["connection"] = "telnet"
    with pytest.raises(ClusterError) as err:
        parse_cluster(yaml.safe_dump(data))
    assert str(err.value) == ("cluster.yaml: nodes[0](thinkstationpgx-30).connection: expected 'ssh' (reach the node over SSH) or "
                              "'local' (the machine the suite runs on), got 'telnet'")
    two = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
    for n in two["nodes"]:
        n["connection"] = "local"
    with pytest.raises(ClusterError, match=r"only one node can be the machine the suite runs on \(connection: local\); "
                                           r"got thinkstationpgx-30, thinkstationpgx-32"):
        parse_cluster(yaml.safe_dump(two))
    assert parse_cluster((REPO / "cluster.example.yaml").read_text()).head.connection == "ssh"  # the default


def test_a_local_only_cluster_needs_no_known_hosts_or_key(tmp_path):
    ssh = Ssh(user="me", known_hosts=str(tmp_path / "nope"), identity_file=str(tmp_path / "nokey"))
    assert runner_problems(ssh, over_ssh=False) == []
    assert "known_hosts file" in runner_problems(ssh)[0]  # a cluster with an SSH node still needs them


def test_preflight_runs_on_a_local_head(tmp_path):
    path = local_cluster(tmp_path)
    run = run_pytest(["-p", "no:cacheprovider", "-rA", "tests/preflight/test_identity.py", "-k", "ssh_user", f"--cluster={path}"],
                     timeout=180)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "PASSED tests/preflight/test_identity.py::test_ssh_user[thinkstationpgx-30]" in out
    assert "1 passed" in out.splitlines()[-1], out


def test_a_sudo_command_does_not_turn_another_threads_command_into_sudo(monkeypatch):
    """The facts' gather (sudo batches) and the reachability probes (the user's SSH keys) share a node's connection at
    the same time: sudo is wrapped into the one command, never set on the shared backend (testinfra's host.sudo())."""
    import threading

    monkeypatch.setattr(RemoteNode, "is_root", False)  # the sudo path, whoever runs the self-tests
    node = local_node()
    inside, release = threading.Event(), threading.Event()
    real_run = node.host.backend.run
    seen = {}

    def run(command, *args, **kwargs):
        if "true" in command:  # the sudo command holds the backend while the other thread runs its own
            inside.set()
            release.wait(10)
        seen[command] = node.host.backend.sudo
        return real_run(command, *args, **kwargs)

    node.host.backend.run = run
    t = threading.Thread(target=lambda: node.run("true", sudo=True))
    t.start()
    assert inside.wait(10)
    assert node.run("id -un").stdout.strip() == getpass.getuser()  # not root through sudo
    release.set()
    t.join(10)
    assert seen["id -un"] is False and any(c.startswith("sudo -n /bin/sh -c") for c in seen)
