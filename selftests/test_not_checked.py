""""Could not check" is its own outcome: each cause is reported as NOT CHECKED with the command and how to check by hand,
counted apart, never a pass and never a fault of the cluster; an unreachable node is one failure of its own.

Runs the suite's plugin in a subprocess against two nodes on a real loopback sshd: one that answers, one whose port is
closed. The runner's own set-up (a missing known_hosts) stops the run before any test, in one line. Items that share a
cause are told once, with the checks it stopped named: two unreachable nodes (a closed port, no sshd needed) give two
causes in the terminal, the report and JUnit.
"""

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from gb10check.report import Run, markdown

from .inner_pytest import run_pytest
from .local_sshd import LocalSshd, refusing_pair

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


def run_suite(*args, cwd: Path = REPO, report: str = "-rA") -> subprocess.CompletedProcess:
    # This checkout's gb10check first, wherever pytest runs (cwd comes first on sys.path only in the checkout); an
    # interactive terminal of 80 columns wherever the self-tests run: on a CI runner (CI or BUILD_NUMBER set) pytest
    # prints each failure's whole message again in its short summary.
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")}
    return run_pytest(["-p", "no:cacheprovider", report, *args], cwd=cwd, env={**env, "PYTHONPATH": str(REPO), "COLUMNS": "80"},
                      timeout=180)


def flat(text: str) -> str:
    """The text with its lines joined (the summary folds its lists of names to the terminal's width)."""
    return re.sub(r"\s+", " ", text)


def causes_section(out: str) -> str:
    """The terminal summary's section of causes, each once with the checks it failed or stopped."""
    return out[re.search(r"gb10check: \d+ causes? of \d+ checks failed or not checked", out).start():]


def test_unreachable_node_fails_once_and_its_other_checks_are_not_checked(sshd, tmp_path):
    path = cluster_file(sshd, tmp_path)
    head, other = (n["name"] for n in yaml.safe_load(path.read_text())["nodes"])
    run = run_suite("tests/preflight/test_identity.py", "-k", "ssh_user or os_parity or gpu_name", f"--cluster={path}")
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    # One failure, for the unreachable node, by its reachability check: what was seen and how to check by hand.
    failed = [l.split(" - ")[0] for l in out.splitlines() if l.startswith("FAILED")]
    assert failed == [f"FAILED tests/preflight/test_identity.py::test_ssh_user[{other}]"], out
    assert (f"[ssh-refused] {other}: saw node {other} unreachable at 127.0.0.2: Connection refused; expected an SSH "
            f"session as {sshd.user}\n  fix: 127.0.0.2 answers but nothing accepts SSH on port {sshd.port}: on {other} start "
            "sshd") in out
    # Its other checks: NOT CHECKED for the same cause, told once under it, each named (no chained tracebacks).
    section = causes_section(out)
    assert (f"[ssh-refused] {other}: saw node {other} unreachable at 127.0.0.2: Connection refused; expected an SSH "
            f"session as {sshd.user}\n  fix: 127.0.0.2 answers but nothing accepts SSH on port {sshd.port}: on {other} start "
            "sshd") in section
    assert f" 3 checks on {other}: failed test_ssh_user; not checked test_os_parity, test_gpu_name " in flat(section)
    assert "could not check: node" not in section and section.count("unreachable at 127.0.0.2") == 1
    assert "During handling of the above exception" not in out
    # The reachable node has no nvidia-smi: we could not ask it, which is not a fault of the GPU; the tool is named.
    assert f"[tool-missing] {head}: could not check: `nvidia-smi` is not installed" in section
    assert (f"check by hand: install the NVIDIA driver's utilities (nvidia-utils-<version>, installed with the driver) on {head} "
            "(it provides `nvidia-smi`)") in section
    assert f" 1 check on {head}: not checked test_gpu_name " in flat(section)
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
    section = causes_section(out)
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


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_missing_known_hosts_stops_the_run_in_one_line(sshd, tmp_path, workers):
    # Under xdist the controller collects nothing, so it must say it before the workers start (not crash them).
    path = cluster_file(sshd, tmp_path, known_hosts=str(tmp_path / "nope" / "known_hosts"))
    run = run_suite("-m", "preflight", f"--cluster={path}", *workers)
    assert run.returncode == 4, run.stdout + run.stderr
    errors = [l for l in (run.stdout + run.stderr).splitlines() if l.startswith("ERROR")]
    assert errors == [f"ERROR: runner set-up: known_hosts file {tmp_path}/nope/known_hosts (ssh.known_hosts) does not exist, "
                      f"so no host key can be verified: create it with the nodes' keys (ssh-keyscan -p PORT NODE >> "
                      f"{tmp_path}/nope/known_hosts, after checking each fingerprint)"], run.stdout + run.stderr
    assert " passed" not in run.stdout and " failed" not in run.stdout


