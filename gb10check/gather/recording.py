"""Recordings of what a run gathered: the facts' batch, the reachability probes and the programs run once per run, written
as data (the cluster file beside them) and read back by a Fleet that then reaches no node: for judging a recorded
cluster again (`pytest --facts-from PATH`), and for the self-tests (each fault scenario that proves only checks reading
facts is judged from its recording; the property run judges every check on the healthy pair's).

Written by `pytest --record DIR` (what the run's checks gathered; one file per pytest process, recording.json.gz, or
recording-gwN.json.gz under pytest-xdist) and by `gb10check record` (every fact of the registry, no probes or programs).
Judging from one, whatever was not recorded (a fact no recorded check declared, a probe, a program, a command a check runs
live) is NOT CHECKED with code not-recorded: never a pass."""

import gzip
import json
import os
import time
from pathlib import Path
from typing import Any

import yaml

from ..cluster import Cluster, cluster_from_data
from .fleet import Fleet
from .registry import FACTS
from .shared import dump_output

SCHEMA = 1
NAME = "recording"  # the files `--record DIR` writes: recording.json.gz, recording-gw0.json.gz ...


def record(cluster: Cluster, cluster_text: str, source: str) -> dict[str, Any]:
    """Every fact of the registry on every node of the cluster, as one JSON-able record."""
    fleet = Fleet(cluster)
    fleet.wanted = set(FACTS)
    try:
        fleet.facts(cluster.head.name)
    except Exception:  # noqa: BLE001  (an unreachable head is recorded as such, like any node)
        pass
    dumped = Fleet.dump_facts(fleet._facts or {})
    for node in fleet.nodes.values():
        node.close()
    return {"schema": SCHEMA, "source": source, "recorded": time.strftime("%Y-%m-%d"), "cluster": yaml.safe_load(cluster_text),
            "facts": dumped}


def of_fleet(fleet: Fleet, cluster_text: str, source: str) -> dict[str, Any]:
    """What this process's fleet gathered in its run: the facts' batch, the probes, the programs run once."""
    from .probes import Probes

    got: dict[str, Any] = {"schema": SCHEMA, "source": source, "recorded": time.strftime("%Y-%m-%d"),
                           "cluster": yaml.safe_load(cluster_text), "facts": Fleet.dump_facts(fleet._facts or {})}
    if fleet._probes is not None and fleet._probes._results is not None:
        got["probes"] = Probes._dump(fleet._probes._results)
    once: dict[str, dict] = {}
    for (name, command), out in fleet._once.items():
        once.setdefault(name, {})[command] = dump_output(out)
    got["once"] = once
    return got


def write(recorded: dict[str, Any], path: Path) -> Path:
    """Gzipped JSON, mode 600 (a node's .env is among the facts), the same bytes for the same record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(json.dumps(recorded, sort_keys=True, separators=(",", ":")).encode())
    return path


def read(path: Path) -> dict[str, Any]:
    """One recording file (.json or .json.gz)."""
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def load(path: str | Path) -> dict[str, Any]:
    """A recording: a file, or a folder `--record` wrote (its files merged: under pytest-xdist each worker wrote what it
    gathered). ValueError when there is none or it is not one this gb10check reads."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob(f"{NAME}*.json.gz")) + sorted(path.glob(f"{NAME}*.json"))
        if not files:
            raise ValueError(f"no recording in {path} ({NAME}.json.gz, written by `pytest --record {path}`)")
    elif path.is_file():
        files = [path]
    else:
        raise ValueError(f"no recording at {path}")
    merged: dict[str, Any] = {}
    for f in files:
        try:
            got = read(f)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{f} is not a recording: {exc}") from None
        if not isinstance(got, dict) or got.get("schema") != SCHEMA:
            raise ValueError(f"{f}: a recording of schema {got.get('schema') if isinstance(got, dict) else None!r}; "
                             f"this gb10check reads schema {SCHEMA}")
        if not merged:
            merged = {**got, "facts": dict(got["facts"]), "once": {n: dict(c) for n, c in got.get("once", {}).items()}}
            continue
        merged["facts"].update(got["facts"])
        merged.setdefault("probes", got.get("probes"))
        for name, commands in got.get("once", {}).items():
            merged["once"].setdefault(name, {}).update(commands)
    return merged


def replay(recorded: dict[str, Any], cluster: Cluster | None = None) -> Fleet:
    """A Fleet whose facts, probes and programs come from the recording (on its own cluster, or on `cluster`, the same
    nodes judged against other expectations); anything else it would run live is NOT CHECKED (not-recorded)."""
    if recorded.get("schema") != SCHEMA:
        raise ValueError(f"a recording of schema {recorded.get('schema')!r}; this gb10check reads schema {SCHEMA}")
    fleet = Fleet(cluster or cluster_from_data(recorded["cluster"], "the recording's cluster"))
    fleet.recorded = recorded["facts"]
    fleet.replay = recorded
    return fleet
