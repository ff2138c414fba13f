"""The helpers against a real node that cannot be reached: on the simulated pair, rank 1's sshd is stopped (its own pid),
so its port refuses. deploy says so in one line with the fix and starts nothing; down still takes down rank 0 and
names rank 1 with the fix (test_cli_errors.py holds the same on loopback addresses where nothing listens)."""

import pytest
import yaml

pytestmark = pytest.mark.sim


def test_on_the_sim_a_node_without_sshd_stops_deploy_and_down_still_takes_down_the_other():
    from gb10check.sim import control

    from .simbed import require_sim, step

    require_sim()
    path = control.up(2, quiet=True)
    try:
        a, b = (n["name"] for n in yaml.safe_load(path.read_text())["nodes"])
        control.node_exec(b, "kill $(cat /run/sshd.pid)")  # the node's own sshd, by its pid: port 22 now refuses
        deploy = step("deploy", path, "--override", "self-test: a node without sshd")
        assert deploy.returncode == 2 and "Traceback" not in deploy.stdout + deploy.stderr, deploy.stdout + deploy.stderr
        said = [l for l in deploy.stderr.splitlines() if not l.startswith("gate:")]
        assert len(said) == 1 and said[0].startswith(f"gb10check deploy: node {b} unreachable at ") and "; fix: " in said[0], said
        assert b in said[0].split("; fix: ")[1]
        assert control.node_exec(a, "docker ps -q", check=False).stdout.strip() == ""  # nothing started on rank 0
        down = step("down", path)
        assert down.returncode == 2 and "Traceback" not in down.stdout + down.stderr and down.stderr == "", down.stderr
        lines = down.stdout.splitlines()
        assert lines[1] == f"{a}: down", lines  # followers first; rank 0 still taken down
        assert lines[0].startswith(f"{b}: not taken down: node {b} unreachable at ") and "; fix: " in lines[0], lines
    finally:
        control.down(quiet=True)
