"""RoCE GID: the configured index on each RDMA device is RoCE v2 and holds the node's IPv4 address."""

import pytest

from gb10check.checks import links
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.network


@reads("ib_sysfs")
def test_roce_gid(node_link, cluster):
    node, link = node_link
    report(links.judge_gid(node.name, link, read(node, "ib_sysfs"), cluster.expect.roce_gid_index, cluster.expect.roce_gid_type))
