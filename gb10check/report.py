"""The run's report, for people: markdown and one self-contained HTML page.

Built from what the checks themselves recorded during the run (outcomes, findings with their fix,
Degraded warnings, and the `measurements` fixture's figures), never from a second run. It leads with
the causes: failures and not-checked items that share one (an unreachable node, a missing tool, no
RDMA device, a prerequisite that failed) are one entry, its text once, with the checks it failed or
stopped named compactly (`causes()`, which the terminal summary and JUnit read too). Then failures
that carry no finding, warnings apart, the figures per node and link, then two plots where a
picture reads faster than a table: Gb/s per link against the threshold, and tok/s per repetition.
The HTML has no external resource (inline CSS and SVG), so it can be attached to a CI run as is.
`findings.json` beside them holds the same run as data (schema 1): each check's stage, outcome and findings (code,
severity, where, seen, expected, fix), and every measurement, for tools that decide by code and severity.
"""

import html
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import history, trends
from .remedies import REACH


@dataclass
class Run:
    cluster: str
    started: float = field(default_factory=time.time)
    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> passed | failed | skipped | error | not checked
    messages: dict[str, str] = field(default_factory=dict)  # test id -> failure or skip text
    warnings: list[str] = field(default_factory=list)
    measured: list[tuple[str, str, float | str, str]] = field(default_factory=list)  # a version is text
    thresholds: dict[str, float] = field(default_factory=dict)  # measurement name -> floor
    tables: list[tuple[str, str]] = field(default_factory=list)  # (title, text): the depth sweep's table
    stages: dict[str, str] = field(default_factory=dict)  # test id -> preflight | network | serving | soak
    findings: dict[str, list[dict]] = field(default_factory=dict)  # test id -> its findings (verdict.Finding.as_dict())
    cluster_file: str = ""
    cluster_sha256: str = ""
    complete_stages: list[str] = field(default_factory=list)  # gated stages this run ran in full
    versions: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> what -> version (the `versions` fixture)
    past: "history.Against | None" = None  # this run against the cluster's history (None: no history kept)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.outcomes.values():
            out[o] = out.get(o, 0) + 1
        return out


def _short(test_id: str) -> str:
    return test_id.split("::", 1)[-1]


def node_of(where: str) -> str:
    """The node a finding's `where` names first ("a", "a:netdev", "a->b", "a:l0--b:l0", "a http://..."): the node its fix
    acts on."""
    return re.split(r"[:\s]|->|--", where.strip(), maxsplit=1)[0]


# Codes that say one thing about a node: it cannot be reached or refuses the runner (the reachability check's failure,
# and every other check of that node not checked for it). One cause per node, whatever the check.
UNREACHABLE = frozenset(code.value for code in REACH)


def cause_key(finding: dict) -> tuple:
    """What makes two findings one cause.

    A node that cannot be reached: the node. Not checked: the code, the node and the fix, because the fix is the code's
    remedy filled in with what was missing (the tool and its package, the command, the check that failed first, the
    device), while `seen` carries each check's own wording of the same gap. A failure: the whole finding, so two checks
    are one cause only when they saw and expect the same thing."""
    node = node_of(finding["where"])
    if finding["code"] in UNREACHABLE:
        return ("unreachable", node)
    if finding["severity"] == "not-checked":
        return (finding["code"], node, finding["fix"])
    return (finding["code"], finding["where"], finding["seen"], finding["expected"], finding["fix"])


def finding_text(finding: dict) -> str:
    """A finding as its check printed it (verdict.Finding.text): what was seen, what was expected, the fix."""
    if finding["severity"] == "not-checked":
        return (f"[{finding['code']}] {finding['where']}: could not check: {finding['seen']}; expected {finding['expected']}\n"
                f"  check by hand: {finding['fix']}")
    return f"[{finding['code']}] {finding['where']}: saw {finding['seen']}; expected {finding['expected']}\n  fix: {finding['fix']}"


@dataclass
class Cause:
    """One reason checks failed or could not look, and every check it failed or stopped (test id -> outcome)."""

    key: tuple
    lead: dict | None  # the finding that states it (a failure's before a not-checked one's); None: a failure's own text
    text: str
    node: str = ""
    tests: dict[str, str] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """[code] node, or a failure's first line when it has no finding."""
        if self.lead is not None:
            return f"[{self.lead['code']}] {self.node}"
        return (self.text.splitlines() or ["(no message)"])[0][:120]

    @property
    def failed(self) -> bool:
        return any(o in ("failed", "error") for o in self.tests.values()) and (self.lead is None or self.lead["severity"] != "not-checked")

    def checks(self) -> str:
        """The checks it failed or stopped, counted and named by function, instances counted: "3 checks on n1: failed
        test_a; not checked test_b, test_ping (x2)" (each instance's id is in the report's table of every check)."""
        parts = []
        for label, outcomes in (("failed", ("failed", "error")), ("not checked", ("not checked",))):
            names: dict[str, int] = {}
            for t, o in self.tests.items():
                if o in outcomes:
                    name = _short(t).split("[")[0]
                    names[name] = names.get(name, 0) + 1
            if names:
                parts.append(f"{label} " + ", ".join(n + (f" (x{k})" if k > 1 else "") for n, k in names.items()))
        count = f"{len(self.tests)} check{'s' if len(self.tests) != 1 else ''}" + (f" on {self.node}" if self.node else "")
        return f"{count}: {'; '.join(parts)}"


