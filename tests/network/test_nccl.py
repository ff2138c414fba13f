"""NCCL over RoCE: only where nccl-tests is installed on the nodes."""

import pytest

pytestmark = [pytest.mark.network, pytest.mark.slow]


def test_nccl_all_gather(head):
    if head.run("command -v all_gather_perf").rc != 0:
        pytest.skip(f"nccl-tests is not installed on {head.name} (all_gather_perf not on PATH); build it from NVIDIA's "
                    "nccl-tests with MPI to measure bus bandwidth")
    pytest.skip("running nccl-tests across nodes (mpirun host list, NCCL_IB_HCA) is not implemented yet; "
                "run NVIDIA's playbook by hand and check `gb10check parse nccl_tests`")
