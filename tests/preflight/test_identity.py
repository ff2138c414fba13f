"""Identity and parity: same user everywhere, same OS image, kernel and architecture as rank 0, the GPU the profile names."""

import pytest

from gb10check.checks import host
from gb10check.gather import read, reads
from gb10check.remote import NodeUnreachable
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


@reads("whoami")
def test_ssh_user(node, cluster):
    try:
        seen, unreachable = read(node, "whoami"), None
    except NodeUnreachable as exc:
        seen, unreachable = None, exc
    report(host.judge_ssh_user(node.name, cluster.ssh.user, seen, unreachable))


def identity(node) -> dict[str, str]:
    return {"OS image": read(node, "os_release"), "kernel": read(node, "kernel"), "architecture": read(node, "machine")}


@reads("os_release", "kernel", "machine")
def test_os_parity(follower, head):
    report(host.judge_parity(follower.name, head.name, identity(follower), identity(head)))


@reads("gpu_names")
def test_gpu_name(node, cluster):
    report(host.judge_gpu_name(node.name, read(node, "gpu_names"), cluster.expect.gpu_name))
