"""The gate opens only on a recorded full run of each gated stage, for the same cluster file, fresh, with nothing failed
and nothing not checked but the codes the cluster file waives; findings leave pytest as data (findings.json, JUnit
properties), and not checked is a JUnit error of type not-checked.

Runs pytest in a subprocess as a user does, against a one-node cluster whose node is this machine (`connection: local`):
the real suite for the issue's partial run, and a small suite of the same layout (pytest.ini with testpaths, tests/
with the suite's conftest) whose checks pass, fail or cannot look as an environment variable says, so each outcome is
reached for real without the simulated cluster. Needs no root.
"""

import contextlib
import getpass
import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from gb10check import cli, stage

from .inner_pytest import run_pytest

REPO = Path(__file__).resolve().parent.parent

CHECKS = {
    "test_pre.py": '''
import os
import pytest
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.preflight


def test_driver(node):
    bad = "driver" in os.environ.get("SUITE_BAD", "")
    report([Finding(Code.DRIVER_MISMATCH, node.name, "kernel module 580.1", "user-mode driver 580.2")] if bad else [])


def test_pcie(node):
    if "pcie" in os.environ.get("SUITE_BAD", ""):
        report([Finding(Code.COMMAND_FAILED, node.name, "`lspci -vv` exited 1", "the command to succeed", command="lspci -vv")])


def test_clock(node):
    report([Finding(Code.CLOCK_SKEW, node.name, "1.5 s", "< 1 s", warning=True)] if "skew" in os.environ.get("SUITE_BAD", "") else [])
''',
    "test_net.py": '''
import os
import pytest
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.network


def test_ping(node):
    report([Finding(Code.PING, node.name, "no answer", "an answer")] if "ping" in os.environ.get("SUITE_BAD", "") else [])


def test_mtu(node):
    pass
''',
}
INI = """[pytest]
testpaths = tests
addopts = --strict-markers
markers =
    preflight: host checks
    network: links
    serving: api
    soak: soak
"""


def local_cluster(directory: Path, **extra) -> Path:
    data = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
    data["nodes"] = [dict(data["nodes"][0], connection="local", address="127.0.0.1")]
    data["deploy"]["tensor_parallel_size"] = 1
    data["ssh"].update({"user": getpass.getuser(), "known_hosts": str(directory / "nope" / "known_hosts"),
                        "identity_file": str(directory / "nope" / "id_ed25519")})
    data.update(extra)
    path = directory / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def suite(tmp_path) -> Path:
    root = tmp_path / "suite"
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text(INI)
    (root / "tests" / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text())
    for name, text in CHECKS.items():
        (root / "tests" / name).write_text(text)
    return root


def pytest_run(cwd: Path, cluster: Path, *args: str, bad: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "SUITE_BAD": bad, "PYTHONPATH": str(REPO)}  # this checkout's gb10check, wherever pytest runs
    return run_pytest(["-p", "no:cacheprovider", f"--cluster={cluster}", *args], cwd=cwd, env=env, timeout=180)


def gate(cluster: Path, *args: str, step: str = "gate") -> subprocess.CompletedProcess:
    """`gb10check STEP --cluster=CLUSTER ARGS`, in this process (the command line's own code, without a second start-up)."""
    err = io.StringIO()
    parsed = cli.build_parser().parse_args([step, f"--cluster={cluster}", *args])  # the step as cli.run calls it
    with contextlib.redirect_stderr(err):
        rc = parsed.func(parsed)
    # A record's age is wall-clock time since its run (minutes on a loaded machine): N, whatever it is.
    return subprocess.CompletedProcess([step, *args], rc, "", re.sub(r"\b\d+ min ago", "N min ago", err.getvalue()))


