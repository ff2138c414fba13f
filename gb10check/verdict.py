"""How a check reports: what it saw, what it expected, where, and the fix; warnings apart.

    fail(node.name, seen="kernel module 580.159.03", expected="user-mode driver 580.173.02",
         fix="reboot thinkstationpgx-32 so the loaded module matches the installed driver")

prints in the report as

    thinkstationpgx-32: kernel module 580.159.03 != expected user-mode driver 580.173.02
      fix: reboot thinkstationpgx-32 so the loaded module matches the installed driver
"""

import warnings

import pytest


class Degraded(UserWarning):
    """Usable but below the profile (a link at 100G where 200G is expected). Shown in the warnings summary."""


def message(where: str, seen: str, expected: str, fix: str) -> str:
    return f"{where}: saw {seen}; expected {expected}\n  fix: {fix}"


def fail(where: str, seen: str, expected: str, fix: str) -> None:
    pytest.fail(message(where, seen, expected, fix), pytrace=False)


def warn(where: str, seen: str, expected: str, fix: str) -> None:
    warnings.warn(Degraded(message(where, seen, expected, fix)), stacklevel=2)
