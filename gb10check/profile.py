"""`gb10check profile snapshot`: a hardware profile written from a healthy cluster, so an owner's own pair becomes the
reference (as goss `add` and NHC's nhc-genconf write what a good machine has).

Pure: the nodes' fact texts (nvidia-smi, /proc/meminfo, ethtool per link) and a full run's measurements in, the profile
document out. From the facts: GPU name, driver version, memory, link speed. From the run's findings.json, when given:
ib_write_bw per link, the matmul's TFLOP/s and NCCL bus bandwidth, each the slowest figure less MARGIN. Every other
field keeps the base profile's figure (the cluster's current one) and says so. Nodes or links that disagree, or facts
that cannot be read, stop the snapshot: it describes a healthy, uniform cluster or nothing.
"""

import math
import textwrap
from dataclasses import dataclass, field

import yaml

from . import facts
from .cluster import Cluster, Profile, check_values, profile_fields

# The margin under the slowest measured figure: run-to-run variation. The gb10 profile's own floors sit 13-17% under
# the published healthy figures (ib_write_bw 90 under 109, NCCL 160 under 183.7), and 15% is the compute spread a
# healthy pair may show; a GB10 stuck in low power (about 60% slower) still fails a floor 15% under a healthy run.
MARGIN = 0.15
# The facts the snapshot reads (gb10check/gather/registry.py), gathered through the library.
FACTS = ("gpu_inventory", "meminfo", "ethtool")
# Profile field: (the measurement's `what` in findings.json, the unit its `unit` starts with).
MEASURED = {"min_ib_write_bw_gbps": ("ib_write_bw", "Gb/s"),
            "min_tflops": ("matmul (median batch)", "TFLOP/s"),
            "min_nccl_busbw_gbps": ("nccl all_gather busbw", "Gb/s")}


class SnapshotError(Exception):
    """The cluster's facts or report cannot make a profile; the message says which node, link or figure and why."""


@dataclass
class NodeFacts:
    """One node's fact texts as the commands printed them."""

    nvidia_smi: str  # the gpu_inventory fact
    meminfo: str  # the meminfo fact
    ethtool: dict[str, str] = field(default_factory=dict)  # netdev -> `ethtool NETDEV`


def _parsed(kind: str, text: str, where: str):
    try:
        return facts.parse(kind, text)
    except facts.ParseError as exc:
        raise SnapshotError(f"{where}: could not read {facts.KINDS[kind].what}: {exc}") from None


def _one(values: dict[str, object], what: str):
    """The one value every node (or link) shows; they must agree."""
    if any(v is None for v in values.values()):
        missing = [w for w, v in values.items() if v is None]
        raise SnapshotError(f"no {what} on {', '.join(missing)}")
    if len(set(values.values())) > 1:
        seen = ", ".join(f"{w}: {v}" for w, v in values.items())
        raise SnapshotError(f"{what} differs ({seen}): a snapshot takes a healthy cluster whose nodes are alike")
    return next(iter(values.values()))


def _floor(value: float, digits: int = 3) -> float:
    """Rounded down to `digits` significant figures (a floor never rounds up past what was measured)."""
    if value <= 0:
        return value
    scale = 10 ** (digits - 1 - math.floor(math.log10(value)))
    return math.floor(value * scale) / scale


def node_figures(cluster: Cluster, got: dict[str, NodeFacts]) -> dict[str, tuple[object, str]]:
    """GPU name, driver version, memory and link speed from every node's facts: field -> (value, what it was read from)."""
    names, drivers, memory, speeds = {}, {}, {}, {}
    memory_from = set()
    for node in cluster.by_rank():
        if node.name not in got:
            raise SnapshotError(f"{node.name}: no facts read")
        f = got[node.name]
        gpus = _parsed("nvidia_smi_query", f.nvidia_smi, node.name)
        if not gpus:
            raise SnapshotError(f"{node.name}: nvidia-smi listed no GPU (nvidia-smi --query-gpu=name,driver_version,memory.total)")
        names[node.name] = _one({f"{node.name} GPU {i}": g.get("name") for i, g in enumerate(gpus)}, "GPU name")
        drivers[node.name] = gpus[0].get("driver_version")
        # A discrete GPU's own memory (nvidia-smi); GB10's unified memory is the node's (nvidia-smi says [N/A]).
        gpu_memory = min((g.get("memory_total_gib") for g in gpus), key=lambda v: v if v is not None else math.inf)
        if gpu_memory is not None:
            memory[node.name] = gpu_memory
            memory_from.add("nvidia-smi memory.total")
        else:
            memory[node.name] = _parsed("meminfo", f.meminfo, node.name).get("mem_total_gib")
            memory_from.add("/proc/meminfo MemTotal (unified memory)")
            if memory[node.name] is None:
                raise SnapshotError(f"{node.name}: no MemTotal in /proc/meminfo and no memory.total from nvidia-smi")
        for link in node.links:
            where = f"{node.name}:{link.netdev}"
            if link.netdev not in f.ethtool:
                raise SnapshotError(f"{where}: no ethtool output")
            read = _parsed("ethtool", f.ethtool[link.netdev], where)
            mine = [r for r in read if r.interface == link.netdev] or (read if len(read) == 1 else [])
            speeds[where] = mine[0].speed_mbps if mine else None
    nodes = ", ".join(n.name for n in cluster.by_rank())
    smallest = min(memory, key=memory.get)
    return {"gpu_name": (_one(names, "GPU name"), f"nvidia-smi name on {nodes}"),
            "driver_version": (_one(drivers, "driver version"), f"nvidia-smi driver_version on {nodes}"),
            "memory_gib": (_floor(memory[smallest]), f"{' and '.join(sorted(memory_from))}: {memory[smallest]:g} GiB on "
                                                      f"{smallest}, the smallest of {nodes}"),
            "link_speed_mbps": (_one(speeds, "link speed (ethtool Speed)"), f"ethtool Speed on every link ({len(speeds)})")}