def causes(run: Run) -> list[Cause]:
    """The run's failures and not-checked items by cause, each cause once: failures first, then in the order the run met
    them. A failed check with no finding (an error of the check or the suite) is a cause of its own, by its text."""
    found: dict[tuple, Cause] = {}
    for test, outcome in run.outcomes.items():
        if outcome not in ("failed", "error", "not checked"):
            continue
        findings = [f for f in run.findings.get(test, []) if f.get("severity") in ("failure", "not-checked")]
        if not findings:
            text = run.messages.get(test, "").strip()
            found.setdefault(("message", text), Cause(("message", text), None, text)).tests[test] = outcome
            continue
        for f in findings:
            key = cause_key(f)
            cause = found.setdefault(key, Cause(key, f, finding_text(f), node_of(f["where"])))
            if cause.lead["severity"] == "not-checked" and f["severity"] == "failure":
                cause.lead, cause.text = f, finding_text(f)
            cause.tests[test] = outcome
    return sorted(found.values(), key=lambda c: not c.failed)  # stable: the run's order within each


def skips(run: Run) -> dict[str, list[str]]:
    """Skipped checks by their reason (one line for the checks that need a second node, not one per check)."""
    out: dict[str, list[str]] = {}
    for t, o in run.outcomes.items():
        if o == "skipped":
            out.setdefault(run.messages.get(t, "").strip(), []).append(t)
    return out


def _names(tests: list[str]) -> str:
    """Checks by name; an id they all share ("needs-a-second-node") said once, not on each."""
    short = [_short(t) for t in tests]
    ids = {s[s.index("["):] if "[" in s else "" for s in short}
    if len(short) > 1 and len(ids) == 1 and "" not in ids:
        return ", ".join(s.split("[")[0] for s in short) + f" (each {ids.pop()})"
    return ", ".join(short)


def _heading(cause: Cause) -> str:
    failed = sum(o in ("failed", "error") for o in cause.tests.values())
    unchecked = len(cause.tests) - failed
    return ", ".join(f"{n} {label}" for n, label in ((failed, "failed"), (unchecked, "not checked")) if n)


def shown(value) -> str:
    """A measured value as every printer shows it: a number with two decimals, a text (a version, 2.28.9) as it is."""
    return f"{value:.2f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def since_green(run: Run) -> list[str]:
    """What changed in the nodes' versions since the cluster's last green run: a heading line, then a line per change.
    Empty when the run recorded no versions or the history holds no green run to compare with."""
    past = run.past
    if past is None or not run.versions or past.last_green is None:
        return []
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(past.last_green_at or 0))
    if not past.changes:
        return [f"Since the last green run (#{past.last_green}, {when}): no version changed"]
    return ([f"Since the last green run (#{past.last_green}, {when}): {len(past.changes)} version"
             f"{'s' if len(past.changes) != 1 else ''} changed"] + [c.text for c in past.changes])


