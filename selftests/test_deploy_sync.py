"""Artifact sync against the simulated nodes' real dockerd, sshd and files: rank 0's image and model cache
reach a node whose copies are wrong (a locally changed image, a shard cut short, a mode-600 blob), over
the QSFP link, with what will change said first; afterwards the preflight checks that caught it pass, and
a second run changes nothing."""

import subprocess
from pathlib import Path

import pytest

from gb10check.sim import control, scenarios

from .simbed import require_provisioned_sim, run_suite, step

pytestmark = pytest.mark.sim
A, B = "thinkstationpgx-30", "thinkstationpgx-32"
CHECKS = ("(test_image_same_as_head or test_image or test_model_same_as_head or test_model_artifacts "
          "or test_gpu_in_container) and not test_image_nccl and not test_image_kernels")  # -k matches substrings: not the canaries


def sync(cluster: Path, *args: str) -> subprocess.CompletedProcess:
    # The step changes the cluster, so it asks the gate first: the sim's fault scenario has no checked stages to show.
    gate = () if "--check" in args else ("--override", "self-test: a fault scenario of the sim, no stage run")
    return step("sync", cluster, *args, *gate)


@pytest.fixture(scope="module")
def bed():
    require_provisioned_sim()
    yield
    control.down(quiet=True)


def test_sync_repairs_image_and_model_and_is_idempotent(bed):
    path = control.up(2, quiet=True)
    for fault in ("image-layers-differ", "shard-truncated", "hf-cache-600"):
        scenarios.apply(fault)
    before = run_suite(path, "-m", "preflight", "-k", CHECKS)
    assert {k.split("::")[1] for k, o in before.results.items() if o.outcome == "failed"} == {
        f"test_image_same_as_head[{B}]", f"test_model_same_as_head[{B}]", f"test_model_artifacts[{B}]"}, before.stdout[-3000:]

    check = sync(path, "--check")
    assert check.returncode == 1, check.stderr
    assert (f"would copy image gb10sim/vllm-cpu:local (0.00 GiB) {A} -> {B} over 169.254.159.206: docker save | docker load "
            "(2 layers differ from rank 0's 1)") in check.stderr
    assert f"{A} -> {B} over 169.254.159.206: rsync -a, links kept, no compression (1 files differ from {A}, e.g. " \
           "model-00001-of-00003.safetensors: " in check.stderr
    assert control.node_exec(B, "docker history -q gb10sim/vllm-cpu:local | wc -l").stdout.strip() == "2", "--check changes nothing"

    first = sync(path)
    assert first.returncode == 0, first.stderr
    assert "layers verified" in first.stderr and "sizes verified, snapshots/ links into blobs/" in first.stderr
    after = run_suite(path, "-m", "preflight", "-k", CHECKS)
    assert after.results and {o.outcome for o in after.results.values()} == {"passed"}, after.stdout[-3000:]

    second = sync(path)
    assert second.returncode == 0 and "copying" not in second.stderr, second.stderr
    assert f"unchanged image gb10sim/vllm-cpu:local on {B}" in second.stderr


def test_sync_refuses_when_rank0_lacks_the_image(bed):
    path = control.up(2, quiet=True)
    control.node_exec(A, "docker rmi gb10sim/vllm-cpu:local")
    out = sync(path)
    assert out.returncode == 2
    assert f"{A} (rank 0) has no image gb10sim/vllm-cpu:local: load or build it there first" in out.stderr
