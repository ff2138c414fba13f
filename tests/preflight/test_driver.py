"""Driver parity: the loaded kernel module equals the user-mode driver on each node, every node runs rank 0's version,
and the version the profile names (expect.driver_version) when it names one."""

import pytest

from gb10check.checks import host
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


@reads("driver_module", "driver_query")
def test_driver_parity(node):
    report(host.judge_driver(node.name, read(node, "driver_module"), read(node, "driver_query")))


@reads("driver_query")
def test_driver_same_as_head(follower, head):
    mine, heads = (host.installed_driver(read(n, "driver_query")) for n in (follower, head))
    report(host.judge_driver_same(follower.name, head.name, mine, heads))


@reads("driver_query")
def test_driver_version(node, cluster):
    if cluster.expect.driver_version is None:
        pytest.skip("the profile names no driver version (expect.driver_version)")
    report(host.judge_driver_profile(node.name, host.installed_driver(read(node, "driver_query")), cluster.expect.driver_version))
