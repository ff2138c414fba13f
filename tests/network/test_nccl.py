"""NCCL across the nodes (where nccl-tests is installed): bus bandwidth over RoCE, not the socket fallback."""

import pytest

from gb10check.checks import nccl
from gb10check.gather import nccl_all_gather, parse_or_error
from gb10check.remedies import Code
from gb10check.verdict import not_checked, report

pytestmark = [pytest.mark.network, pytest.mark.slow]


def test_nccl_all_gather(cluster, head, measurements):
    missing, hca, _, out = nccl_all_gather(cluster, head)
    if missing:
        not_checked(Code.TOOL_MISSING, head.name, f"{' and '.join(f'`{m}`' for m in missing)} not on PATH",
                    "MPI and NVIDIA's nccl-tests, to measure NCCL bus bandwidth", tool=" and ".join(missing),
                    package="MPI (openmpi-bin) and NVIDIA's nccl-tests built with MPI=1")
    text = out.stdout + out.stderr
    where = f"{head.name}: all_gather_perf x{len(cluster.nodes)}"
    result, _ = parse_or_error("nccl_tests", text)
    if result is not None and result.busbw_gbps is not None:
        measurements("nccl all_gather busbw", where, result.busbw_gbps, "Gb/s")
    report(nccl.judge_run(where, out.rc, text, result, cluster.expect, hca=hca))
