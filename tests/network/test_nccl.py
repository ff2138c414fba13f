"""NCCL across the nodes (where nccl-tests is installed): bus bandwidth over RoCE, not the socket fallback."""

import pytest

from gb10check.checks.nccl import judge_nccl
from gb10check.facts import nccl
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = [pytest.mark.network, pytest.mark.slow]


def test_nccl_all_gather(cluster, head, measurements):
    missing = [tool for tool in ("mpirun", "all_gather_perf") if head.run(f"command -v {tool}").rc != 0]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH on {head.name}: install MPI and build NVIDIA's nccl-tests to measure "
                    "NCCL bus bandwidth")
    nodes = sorted(cluster.nodes, key=lambda n: n.rank)
    hosts = ",".join(f"{n.links[0].ip}:1" for n in nodes)
    hca = "=" + ",".join(l.rdma_device for l in cluster.head.links if l.rdma_device)
    command = (f"mpirun -np {len(nodes)} -H {hosts} -x NCCL_DEBUG=INFO -x NCCL_IB_HCA={hca} "
               f"-x NCCL_IB_GID_INDEX={cluster.expect.roce_gid_index} -x NCCL_SOCKET_IFNAME={cluster.head.links[0].netdev} "
               "all_gather_perf -b 1G -e 1G -f 2")
    out = head.run(command, timeout=600)
    text = out.stdout + out.stderr
    where = f"{head.name}: all_gather_perf x{len(nodes)}"
    try:
        result = nccl.parse(text)
    except nccl.ParseError:
        result = None
    if result is None or (out.rc != 0 and not result.error):
        lines = [l for l in text.splitlines() if "WARN" in l or "failure" in l or "unable" in l] or text.strip().splitlines()[-1:]
        report([Finding(Code.NCCL_RUN, where, f"exit {out.rc}: {' | '.join(lines)[:300]}", "an nccl-tests result table")])
    if result.busbw_gbps is not None:
        measurements("nccl all_gather busbw", where, result.busbw_gbps, "Gb/s")
    report(judge_nccl(result, cluster.expect, where, hca=hca))
