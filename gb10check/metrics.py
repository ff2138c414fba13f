"""A run's figures as Prometheus text (node_exporter's textfile collector: `--metrics-file PATH` in its folder), pure.

One metric family per figure (`gb10check_<what>_<unit>`, a gauge), labelled with the cluster, the node the figure is of
(the first node of its `where`) and, for a figure of a link, the link as the run names it ("a:rocep1s0f0->b:rocep1s0f0");
plus the run's end time, its checks per outcome and whether it passed. A text figure (a version) is no metric. The file
is written beside itself and renamed into place, so the collector never reads half a file.
"""

import contextlib
import os
import re
import tempfile
from pathlib import Path

from .report import node_of

UNITS = {"Gb/s": "gbps", "TFLOP/s": "tflops", "tok/s": "tokens_per_second", "t/s": "tokens_per_second", "s": "seconds",
         "ms": "milliseconds", "GiB": "gibibytes", "%": "percent", "C": "celsius", "MHz": "megahertz", "W": "watts",
         "tokens": "tokens"}


def family(what: str, unit: str) -> str:
    """gb10check_<what>_<unit>: [a-z0-9_] only ("nccl all_gather busbw", "Gb/s" -> gb10check_nccl_all_gather_busbw_gbps)."""
    first = (unit.split() or [""])[0]
    suffix = UNITS.get(first, re.sub(r"[^a-z0-9]+", "_", first.lower()).strip("_"))
    name = re.sub(r"[^a-z0-9]+", "_", what.lower()).strip("_")
    return "gb10check_" + name + (f"_{suffix}" if suffix and not name.endswith(suffix) else "")


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in labels.items()) + "}"


def is_link(where: str) -> bool:
    return "->" in where or "--" in where


def text(cluster: str, measured: list[tuple], outcomes: dict[str, str], finished: float, passed: bool) -> str:
    """The run's figures and counts in the Prometheus text format (version 0.0.4)."""
    families: dict[str, list[str]] = {}
    helps: dict[str, str] = {}
    for what, where, value, unit in measured:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        name = family(what, unit)
        helps.setdefault(name, f"gb10check figure: {what} ({unit})")
        labels = {"cluster": cluster, "node": node_of(where), "link": where if is_link(where) else "", "where": where}
        families.setdefault(name, []).append(f"{name}{_labels(**labels)} {float(value)!r}")
    counts: dict[str, int] = {}
    for o in outcomes.values():
        counts[o] = counts.get(o, 0) + 1
    out = []
    for name, samples in families.items():
        out += [f"# HELP {name} {helps[name]}", f"# TYPE {name} gauge", *dict.fromkeys(samples)]
    out += ["# HELP gb10check_run_finished_seconds when the run ended (Unix time)", "# TYPE gb10check_run_finished_seconds gauge",
            f"gb10check_run_finished_seconds{_labels(cluster=cluster)} {finished!r}",
            "# HELP gb10check_run_passed 1 when nothing failed, errored or went unchecked",
            "# TYPE gb10check_run_passed gauge", f"gb10check_run_passed{_labels(cluster=cluster)} {int(passed)}",
            "# HELP gb10check_checks the run's checks by outcome", "# TYPE gb10check_checks gauge"]
    out += [f"gb10check_checks{_labels(cluster=cluster, outcome=o)} {n}" for o, n in sorted(counts.items())]
    return "\n".join(out) + "\n"


def write(path: Path, content: str) -> Path:
    """Write atomically: a temporary file in the same folder, renamed over the old one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(content)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
