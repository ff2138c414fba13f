"""RDMA bandwidth per logical link: ib_write_bw server on one end, client on the other, over the link's device and GID."""

import time

import pytest

from gb10check.checks import links
from gb10check.gather import parse_or_error, port_lock
from gb10check.verdict import report

pytestmark = [pytest.mark.network, pytest.mark.slow]


def test_ib_write_bw(link_pair, cluster, measurements):
    lp, expect = link_pair, cluster.expect
    duration = expect.ib_write_bw_duration_s
    # One port per link of the server node: the links of one pair can run at once under xdist.
    port = expect.perftest_port + [l.netdev for l in lp.b.links].index(lp.b_link.netdev)
    gid = expect.roce_gid_index
    log = f"/tmp/gb10check-ibw-{port}.log"
    with port_lock(lp.b.name, port):  # never two listeners on one node and port: another link's server, the probes
        lp.b.run(f"nohup timeout {duration + 60} ib_write_bw -d {lp.b_link.rdma_device} -x {gid} -p {port} -D {duration} -F "
                 f"--report_gbits > {log} 2>&1 &")
        try:
            for _ in range(30):  # the server prints its banner once it listens
                if "Waiting for client" in lp.b.run(f"cat {log}").stdout:
                    break
                time.sleep(0.1)
            out = lp.a.run(f"ib_write_bw -d {lp.a_link.rdma_device} -x {gid} -p {port} -D {duration} -F --report_gbits "
                           f"{lp.b_link.ip}", timeout=duration + 30)
        finally:
            lp.b.run(f"pkill -f 'ib_write_bw .*-p {port} ' || true")  # the server is always cleaned up
    where = f"{lp.a.name}:{lp.a_link.rdma_device}->{lp.b.name}:{lp.b_link.rdma_device}"
    result, error = parse_or_error("perftest", out.stdout + out.stderr)
    if result is not None and not result.error and result.bw_average_gbps is not None:
        measurements("ib_write_bw", where, result.bw_average_gbps, "Gb/s")
    report(links.judge_bandwidth(where, lp.b.name, lp.a_link.rdma_device, result, error, expect.min_ib_write_bw_gbps))
