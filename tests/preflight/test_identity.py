"""Identity: every node answers over SSH as the same user (NVIDIA's cluster scripts require it)."""

import pytest

from gb10check.verdict import fail

pytestmark = pytest.mark.preflight


def test_ssh_user(node, cluster):
    seen = node.output("id -un").strip()
    if seen != cluster.ssh.user:
        fail(node.name, f"logged in as {seen!r}", f"user {cluster.ssh.user!r} on every node",
             f"create user {cluster.ssh.user} on {node.name} (same name on all nodes) or fix ssh.user in the cluster file")
