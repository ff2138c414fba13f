"""RDMA port error counters: link_downed, symbol_error and port_rcv_errors stay 0 on every QSFP device since boot."""

import pytest

from gb10check import gather
from gb10check.checks import platform
from gb10check.verdict import report

pytestmark = pytest.mark.network


def test_rdma_error_counters(node):
    counters = platform.read_counters(gather.output(node, gather.RDMA_COUNTERS))
    devices = [link.rdma_device for link in node.spec.links]
    if not any(d in devices for d, _, _ in counters):
        pytest.skip(f"{node.name}: no error counters under /sys/class/infiniband/{{{','.join(devices)}}}/ports/*/counters")
    report(platform.judge_rdma_counters(node.name, counters, devices))
