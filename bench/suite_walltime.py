#!/usr/bin/env python3
"""Wall time of `pytest -m "(preflight or network) and not slow"` on 2 and on 8 simulated nodes, serial and with workers.

`sudo .venv/bin/python bench/suite_walltime.py [--workers 4]`; prints one line per run, with the test counts.
"""

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from gb10check.sim import control

REPO = Path(__file__).resolve().parent.parent


def run(cluster: Path, workers: int) -> tuple[float, str]:
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--cluster={cluster}", "-m",
            "(preflight or network) and not slow"] + (["-n", str(workers)] if workers else [])
    t = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t
    summary = next((l for l in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", l)), done.stdout[-200:])
    return wall, summary.strip("= ")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    print('wall time of pytest -m "(preflight or network) and not slow" on the simulated cluster')
    try:
        for nodes in (2, 8):
            t = time.perf_counter()
            cluster = control.up(nodes, quiet=True)
            print(f"  {nodes} nodes up in {time.perf_counter() - t:5.1f} s")
            for workers in (0, args.workers):
                wall, summary = run(cluster, workers)
                print(f"  {nodes} nodes, {'serial' if not workers else f'-n {workers}':>6}: {wall:6.1f} s   ({summary})")
    finally:
        control.down(quiet=True)


if __name__ == "__main__":
    main()
