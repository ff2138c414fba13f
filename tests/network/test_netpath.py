"""The network path: no NetworkManager DHCP profile on a QSFP port; the RoCE active MTU is what the netdev's MTU allows."""

import pytest

from gb10check.checks import netpath
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.network


@reads("nm_profiles", "ibdev2netdev")
def test_no_dhcp_on_qsfp(node):
    profiles = read(node, "nm_profiles")
    # NetworkManager absent or stopped lists no profile to run DHCP with: the judge finds none, which is a pass.
    running = profiles.networkmanager == "running"
    qsfp = netpath.qsfp_netdevs(node.spec.links, read(node, "ibdev2netdev")) if running else set()
    report(netpath.judge_nm_dhcp(node.name, profiles, qsfp))


@reads("ibv_devinfo", "mtu")
def test_roce_mtu(node_link):
    node, link = node_link
    report(netpath.judge_roce_port_mtu(node.name, link, read(node, "mtu", link.netdev), read(node, "ibv_devinfo")))
