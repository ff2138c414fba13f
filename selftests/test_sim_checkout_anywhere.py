"""The simulated cluster boots from a checkout anywhere: one under /tmp too, which a node does not see (its /tmp is its own)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gb10check.sim import control

from .simbed import REPO, require_provisioned_sim

pytestmark = pytest.mark.sim


def sim_cli(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m gb10check sim ARGS` run from `checkout`: the package imported is the checkout's, not the installed one."""
    return subprocess.run([sys.executable, "-m", "gb10check", "sim", *args], cwd=checkout, capture_output=True, text=True,
                          timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})


def test_a_checkout_under_tmp_boots_the_nodes_and_their_stand_ins():
    require_provisioned_sim()
    control.down(quiet=True)
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="gb10check-checkout-") as tmp:
        checkout = Path(tmp)
        shutil.copytree(REPO / "gb10check", checkout / "gb10check", ignore=shutil.ignore_patterns("__pycache__"))
        try:
            up = sim_cli(checkout, "up")
            assert up.returncode == 0, up.stdout + up.stderr
            for name in control.nodes():
                init = control.node_exec(name, "cat /proc/1/cmdline | tr '\\0' ' '").stdout
                assert f"{checkout}/gb10check/sim/boot.py" in init, f"{name}'s init is not the /tmp checkout's boot.py: {init}"
                assert not control.node_exec(name, f"test -e {checkout}", check=False).returncode == 0, \
                    f"{name} sees {checkout}: the test would not prove a checkout the node cannot see"
                # A stand-in tool and the init's refresh loop, both from the node's own copy of the stand-ins.
                tool = sim_cli(checkout, "exec", name, "ibdev2netdev")
                assert tool.returncode == 0 and "==> enp1s0f0np0 (Up)" in tool.stdout, tool.stdout + tool.stderr
                assert control.node_exec(name, "ls /sys/class/infiniband").stdout.split(), f"{name}: no /sys/class/infiniband"
                log = control.node_exec(name, "cat /var/log/gb10sim-init.log", check=False).stdout
                assert "refresh failed" not in log, f"{name}'s init could not refresh its stand-ins:\n{log}"
        finally:
            down = sim_cli(checkout, "down")
            assert down.returncode == 0, down.stdout + down.stderr
