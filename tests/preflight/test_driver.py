"""Driver parity: the loaded kernel module equals the user-mode driver on each node, and every node runs rank 0's version."""

import pytest

from gb10check.checks import host
from gb10check.gather import text
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.preflight

PROC = "cat /proc/driver/nvidia/version"
QUERY = "nvidia-smi --query-gpu=driver_version --format=csv,noheader"


def test_driver_parity(node):
    report(host.judge_driver(node.name, text(node, PROC), text(node, QUERY)))


def test_driver_same_as_head(follower, head):
    # The installed (user-mode) driver: a node waiting for its reboot still has the right one installed.
    versions = {n.name: host.installed_driver(text(n, QUERY)) for n in (head, follower)}
    for name, version in versions.items():
        if version is None:
            pytest.fail(f"{name}: nvidia-smi reports no driver version (see test_driver_parity)", pytrace=False)
    mine, heads = versions[follower.name], versions[head.name]
    report([] if mine == heads else [Finding(Code.DRIVER_DIFFERS, follower.name, f"driver {mine}", f"driver {heads} as on {head.name}",
                                             head=head.name)])
