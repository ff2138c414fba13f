"""GPU and image canaries: a bf16 matmul in the deployment image timed with nvidia-smi sampling under it, a torch op and
a Triton kernel compiled and run in the image, the NCCL library torch in the image really loads, and the start memory
gate (CUDA's free memory in the image against what vLLM asks for; no GPU process left). The programs are ours
(gb10check/canary/), fed to the image's python3."""

import pytest

from gb10check.checks import compose, gpu, memory, nccl_config, platform
from gb10check.gather import compute, fastest_compute, program, read, reads
from gb10check.remedies import Code
from gb10check.verdict import not_checked, report

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
    for what, key in (("vLLM", "vllm"), ("flashinfer", "flashinfer")):  # the image's serving stack, in the manifest
        if mine.get(key):
            versions(node.name, f"{what} in {cluster.deploy.image}", mine[key])
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
           + platform.judge_nccl_advisories(node.name, mine, machine, env)
           + nccl_config.judge_ring_nccl_version(node.name, cluster.deploy.canary_python or cluster.deploy.image,
                                                 mine.get("version"), cluster.cabling))


@pytest.mark.slow  # the image started with the GPU on every node and torch's CUDA initialised: seconds
@reads("canary_memory", "meminfo", "gpu_processes")
def test_start_memory(node, cluster, measurements):
    """vLLM's own start-up check, before deploy: CUDA's free memory against gpu_memory_utilization x total plus a margin."""
    probe = read(node, "canary_memory")
    runs_in = cluster.deploy.canary_python or cluster.deploy.image
    if probe.get("gpu", "") is None:
        pytest.skip(f"{node.name}: {probe.get('reason')} in {runs_in}: no CUDA memory to measure")
    try:
        for d in memory.devices(probe):
            measurements(f"CUDA free memory (device {d.index})", node.name, round(d.free_gib, 2), f"GiB of {d.total_gib:.2f}")
    except memory.ProbeUnreadable as exc:
        not_checked(Code.GARBLED, node.name, str(exc), "the memory probe's devices with their free and total bytes",
                    command=program(cluster, "memory")[1], kind="canary_memory")
    report(memory.judge_start_memory(node.name, probe, read(node, "meminfo"), read(node, "gpu_processes"),
                                     cluster.deploy.gpu_memory_utilization, cluster.expect.start_memory_margin_gib,
                                     cluster.expect.idle_free_floor_gib))


@reads("gpu_processes")
def test_no_gpu_process_left(node):
    """No GPU compute process on a node before deploy (nvidia-smi on the host, where every container's processes show)."""
    report(memory.judge_no_gpu_process(node.name, read(node, "gpu_processes")))
