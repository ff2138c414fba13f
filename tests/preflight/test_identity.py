"""Identity and parity: same user everywhere, same OS image, kernel and architecture as rank 0, the GPU the profile names."""

import pytest

from gb10check import gather
from gb10check.checks import host
from gb10check.facts import nvidia
from gb10check.remote import NodeUnreachable
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def test_ssh_user(node, cluster):
    try:
        seen, unreachable = gather.output(node, gather.WHOAMI).strip(), None
    except NodeUnreachable as exc:
        seen, unreachable = None, str(exc)
    report(host.judge_ssh_user(node.name, cluster.ssh.user, seen, unreachable, node.spec.address,
                               node.spec.ssh_port or cluster.ssh.port))


def identity(node) -> dict[str, str]:
    return {"OS image": host.os_release(gather.output(node, gather.OS_RELEASE)),
            "kernel": gather.output(node, gather.KERNEL).strip(), "architecture": gather.output(node, gather.MACHINE).strip()}


def test_os_parity(follower, head):
    report(host.judge_parity(follower.name, head.name, identity(follower), identity(head)))


def test_gpu_name(node, cluster):
    if nvidia.nvml_mismatch(gather.text(node, gather.GPU_NAME_QUERY)):
        pytest.skip(f"{node.name}: cannot ask the GPU its name: NVML driver/library version mismatch (test_driver_parity fails for it)")
    rows = gather.parsed(node, "nvidia_smi_query", gather.GPU_NAME_QUERY)
    report(host.judge_gpu_name(node.name, [r.get("name") for r in rows], cluster.expect.gpu_name))