def markdown(run: Run) -> str:
    c = run.counts()
    lines = [f"# gb10check report: {run.cluster}", "",
             f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(run.started))}: "
             + ", ".join(f"{n} {k}" for k, n in sorted(c.items())), ""]
    since = since_green(run)
    if since:
        lines += [f"## {since[0]}", ""] + [f"- {t}" for t in since[1:]] + [""]
    found = causes(run)
    stopped = len({t for cause in found for t in cause.tests})
    lines += [f"## Causes: {len(found)}, failing or stopping {stopped} checks (failures first; not checked: could not look, "
              "neither a pass nor a fault of the cluster)", ""] + (["None."] if not found else [])
    for i, cause in enumerate(found, 1):
        lines += [f"### {i}. {cause.title} ({_heading(cause)})", "", "```", cause.text, "```", "", cause.checks(), ""]
    lines += ["", "## Warnings (degraded but usable)", ""] + ([f"- {w.strip()}" for w in run.warnings] or ["None."])
    lines += ["", "## Measured", "", "| what | where | value | unit |", "|---|---|---:|---|"]
    lines += [f"| {w} | {where} | {shown(v)} | {u} |" for w, where, v, u in run.measured] or ["| (nothing measured) | | | |"]
    if run.past is not None and run.past.trends:
        lines += ["", "## Trends (the cluster's runs, oldest first, this run last)", "",
                  "| what | where | trend | values | baseline |", "|---|---|---|---|---:|"]
        lines += [f"| {w} | {where} | {trends.sparkline(values)} | {' '.join(f'{v:g}' for v in values)} {u} | "
                  f"{'' if base is None else f'{base:g}'} |" for w, where, u, values, base in run.past.trends]
    for title, text in run.tables:
        lines += ["", f"## {title[:1].upper()}{title[1:]}", "", text]
    skipped = skips(run)
    if skipped:
        lines += ["", "## Skipped, with the reason", ""]
        lines += [f"- {reason}: {len(tests)} check{'s' if len(tests) != 1 else ''}: {_names(tests)}" for reason, tests in skipped.items()]
    where = {t: i for i, cause in enumerate(found, 1) for t in cause.tests}
    lines += ["", "## Every check", "", "| check | outcome |", "|---|---|"]
    lines += [f"| {_short(t)} | {o}{f' (cause {where[t]})' if t in where else ''} |" for t, o in run.outcomes.items()]
    return "\n".join(lines) + "\n"


def bar_chart(title: str, bars: list[tuple[str, float]], unit: str, floor: float | None) -> str:
    """An inline SVG bar chart with the floor as a line; a bar under the floor is red."""
    if not bars:
        return ""
    width, row, left = 760, 26, 330
    top = max([v for _, v in bars] + [floor or 0]) * 1.15 or 1
    height = 40 + row * len(bars)
    scale = (width - left - 70) / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="{html.escape(title)}">',
           f'<text x="0" y="16" font-weight="bold">{html.escape(title)}</text>']
    for i, (label, value) in enumerate(bars):
        y = 28 + i * row
        colour = "#c0392b" if floor is not None and value < floor else "#2e86c1"
        out.append(f'<text x="0" y="{y + 15}" font-size="12">{html.escape(label[-48:])}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{max(value * scale, 1):.1f}" height="{row - 6}" fill="{colour}"/>')
        out.append(f'<text x="{left + value * scale + 4:.1f}" y="{y + 15}" font-size="12">{value:.1f} {html.escape(unit)}</text>')
    if floor is not None:
        x = left + floor * scale
        out.append(f'<line x1="{x:.1f}" y1="24" x2="{x:.1f}" y2="{height}" stroke="#000" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{x + 3:.1f}" y="{height - 2}" font-size="11">floor {floor:g}</text>')
    return "\n".join(out + ["</svg>"])


SWEEP_MEASURE = "sweep output_tok_s"  # tests/serving/test_sweep.py's figure, one per level


def decode_floor(run: Run) -> float | None:
    """The decode chart's line: serving.min_decode_tok_s, else the floor test_decode_throughput derived (when it could)."""
    if run.thresholds.get("decode_tok_s") is not None:
        return run.thresholds["decode_tok_s"]
    derived = [v for w, _, v, _ in run.measured if w == "decode floor (derived)" and isinstance(v, (int, float))]
    return derived[0] if derived else None