def test_the_issues_partial_run_of_the_real_suite_leaves_the_gate_shut(tmp_path):
    cluster = local_cluster(tmp_path)
    run = pytest_run(REPO, cluster, "tests/preflight/test_identity.py::test_ssh_user", "tests/network/test_ray.py")
    assert run.returncode == 0, run.stdout + run.stderr  # 1 passed, 2 skipped, as in the issue
    assert "preflight not recorded: a partial run (narrowed to single tests" in run.stdout
    assert "network not recorded: a partial run" in run.stdout
    assert not stage.records(cluster)
    shut = subprocess.run([sys.executable, "-m", "gb10check", "gate", f"--cluster={cluster}"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)  # as a user runs it
    assert shut.returncode == 1 and "gate: refused: preflight: no full run recorded" in shut.stderr, shut.stderr


@pytest.mark.parametrize("narrowing", [("-k", "driver or ping"), ("--deselect", "tests/test_pre.py::test_pcie"),
                                       ("tests/test_pre.py", "tests/test_net.py::test_ping"),
                                       ("-m", "preflight", "--ignore=tests/test_net.py")],
                         ids=["-k", "--deselect", "paths", "--ignore"])
def test_a_partial_run_records_nothing_and_the_gate_stays_shut(suite, tmp_path, narrowing):
    cluster = local_cluster(tmp_path)
    run = pytest_run(suite, cluster, *narrowing)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "preflight not recorded: a partial run" in run.stdout, run.stdout
    assert "preflight" not in stage.records(cluster)  # (--deselect of a preflight check leaves network full: recorded)
    assert gate(cluster).returncode == 1


def test_a_run_stopped_early_records_no_pass_for_the_checks_it_never_ran(suite, tmp_path):
    cluster = local_cluster(tmp_path)
    run = pytest_run(suite, cluster, "-x", bad="ping")  # tests/test_net.py runs first: its failure stops the run
    assert run.returncode == 1
    assert "network FAILED (a partial run: 1 network checks did not run (stopped early" in run.stdout, run.stdout
    assert stage.records(cluster)["network"]["verdict"] == "failed" and "preflight" not in stage.records(cluster)


def test_each_stage_is_recorded_by_its_own_full_run_and_both_open_the_gate(suite, tmp_path):
    cluster = local_cluster(tmp_path)
    pre = pytest_run(suite, cluster, "-m", "preflight")
    assert pre.returncode == 0 and "gb10check stage status: preflight passed, recorded in" in pre.stdout, pre.stdout
    assert "network" not in stage.records(cluster)  # -m preflight left every network check out
    shut = gate(cluster)
    assert shut.returncode == 1 and "network: no full run recorded" in shut.stderr, shut.stderr
    assert "preflight: no full run" not in shut.stderr
    net = pytest_run(suite, cluster, "-m", "network", "-n", "2")  # under xdist the workers tell the controller what they collected
    assert net.returncode == 0 and "network passed, recorded in" in net.stdout, net.stdout + net.stderr
    opened = gate(cluster)
    assert opened.returncode == 0, opened.stderr
    assert opened.stderr.splitlines() == ["gate: preflight: passed N min ago, a full run of this cluster file",
                                          "gate: network: passed N min ago, a full run of this cluster file"]
    assert gate(cluster, "--max-age-h", "0").returncode == 1  # too old for a zero-hour limit
    cluster.write_text(cluster.read_text() + "# edited\n")
    other = gate(cluster)
    assert other.returncode == 1 and "another version" in other.stderr


PAIR_CHECKS = '''
import pytest


@pytest.mark.preflight
def test_same_as_head(follower, head):
    assert follower.name != head.name


@pytest.mark.network
def test_port_reached(path, required_port):
    assert path.src.name != path.dst.name
'''


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_a_one_node_cluster_lists_its_pair_checks_once_and_its_full_run_opens_the_gate(suite, tmp_path, xdist):
    (suite / "tests" / "test_pair.py").write_text(PAIR_CHECKS)
    cluster = local_cluster(tmp_path)
    run = pytest_run(suite, cluster, "-ra", f"--report-dir={tmp_path / 'out'}", *xdist)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    # Once, by name, with the reason (folded to the terminal's width): never "got empty parameter set" or a [NOTSET] item.
    said = " ".join(out.split()).split("gb10check: needs a second node (the cluster file names one): 2 checks not run: ")
    assert len(said) == 2 and sorted(said[1].split(" gb10check report")[0].split(", ")) == ["test_port_reached",
                                                                                            "test_same_as_head"], out
    assert [l for l in out.splitlines() if "second node" in l and l.startswith("SKIPPED")] == [
        f"SKIPPED [2] {os.path.relpath(cluster, suite)}: needs a second node (the cluster file names one)"], out
    assert "NOTSET" not in out and "empty parameter set" not in out
    md = (tmp_path / "out" / "report.md").read_text()
    assert "NOTSET" not in md and [l for l in md.splitlines() if "second node" in l] in (
        [f"- needs a second node (the cluster file names one): 2 checks: {a}, {b} (each [needs-a-second-node])"]
        for a, b in (("test_same_as_head", "test_port_reached"), ("test_port_reached", "test_same_as_head"))), md
    # Run and counted as skipped, never deselected: the one-node cluster's full run is full, and it opens the gate.
    assert "passed, recorded in" in out and "partial" not in out, out
    assert {s: r["full"] for s, r in stage.records(cluster).items()} == {"preflight": True, "network": True}
    assert gate(cluster).returncode == 0


def test_a_passing_network_run_never_overwrites_a_failing_preflight_record(suite, tmp_path):
    cluster = local_cluster(tmp_path)
    pre = pytest_run(suite, cluster, "-m", "preflight", bad="driver")
    assert pre.returncode == 1 and "preflight FAILED, recorded in" in pre.stdout, pre.stdout
    assert pytest_run(suite, cluster, "-m", "network").returncode == 0
    assert pytest_run(suite, cluster, "-m", "preflight", "-k", "driver").returncode == 0  # a passing partial run
    rec = stage.records(cluster)
    assert rec["preflight"]["verdict"] == "failed" and rec["network"]["verdict"] == "passed"
    shut = gate(cluster)
    assert shut.returncode == 1 and "preflight: the last preflight run (N min ago) failed: tests/test_pre.py::test_driver" in shut.stderr
    # A partial run that fails closes the gate on a passing record, and a full run is needed to open it again.
    assert pytest_run(suite, cluster, "-m", "preflight").returncode == 0
    assert gate(cluster).returncode == 0
    assert pytest_run(suite, cluster, "-k", "ping", bad="ping").returncode == 1
    shut = gate(cluster)
    assert shut.returncode == 1 and "network: the last network run (N min ago) was partial (" in shut.stderr, shut.stderr


def test_not_checked_shuts_the_gate_unless_its_code_is_waived_with_a_reason(suite, tmp_path):
    cluster = local_cluster(tmp_path)
    report_dir = tmp_path / "out"
    run = pytest_run(suite, cluster, "--junitxml", str(tmp_path / "junit.xml"), f"--report-dir={report_dir}", bad="pcie skew")
    assert run.returncode == 1, run.stdout  # never a pass
    assert "1 not checked" in run.stdout.splitlines()[-1] and "skipped" not in run.stdout.splitlines()[-1], run.stdout
    assert "preflight NOT CHECKED, recorded in" in run.stdout
    shut = gate(cluster)
    assert shut.returncode == 1 and "could not check 1 items: tests/test_pre.py::test_pcie[thinkstationpgx-30] [command-failed]" in shut.stderr

    # JUnit: an error of type not-checked with its cause as the message; each finding a property.
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")}
    pcie = cases["test_pcie[thinkstationpgx-30]"]
    assert pcie.find("skipped") is None and pcie.find("failure") is None
    error = pcie.find("error")
    assert error.get("type") == "not-checked"
    assert error.get("message") == ("[command-failed] thinkstationpgx-30: could not check: `lspci -vv` exited 1; "
                                    "expected the command to succeed")
    props = [(p.get("name"), p.get("value")) for p in pcie.iter("property")]
    assert ("gb10check.stage", "preflight") in props
    assert json.loads(dict(props)["gb10check.finding"]) == {
        "code": "command-failed", "severity": "not-checked", "where": "thinkstationpgx-30", "seen": "`lspci -vv` exited 1",
        "expected": "the command to succeed", "fix": "run `lspci -vv` on thinkstationpgx-30 by hand and read its error"}
    suite_el = next(ET.parse(tmp_path / "junit.xml").getroot().iter("testsuite"))
    assert (suite_el.get("errors"), suite_el.get("failures"), suite_el.get("skipped")) == ("1", "0", "0")

    # findings.json: every check with its stage, outcome and findings by code and severity.
    data = json.loads((report_dir / "findings.json").read_text())
    assert data["schema"] == 1 and data["cluster_file"] == str(cluster) and data["cluster_sha256"] == stage.file_hash(cluster)
    assert data["complete_stages"] == ["preflight", "network"]
    by_id = {t["id"].split("::")[1]: t for t in data["tests"]}
    assert {k: (t["stage"], t["outcome"]) for k, t in by_id.items()} == {
        "test_driver[thinkstationpgx-30]": ("preflight", "passed"), "test_pcie[thinkstationpgx-30]": ("preflight", "not checked"),
        "test_clock[thinkstationpgx-30]": ("preflight", "warning"), "test_ping[thinkstationpgx-30]": ("network", "passed"),
        "test_mtu[thinkstationpgx-30]": ("network", "passed")}
    assert [(f["code"], f["severity"]) for f in by_id["test_clock[thinkstationpgx-30]"]["findings"]] == [("clock-skew", "warning")]
    assert cases["test_clock[thinkstationpgx-30]"].find("error") is None  # a warning is a pass with its finding

    # The waiver changes the file: the stages run again for it, and the gate shows the reason.
    waived = local_cluster(tmp_path, gate={"waive": [{"code": "command-failed", "reason": "lspci needs root here; read by hand"}]})
    assert pytest_run(suite, waived, bad="pcie").returncode == 1
    opened = gate(waived)
    assert opened.returncode == 0, opened.stderr
    assert ("gate: preflight: passed N min ago, a full run of this cluster file; 1 not checked, waived: command-failed "
            "(lspci needs root here; read by hand)") in opened.stderr.splitlines()
    # A failure is never waived.
    assert pytest_run(suite, waived, bad="pcie driver").returncode == 1
    assert gate(waived).returncode == 1


def test_helpers_that_change_the_cluster_ask_the_gate_first(tmp_path):
    cluster = local_cluster(tmp_path)
    for step in ("netplan", "ssh-keys", "sync", "compose-render", "hold-driver", "nm-release-qsfp", "deploy"):
        run = gate(cluster, step=step)
        assert run.returncode == 3, (step, run.stdout, run.stderr)
        assert run.stderr.startswith("gate: refused: preflight: no full run recorded"), (step, run.stderr)
    said = []
    assert stage.gate(cluster, 3600, override="links set up by hand, checks follow", say=said.append, step="netplan")
    log = (tmp_path / ".gb10check-overrides.log").read_text()
    assert "netplan" in log and "override: 'links set up by hand, checks follow'" in log and said[0].startswith("gate: OVERRIDDEN")


def test_every_check_carries_exactly_one_stage_marker(tmp_path):
    (tmp_path / "stagecount.py").write_text(
        "from gb10check.stage import STAGES\n"
        "def pytest_collection_finish(session):\n"
        "    for item in session.items:\n"
        "        print('STAGES', item.nodeid, ','.join(m.name for m in item.iter_markers() if m.name in STAGES))\n")
    run = run_pytest(["-p", "no:cacheprovider", "-p", "stagecount", "--collect-only", "-q", "--cluster=cluster.example.yaml"],
                     env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [l.split(" ") for l in run.stdout.splitlines() if l.startswith("STAGES ")]
    assert len(lines) > 50
    wrong = [(nodeid, stages) for _, nodeid, stages in lines if len(stages.split(",")) != 1 or not stages]
    assert wrong == []
