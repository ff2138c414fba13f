"""Recordings of facts: every registry fact gathered from a cluster once, written as data (the cluster file beside the
outputs), and read back by a Fleet that then reaches no node: for judging a recorded cluster again, and for the
self-tests' property run over every check."""

import time
from typing import Any

import yaml

from ..cluster import Cluster, parse_cluster
from .fleet import Fleet
from .registry import FACTS

SCHEMA = 1


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


def replay(recorded: dict[str, Any]) -> Fleet:
    """A Fleet whose facts come from the recording; a command it would run live fails (nothing is reached)."""
    if recorded.get("schema") != SCHEMA:
        raise ValueError(f"a recording of schema {recorded.get('schema')!r}; this gb10check reads schema {SCHEMA}")
    fleet = Fleet(parse_cluster(yaml.safe_dump(recorded["cluster"]), "the recording's cluster"))
    fleet.recorded = recorded["facts"]
    return fleet
