"""Each way SSH or the login can fail is told apart, with its own fix, against a real sshd: no route, refused, timed out,
name not resolved, host key unknown, host key changed, key refused, and sudo asking for a password.

The network kinds are made by a firewall in front of a running sshd, in a network namespace of their own (unshare
--net, iptables DROP / REJECT, an address with no route), so nothing on this machine changes; the login kinds by the
contents of known_hosts, a key or an account the server does not know, and a sudoers line without NOPASSWD for a
throwaway account. A kind's fix is then applied where it can be (the sudoers line it prints) and the check passes.
Needs root and OpenSSH's sshd, as CI has.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gb10check import remote
from gb10check.checks.host import judge_ssh_user
from gb10check.cluster import Link, Node, Ssh
from gb10check.remedies import REACH, REMEDIES, Code
from gb10check.remote import NodeUnreachable, RemoteNode

from .local_sshd import LocalSshd, keygen
from .test_not_checked import causes_section, flat, run_suite

REPO = Path(__file__).resolve().parent.parent


def need_root_and_sshd() -> None:
    if not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")) or os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run as root with openssh-server installed (.ci/run installs it)")
        pytest.skip("needs root and OpenSSH's sshd to start a loopback sshd")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    need_root_and_sshd()
    server = LocalSshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


def make_node(sshd, address="127.0.0.1", **ssh_overrides) -> RemoteNode:
    ssh = Ssh(user=sshd.user, port=sshd.port, identity_file=str(sshd.identity), known_hosts=str(sshd.known_hosts),
              connect_timeout_s=3, command_timeout_s=10).model_copy(update=ssh_overrides)
    return RemoteNode(Node(name="pgx-b", address=address, rank=1, links=[Link(netdev="enp1s0f0np0", address="192.0.2.2/24")]),
                      ssh)


def failure(node: RemoteNode) -> NodeUnreachable:
    with pytest.raises(NodeUnreachable) as caught:
        node.output("true")
    return caught.value


def text(exc: NodeUnreachable, user: str) -> str:
    """How the reachability check (test_ssh_user) prints it: [code] node: saw ...; expected ...; fix: ..."""
    [finding] = judge_ssh_user("pgx-b", user, None, exc)
    return finding.text


# A child in a network namespace of its own: the sshd, checked to answer, then a firewall rule (or an address with no
# route), then one login attempt; prints what failed as data.
CHILD = r'''
import json, subprocess, sys
from pathlib import Path
from gb10check.cluster import Link, Node, Ssh
from gb10check.remote import NodeUnreachable, RemoteNode
from selftests.local_sshd import LocalSshd

rule, address, workdir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=10)
sshd = LocalSshd(workdir).start()


def node(at):
    ssh = Ssh(user=sshd.user, port=sshd.port, identity_file=str(sshd.identity), known_hosts=str(sshd.known_hosts),
              connect_timeout_s=2, command_timeout_s=10)
    return RemoteNode(Node(name="pgx-b", address=at, rank=1, links=[Link(netdev="enp1s0f0np0", address="192.0.2.2/24")]), ssh)


try:
    assert node("127.0.0.1").output("echo up") == "up\n"  # the bed answers before the fault
    if rule:
        subprocess.run(["iptables", "-A", "INPUT", "-p", "tcp", "--dport", str(sshd.port), *rule.split()], check=True, timeout=10)
    try:
        node(address).output("true")
        print(json.dumps(None))
    except NodeUnreachable as exc:
        print(json.dumps({"kind": type(exc).__name__, "message": str(exc), "params": exc.params, "user": sshd.user}))
finally:
    sshd.stop()
'''


def in_own_netns(tmp_path, rule: str, address: str = "127.0.0.1") -> tuple[NodeUnreachable, str]:
    need_root_and_sshd()
    if not (shutil.which("unshare") and shutil.which("iptables")):
        pytest.fail("needs unshare (util-linux) and iptables, as the simulated cluster does") if os.environ.get("CI") else \
            pytest.skip("needs unshare and iptables")
    run = subprocess.run(["unshare", "--net", sys.executable, "-c", CHILD, rule, address, str(tmp_path)], capture_output=True,
                         text=True, timeout=90, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stdout + run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got is not None, "the login succeeded despite the fault"
    return getattr(remote, got["kind"])(got["message"], **got["params"]), got["user"]


@pytest.mark.parametrize("rule, address, kind, seen", [
    ("-j DROP", "127.0.0.1", Code.SSH_TIMEOUT, r"unreachable at 127\.0\.0\.1: no answer within 2 s \(connect timed out\)"),
    ("-j REJECT --reject-with tcp-reset", "127.0.0.1", Code.SSH_REFUSED, r"unreachable at 127\.0\.0\.1: Connection refused"),
    ("-j REJECT --reject-with icmp-host-unreachable", "127.0.0.1", Code.SSH_NO_ROUTE,
     r"unreachable at 127\.0\.0\.1: No route to host"),
    ("", "198.51.100.7", Code.SSH_NO_ROUTE, r"unreachable at 198\.51\.100\.7: Network is unreachable"),
], ids=["firewall-drops", "firewall-rejects", "host-unreachable", "no-route-in-table"])
def test_network_failures_each_their_kind_and_fix(tmp_path, rule, address, kind, seen):
    exc, user = in_own_netns(tmp_path, rule, address)
    assert exc.code == kind, str(exc)
    said = text(exc, user)
    assert re.match(rf"\[{kind.value}\] pgx-b: saw node pgx-b {seen}; expected an SSH session as {user}\n  fix: ", said), said
    port = exc.params["port"]
    fixes = {
        Code.SSH_TIMEOUT: f"nothing came back from {address}:{port} within ssh.connect_timeout_s: a firewall on pgx-b or "
                          f"between drops the packets (sudo ufw allow {port}/tcp on pgx-b",
        Code.SSH_REFUSED: f"{address} answers but nothing accepts SSH on port {port}: on pgx-b start sshd (sudo systemctl "
                          "enable --now ssh",
        Code.SSH_NO_ROUTE: f"this machine has no route to {address}: check that pgx-b is on and cabled to the management LAN, "
                           f"that `ip route get {address}` here leaves by the management interface",
    }
    assert fixes[kind] in said, said


def test_a_closed_port_is_refused(sshd):
    from .local_sshd import free_port

    exc = failure(make_node(sshd, port=free_port()))
    assert type(exc) is remote.SshRefused and str(exc) == "node pgx-b unreachable at 127.0.0.1: Connection refused"


def test_a_name_that_does_not_resolve(sshd):
    exc = failure(make_node(sshd, address="pgx-b.invalid"))
    assert exc.code == Code.SSH_NAME_UNRESOLVED, str(exc)
    said = text(exc, sshd.user)
    assert said.startswith("[ssh-name-unresolved] pgx-b: saw node pgx-b unreachable at pgx-b.invalid: name 'pgx-b.invalid' "
                           "not resolved ("), said
    assert ("fix: the name pgx-b.invalid does not resolve on this machine (getent hosts pgx-b.invalid prints nothing): give "
            "pgx-b's IP address in the cluster file, or add the name to DNS or /etc/hosts") in said


def test_an_unknown_host_key_names_the_key_and_how_to_verify_it(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    exc = failure(make_node(sshd, known_hosts=str(empty)))
    assert exc.code == Code.HOST_KEY_UNKNOWN
    offered = subprocess.run(["ssh-keygen", "-lf", f"{sshd.host_key}.pub"], capture_output=True, text=True, timeout=30).stdout
    said = text(exc, sshd.user)
    assert said.startswith(f"[host-key-unknown] pgx-b: saw node pgx-b at 127.0.0.1: host key unknown: [127.0.0.1]:{sshd.port} "
                           f"is not in {empty}; the node offers ssh-ed25519 {offered.split()[1]}; expected an SSH session"), said
    assert (f"fix: [127.0.0.1]:{sshd.port} is not in {empty}: read pgx-b's key fingerprint on the node itself (ssh-keygen -lf "
            f"/etc/ssh/ssh_host_ed25519_key.pub), fetch the key (ssh-keyscan -p {sshd.port} 127.0.0.1 > /tmp/pgx-b.key; "
            f"ssh-keygen -lf /tmp/pgx-b.key) and append it to {empty} only if the fingerprints match") in said
    # The fix works: the key fetched, compared with the server's own, appended; then the node answers.
    scanned = subprocess.run(["ssh-keyscan", "-t", "ed25519", "-p", str(sshd.port), "127.0.0.1"], capture_output=True,
                             text=True, timeout=30).stdout
    (tmp_path / "pgx-b.key").write_text(scanned)
    seen = subprocess.run(["ssh-keygen", "-lf", str(tmp_path / "pgx-b.key")], capture_output=True, text=True, timeout=30).stdout
    assert seen.split()[1] == offered.split()[1]
    empty.write_text(scanned)
    assert make_node(sshd, known_hosts=str(empty)).output("echo in") == "in\n"


def test_a_missing_known_hosts_is_an_unknown_host_key(sshd, tmp_path):
    exc = failure(make_node(sshd, known_hosts=str(tmp_path / "absent")))
    assert exc.code == Code.HOST_KEY_UNKNOWN and "known_hosts file" in str(exc) and "does not exist" in str(exc)


def test_a_changed_host_key_says_verify_then_remove_never_disable(sshd, tmp_path):
    other = keygen(tmp_path / "other")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{sshd.port} {' '.join(other.split()[:2])}\n")
    exc = failure(make_node(sshd, known_hosts=str(kh)))
    assert exc.code == Code.HOST_KEY_CHANGED
    said = text(exc, sshd.user)
    assert re.match(rf"\[host-key-changed\] pgx-b: saw node pgx-b at 127\.0\.0\.1: host key CHANGED: {re.escape(str(kh))} holds "
                    rf"ssh-ed25519 SHA256:\S+ for \[127\.0\.0\.1\]:{sshd.port}, the node offers ssh-ed25519 SHA256:\S+;", said), said
    removal = f"ssh-keygen -f {kh} -R '[127.0.0.1]:{sshd.port}'"
    assert "verify it first (on the node's console: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub" in said
    assert removal in said and "Never turn host key checking off" in said
    assert not re.search(r"StrictHostKeyChecking|AutoAddPolicy|UserKnownHostsFile", said)
    # The fix works (the new key verified against the server's own): the old entry removed, the new one added.
    subprocess.run(removal.replace("'", "").split(), check=True, capture_output=True, timeout=30)
    kh.write_text(kh.read_text() + subprocess.run(["ssh-keyscan", "-t", "ed25519", "-p", str(sshd.port), "127.0.0.1"],
                                                  capture_output=True, text=True, timeout=30).stdout)
    assert make_node(sshd, known_hosts=str(kh)).output("echo in") == "in\n"


@pytest.mark.parametrize("who", ["a key it does not hold", "an account without the key"])
def test_a_refused_key_names_the_account_and_the_key(sshd, tmp_path, who):
    key = tmp_path / "id_other"
    keygen(key)
    overrides = {"identity_file": str(key)} if who == "a key it does not hold" else {"user": "nobody"}
    exc = failure(make_node(sshd, **overrides))
    assert exc.code == Code.SSH_KEY_REFUSED
    user, identity = overrides.get("user", sshd.user), overrides.get("identity_file", str(sshd.identity))
    said = text(exc, user)
    assert said.startswith(f"[ssh-key-refused] pgx-b: saw node pgx-b at 127.0.0.1: login as {user!r} with {identity} refused "
                           f"(Authentication failed); expected an SSH session as {user}\n"), said
    assert (f"fix: pgx-b refused {user} with the runner's key ({identity}): the account {user} must exist on pgx-b (NVIDIA's "
            f"cluster scripts need the same user name on every node) and hold the key's public half in ~{user}/.ssh/"
            f"authorized_keys (ssh-copy-id -i {identity} -p {sshd.port} {user}@127.0.0.1)") in said
    if who == "a key it does not hold":  # the fix works: the key authorized, the login passes
        sshd.authorize(Path(f"{key}.pub").read_text())
        assert make_node(sshd, **overrides).output("echo in") == "in\n"


def test_a_login_as_another_user_than_configured():
    [finding] = judge_ssh_user("pgx-b", "lenovo", "nvidia", None)
    assert finding.code == Code.SSH_USER and finding.text.startswith(
        "[ssh-user] pgx-b: saw logged in as 'nvidia'; expected user 'lenovo'\n  fix: create user lenovo on pgx-b")
    assert judge_ssh_user("pgx-b", "lenovo", "lenovo", None) == []


def test_every_kind_has_its_own_fix():
    fixes = [REMEDIES[c] for c in REACH | {Code.SUDO_REFUSED}]
    assert len(set(fixes)) == len(fixes) == 9
    assert all("power" not in f for f in fixes)


SUDO_CHECK = '''
import pytest
from gb10check.gather import read, reads
from gb10check.gather.registry import FACTS, Fact, const

pytestmark = pytest.mark.preflight
FACTS["bed_root"] = Fact("bed_root", "the id root runs as", const("id -u"), lambda out: out.stdout, sudo=True)


@reads("bed_root")
def test_root(node):
    assert read(node, "bed_root").strip() == "0"
'''


def test_sudo_asking_for_a_password_prints_the_sudoers_line_that_fixes_it(tmp_path):
    need_root_and_sshd()
    (tmp_path / "sshd").mkdir()
    sshd = LocalSshd(tmp_path / "sshd", sudoer="{user} ALL=(ALL) ALL").start()  # sudo, but with a password
    try:
        data = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
        data["ssh"].update({"user": sshd.user, "port": sshd.port, "identity_file": str(sshd.identity),
                            "known_hosts": str(sshd.known_hosts), "connect_timeout_s": 5, "command_timeout_s": 10})
        data["nodes"] = data["nodes"][:1]
        data["nodes"][0].update(address="127.0.0.1")
        node = data["nodes"][0]["name"]
        (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(data))
        suite = tmp_path / "suite"
        suite.mkdir()
        (suite / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text())
        (suite / "test_sudo.py").write_text(SUDO_CHECK)

        def run():
            return run_suite("-c", str(REPO / "pytest.ini"), "--rootdir", str(suite), str(suite),
                             f"--cluster={tmp_path / 'cluster.yaml'}", cwd=suite)

        first = run()
        assert first.returncode == 1 and "1 not checked" in first.stdout.splitlines()[-1], first.stdout + first.stderr
        section = flat(causes_section(first.stdout))
        assert f"[sudo-refused] {node}: could not check: sudo -n asked for a password to run `id -u`" in section, section
        line = re.search(rf"check by hand: let {sshd.user} run sudo without a password on {node}: sudo visudo -f "
                         r"/etc/sudoers\.d/zz-gb10check and write the line `([^`]+)`", section)
        assert line and line[1] == f"{sshd.user} ALL=(ALL) NOPASSWD: ALL", section
        sshd.sudoers(line[1])  # the printed line, installed: the check now looks and passes
        second = run()
        assert second.returncode == 0 and "1 passed" in second.stdout.splitlines()[-1], second.stdout + second.stderr
    finally:
        sshd.stop()


def test_a_host_key_failure_fails_the_reachability_check_and_stops_the_others_once(sshd, tmp_path):
    # The second node is the same server by another name (localhost), which known_hosts does not hold: its own fix, not
    # "check the power", told once with the checks it stopped.
    data = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
    data["ssh"].update({"user": sshd.user, "port": sshd.port, "identity_file": str(sshd.identity),
                        "known_hosts": str(sshd.known_hosts), "connect_timeout_s": 5, "command_timeout_s": 10})
    data["nodes"][0].update(address="127.0.0.1")
    data["nodes"][1].update(address="localhost")
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(data))
    other = data["nodes"][1]["name"]
    run = run_suite("tests/preflight/test_identity.py", "-k", "ssh_user or os_parity", f"--cluster={tmp_path / 'cluster.yaml'}",
                    report="-ra")
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    failed = [l.split(" - ")[0] for l in out.splitlines() if l.startswith("FAILED")]
    assert failed == [f"FAILED tests/preflight/test_identity.py::test_ssh_user[{other}]"], out
    section = causes_section(out)
    assert section.count(f"[host-key-unknown] {other}: saw node {other} at localhost: host key unknown: [localhost]:{sshd.port} "
                         f"is not in {sshd.known_hosts}") == 1, section
    assert f"fix: [localhost]:{sshd.port} is not in {sshd.known_hosts}: read {other}'s key fingerprint" in flat(section)
    assert f" 2 checks on {other}: failed test_ssh_user; not checked test_os_parity " in flat(section), section
    assert "[node-unreachable]" not in out and "power" not in section
