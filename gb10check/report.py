"""The run's report, for people: markdown and one self-contained HTML page.

Built from what the checks themselves recorded during the run (outcomes, failure text with its fix,
Degraded warnings, and the `measurements` fixture's figures), never from a second run. Failures come
first with their fix, warnings apart, then the figures per node and link, then two plots where a
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


@dataclass
class Run:
    cluster: str
    started: float = field(default_factory=time.time)
    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> passed | failed | skipped | error | not checked
    messages: dict[str, str] = field(default_factory=dict)  # test id -> failure or skip text
    warnings: list[str] = field(default_factory=list)
    measured: list[tuple[str, str, float, str]] = field(default_factory=list)
    thresholds: dict[str, float] = field(default_factory=dict)  # measurement name -> floor
    tables: list[tuple[str, str]] = field(default_factory=list)  # (title, text): the depth sweep's table
    stages: dict[str, str] = field(default_factory=dict)  # test id -> preflight | network | serving | soak
    findings: dict[str, list[dict]] = field(default_factory=dict)  # test id -> its findings (verdict.Finding.as_dict())
    cluster_file: str = ""
    cluster_sha256: str = ""
    complete_stages: list[str] = field(default_factory=list)  # gated stages this run ran in full

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.outcomes.values():
            out[o] = out.get(o, 0) + 1
        return out


def _short(test_id: str) -> str:
    return test_id.split("::", 1)[-1]


def markdown(run: Run) -> str:
    c = run.counts()
    lines = [f"# gb10check report: {run.cluster}", "",
             f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(run.started))}: "
             + ", ".join(f"{n} {k}" for k, n in sorted(c.items())), ""]
    failed = [t for t, o in run.outcomes.items() if o in ("failed", "error")]
    lines += ["## Failures", ""] + (["None."] if not failed else [])
    for t in failed:
        lines += [f"### {_short(t)}", "", "```", run.messages.get(t, "").strip(), "```", ""]
    unchecked = [t for t, o in run.outcomes.items() if o == "not checked"]
    lines += ["", "## Not checked (could not look: neither a pass nor a fault of the cluster)", ""] + (["None."] if not unchecked else [])
    for t in unchecked:
        lines += [f"### {_short(t)}", "", "```", run.messages.get(t, "").strip(), "```", ""]
    lines += ["", "## Warnings (degraded but usable)", ""] + ([f"- {w.strip()}" for w in run.warnings] or ["None."])
    lines += ["", "## Measured", "", "| what | where | value | unit |", "|---|---|---:|---|"]
    lines += [f"| {w} | {where} | {v:.2f} | {u} |" for w, where, v, u in run.measured] or ["| (nothing measured) | | | |"]
    for title, text in run.tables:
        lines += ["", f"## {title[:1].upper()}{title[1:]}", "", text]
    skipped = [t for t, o in run.outcomes.items() if o == "skipped"]
    if skipped:
        lines += ["", "## Skipped, with the reason", ""] + [f"- {_short(t)}: {run.messages.get(t, '').strip()}" for t in skipped]
    lines += ["", "## Every check", "", "| check | outcome |", "|---|---|"]
    lines += [f"| {_short(t)} | {o} |" for t, o in run.outcomes.items()]
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


def page(run: Run) -> str:
    c = run.counts()
    failed = [t for t, o in run.outcomes.items() if o in ("failed", "error")]
    unchecked = [t for t, o in run.outcomes.items() if o == "not checked"]
    esc = html.escape
    bw = [(where, v) for w, where, v, u in run.measured if w == "ib_write_bw"]
    tok = [(where, v) for w, where, v, u in run.measured if w == "decode_tok_s"]
    verdict = "FAILED" if failed else "NOT CHECKED" if unchecked else "PASSED"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>gb10check: {esc(run.cluster)} {verdict}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:70em}pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}"
        ".failed{color:#c0392b}.passed{color:#1e8449}.skipped{color:#7f8c8d}.warn,.warning,.not-checked{color:#b9770e}</style></head><body>",
        f"<h1>gb10check: {esc(run.cluster)} <span class='{'failed' if failed else 'passed'}'>{verdict}</span></h1>",
        f"<p>{esc(time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(run.started)))}: "
        + esc(", ".join(f"{n} {k}" for k, n in sorted(c.items()))) + "</p>",
        "<h2>Failures</h2>",
    ]
    parts += [f"<h3 class='failed'>{esc(_short(t))}</h3><pre>{esc(run.messages.get(t, '').strip())}</pre>" for t in failed] or ["<p>None.</p>"]
    parts += ["<h2>Not checked (could not look: neither a pass nor a fault of the cluster)</h2>"]
    parts += [f"<h3 class='warn'>{esc(_short(t))}</h3><pre>{esc(run.messages.get(t, '').strip())}</pre>" for t in unchecked] or ["<p>None.</p>"]
    parts += ["<h2>Warnings (degraded but usable)</h2>"]
    parts += [f"<pre class='warn'>{esc(w.strip())}</pre>" for w in run.warnings] or ["<p>None.</p>"]
    parts += ["<h2>Measured</h2><table><tr><th>what</th><th>where</th><th>value</th><th>unit</th></tr>"]
    parts += [f"<tr><td>{esc(w)}</td><td>{esc(where)}</td><td>{v:.2f}</td><td>{esc(u)}</td></tr>" for w, where, v, u in run.measured]
    parts += ["</table>"]
    parts += [f"<h2>{esc(title[:1].upper() + title[1:])}</h2><pre>{esc(text)}</pre>" for title, text in run.tables]
    if bw or tok:
        parts.append("<h2>Plots</h2>")
    parts += [bar_chart("RDMA write bandwidth per logical link (ib_write_bw)", bw, "Gb/s", run.thresholds.get("ib_write_bw")),
              bar_chart("Decode tok/s per repetition", tok, "tok/s", run.thresholds.get("decode_tok_s"))]
    parts += ["<h2>Every check</h2><table><tr><th>check</th><th>outcome</th></tr>"]
    for t, o in run.outcomes.items():
        reason = f" ({esc(run.messages.get(t, '').strip()[:200])})" if o in ("skipped", "not checked") else ""
        parts.append(f"<tr><td>{esc(_short(t))}</td><td class='{o.replace(' ', '-')}'>{o}{reason}</td></tr>")
    parts += ["</table></body></html>"]
    return "\n".join(p for p in parts if p) + "\n"


def data(run: Run) -> dict:
    """The run as data: findings.json, schema 1."""
    return {"schema": 1, "cluster": run.cluster, "cluster_file": run.cluster_file, "cluster_sha256": run.cluster_sha256,
            "started": run.started, "complete_stages": list(run.complete_stages),
            "tests": [{"id": t, "stage": run.stages.get(t), "outcome": o, "findings": run.findings.get(t, [])}
                      for t, o in run.outcomes.items()],
            "measurements": [{"what": w, "where": where, "value": v, "unit": u} for w, where, v, u in run.measured]}


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
