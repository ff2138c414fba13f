"""Identity and parity: same user everywhere, same OS image, kernel and architecture as rank 0, the GPU the profile names."""

import pytest

from gb10check.checks import host
from gb10check.facts import nvidia
from gb10check.gather import parsed, text
from gb10check.remedies import Code
from gb10check.remote import NodeUnreachable
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.preflight


@pytest.mark.network  # the one check that fails for an unreachable node, in either stage; its others are not checked
def test_ssh_user(node, cluster):
    user = cluster.ssh.user
    try:
        seen, unreachable = node.output("id -un").strip(), None
    except NodeUnreachable as exc:
        seen, unreachable = None, str(exc)
    if unreachable and "Authentication failed" in unreachable:
        report([Finding(Code.SSH_USER, node.name, f"login as {user!r} refused ({unreachable})", f"user {user!r} with the runner's key",
                        user=user)])
    if unreachable:
        report([Finding(Code.NODE_UNREACHABLE, node.name, unreachable, f"an SSH session as {user}", user=user,
                        address=node.spec.address, port=node.spec.ssh_port or cluster.ssh.port)])
    report([Finding(Code.SSH_USER, node.name, f"logged in as {seen!r}", f"user {user!r}", user=user)] if seen != user else [])


def identity(node) -> dict[str, str]:
    release = node.output("cat /etc/dgx-release 2>/dev/null || cat /etc/os-release")
    return {"OS image": host.os_release(release), "kernel": node.output("uname -r").strip(),
            "architecture": node.output("uname -m").strip()}


def test_os_parity(follower, head):
    report(host.judge_parity(follower.name, head.name, identity(follower), identity(head)))


def test_gpu_name(node, cluster):
    answer = text(node, "nvidia-smi --query-gpu=name --format=csv")
    if nvidia.nvml_mismatch(answer):
        pytest.skip(f"{node.name}: cannot ask the GPU its name: NVML driver/library version mismatch (test_driver_parity fails for it)")
    rows = parsed(node, "nvidia_smi_query", "nvidia-smi --query-gpu=name --format=csv")
    names = [r.get("name") for r in rows]
    expected = cluster.expect.gpu_name
    report([] if names and all(n == expected for n in names) else
           [Finding(Code.GPU_NAME, node.name, f"GPU {', '.join(map(str, names)) or 'none'}", expected)])
