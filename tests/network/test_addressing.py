"""Addressing: netplan file, configured addresses, one subnet per logical link, routes and MTU."""

import json

import pytest

from gb10check.checks import links
from gb10check.gather import parsed
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.network


def test_netplan_file(node, cluster):
    path = cluster.expect.netplan_file
    mode = node.run(f"stat -c %a {path}", sudo=True)
    if mode.rc != 0:
        report([Finding(Code.NETPLAN_MISSING, node.name, f"no {path}", f"{path} describing the QSFP links", path=path)])
    findings = []
    if mode.stdout.strip() != "600":
        findings.append(Finding(Code.NETPLAN_MODE, node.name, f"{path} mode {mode.stdout.strip()}", "mode 600", path=path))
    content = node.output(f"cat {path}", sudo=True)
    findings += [Finding(Code.NETPLAN_CONTENT, node.name, f"{path} does not mention {l.netdev}", f"{l.netdev} configured",
                         path=path, netdev=l.netdev) for l in node.links if l.netdev not in content]
    report(findings)


def test_link_address(node_link):
    node, link = node_link
    report(links.judge_address(node.name, link, parsed(node, "ip_j_addr", f"ip -j addr show dev {link.netdev}")))


def test_links_on_distinct_subnets(node):
    report(links.judge_distinct_subnets(node.name, node.links, parsed(node, "ip_j_addr", "ip -j addr")))


def test_no_default_route_on_qsfp(node):
    routes = json.loads(node.output("ip -j route show default") or "[]")
    qsfp = {l.netdev for l in node.links}
    report([Finding(Code.DEFAULT_ROUTE_QSFP, node.name, f"default via {r.get('gateway', '?')} dev {r['dev']}",
                    "no default route through a QSFP link", netdev=r["dev"]) for r in routes if r.get("dev") in qsfp])


def test_mtu_equal(link_pair):
    lp = link_pair
    mtus = {f"{n.name}:{l.netdev}": int(n.output(f"cat /sys/class/net/{l.netdev}/mtu"))
            for n, l in ((lp.a, lp.a_link), (lp.b, lp.b_link))}
    a, b = mtus.values()
    report([] if a == b else [Finding(Code.MTU_MISMATCH, f"{lp.a.name}:{lp.a_link.netdev}",
                                      ", ".join(f"{k} MTU {v}" for k, v in mtus.items()), "the same MTU at both ends",
                                      netdev=lp.a_link.netdev)])


def test_route_to_peer(path):
    out = path.src.run(f"ip -j route get {path.dst_link.ip}")
    dev = json.loads(out.stdout)[0].get("dev") if out.rc == 0 and out.stdout.strip() else None
    report([] if dev == path.src_link.netdev else
           [Finding(Code.ROUTE_WRONG_DEV, f"{path.src.name}:{path.src_link.netdev}",
                    f"route to {path.dst_link.ip} via {dev or 'nothing: ' + (out.stderr.strip() or 'no route')}",
                    f"via {path.src_link.netdev}", netdev=path.src_link.netdev, peer=f"{path.dst.name} {path.dst_link.ip}")])
