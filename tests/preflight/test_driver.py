"""Driver parity: the loaded kernel module equals the user-mode driver on each node, every node runs rank 0's version,
and the version the profile names (expect.driver_version) when it names one."""

import pytest

from gb10check import gather
from gb10check.checks import host
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def test_driver_parity(node):
    report(host.judge_driver(node.name, gather.text(node, gather.PROC_DRIVER), gather.text(node, gather.DRIVER_QUERY)))


def test_driver_same_as_head(follower, head):
    mine, heads = (host.installed_driver(gather.text(n, gather.DRIVER_QUERY)) for n in (follower, head))
    report(host.judge_driver_same(follower.name, head.name, mine, heads))


def test_driver_version(node, cluster):
    if cluster.expect.driver_version is None:
        pytest.skip("the profile names no driver version (expect.driver_version)")
    report(host.judge_driver_profile(node.name, host.installed_driver(gather.text(node, gather.DRIVER_QUERY)),
                                     cluster.expect.driver_version))
