"""GPU and image canaries: a bf16 matmul in the deployment image timed with nvidia-smi sampling under it, a torch op and
a Triton kernel compiled and run in the image, and the NCCL library torch in the image really loads. The programs are
ours (gb10check/canary/), fed to the image's python3."""

import pytest

from gb10check.checks import compose, gpu, platform
from gb10check.gather import compute, fastest_compute, program, read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


@pytest.mark.slow  # compute_seconds, every node at once
@reads("canary_runner")
def test_gpu_compute(node, cluster, measurements):
    read(node, "canary_runner")
    run = compute(node)
    for what, value, unit in gpu.measured(run.result, gpu.load_of(run.samples)):
        measurements(what, node.name, value, unit)
    report(gpu.judge_compute(node.name, run.result, run.samples, run.samples_error, cluster.expect, fastest_compute(node)))


@pytest.mark.slow  # the image started with the GPU on every node, torch imported, a Triton kernel compiled: seconds
@reads("canary_kernels")
def test_image_kernels(node, cluster):
    result = read(node, "canary_kernels")
    runs_in = cluster.deploy.canary_python or cluster.deploy.image
    if result.get("gpu") is None:
        pytest.skip(f"{node.name}: {result.get('reason')} in {runs_in}: no GPU kernel to build or run")
    report(gpu.judge_image_kernels(node.name, result, runs_in, program(cluster, "kernels")[1]))


@pytest.mark.slow  # the image started on every node and torch's NCCL loaded: seconds, not the milliseconds of a fact
@reads("canary_nccl", "machine", "vllm_service")
def test_image_nccl(node, head, cluster, measurements, versions):
    mine = read(node, "canary_nccl")
    if mine.get("nccl") is None:
        pytest.skip(f"{node.name}: {mine.get('reason')} in {cluster.deploy.canary_python or cluster.deploy.image}: "
                    "no NCCL library to identify")
    heads = mine if node.name == head.name else read(head, "canary_nccl")
    what, version, unit = gpu.nccl_measured(mine, cluster.deploy.canary_python or cluster.deploy.image)
    measurements(what, node.name, version, unit)
    versions(node.name, what, version)
    machine = read(node, "machine")
    env = compose.service_environment(read(node, "vllm_service")[1]) if platform.nccl_needs_environment(mine, machine) else None
    report(gpu.judge_nccl_identity(node.name, head.name, mine, heads, cluster.deploy.nccl, cluster.deploy.image,
                                   cluster.deploy.canary_python)
           + platform.judge_nccl_advisories(node.name, mine, machine, env))
