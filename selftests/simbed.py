"""The simulated cluster as a self-test bed: bring it up, run the suite against it, read the report."""

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from .inner_pytest import run_pytest


REPO = Path(__file__).resolve().parent.parent


def require_sim() -> None:
    """Root and the sim's tools are needed. In CI a missing piece is a failure, not a skip."""
    missing = [t for t in ("ip", "unshare", "nsenter", "/usr/sbin/sshd", "ufw", "/usr/bin/python3") if not shutil.which(t)]
    problem = "needs root" if os.geteuid() != 0 else (f"missing {', '.join(missing)}" if missing else None)
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"the simulated cluster {problem} (.ci/run installs the packages and runs as root)")
        pytest.skip(f"the simulated cluster {problem}: run as root with iproute2, openssh-server and ufw installed")


def require_provisioned_sim() -> None:
    """As require_sim, and the sim's vLLM and model must be provisioned (.ci/run does it before the self-tests)."""
    from gb10check.sim import provision

    require_sim()
    if not provision.ready():
        pytest.fail("the sim needs `gb10check sim provision` (.ci/run runs it before the self-tests)")


def step(name: str, cluster: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """`gb10check NAME --cluster=CLUSTER ARGS` as a user runs it; wide columns so rich does not fold its lines."""
    return subprocess.run([sys.executable, "-m", "gb10check", name, f"--cluster={cluster}", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, "COLUMNS": "250"})


def script(name: str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """`scripts/NAME ARGS` as a user runs it between the stages, with this Python first on the PATH (each script runs
    `python3 -m gb10check`: the self-tests' own environment, activated or not) and this tree's package; wide columns,
    as in step()."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(REPO), "COLUMNS": "250"}
    return subprocess.run([str(REPO / "scripts" / name), *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env=env)


@dataclass
class Outcome:
    outcome: str  # passed | failed | skipped | error | not checked
    message: str


@dataclass
class SuiteRun:
    results: dict[str, Outcome]
    stdout: str


def suite_args(cluster: Path, report: Path, *args: str) -> list[str]:
    """pytest's arguments for a run of tests/ against the cluster, its JUnit XML written to report."""
    # Without the self-tests' hypothesis plugin (a second of start-up each time; users do not have it).
    return ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q", f"--cluster={cluster}", f"--junitxml={report}",
            "-o", "junit_family=xunit1", *args]


def run_suite(cluster: Path, *args: str, timeout: int = 300) -> SuiteRun:
    """pytest on tests/ against the cluster, as a user runs it; outcome and message per test id."""
    report = cluster.parent / "selftest-junit.xml"
    proc = run_pytest(suite_args(cluster, report, *args), timeout=timeout)
    if proc.returncode not in (0, 1):
        raise AssertionError(f"pytest exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return SuiteRun(junit_outcomes(report), proc.stdout)


def junit_outcomes(report: Path) -> dict[str, Outcome]:
    """Outcome and message per test id from a run's JUnit XML (junit_family=xunit1: each testcase names its file)."""
    results = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('file')}::{case.get('name')}"
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            el = case.find(kind)
            if el is not None:
                outcome = "failed" if kind == "failure" else kind
                message = (el.get("message") or "") + "\n" + (el.text or "")
                if kind == "error" and el.get("type") == "not-checked":
                    outcome = "not checked"  # the plugin's own outcome, an error of type not-checked in JUnit
        results[test_id] = Outcome(outcome, message)
    return results


CODE = re.compile(r"\[([a-z0-9-]+)\] ")
PREREQUISITE = re.compile(r"^\[prerequisite-failed\] (\S+?)(?::\S+)?: could not check: .*\n  check by hand: fix what (test_\w+) "
                          r"reports on (\S+) first", re.S)


def prerequisite_failed_here(message: str, failed: dict[str, str]) -> bool:
    """A not-checked item whose cause is another check's failure on the same node, in the same run."""
    found = PREREQUISITE.match(message.strip())
    return bool(found) and any(f"::{found[2]}[" in test_id and found[3] in test_id for test_id in failed)


def judge_scenario(name: str, expected: dict[str, str], results: dict[str, Outcome], warned: set[str] = frozenset()) -> None:
    """A fault scenario's run: exactly the expected checks failed, each matching its pattern; every skip states its
    reason; nothing could not look (but a check whose prerequisite is one of those failures, naming it); and the codes
    its failures show, with the codes warned in the run's summary, are the ones the scenario declares it proves."""
    from gb10check.remedies import Code
    from gb10check.sim import scenarios

    failed = {k: v.message for k, v in results.items() if v.outcome in ("failed", "error")}
    assert set(failed) == set(expected), "\n".join(f"{k}: {failed.get(k, '(passed or skipped)')[:1500]}"
                                                     for k in sorted(set(failed) ^ set(expected)))
    for test_id, pattern in expected.items():
        assert re.search(pattern, failed[test_id]), f"{test_id}:\n{failed[test_id]}"
    skipped = {k: v.message for k, v in results.items() if v.outcome == "skipped"}
    assert all(m.strip() for m in skipped.values()), "every skip states its reason"
    # A fault is a failure, never "could not check": a stand-in or a real tool whose output we misread would show here.
    unchecked = {k: v.message for k, v in results.items() if v.outcome == "not checked"
                 if not prerequisite_failed_here(v.message, failed)}
    assert not unchecked, unchecked
    codes = {c.value for c in Code}
    proven = {f"{k.split('::')[1].split('[')[0]}:{c}" for k, v in results.items() if v.outcome == "failed"
              for c in CODE.findall(v.message) if c in codes}
    declared = set(scenarios.SCENARIOS[name].proves)
    assert proven <= declared, f"{name} fails with codes it does not declare: {sorted(proven - declared)}"
    assert {p for p in declared - proven if p.split(":")[1] not in warned} == set(), f"{name}: declared but not seen"
