"""compose-render against the simulated nodes: shows the diff, pushes, is idempotent, --check reports drift."""

import subprocess
import sys

import pytest

from gb10check.sim import control

from .simbed import REPO, require_sim

pytestmark = pytest.mark.sim


def render(cluster, *args):
    # The step changes the cluster, so it asks the gate first: the sim's drift has no checked stages to show.
    gate = () if "--check" in args else ("--override", "self-test: drift made by hand in the sim, no stage run")
    return subprocess.run([sys.executable, "-m", "gb10check", "compose-render", "--cluster", str(cluster), *args, *gate],
                          cwd=REPO, capture_output=True, text=True, timeout=60)


def test_render_push_is_idempotent_and_check_reports_drift():
    require_sim()
    cluster = control.up(2, quiet=True)
    try:
        first = render(cluster, "--check")
        assert first.returncode == 0 and first.stderr.count("unchanged") == 4, first.stderr
        control.node_exec("thinkstationpgx-32", "sed -i 's/NODE_RANK=1/NODE_RANK=0/' /home/lenovo/vllm/.env")
        drift = render(cluster, "--check")
        assert drift.returncode == 1
        assert "would change thinkstationpgx-32:/home/lenovo/vllm/.env" in drift.stderr
        assert "-NODE_RANK=0\n+NODE_RANK=1" in drift.stderr
        assert "NODE_RANK=0" in control.node_exec("thinkstationpgx-32", "cat /home/lenovo/vllm/.env").stdout  # --check changed nothing
        fixed = render(cluster)
        assert fixed.returncode == 0 and "changing thinkstationpgx-32:/home/lenovo/vllm/.env" in fixed.stderr
        assert "NODE_RANK=1" in control.node_exec("thinkstationpgx-32", "cat /home/lenovo/vllm/.env").stdout
        again = render(cluster)
        assert again.returncode == 0 and again.stderr.count("unchanged") == 4
    finally:
        control.down(quiet=True)
