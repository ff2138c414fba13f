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
the command that failed and how to check by hand, counted apart, and the gate refuses it.
"""

import warnings
from dataclasses import dataclass, field

import pytest

from .remedies import NOT_CHECKED, Code, fix


class Degraded(UserWarning):
    """Usable but below the profile (a link at 100G where 200G is expected): shown in the warnings summary."""


class NotChecked(pytest.skip.Exception):
    """We could not look. Raised through `report()` or `not_checked()`; the plugin reports it as NOT CHECKED."""


@dataclass
class Finding:
    code: Code
    where: str
    seen: str
    expected: str
    warning: bool = False  # degraded but usable
    params: dict = field(default_factory=dict)

    def __init__(self, code: Code, where: str, seen: str, expected: str, warning: bool = False, **params):
        self.code, self.where, self.seen, self.expected, self.warning = code, where, seen, expected, warning
        self.params = {"node": where.split(":")[0].split("->")[0], **params}

    @property
    def not_checked(self) -> bool:
        return self.code in NOT_CHECKED

    @property
    def text(self) -> str:
        if self.not_checked:
            return (f"[{self.code.value}] {self.where}: could not check: {self.seen}; expected {self.expected}\n"
                    f"  check by hand: {fix(self.code, **self.params)}")
        return f"[{self.code.value}] {self.where}: saw {self.seen}; expected {self.expected}\n  fix: {fix(self.code, **self.params)}"


def report(findings: list[Finding]) -> None:
    """Warn for each warning; fail once with every failure; else, if anything could not be checked, say so."""
    for f in findings:
        if f.warning and not f.not_checked:
            warnings.warn(Degraded(f.text), stacklevel=2)
    failures = [f.text for f in findings if not f.warning and not f.not_checked]
    unchecked = [f.text for f in findings if f.not_checked]
    if failures:
        pytest.fail("\n".join(failures + unchecked), pytrace=False)
    if unchecked:
        raise NotChecked("\n".join(unchecked))


def not_checked(code: Code, where: str, why: str, expected: str, **params) -> None:
    """Stop this check as not checked: `why` says what went wrong, params fill the code's how-to-check-by-hand text."""
    report([Finding(code, where, why, expected, **params)])
