#!/usr/bin/env python3
"""What each named check adds to a stage's wall time: the stage with every check (the baseline) and with one check
deselected (`-k "not CHECK"`), interleaved round after round, medians side by side in one run.

    sudo .venv/bin/python bench/check_cost.py                      # -m preflight on the simulated pair, the checks below
    .venv/bin/python bench/check_cost.py --cluster=cluster.yaml --rounds 5 test_start_memory test_kernel_log

A check's facts are gathered with every other's (one batch, every node at once), so what it adds is its own facts' share
of that batch, its canary or probe if it runs one, and its judging. Figures, not assertions: run it on an idle machine.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The checks the known causes brought into preflight (issue 30): NCCL configuration and advisories, the start memory
# gate and the GPU processes left, the container toolkit and CDI, the compose image, the kernel log's patterns.
CHECKS = ("test_nccl_config", "test_image_nccl", "test_start_memory", "test_no_gpu_process_left", "test_container_toolkit",
          "test_cdi_spec", "test_toolkit_same_as_head", "test_compose_image", "test_kernel_log")


def run(cluster: Path, stage: str, deselect: str | None) -> tuple[float, str]:
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q",
            f"--cluster={cluster}", "-m", stage] + (["-k", f"not {deselect}"] if deselect else [])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    tail = next((l for l in reversed(done.stdout.splitlines()) if " in " in l and ("passed" in l or "failed" in l)), "?")
    return time.perf_counter() - start, tail.strip("= ")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checks", nargs="*", default=list(CHECKS), help="test function names (default: issue 30's checks)")
    p.add_argument("--cluster", type=Path, help="a cluster file (default: bring up the simulated pair, as root)")
    p.add_argument("--stage", default="preflight")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args(argv)
    cluster = a.cluster
    if cluster is None:
        from gb10check.sim import control

        cluster = control.up(2, quiet=True)
    variants = [None, *a.checks]
    walls: dict[str | None, list[float]] = {v: [] for v in variants}
    for r in range(a.rounds):
        for v in variants:
            wall, tail = run(cluster, a.stage, v)
            walls[v].append(wall)
            print(f"round {r + 1} {'every check' if v is None else 'without ' + v}: {wall:.2f} s ({tail})", flush=True)
    base = statistics.median(walls[None])
    print(f"\n-m {a.stage}, median of {a.rounds}: every check {base:.2f} s")
    print(f"{'check':32} {'without it':>11} {'it adds':>9}")
    for v in a.checks:
        m = statistics.median(walls[v])
        print(f"{v:32} {m:9.2f} s {base - m:+7.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