def measured_figures(measurements: list[dict], margin: float = MARGIN) -> dict[str, tuple[float, str]]:
    """The floors from a run's measurements (findings.json): field -> (slowest figure less `margin`, how)."""
    out = {}
    for name, (what, unit) in MEASURED.items():
        rows = [m for m in measurements if m.get("what") == what]
        if not rows:
            continue
        for m in rows:
            if not isinstance(m.get("value"), (int, float)) or not str(m.get("unit", "")).startswith(unit):
                raise SnapshotError(f"measurement {what} at {m.get('where')}: expected a number in {unit}, got "
                                    f"{m.get('value')!r} {m.get('unit')!r}")
        slowest = min(rows, key=lambda m: m["value"])
        if slowest["value"] <= 0:
            raise SnapshotError(f"measurement {what} at {slowest.get('where')} is {slowest['value']}: not a healthy run")
        out[name] = (_floor(slowest["value"] * (1 - margin)),
                     f"{what} {slowest['value']:g} {slowest['unit']} at {slowest.get('where')}, the slowest of {len(rows)}, "
                     f"less {margin:.0%}")
    return out


def report_measurements(report: dict) -> list[dict]:
    """The measurements of a findings.json; a run with failures or checks that could not look is no reference."""
    if not isinstance(report, dict) or not isinstance(report.get("measurements"), list):
        raise SnapshotError("findings.json has no `measurements` list")
    bad = [f for f in report.get("findings") or [] if isinstance(f, dict) and f.get("severity") in ("failure", "not-checked")]
    if bad:
        shown = ", ".join(f"{f.get('code')} at {f.get('where')}" for f in bad[:3]) + (" ..." if len(bad) > 3 else "")
        raise SnapshotError(f"the run has {len(bad)} failure(s) or check(s) not made ({shown}): a snapshot takes a healthy "
                            "cluster's figures; fix them and run again")
    return report["measurements"]


def snapshot(cluster: Cluster, base: Profile, got: dict[str, NodeFacts], measurements: list[dict] | None, when: str,
             margin: float = MARGIN) -> dict:
    """The profile document ({about, expect: {field: {value, source}}}) for `cluster`, measured at `when`.

    Fields neither read nor measured keep the cluster's figure: the base profile's with its source, or the cluster
    file's override."""
    if not 0 <= margin < 1:
        raise SnapshotError(f"margin {margin}: expected a fraction from 0 to under 1 (0.15: 15% under the slowest figure)")
    at = f"measured on {cluster.name} at {when}"
    read = node_figures(cluster, got)
    runs = measured_figures(measurements, margin) if measurements is not None else {}
    doc = {}
    for name in profile_fields():
        if name in read or name in runs:
            value, how = read.get(name) or runs[name]
            doc[name] = {"value": value, "source": f"{at}: {how}"}
        else:
            value = getattr(cluster.expect, name)
            if value == base.values[name]:
                source = f"profile {base.name}, not measured: {base.sources[name]}"
            else:
                source = f"{cluster.name}'s cluster file (expect.{name}), not measured"
            doc[name] = {"value": value, "source": source}
    try:  # what it writes must load
        check_values({k: v["value"] for k, v in doc.items()})
    except ValueError as exc:
        raise SnapshotError(f"the figures do not make a valid profile: {exc}") from None
    about = f"{cluster.name}: {len(cluster.nodes)} x {read['gpu_name'][0]}, {at} (from profile {base.name})"
    return {"about": about, "expect": doc}


def render(doc: dict, command: str) -> str:
    """The profile file: a comment header naming how it was made and which fields were measured, then the document."""
    fields = doc["expect"]
    measured = [k for k, v in fields.items() if v["source"].startswith("measured on ")]
    kept = [k for k in fields if k not in measured]
    head = [f"Hardware profile written by `{command}`.", f"{doc['about']}.", f"Measured: {', '.join(measured)}."]
    head += [f"Kept from the profile before (not measured): {', '.join(kept)}."] if kept else []
    head += ["Use it: name this file as expect.profile in the cluster file (a path relative to the cluster file)."]
    lines = [line for h in head for line in textwrap.wrap(h, 116, break_on_hyphens=False)]
    return "".join(f"# {line}\n" for line in lines) + yaml.safe_dump(doc, sort_keys=False, width=116, allow_unicode=True)