def page(run: Run) -> str:
    c = run.counts()
    failed = [t for t, o in run.outcomes.items() if o in ("failed", "error")]
    unchecked = [t for t, o in run.outcomes.items() if o == "not checked"]
    esc = html.escape
    bw = [(where, v) for w, where, v, u in run.measured if w == "ib_write_bw"]
    tok = [(where, v) for w, where, v, u in run.measured if w == "decode_tok_s"]
    verdict = "FAILED" if failed else "NOT CHECKED" if unchecked else "PASSED"
    found = causes(run)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>gb10check: {esc(run.cluster)} {verdict}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:70em}pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}"
        ".failed{color:#c0392b}.passed{color:#1e8449}.skipped{color:#7f8c8d}.warn,.warning,.not-checked{color:#b9770e}</style></head><body>",
        f"<h1>gb10check: {esc(run.cluster)} <span class='{'failed' if failed else 'passed'}'>{verdict}</span></h1>",
        f"<p>{esc(time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(run.started)))}: "
        + esc(", ".join(f"{n} {k}" for k, n in sorted(c.items()))) + "</p>",
    ]
    since = since_green(run)
    if since:
        parts += [f"<h2>{esc(since[0])}</h2>"] + (["<ul>"] + [f"<li>{esc(t)}</li>" for t in since[1:]] + ["</ul>"]
                                                   if since[1:] else [])
    parts += [
        f"<h2>Causes: {len(found)}</h2>",
    ]
    for i, cause in enumerate(found, 1):
        parts += [f"<h3 class='{'failed' if cause.failed else 'warn'}'>{i}. {esc(cause.title)} ({esc(_heading(cause))})</h3>",
                  f"<pre>{esc(cause.text)}</pre><p>{esc(cause.checks())}</p>"]
    if not found:
        parts.append("<p>None.</p>")
    parts += ["<h2>Warnings (degraded but usable)</h2>"]
    parts += [f"<pre class='warn'>{esc(w.strip())}</pre>" for w in run.warnings] or ["<p>None.</p>"]
    parts += ["<h2>Measured</h2><table><tr><th>what</th><th>where</th><th>value</th><th>unit</th></tr>"]
    parts += [f"<tr><td>{esc(w)}</td><td>{esc(where)}</td><td>{esc(shown(v))}</td><td>{esc(u)}</td></tr>"
              for w, where, v, u in run.measured]
    parts += ["</table>"]
    if run.past is not None and run.past.trends:
        parts += ["<h2>Trends (the cluster's runs, oldest first, this run last; dashed: the baseline)</h2>"
                  "<table><tr><th>what</th><th>where</th><th>trend</th><th>values</th></tr>"]
        parts += [f"<tr><td>{esc(w)}</td><td>{esc(where)}</td><td>{trends.trend_svg(f'{w} {where}', values, u, base)}</td>"
                  f"<td>{esc(' '.join(f'{v:g}' for v in values))} {esc(u)}</td></tr>" for w, where, u, values, base in run.past.trends]
        parts += ["</table>"]
    parts += [f"<h2>{esc(title[:1].upper() + title[1:])}</h2><pre>{esc(text)}</pre>" for title, text in run.tables]
    sweep = [(where, v) for w, where, v, u in run.measured if w == SWEEP_MEASURE and isinstance(v, (int, float))]
    if bw or tok or sweep:
        parts.append("<h2>Plots</h2>")
    parts += [bar_chart("RDMA write bandwidth per logical link (ib_write_bw)", bw, "Gb/s", run.thresholds.get("ib_write_bw")),
              bar_chart("Decode tok/s per repetition", tok, "tok/s", decode_floor(run)),
              bar_chart("Output tok/s per concurrency level (the serving sweep)", sweep, "tok/s", None)]
    skipped = skips(run)
    if skipped:
        parts += ["<h2>Skipped, with the reason</h2><ul>"]
        parts += [f"<li>{esc(reason)}: {len(tests)} check{'s' if len(tests) != 1 else ''}: {esc(_names(tests))}</li>"
                  for reason, tests in skipped.items()]
        parts += ["</ul>"]
    where = {t: i for i, cause in enumerate(found, 1) for t in cause.tests}
    parts += ["<h2>Every check</h2><table><tr><th>check</th><th>outcome</th></tr>"]
    for t, o in run.outcomes.items():
        reason = f" (cause {where[t]})" if t in where else ""
        parts.append(f"<tr><td>{esc(_short(t))}</td><td class='{o.replace(' ', '-')}'>{o}{reason}</td></tr>")
    parts += ["</table></body></html>"]
    return "\n".join(p for p in parts if p) + "\n"


def data(run: Run) -> dict:
    """The run as data: findings.json, schema 1."""
    return {"schema": 1, "cluster": run.cluster, "cluster_file": run.cluster_file, "cluster_sha256": run.cluster_sha256,
            "started": run.started, "complete_stages": list(run.complete_stages),
            "tests": [{"id": t, "stage": run.stages.get(t), "outcome": o, "findings": run.findings.get(t, [])}
                      for t, o in run.outcomes.items()],
            "measurements": [{"what": w, "where": where, "value": v, "unit": u} for w, where, v, u in run.measured],
            "versions": run.versions,
            "since_last_green": None if run.past is None or run.past.last_green is None else
            {"run": run.past.last_green, "changes": [c.__dict__ for c in run.past.changes]},
            "below_baseline": [] if run.past is None else
            [{"what": d.what, "where": d.where, "value": d.value, "baseline": d.baseline, "runs": d.runs, "unit": d.unit}
             for d in run.past.drops]}


def write(run: Run, directory: Path) -> tuple[Path, Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md, page_path, data_path = directory / "report.md", directory / "report.html", directory / "findings.json"
    md.write_text(markdown(run))
    page_path.write_text(page(run))
    data_path.write_text(json.dumps(data(run), indent=1) + "\n")
    return md, page_path, data_path


_SKIP_PREFIX = re.compile(r"^Skipped: ")


def skip_reason(longrepr) -> str:
    """pytest keeps a skip as (file, line, 'Skipped: reason')."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return _SKIP_PREFIX.sub("", str(longrepr[2]))
    return str(longrepr)
