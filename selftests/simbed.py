"""The simulated cluster as a self-test bed: bring it up, run the suite against it, read the report."""

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def require_sim() -> None:
    """Root and the sim's tools are needed. In CI a missing piece is a failure, not a skip."""
    missing = [t for t in ("ip", "unshare", "nsenter", "/usr/sbin/sshd", "ufw", "/usr/bin/python3") if not shutil.which(t)]
    problem = "needs root" if os.geteuid() != 0 else (f"missing {', '.join(missing)}" if missing else None)
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"the simulated cluster {problem} (.ci/run installs the packages and runs as root)")
        pytest.skip(f"the simulated cluster {problem}: run as root with iproute2, openssh-server and ufw installed")


@dataclass
class Outcome:
    outcome: str  # passed | failed | skipped | error
    message: str


@dataclass
class SuiteRun:
    results: dict[str, Outcome]
    stdout: str


def run_suite(cluster: Path, *args: str, timeout: int = 300) -> SuiteRun:
    """pytest on tests/ against the cluster, as a user runs it; outcome and message per test id."""
    report = cluster.parent / "selftest-junit.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--cluster={cluster}",
                           f"--junitxml={report}", "-o", "junit_family=xunit1", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if proc.returncode not in (0, 1):
        raise AssertionError(f"pytest exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    results = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('file')}::{case.get('name')}"
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            el = case.find(kind)
            if el is not None:
                outcome = "failed" if kind == "failure" else kind
                message = (el.get("message") or "") + "\n" + (el.text or "")
        results[test_id] = Outcome(outcome, message)
    return SuiteRun(results, proc.stdout)
