"""Links: each configured RDMA device maps to its netdev and is Up, its port ACTIVE/LinkUp, at the profile's speed."""

import pytest

from gb10check import gather
from gb10check.checks import links
from gb10check.verdict import report

pytestmark = pytest.mark.network


def test_rdma_link_up(node_link):
    node, link = node_link
    report(links.judge_ibdev2netdev(node.name, [link], gather.parsed(node, "ibdev2netdev", gather.IBDEV2NETDEV)))


def test_rdma_port_active(node_link):
    node, link = node_link
    report(links.judge_port(node.name, link, gather.parsed(node, "ib_sysfs", gather.SYSFS_IB)))


def test_same_up_links_as_head(follower, head):
    mine, heads = (links.up_links(gather.parsed(n, "ibdev2netdev", gather.IBDEV2NETDEV)) for n in (follower, head))
    report(links.judge_same_up_links(follower.name, head.name, mine, heads))


def test_link_speed(node_link, cluster):
    node, link = node_link
    report(links.judge_speed(node.name, link, gather.parsed(node, "ethtool", gather.ethtool(link.netdev), sudo=True),
                             cluster.expect.link_speed_mbps))
