"""RDMA port error counters: link_downed, symbol_error and port_rcv_errors stay 0 on every QSFP device since boot."""

import pytest

from gb10check.checks import platform
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.network


@reads("rdma_counters")
def test_rdma_error_counters(node):
    report(platform.judge_rdma_counters(node.name, read(node, "rdma_counters"), [link.rdma_device for link in node.spec.links]))
