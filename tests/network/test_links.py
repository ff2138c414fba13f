"""Links: each configured RDMA device maps to its netdev and is Up, its port ACTIVE/LinkUp, at the profile's speed."""

import pytest

from gb10check.checks import links
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.network


@reads("ibdev2netdev")
def test_rdma_link_up(node_link):
    node, link = node_link
    report(links.judge_ibdev2netdev(node.name, [link], read(node, "ibdev2netdev")))


@reads("ib_sysfs")
def test_rdma_port_active(node_link):
    node, link = node_link
    report(links.judge_port(node.name, link, read(node, "ib_sysfs")))


@reads("ibdev2netdev")
def test_same_up_links_as_head(follower, head):
    mine, heads = (links.up_links(read(n, "ibdev2netdev")) for n in (follower, head))
    report(links.judge_same_up_links(follower.name, head.name, mine, heads))


@reads("ethtool")
def test_link_speed(node_link, cluster):
    node, link = node_link
    report(links.judge_speed(node.name, link, read(node, "ethtool", link.netdev), cluster.expect.link_speed_mbps))