def test_two_unreachable_nodes_each_cause_once_in_the_terminal_the_report_and_junit(tmp_path):
    # Both nodes refuse (a closed port on 127.0.0.2 and .3): two causes, each told once, whatever the checks it stopped.
    data = refusing_pair(tmp_path, command_timeout_s=2)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    names = [n["name"] for n in data["nodes"]]
    run = run_suite("-m", "preflight", f"--cluster={path}", f"--report-dir={tmp_path / 'out'}",
                    f"--junitxml={tmp_path / 'junit.xml'}", report="-ra")
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    # The run gave 208 lines (396 with -rA), each check's paragraph again; now well under 80.
    assert len(out.splitlines()) < 80, out
    # Every check that ran stopped at its node's cause: the counts are the checks the run collected and did not skip.
    suite = next(ET.parse(tmp_path / "junit.xml").getroot().iter("testsuite"))
    ran = [c.get("name") for c in suite.iter("testcase") if c.find("skipped") is None]
    total, on = len(ran), {name: sum(n.endswith(f"[{name}]") for n in ran) for name in names}
    assert total == sum(on.values()) and min(on.values()) > 20, ran
    section = causes_section(out)
    assert section.startswith(f"gb10check: 2 causes of {total} checks failed or not checked ({total - 2} not checked"), section
    for name, address in zip(names, ("127.0.0.2", "127.0.0.3")):
        # pytest's own failure of the reachability check, and the cause once: its text and the checks it stopped.
        assert out.count(f"unreachable at {address}: Connection refused") == 2, out
        assert section.count(f"[ssh-refused] {name}: saw node {name} unreachable at {address}") == 1, section
        assert re.search(rf" \d+ checks on {name}: failed test_ssh_user; not checked test_clock_skew, ", flat(section)), section
    assert "test_os_parity" in section.split(f"[ssh-refused] {names[1]}")[1]  # a follower check, under its node
    assert "check by hand" not in out and "could not check: node" not in out  # the lead is the reachability check's failure

    md = (tmp_path / "out" / "report.md").read_text()
    assert md.index(f"## Causes: 2, failing or stopping {total} checks") < md.index("## Warnings") < md.index("## Every check")
    assert md.count("Connection refused") == 2 and len(md.splitlines()) < 130, md  # 507 lines before
    assert f"| test_os_parity[{names[1]}] | not checked (cause 2) |" in md

    listed = [json.loads(p.get("value")) for p in suite.find("properties") if p.get("name") == "gb10check.cause"]
    assert [(c["cause"], c["title"], len(c["tests"])) for c in listed] == [
        (1, f"[ssh-refused] {names[0]}", on[names[0]]), (2, f"[ssh-refused] {names[1]}", on[names[1]])]
    assert listed[1]["text"].startswith(f"[ssh-refused] {names[1]}: saw node {names[1]} unreachable at 127.0.0.3")
    assert listed[1]["checks"].startswith(f"{on[names[1]]} checks on {names[1]}: failed test_ssh_user; not checked test_clock_skew, ")
    named = {c.get("name"): [p.get("value") for p in c.iter("property") if p.get("name") == "gb10check.cause"]
             for c in suite.iter("testcase")}
    assert named[f"test_os_parity[{names[1]}]"] == [f"2: [ssh-refused] {names[1]}"]
    assert named[f"test_ssh_user[{names[0]}]"] == [f"1: [ssh-refused] {names[0]}"]
    assert sum(bool(v) for v in named.values()) == total and not named[f"test_driver_version[{names[0]}]"]  # a skip: no cause


