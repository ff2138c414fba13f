"""Judging a run against the runs before it, pure: what changed in the nodes' versions since the last green run, which
figure dropped under its baseline, and each figure's trend drawn small (gb10check/history.py reads the runs).

A baseline is the median of the same figure (what and where) in the cluster's last BASELINE_RUNS passing runs; a figure
worse than it by more than the profile's `max_drop_from_baseline` is a warning, never a failure (the floors fail).
"""

import html
import statistics
from dataclasses import dataclass

BASELINE_RUNS = 5  # the median of the last five passing runs: one noisy run moves it little
TREND_RUNS = 12  # the runs each trend draws, this one included

# The figures with a baseline, by their unit's first word, and which way is better.
HIGHER_IS_BETTER = ("Gb/s", "TFLOP/s", "tok/s", "t/s")
LOWER_IS_BETTER = ("s",)


def direction(unit: str) -> str | None:
    """'higher' or 'lower' (better), or None for a figure without a baseline (GiB, %, a version)."""
    first = (unit.split() or [""])[0]
    if first in HIGHER_IS_BETTER:
        return "higher"
    if first in LOWER_IS_BETTER:
        return "lower"
    return None


@dataclass(frozen=True)
class Change:
    node: str
    what: str
    before: str
    after: str

    @property
    def text(self) -> str:
        return f"{self.node}: {self.what} {self.before} -> {self.after}"


def version_changes(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> list[Change]:
    """Every version a node reported in both manifests that differs (node -> what -> value); what one side did not read
    is no change. In the order of `after`."""
    return [Change(node, what, before[node][what], value)
            for node, theirs in after.items() for what, value in theirs.items()
            if what in before.get(node, {}) and before[node][what] != value]


@dataclass(frozen=True)
class Drop:
    """A figure worse than its baseline by more than the tolerance."""

    what: str
    where: str
    unit: str
    value: float
    baseline: float
    runs: int  # how many passing runs the baseline is the median of
    tolerance: float
    changes: tuple[Change, ...] = ()

    @property
    def by(self) -> float:
        """How much worse, as a fraction of the baseline."""
        return abs(self.value - self.baseline) / self.baseline

    @property
    def text(self) -> str:
        way = "under" if direction(self.unit) == "higher" else "over"
        between = "; ".join(c.text for c in self.changes) or "no version change recorded between them"
        return (f"[below-baseline] {self.where}: saw {self.what} {self.value:.2f} {self.unit}, {self.by:.0%} {way} its baseline "
                f"{self.baseline:.2f} (the median of the last {self.runs} passing run{'s' if self.runs != 1 else ''}); expected "
                f"within {self.tolerance:.0%} (the profile's max_drop_from_baseline); changed since: {between}\n"
                f"  fix: look at what changed since the baseline runs (`gb10check history show ID` lists each run's versions "
                f"and figures) and at this {self.what} on its own; a change you meant makes the new figure the baseline "
                f"after {BASELINE_RUNS} passing runs")


def baseline_drop(what: str, where: str, unit: str, value: float, earlier: list[float], tolerance: float,
                  changes: tuple[Change, ...] = ()) -> Drop | None:
    """The drop of `value` against the median of `earlier` (the same figure in passing runs, newest last; the last
    BASELINE_RUNS of them count), or None: within tolerance, no earlier figure, or a figure without a baseline."""
    way = direction(unit)
    earlier = [v for v in earlier if isinstance(v, (int, float)) and not isinstance(v, bool)][-BASELINE_RUNS:]
    if way is None or not earlier or not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    base = statistics.median(earlier)
    if base <= 0:
        return None
    worse = value < base * (1 - tolerance) if way == "higher" else value > base * (1 + tolerance)
    return Drop(what, where, unit, float(value), float(base), len(earlier), tolerance, tuple(changes)) if worse else None


SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """The values as a line of block characters, lowest to highest (all equal: a flat middle line)."""
    if not values:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return SPARKS[3] * len(values)
    return "".join(SPARKS[round((v - low) / (high - low) * (len(SPARKS) - 1))] for v in values)


def trend_svg(title: str, values: list[float], unit: str, baseline: float | None = None) -> str:
    """A small inline SVG line of the values (the last one, this run, marked), with the baseline dashed."""
    if len(values) < 2:
        return ""
    width, height, pad = 260, 48, 4
    top, bottom = max(values + [baseline or values[0]]), min(values + [baseline or values[0]])
    span = (top - bottom) or 1.0
    x = lambda i: pad + i * (width - 2 * pad) / (len(values) - 1)  # noqa: E731
    y = lambda v: height - pad - (v - bottom) / span * (height - 2 * pad)  # noqa: E731
    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{html.escape(title)}: {", ".join(f"{v:g}" for v in values)} {html.escape(unit)}">',
           f'<polyline points="{points}" fill="none" stroke="#2e86c1" stroke-width="2"/>',
           f'<circle cx="{x(len(values) - 1):.1f}" cy="{y(values[-1]):.1f}" r="3" fill="#c0392b"/>']
    if baseline is not None:
        out.append(f'<line x1="0" y1="{y(baseline):.1f}" x2="{width}" y2="{y(baseline):.1f}" stroke="#000" '
                   'stroke-dasharray="4 3"/>')
    return "\n".join(out + ["</svg>"])
