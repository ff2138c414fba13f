""""Could not check" is its own outcome: each cause is reported as NOT CHECKED with the command and how to check by hand,
counted apart, never a pass and never a fault of the cluster; an unreachable node is one failure of its own.

Runs the suite's plugin in a subprocess against two nodes on a real loopback sshd: one that answers, one whose port is
closed. The runner's own set-up (a missing known_hosts) stops the run before any test, in one line.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .local_sshd import LocalSshd

REPO = Path(__file__).resolve().parent.parent

CHECKS = '''
import pytest
from gb10check.gather import read, reads
from gb10check.gather.readers import parser
from gb10check.gather.registry import FACTS, Fact, const

pytestmark = pytest.mark.preflight

# Facts of this bed only, each made unreadable one way.
for fact in (Fact("bed_garbled", "a meminfo that is not one", const("echo 'MemTotal: lots'"), parser("meminfo"), parse_kind="meminfo"),
             Fact("bed_slow", "a command that runs over", const("sleep 5"), lambda out: out.stdout),
             Fact("bed_failing", "a file that is not there", const("cat /nonexistent/gb10check"), lambda out: out.stdout),
             Fact("bed_tool", "a tool that is not installed", const("gb10check-no-such-tool --version"), lambda out: out.stdout,
                  tool="gb10check-no-such-tool", package="gb10check-bed-package")):
    FACTS[fact.name] = fact


@reads("bed_garbled")
def test_garbled(node):
    read(node, "bed_garbled")


@reads("bed_slow")
def test_timeout(node):
    read(node, "bed_slow")


@reads("bed_failing")
def test_failed_command(node):
    read(node, "bed_failing")


@reads("bed_tool")
def test_tool_missing(node):
    read(node, "bed_tool")


@reads("bed_tool")
def test_undeclared(node):
    read(node, "kernel")  # not declared: an error of the suite, never a verdict on the node
'''


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    if not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")) or os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run as root with openssh-server installed (.ci/run installs it)")
        pytest.skip("needs root and OpenSSH's sshd to start a loopback sshd")
    server = LocalSshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


def cluster_file(sshd, directory: Path, **ssh) -> Path:
    data = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
    data["ssh"].update({"user": sshd.user, "port": sshd.port, "identity_file": str(sshd.identity),
                        "known_hosts": str(sshd.known_hosts), "connect_timeout_s": 2, "command_timeout_s": 1.5, **ssh})
    data["nodes"][0].update(address="127.0.0.1")
    data["nodes"][1].update(address="127.0.0.2")  # sshd listens on 127.0.0.1 only: refused here
    path = directory / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run_suite(*args, cwd: Path = REPO) -> subprocess.CompletedProcess:
    # This checkout's gb10check first, wherever pytest runs (cwd comes first on sys.path only in the checkout).
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=180, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_unreachable_node_fails_once_and_its_other_checks_are_not_checked(sshd, tmp_path):
    path = cluster_file(sshd, tmp_path)
    head, other = (n["name"] for n in yaml.safe_load(path.read_text())["nodes"])
    run = run_suite("tests/preflight/test_identity.py", "-k", "ssh_user or os_parity or gpu_name", f"--cluster={path}")
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    # One failure, for the unreachable node, by its reachability check: what was seen and how to check by hand.
    failed = [l.split(" - ")[0] for l in out.splitlines() if l.startswith("FAILED")]
    assert failed == [f"FAILED tests/preflight/test_identity.py::test_ssh_user[{other}]"], out
    assert (f"[node-unreachable] {other}: saw node {other} unreachable at 127.0.0.2: Connection refused; expected an SSH "
            f"session as {sshd.user}\n  fix: check that {other} is on") in out
    # Its other checks: NOT CHECKED, with the same cause, once each (no chained tracebacks).
    section = out[out.index("gb10check: NOT CHECKED"):]
    for test in ("test_os_parity", "test_gpu_name"):
        assert (f"tests/preflight/test_identity.py::{test}[{other}]\n  [unreachable] {other}: could not check: node {other} "
                f"unreachable at 127.0.0.2: Connection refused; expected an SSH session\n  check by hand: ssh {sshd.user}@127.0.0.2 "
                f"-p {sshd.port} true") in section
    assert "During handling of the above exception" not in out
    # The reachable node has no nvidia-smi: we could not ask it, which is not a fault of the GPU; the tool is named.
    assert (f"tests/preflight/test_identity.py::test_gpu_name[{head}]\n  [tool-missing] {head}: could not check: "
            "`nvidia-smi` is not installed") in section
    assert (f"check by hand: install the NVIDIA driver's utilities (nvidia-utils-<version>, installed with the driver) on {head} "
            "(it provides `nvidia-smi`)") in section
    assert f"PASSED tests/preflight/test_identity.py::test_ssh_user[{head}]" in out
    assert "3 not checked" in out.splitlines()[-1] and "1 failed" in out.splitlines()[-1]


def test_each_cause_is_reported_as_not_checked_with_the_command(sshd, tmp_path):
    path = cluster_file(sshd, tmp_path)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text())
    (suite / "test_causes.py").write_text(CHECKS)
    head = yaml.safe_load(path.read_text())["nodes"][0]["name"]
    run = run_suite("-c", str(REPO / "pytest.ini"), "--rootdir", str(suite), str(suite), f"--cluster={path}", "-k", head, cwd=suite)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr  # not checked is never a pass
    assert "4 not checked" in out.splitlines()[-1] and "1 failed" in out.splitlines()[-1], out
    section = out[out.index("gb10check: NOT CHECKED"):]
    assert "[garbled-output]" in section and "check by hand: run `echo 'MemTotal: lots'`" in section
    assert "[command-timeout]" in section and "sleep 5" in section and "raise ssh.command_timeout_s" in section
    assert "[command-failed]" in section and "cat /nonexistent/gb10check" in section and "No such file" in section
    assert ("[tool-missing] " in section and "`gb10check-no-such-tool` is not installed" in section
            and "install gb10check-bed-package on" in section)
    # Reading a fact the check did not declare is the suite's error, not a verdict on the node.
    assert "FAILED test_causes.py::test_undeclared" in out and "the check read fact 'kernel' without declaring it" in out
    from gb10check.stage import records

    recorded = records(path)  # a partial run (-k) that could not look only closes the gate, by its codes
    assert set(recorded) == {"preflight"} and not recorded["preflight"]["full"], recorded
    assert sorted(c for codes in recorded["preflight"]["not_checked"].values() for c in codes) == [
        "command-failed", "command-timeout", "garbled-output", "tool-missing"]


def test_missing_known_hosts_stops_the_run_in_one_line(sshd, tmp_path):
    path = cluster_file(sshd, tmp_path, known_hosts=str(tmp_path / "nope" / "known_hosts"))
    run = run_suite("-m", "preflight", f"--cluster={path}")
    assert run.returncode == 4, run.stdout + run.stderr
    errors = [l for l in (run.stdout + run.stderr).splitlines() if l.startswith("ERROR")]
    assert errors == [f"ERROR: runner set-up: known_hosts file {tmp_path}/nope/known_hosts (ssh.known_hosts) does not exist, "
                      f"so no host key can be verified: create it with the nodes' keys (ssh-keyscan -p PORT NODE >> "
                      f"{tmp_path}/nope/known_hosts, after checking each fingerprint)"], run.stdout + run.stderr
    assert " passed" not in run.stdout and " failed" not in run.stdout
