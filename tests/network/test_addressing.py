"""Addressing: netplan file, configured addresses, one subnet per logical link, routes and MTU."""

import pytest

from gb10check.checks import links
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.network


@reads("netplan_mode", "netplan_content")
def test_netplan_file(node, cluster):
    report(links.judge_netplan(node.name, cluster.expect.netplan_file, read(node, "netplan_mode"),
                               read(node, "netplan_content") or "", node.links))


@reads("ip_addr")
def test_link_address(node_link):
    node, link = node_link
    report(links.judge_address(node.name, link, read(node, "ip_addr")))


@reads("ip_addr")
def test_links_on_distinct_subnets(node):
    report(links.judge_distinct_subnets(node.name, node.links, read(node, "ip_addr")))


@reads("default_routes", "ip_addr")
def test_no_default_route_on_qsfp(node):
    report(links.judge_default_route(node.name, read(node, "default_routes"), node.links, read(node, "ip_addr")))


@reads("mtu")
def test_mtu_equal(link_pair):
    lp = link_pair
    report(links.judge_mtu(lp.a.name, lp.a_link, read(lp.a, "mtu", lp.a_link.netdev), lp.b.name, lp.b_link,
                           read(lp.b, "mtu", lp.b_link.netdev)))


@reads("route_to")
def test_route_to_peer(path):
    dev, error = read(path.src, "route_to", path.dst_link.ip)
    report(links.judge_route(path.src.name, path.src_link, path.dst.name, path.dst_link, dev, error))