def test_the_report_leads_with_causes_each_once_with_the_checks_they_stopped():
    def finding(code, where, seen, severity="not-checked", fix="install ibverbs-utils on n2 (it provides `ibv_devinfo`)"):
        return {"code": code, "severity": severity, "where": where, "seen": seen, "expected": "the tool", "fix": fix}

    tool = [finding("tool-missing", "n2:rocep1s0f0", f"`ibv_devinfo` is not installed ({i})") for i in range(2)]
    run = Run("pair", outcomes={"t.py::test_gid[n2:a]": "not checked", "t.py::test_port[n2:b]": "not checked",
                                "t.py::test_ping[n1->n2]": "failed", "t.py::test_mtu[n1]": "passed",
                                "t.py::test_broken[n1]": "error", "t.py::test_pair[needs-a-second-node]": "skipped",
                                "t.py::test_other[needs-a-second-node]": "skipped"},
              findings={"t.py::test_gid[n2:a]": [tool[0]], "t.py::test_port[n2:b]": [tool[1]],
                        "t.py::test_ping[n1->n2]": [finding("ping", "n1:a->n2:a", "no answer", "failure", "check the cable")]},
              messages={"t.py::test_broken[n1]": "Traceback ...\nKeyError: 'x'",
                        "t.py::test_pair[needs-a-second-node]": "needs a second node (the cluster file names one)",
                        "t.py::test_other[needs-a-second-node]": "needs a second node (the cluster file names one)"})
    md = markdown(run)
    assert md.index("## Causes: 3, failing or stopping 4 checks") < md.index("## Warnings") < md.index("## Skipped")
    # Failures first (with a finding, then the error told by its own text), then the not-checked cause, its text once.
    assert md.index("### 1. [ping] n1 (1 failed)") < md.index("### 2. Traceback ... (1 failed)") < md.index(
        "### 3. [tool-missing] n2 (2 not checked)")
    assert md.count("`ibv_devinfo` is not installed") == 1 and "2 checks on n2: not checked test_gid, test_port" in md
    assert "KeyError: 'x'" in md
    assert ("- needs a second node (the cluster file names one): 2 checks: test_pair, test_other (each [needs-a-second-node])"
            in md)
    assert "| test_port[n2:b] | not checked (cause 3) |" in md and "| test_mtu[n1] | passed |" in md


def test_a_gpu_box_without_docker_rdma_or_tools_gives_each_cause_once(monkeypatch):
    # The real H200 recording (a one-node cluster with no docker, RDMA, ufw, iproute2 ...), every check replayed on it: the
    # checks one gap stopped are one cause, each tool once, whatever each check's own wording of the gap.
    import warnings

    from gb10check.gather import recording, registry
    from gb10check.remote import NotRecorded, RemoteError, RemoteNode
    from gb10check.report import causes
    from gb10check.verdict import NotChecked

    from .test_facts_property import H200, LIVE_AFTER_FACTS, RAY, READING, arguments, declared

    def refuse(self, command, *args, **kwargs):
        raise RemoteError(f"replay: {self.name} is not reached (`{command[:60]}`)")

    monkeypatch.setattr(RemoteNode, "run", refuse)
    fleet = recording.replay(json.loads(H200.read_text()))
    run = Run("h200")
    for cid, fn in READING.items():
        if cid in RAY or cid.split("::")[1] in LIVE_AFTER_FACTS:
            continue
        for kwargs in arguments(fn, fleet):
            test = f"{cid}[{'-'.join(getattr(v, 'name', '') for v in kwargs.values() if getattr(v, 'name', ''))}]"
            token = registry.declared(declared(fn), fleet.cluster)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fn(**kwargs)
                run.outcomes[test] = "passed"
            except (NotChecked, pytest.fail.Exception) as exc:
                run.outcomes[test] = "not checked" if isinstance(exc, NotChecked) else "failed"
                run.findings[test] = [f.as_dict() for f in getattr(exc, "findings", [])]
            except pytest.skip.Exception:
                run.outcomes[test] = "skipped"
            except NotRecorded:
                pass  # a check newer than the recording reads a fact it lacks: the recording gives it no verdict
            finally:
                registry.undeclare(token)
    found = causes(run)
    unchecked = [t for t, o in run.outcomes.items() if o == "not checked"]
    assert len(unchecked) >= 15 and len([c for c in found if not c.failed]) <= len(unchecked) - 8, [c.checks() for c in found]
    rdma = [c for c in found if c.title == "[no-rdma] h200"]
    assert len(rdma) == 1 and {"test_rdma_port_active", "test_rdma_error_counters", "test_roce_gid"} <= {
        t.split("::")[1].split("[")[0] for t in rdma[0].tests}, [c.checks() for c in found]
    tools = [re.match(r"\[tool-missing\] h200: could not check: `([^`]+)` is not installed", c.text)[1]
             for c in found if c.title == "[tool-missing] h200"]
    assert len(tools) == len(set(tools)) and {"ip", "ibv_devinfo", "ufw"} <= set(tools), tools
    docker = [c for c in found if c.title == "[prerequisite-failed] h200" and "docker is not usable" in c.text]
    assert len(docker) == 1 and len(docker[0].tests) >= 3, [c.checks() for c in found]
    md = markdown(run)
    assert md.count("no RDMA device under /sys/class/infiniband") == 1 and md.count("`ip` is not installed") == 1
