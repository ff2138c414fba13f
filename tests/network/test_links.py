"""Links: each configured RDMA device maps to its netdev and is Up, its port ACTIVE/LinkUp, at the profile's speed."""

import pytest

from gb10check.checks import links
from gb10check.gather import SYSFS_IB, parsed
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.network


def test_rdma_link_up(node_link):
    node, link = node_link
    report(links.judge_ibdev2netdev(node.name, [link], parsed(node, "ibdev2netdev", "ibdev2netdev")))


def test_rdma_port_active(node_link):
    node, link = node_link
    report(links.judge_port(node.name, link, parsed(node, "ib_sysfs", SYSFS_IB)))


def test_same_up_links_as_head(follower, head):
    mine = links.up_links(parsed(follower, "ibdev2netdev", "ibdev2netdev"))
    heads = links.up_links(parsed(head, "ibdev2netdev", "ibdev2netdev"))
    report([] if mine == heads else [Finding(Code.UP_LINKS_DIFFER, follower.name, f"Up: {', '.join(sorted(mine)) or 'none'}",
                                             f"Up: {', '.join(sorted(heads)) or 'none'} as on {head.name}")])


def test_link_speed(node_link, cluster):
    node, link = node_link
    report(links.judge_speed(node.name, link, parsed(node, "ethtool", f"ethtool {link.netdev}", sudo=True),
                             cluster.expect.link_speed_mbps))
