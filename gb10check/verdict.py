"""How a check reports: what it saw, what it expected, where, and the fix; warnings and "not checked" apart.

    report([Finding(Code.DRIVER_MISMATCH, "thinkstationpgx-32", seen="kernel module 580.159.03",
                    expected="user-mode driver 580.173.02")])

fails the test with

    [driver-mismatch] thinkstationpgx-32: saw kernel module 580.159.03; expected user-mode driver 580.173.02
      fix: reboot thinkstationpgx-32 so the loaded module matches the installed driver

Three outcomes besides a pass: a failure (the cluster is wrong), a warning (degraded but usable:
`Degraded`, shown in the warnings summary), and *not checked* (we could not look: an unreachable
node, a command that timed out, output we could not read, a dry run that could not run). A not
checked item is never a pass and never blamed on the cluster: it is reported as NOT CHECKED with
the command that failed and how to check by hand, counted apart, and the gate refuses it (unless the
cluster file waives its code). Each finding is also data (`as_dict()`: code, severity, where, seen,
expected, fix), carried on what report() raises or warns, for the plugin to record.
"""

import contextlib
import warnings
from dataclasses import dataclass, field

import pytest

from .remedies import NOT_CHECKED, Code, fix


SEVERITIES = ("failure", "warning", "not-checked")


class Degraded(UserWarning):
    """Usable but below the profile (a link at 100G where 200G is expected): shown in the warnings summary.

    `finding` is the Finding it warns of (its text is the warning's only argument, so pytest-xdist can rebuild it)."""

    def __init__(self, text: str, finding: "Finding | None" = None):
        super().__init__(text)
        self.finding = finding


class NotChecked(pytest.fail.Exception):
    """We could not look. Raised through `report()` or `not_checked()`, with its findings; to pytest a failure (the run
    exits 1), which the plugin reports as NOT CHECKED (in JUnit an error of type not-checked), never a skip."""

    def __init__(self, msg: str, findings: "list[Finding] | None" = None):
        super().__init__(msg, pytrace=False)
        self.findings = list(findings or [])


@dataclass
class Finding:
    code: Code
    where: str
    seen: str
    expected: str
    warning: bool = False  # degraded but usable
    params: dict = field(default_factory=dict)
    unchecked: bool = False  # not checked though its code is a failure elsewhere (a node that cannot be reached: REACH)

    def __init__(self, code: Code, where: str, seen: str, expected: str, warning: bool = False, unchecked: bool = False,
                 **params):
        self.code, self.where, self.seen, self.expected, self.warning = code, where, seen, expected, warning
        self.unchecked = unchecked
        self.params = {"node": where.split(":")[0].split("->")[0], **params}

    @property
    def not_checked(self) -> bool:
        return self.unchecked or self.code in NOT_CHECKED

    @property
    def severity(self) -> str:
        return "not-checked" if self.not_checked else "warning" if self.warning else "failure"

    def as_dict(self) -> dict:
        """The finding as data (findings.json, JUnit properties): code, severity, where, seen, expected, fix."""
        return {"code": self.code.value, "severity": self.severity, "where": self.where, "seen": self.seen,
                "expected": self.expected, "fix": fix(self.code, **self.params)}

    @property
    def text(self) -> str:
        if self.not_checked:
            return (f"[{self.code.value}] {self.where}: could not check: {self.seen}; expected {self.expected}\n"
                    f"  check by hand: {fix(self.code, **self.params)}")
        return f"[{self.code.value}] {self.where}: saw {self.seen}; expected {self.expected}\n  fix: {fix(self.code, **self.params)}"


_listeners: list[list[Finding]] = []


@contextlib.contextmanager
def recording():
    """Collect the warnings report() gives while the block runs (the plugin wraps each test's setup and call in it)."""
    found: list[Finding] = []
    _listeners.append(found)
    try:
        yield found
    finally:
        _listeners.remove(found)


def report(findings: list[Finding]) -> None:
    """Warn for each warning; fail once with every failure; else, if anything could not be checked, say so.

    The findings travel as data: the raised exception's `findings` (pytest's Failed, or NotChecked) and each warning's
    `finding`, also handed to every `recording()` block open now."""
    for f in findings:
        if f.warning and not f.not_checked:
            for found in _listeners:
                found.append(f)
            warnings.warn(Degraded(f.text, f), stacklevel=2)
    failures = [f for f in findings if not f.warning and not f.not_checked]
    unchecked = [f for f in findings if f.not_checked]
    if failures:
        exc = pytest.fail.Exception("\n".join(f.text for f in failures + unchecked), pytrace=False)
        exc.findings = failures + unchecked
        raise exc
    if unchecked:
        raise NotChecked("\n".join(f.text for f in unchecked), unchecked)


def not_checked(code: Code, where: str, why: str, expected: str, **params) -> None:
    """Stop this check as not checked: `why` says what went wrong, params fill the code's how-to-check-by-hand text."""
    report([Finding(code, where, why, expected, **params)])
