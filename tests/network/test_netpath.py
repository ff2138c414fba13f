"""The network path: no NetworkManager DHCP profile on a QSFP port; the RoCE active MTU is what the netdev's MTU allows."""

import pytest

from gb10check import gather
from gb10check.checks import netpath
from gb10check.verdict import report

pytestmark = pytest.mark.network


def qsfp_netdevs(node) -> set[str]:
    """The cluster file's QSFP netdevs and every other ConnectX netdev ibdev2netdev names (the unused ports too)."""
    mapped, _ = gather.parse_or_error("ibdev2netdev", gather.result(node, gather.IBDEV2NETDEV).stdout)
    return netpath.qsfp_netdevs(node.spec.links, mapped)


def test_no_dhcp_on_qsfp(node):
    profiles = gather.parsed(node, "nmcli_profiles", gather.NM_PROFILES)
    if profiles.networkmanager != "running":
        pytest.skip(f"{node.name}: NetworkManager {profiles.networkmanager}: no NetworkManager profile can run DHCP on a QSFP port")
    report(netpath.judge_nm_dhcp(node.name, profiles, qsfp_netdevs(node)))


def test_roce_mtu(node_link):
    node, link = node_link
    out = gather.result(node, gather.IBV_DEVINFO)
    if out.rc == 127:
        pytest.skip(f"{node.name}: ibv_devinfo is not installed (sudo apt install ibverbs-utils)")
    hcas = gather.parsed(node, "ibv_devinfo", gather.IBV_DEVINFO)
    port = next((p for h in hcas if h.rdma_device == link.rdma_device for p in h.ports), None)
    if port is None or port.port_state != "ACTIVE":
        pytest.skip(f"{node.name}: {link.rdma_device} has no ACTIVE port in ibv_devinfo (see test_rdma_port_active)")
    report(netpath.judge_roce_mtu(node.name, link, int(gather.output(node, gather.mtu(link.netdev))), port.active_mtu))
