"""GPU and image canaries: a bf16 matmul in the deployment image timed with nvidia-smi sampling under it, a torch op and
a Triton kernel compiled and run in the image, and the NCCL library torch in the image really loads. The programs are
ours (gb10check/canary/), fed to the image's python3."""

import pytest

from gb10check import gather
from gb10check.checks import container, gpu
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def needs_image(node, cluster):
    """Skip where the image cannot start (test_container_runtime and test_image say why); not with deploy.canary_python."""
    if cluster.deploy.canary_python:
        return
    if gather.result(node, container.DOCKER_SERVER).rc != 0:
        pytest.skip(f"{node.name}: docker is not usable (see test_container_runtime)")
    if gather.result(node, gather.image_inspect(cluster.deploy.image)).rc != 0:
        pytest.skip(f"{node.name}: no {cluster.deploy.image} to start (see test_image)")


@pytest.mark.slow  # compute_seconds, every node at once
def test_gpu_compute(node, cluster, measurements):
    needs_image(node, cluster)
    run = gather.compute(node)
    for what, value, unit in gpu.measured(run.result, gpu.load_of(run.samples)):
        measurements(what, node.name, value, unit)
    report(gpu.judge_compute(node.name, run.result, run.samples, run.samples_error, cluster.expect, gather.fastest_compute(node)))


@pytest.mark.slow  # the image started with the GPU on every node, torch imported, a Triton kernel compiled: seconds
def test_image_kernels(node, cluster):
    needs_image(node, cluster)
    result = gather.image_kernels(node)
    runs_in = cluster.deploy.canary_python or cluster.deploy.image
    if result.get("gpu") is None:
        pytest.skip(f"{node.name}: {result.get('reason')} in {runs_in}: no GPU kernel to build or run")
    report(gpu.judge_image_kernels(node.name, result, runs_in, gather.program(cluster, "kernels")[1]))


@pytest.mark.slow  # the image started on every node and torch's NCCL loaded: seconds, not the milliseconds of a fact
def test_image_nccl(node, head, cluster, measurements):
    needs_image(node, cluster)
    mine = gather.nccl_identity(node)
    if mine.get("nccl") is None:
        pytest.skip(f"{node.name}: {mine.get('reason')} in {cluster.deploy.canary_python or cluster.deploy.image}: "
                    "no NCCL library to identify")
    heads = mine if node.name == head.name else gather.nccl_identity(head)
    measurements("image NCCL (ncclGetVersion)", node.name, float(mine.get("version_code") or 0),
                 f"{gpu.nccl_text(mine)}; image NCCL_VERSION={mine.get('env_nccl_version') or 'unset'}")
    report(gpu.judge_nccl_identity(node.name, head.name, mine, heads, cluster.deploy.nccl, cluster.deploy.image))
