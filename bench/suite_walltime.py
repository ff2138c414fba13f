#!/usr/bin/env python3
"""Wall time of `pytest -m "(preflight or network) and not slow"` on 2 and 8 simulated nodes, serial and with
workers, for a baseline revision and for this tree, side by side in one run, with this tree's phases.

`sudo .venv/bin/python bench/suite_walltime.py [--baseline REV] [--workers 4]` (`--workers 0`: serial only). The baseline is checked out into a
temporary git worktree and run against the same simulated cluster. Phases (serial runs of this tree): gather = every
node's shared facts, probes = ping/SSH/ports of every path, judging and the rest = wall minus both (pytest start-up,
collection and the checks that stay live: clock, compose dry run). CPU: the runner's (the pytest process) and the nodes'
(everything else this machine ran meanwhile: sshd, the tools, the stand-ins, docker), which on real machines runs on
each node's own cores, here on the same two as the runner. (Starting the probes beside the gather was tried: 1.0x on the
pair, 0.9x on eight nodes: both are CPU on this machine's two cores.)
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gb10check.sim import control

REPO = Path(__file__).resolve().parent.parent
MARKS = "(preflight or network) and not slow"


def machine_cpu_s() -> float:
    """CPU seconds this machine has spent (every process: the runner's pytest and every simulated node's)."""
    fields = open("/proc/stat").readline().split()[1:]
    return sum(int(f) for f in fields[:8]) - int(fields[3]) - int(fields[4])  # all but idle and iowait, in ticks


def run(tree: Path, cluster: Path, workers: int) -> tuple[float, str, dict[str, float], dict[str, float]]:
    # As a user's environment runs it: no hypothesis (a self-test dependency whose plugin imports it at the summary) and
    # bytecode caching on (with PYTHONDONTWRITEBYTECODE every start recompiles and assertion-rewrites the package).
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q", f"--cluster={cluster}",
            "-m", MARKS] + (["-n", str(workers)] if workers else [])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(tree)}
    t, machine, children = time.perf_counter(), machine_cpu_s(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(args, cwd=tree, capture_output=True, text=True, timeout=900, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    runner = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime  # the pytest process (and its workers)
    machine = (machine_cpu_s() - machine) / os.sysconf("SC_CLK_TCK")
    summary = next((l for l in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", l)), done.stdout[-200:])
    phases = {k: float(v) for k, v in re.findall(r"(gather|probes) ([\d.]+) s", done.stdout)}
    return wall, summary.strip("= "), phases, {"runner": runner, "nodes": max(0.0, machine - runner)}


def up_with(tree: Path, nodes: int) -> Path:
    """The simulated cluster of `nodes` nodes as the code in `tree` makes it (the baseline's own stand-ins)."""
    done = subprocess.run([sys.executable, "-c", f"from gb10check.sim import control; print(control.up({nodes}, quiet=True))"],
                          cwd=tree, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(tree)})
    if done.returncode != 0:
        raise SystemExit(f"the baseline could not bring up its simulated cluster: {done.stderr[-1000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="4ba549e", help="revision to compare with (default: before gather-once)")
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="gb10check-baseline-")) / "tree"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(base), args.baseline], cwd=REPO, check=True, timeout=60)
    print(f'wall time of pytest -m "{MARKS}" on the simulated cluster: baseline {args.baseline} vs this tree')
    print(f"{'nodes':>5} {'mode':>7} {'baseline s':>11} {'now s':>7} {'x':>6}  gather s  probes s  rest s  "
          f"runner cpu s  nodes cpu s   tests (now)")
    try:
        for nodes in (2, 8):
            for workers in (0, args.workers) if args.workers else (0,):  # --workers 0: serial runs only
                # Each tree on the simulated cluster its own code brings up (stand-ins and the cluster file's keys differ).
                before, _, _, _ = run(base, up_with(base, nodes), workers)
                now, summary, phases, cpu = run(REPO, control.up(nodes, quiet=True), workers)
                split = (f"{phases.get('gather', 0):8.2f}  {phases.get('probes', 0):8.2f}  "
                         f"{now - sum(phases.values()):6.2f}") if not workers else f"{'':8}  {'':8}  {'':6}"
                split += f"  {cpu['runner']:12.2f}  {cpu['nodes']:11.2f}"
                mode = "serial" if not workers else f"-n {workers}"
                print(f"{nodes:>5} {mode:>7} {before:11.1f} {now:7.1f} {before / now:6.1f}  {split}   {summary}", flush=True)
    finally:
        control.down(quiet=True)
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO, timeout=60)


if __name__ == "__main__":
    main()
