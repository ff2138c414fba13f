"""How a check reports: what it saw, what it expected, where, and the fix; warnings apart.

    report([Finding(Code.DRIVER_MISMATCH, "thinkstationpgx-32", seen="kernel module 580.159.03",
                    expected="user-mode driver 580.173.02")])

fails the test with

    [driver-mismatch] thinkstationpgx-32: saw kernel module 580.159.03; expected user-mode driver 580.173.02
      fix: reboot thinkstationpgx-32 so the loaded module matches the installed driver
"""

import warnings
from dataclasses import dataclass, field

import pytest

from .remedies import Code, fix


class Degraded(UserWarning):
    """Usable but below the profile (a link at 100G where 200G is expected): shown in the warnings summary."""


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
    def text(self) -> str:
        return f"[{self.code.value}] {self.where}: saw {self.seen}; expected {self.expected}\n  fix: {fix(self.code, **self.params)}"


def report(findings: list[Finding]) -> None:
    """Warn for each warning, then fail once with every failure (each its own paragraph)."""
    for f in findings:
        if f.warning:
            warnings.warn(Degraded(f.text), stacklevel=2)
    failures = [f.text for f in findings if not f.warning]
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)
