"""Fault scenarios judged from recordings: each scenario that proves only checks reading facts (checks that declare
@reads: what they read is the facts' batch and the programs run once per run, all of it recorded) is run once on the live
simulated pair with `pytest --record`, and the self-tests judge the recording (`pytest --facts-from`) without root, in
seconds. The checks that need a live network or process (no @reads: ping, the SSH mesh, ports, path MTU, ib_write_bw,
NCCL, the clock, Ray's status) are left out of a recorded scenario's run and keep their live self-tests.

A recording carries `produced_by`, the hash of what produced it (the registry and the commands behind the facts, the
programs, the stand-ins, the scenario and the run's selection); a self-test fails when it differs from today's, with the
command that records it again (`gb10check sim record-scenarios NAME`, root)."""

import ast
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

from . import control, scenarios

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "selftests" / "captures" / "facts" / "scenarios"
PACKAGE = REPO / "gb10check"
# What decides a recording's content: the commands (the registry's and the programs'), and what answers them on a
# simulated node (the stand-ins). The judges are not here: they run again on every replay.
PRODUCERS = ("gather/registry.py", "gather/commands.py", "gather/programs.py", "canary/*.py", "sim/standins/*.py",
             "sim/standins/*.c")


@dataclasses.dataclass(frozen=True)
class Check:
    reads: bool  # declares @reads(...): it reads through the registry (and programs run once), all of it recordable
    slow: bool  # marked slow


@cache
def checks() -> dict[str, Check]:
    """Every check of the stages a scenario runs (tests/preflight, tests/network) by function name."""
    found = {}
    for path in sorted(p for stage in ("preflight", "network") for p in (REPO / "tests" / stage).glob("test_*.py")):
        text = path.read_text()
        module_slow = "mark.slow" in text.split("\ndef ", 1)[0]
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                decorators = [ast.unparse(d) for d in node.decorator_list]
                found[node.name] = Check(any(d.startswith(("reads(", "gather.reads(")) for d in decorators),
                                         module_slow or any("slow" in d for d in decorators))
    return found


# Checks that read facts yet prove, in their scenarios, the runner's own live SSH login (a node that cannot be reached).
LOGIN = {"test_ssh_user"}


def proved_checks(name: str) -> set[str]:
    return {p.split(":")[0] for p in scenarios.SCENARIOS[name].proves}


# The cabling check on a ring or a switch is proven live (selftests/test_cabling_on_sim.py: cables move on the machine).
LIVE_ON_RING = {"test_cabling"}
NODES = {"pair": 2, "ring": 3, "switch": 4}  # the simulated cluster each topology's scenarios run on


def replayed(name: str) -> bool:
    """Whether the scenario is proven from its recording: a fault (not of the serving stack; on a ring or a switch, not
    the cabling check) whose every proved check reads facts, the Ray executor's included (its compose file, its image)."""
    s = scenarios.SCENARIOS[name]
    known = checks()
    live = LOGIN | (LIVE_ON_RING if s.topology != "pair" else set())
    return (name != "healthy" and bool(s.proves) and all(step.serve is None for step in s.steps)
            and all(c in known and known[c].reads and c not in live for c in proved_checks(name)))


def names() -> list[str]:
    return [n for n in scenarios.SCENARIOS if replayed(n)]


def selection(name: str) -> list[str]:
    """The pytest arguments of the scenario's recorded run (and of its replay): every check of preflight and network that
    reads facts, the slow ones only where the scenario proves them (a link fault cannot move a TFLOP/s figure)."""
    proved = proved_checks(name)
    left_out = sorted(c for c, check in checks().items() if not check.reads or (check.slow and c not in proved))
    return ["-m", "preflight or network", "-k", " and ".join(f"not {c}" for c in left_out)]


def produced_by(name: str) -> str:
    digest = hashlib.sha256()
    for pattern in PRODUCERS:
        for path in sorted(PACKAGE.glob(pattern)):
            digest.update(f"{path.relative_to(PACKAGE)}\0".encode() + path.read_bytes() + b"\0")
    scenario = dataclasses.asdict(scenarios.SCENARIOS[name])
    digest.update(json.dumps([scenario, selection(name)], sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


def path_of(name: str) -> Path:
    return FOLDER / f"{name}.json.gz"


def record_command(*which: str) -> str:
    """As root; where others share the machine, with GB10CHECK_SIM_INSTANCE=N set to an instance of your own."""
    return f"sudo .venv/bin/gb10check sim record-scenarios {' '.join(which)}".rstrip()


def record(name: str, say=lambda msg: None) -> Path:
    """Bring the scenario's cluster up fresh (the pair, the ring of three or the switch of four), apply the scenario, run
    its checks live with --record, and write the recording."""
    from ..gather import recording

    if not replayed(name):
        raise scenarios.ScenarioError(f"scenario {name} is not judged from a recording (it proves a check that needs a live "
                                      "network or process, or changes the serving or Ray stack)")
    if name in scenarios.NEEDS_CUDA_TORCH:
        from . import provision

        provision.install_cuda_torch(say)
    topology, executor = scenarios.SCENARIOS[name].topology, scenarios.SCENARIOS[name].executor
    path = control.up(NODES[topology], quiet=True, topo=None if topology == "pair" else topology, executor=executor)
    scenarios.apply(name)
    with tempfile.TemporaryDirectory(prefix="gb10check-record-") as folder:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q",
                               f"--cluster={path}", f"--record={folder}", *selection(name)],
                              cwd=REPO, capture_output=True, text=True, timeout=900, env={**os.environ, "COLUMNS": "250"})
        if proc.returncode not in (0, 1):
            raise scenarios.ScenarioError(f"{name}: pytest exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
        got = recording.load(folder)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    got.update(source=f"gb10check sim record-scenarios {name} (the live simulated {topology})", scenario=name,
               produced_by=produced_by(name), selection=selection(name), recorded_outcome=summary)
    say(f"{name}: {summary}")
    return recording.write(got, path_of(name))


def record_all(which: list[str], say=lambda msg: None) -> list[Path]:
    unknown = [n for n in which if n not in scenarios.SCENARIOS]
    if unknown:
        raise scenarios.ScenarioError(f"unknown scenarios {unknown}; `gb10check sim scenarios` lists them")
    try:
        return [record(n, say) for n in which or names()]
    finally:
        control.down(quiet=True)
