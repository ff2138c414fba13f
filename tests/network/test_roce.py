"""RoCE GID: the configured index on each RDMA device is RoCE v2 and holds the node's IPv4 address."""

import pytest

from gb10check.checks import links
from gb10check import gather
from gb10check.verdict import report

pytestmark = pytest.mark.network


def test_roce_gid(node_link, cluster):
    node, link = node_link
    ports = gather.parsed(node, "ib_sysfs", gather.SYSFS_IB)
    port = next((p for p in ports if p.rdma_device == link.rdma_device), None)
    if port is not None and port.port_state != "ACTIVE":
        pytest.skip(f"cannot check the GID table of {node.name} {link.rdma_device}: its port is {port.port_state} and a down "
                    "port holds no IP-based GIDs (see test_rdma_port_active)")
    report(links.judge_gid(node.name, link, ports, cluster.expect.roce_gid_index, cluster.expect.roce_gid_type))
