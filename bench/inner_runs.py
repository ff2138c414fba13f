#!/usr/bin/env python3
"""What one inner pytest run of the self-tests costs: a recorded scenario replayed (`--facts-from`, no root, no node) in
a fresh interpreter, forked from a server that imported pytest and gb10check's dependencies only (the baseline, as the
self-tests forked until session 25), and forked from one that imported gb10check's modules too (selftests/
inner_pytest.py today); rounds interleaved, medians side by side in one run.

    .venv/bin/python bench/inner_runs.py                     # netplan-644's recording, 7 rounds
    .venv/bin/python bench/inner_runs.py --rounds 11 link2-down

The self-tests make about a hundred such runs without root and several hundred with it. Figures, not assertions: run
it on an idle machine.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the self-tests' runner and arguments, from this checkout
MODES = ("fresh interpreter", "forked, dependencies preloaded (baseline)", "forked, gb10check preloaded (today)")


def replay_args(name: str, folder: Path) -> list[str]:
    """The arguments of the self-tests' replay of the scenario (selftests/test_scenarios_replayed.py)."""
    import yaml

    from gb10check.gather import recording
    from gb10check.sim import recordings

    from selftests.simbed import suite_args

    got = recording.read(recordings.path_of(name))
    cluster = folder / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(got["cluster"], sort_keys=False))
    return suite_args(cluster, folder / "junit.xml", f"--facts-from={recordings.path_of(name)}", *recordings.selection(name))


def measure(mode: int, args: list[str], runs: int) -> list[float]:
    """In a process of its own: each mode's forkserver is started once, with its own preload."""
    from selftests import inner_pytest

    if mode == 1:
        inner_pytest.OWN_PACKAGES[:] = []  # the server imports pytest and the dependencies only
    times = []
    for _ in range(runs + 1):  # the first forked run starts the server: not counted
        start = time.perf_counter()
        if mode == 0:
            done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=REPO, capture_output=True, text=True,
                                  timeout=300)
            code = done.returncode
        else:
            code = inner_pytest.run_pytest(args, timeout=300).returncode
        times.append(time.perf_counter() - start)
        if code not in (0, 1):
            raise SystemExit(f"{MODES[mode]}: pytest exited {code}")
    return times[1:]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", nargs="?", default="netplan-644", help="a replayed scenario (default: netplan-644)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--runs", type=int, default=3, help="replays per mode in each round")
    p.add_argument("--mode", type=int, help=argparse.SUPPRESS)  # one round of one mode, in its own process
    a = p.parse_args(argv)
    if a.mode is not None:
        with tempfile.TemporaryDirectory(prefix="gb10check-bench-") as folder:
            print(json.dumps(measure(a.mode, replay_args(a.scenario, Path(folder)), a.runs)))
        return 0
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    seen: dict[int, list[float]] = {m: [] for m in range(len(MODES))}
    for _ in range(a.rounds):
        for mode in seen:
            done = subprocess.run([sys.executable, __file__, a.scenario, "--runs", str(a.runs), "--mode", str(mode)],
                                  cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
            if done.returncode != 0:
                print(done.stdout + done.stderr, file=sys.stderr)
                return 1
            seen[mode] += json.loads(done.stdout.strip().splitlines()[-1])
    print(f"one replay of {a.scenario} (median of {a.rounds * a.runs} runs per way, rounds interleaved):")
    base = statistics.median(seen[1])
    for mode, name in enumerate(MODES):
        median = statistics.median(seen[mode])
        print(f"  {name:<44} {median:6.3f} s  ({median / base:4.2f}x the baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
