"""RDMA bandwidth per logical link: ib_write_bw server on one end, client on the other, over the link's device and GID."""

import pytest

from gb10check.checks import links
from gb10check.gather import ib_write_bw, parse_or_error
from gb10check.verdict import report

pytestmark = [pytest.mark.network, pytest.mark.slow]


def test_ib_write_bw(link_pair, cluster, measurements):
    lp = link_pair
    out = ib_write_bw(lp, cluster.expect)
    where = f"{lp.a.name}:{lp.a_link.rdma_device}->{lp.b.name}:{lp.b_link.rdma_device}"
    result, error = parse_or_error("perftest", out.stdout + out.stderr)
    if result is not None and not result.error and result.bw_average_gbps is not None:
        measurements("ib_write_bw", where, result.bw_average_gbps, "Gb/s")
    report(links.judge_bandwidth(where, lp.b.name, lp.a_link.rdma_device, result, error, cluster.expect.min_ib_write_bw_gbps))
