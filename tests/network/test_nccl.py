"""NCCL across the nodes (where nccl-tests is installed): bus bandwidth over RoCE, not the socket fallback."""

import pytest

from gb10check.checks import nccl
from gb10check.gather import parse_or_error
from gb10check.verdict import report

pytestmark = [pytest.mark.network, pytest.mark.slow]


def test_nccl_all_gather(cluster, head, measurements):
    missing = [tool for tool in ("mpirun", "all_gather_perf") if head.run(f"command -v {tool}").rc != 0]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH on {head.name}: install MPI and build NVIDIA's nccl-tests to measure "
                    "NCCL bus bandwidth")
    nodes = cluster.by_rank()
    hosts = ",".join(f"{n.links[0].ip}:1" for n in nodes)
    hca = "=" + ",".join(l.rdma_device for l in cluster.head.links if l.rdma_device)
    command = (f"mpirun -np {len(nodes)} -H {hosts} -x NCCL_DEBUG=INFO -x NCCL_IB_HCA={hca} "
               f"-x NCCL_IB_GID_INDEX={cluster.expect.roce_gid_index} -x NCCL_SOCKET_IFNAME={cluster.head.links[0].netdev} "
               "all_gather_perf -b 1G -e 1G -f 2")
    out = head.run(command, timeout=600)
    text = out.stdout + out.stderr
    where = f"{head.name}: all_gather_perf x{len(nodes)}"
    result, _ = parse_or_error("nccl_tests", text)
    if result is not None and result.busbw_gbps is not None:
        measurements("nccl all_gather busbw", where, result.busbw_gbps, "Gb/s")
    report(nccl.judge_run(where, out.rc, text, result, cluster.expect, hca=hca))
