"""Cabling: each link reaches the node and port the topology says (pair, ring, switch), found over IPv6 link-local."""

import pytest

from gb10check.checks import cabling
from gb10check.facts.ip import link_local_owners
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.network


@reads("port_peers", "ip_addr")
def test_cabling(node_link, cluster):
    node, link = node_link
    owners = {}
    for other in cluster.nodes:
        owners.update(link_local_owners(other.name, read(node.fleet.node(other.name), "ip_addr")))
    expected = [(n.name, l.netdev) for n, l in cluster.expected_peers(node.spec, link)]
    report(cabling.judge_cabling((node.name, link.netdev), cluster.cabling or "pair", expected,
                                 read(node, "port_peers", link.netdev), owners))
