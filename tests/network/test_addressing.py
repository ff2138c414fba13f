"""Addressing: netplan file, configured addresses, one subnet per logical link, routes and MTU."""

import json

import pytest

from gb10check import gather
from gb10check.checks import links
from gb10check.verdict import report

pytestmark = pytest.mark.network


def test_netplan_file(node, cluster):
    path = cluster.expect.netplan_file
    mode = gather.result(node, gather.netplan_mode(path), sudo=True)
    content = gather.result(node, gather.cat(path), sudo=True).stdout
    report(links.judge_netplan(node.name, path, mode.stdout if mode.rc == 0 else None, content, node.links))


def test_link_address(node_link):
    node, link = node_link
    report(links.judge_address(node.name, link, gather.parsed(node, "ip_j_addr", gather.IP_ADDR)))


def test_links_on_distinct_subnets(node):
    report(links.judge_distinct_subnets(node.name, node.links, gather.parsed(node, "ip_j_addr", gather.IP_ADDR)))


def test_no_default_route_on_qsfp(node):
    routes = json.loads(gather.output(node, gather.DEFAULT_ROUTE) or "[]")
    report(links.judge_default_route(node.name, routes, node.links))


def test_mtu_equal(link_pair):
    lp = link_pair
    a, b = (int(gather.output(n, gather.mtu(l.netdev))) for n, l in ((lp.a, lp.a_link), (lp.b, lp.b_link)))
    report(links.judge_mtu(lp.a.name, lp.a_link, a, lp.b.name, lp.b_link, b))


def test_route_to_peer(path):
    out = gather.result(path.src, gather.route_to(path.dst_link.ip))
    dev = json.loads(out.stdout)[0].get("dev") if out.rc == 0 and out.stdout.strip() else None
    report(links.judge_route(path.src.name, path.src_link, path.dst.name, path.dst_link, dev, out.stderr.strip()))
