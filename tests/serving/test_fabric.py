"""Fabric only: after deploy, every established TCP connection from one node to another (ss on the node, as root; the
deployment's containers run on the host network, so their sockets are the node's) runs between the links' addresses.
The other node's management addresses are every address it has that is none of its links' (ip -j addr): the management
port, Wi-Fi, a docker bridge. SSH and the served API are management traffic and are not judged (gb10check/checks/fabric.py)."""

import pytest

from gb10check.checks import fabric
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.serving


@reads("tcp_sockets", "ip_addr")
def test_traffic_between_nodes_on_the_links(node_pair, cluster):
    a, b = node_pair
    mgmt, links = fabric.addresses_of(b.name, read(b, "ip_addr"), b.links)
    report(fabric.judge_fabric(f"{a.name}->{b.name}", read(a, "tcp_sockets"), mgmt, links, [l.netdev for l in a.links],
                               cluster.deploy.api_port))
