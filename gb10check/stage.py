"""Stage gating: deploy only onto hosts that a recent, full preflight run and a full network run passed.

Each gated stage is recorded on its own beside the cluster file (`.gb10check-status.json`, one entry per cluster file):
the file's sha256, the time, whether the run was full (nothing of the stage left out: the plugin tells it at collection),
the verdict, the counts, the failed checks and the codes of those not checked. A partial run never records its stage as
passed; one that found a failure or could not check records the stage as not passed (it only closes the gate).
`gb10check gate` (and every helper that changes the cluster) opens only when both stages' last runs were full, for this
exact file, fresh enough, with nothing failed and nothing not checked but the codes the cluster file waives with a
reason (`gate: {waive: [{code: CODE, reason: ...}]}`); `--override REASON` goes on anyway and is logged. Decided by the
recorded outcomes and codes, never by message text.
"""

import hashlib
import json
import os
import sys
import time
from pathlib import Path

STAGES = ("preflight", "network", "serving", "soak")  # the stage markers, in order (soak: opt-in, never in -m serving)
GATED = ("preflight", "network")  # what a deployment waits for
SCHEMA = 2


def status_path(cluster_file: Path) -> Path:
    return cluster_file.resolve().parent / ".gb10check-status.json"


def deployment_record_path(cluster_file: Path) -> Path:
    """Where the deploy writes what it started, where, when and how long each stage took (read by the serving stage)."""
    return cluster_file.resolve().parent / ".gb10check-deployment.json"


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load(path: Path) -> dict:
    try:
        status = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"schema": SCHEMA, "files": {}}
    return status if isinstance(status, dict) and status.get("schema") == SCHEMA else {"schema": SCHEMA, "files": {}}


def records(cluster_file: Path) -> dict[str, dict]:
    """Stage -> its last recorded run, for this cluster file."""
    return _load(status_path(cluster_file))["files"].get(str(cluster_file.resolve()), {})


def record_stages(cluster_file: Path, run, narrowed: dict[str, list[str]]) -> list[str]:
    """After a run (a report.Run): record each gated stage it ran; `narrowed` says why a stage's run was not full
    ([] when it was). Returns the lines to print."""
    path = status_path(cluster_file)
    status = _load(path)
    entry = status["files"].setdefault(str(cluster_file.resolve()), {})
    notes, changed = [], False
    for stage in GATED:
        tests = [t for t, s in run.stages.items() if s == stage and t in run.outcomes]
        if not tests:
            continue
        partial = narrowed.get(stage, ["not known to be full"])
        failed = sorted(t for t in tests if run.outcomes[t] in ("failed", "error"))
        unchecked = {t: sorted({f["code"] for f in run.findings.get(t, []) if f.get("severity") == "not-checked"})
                     for t in sorted(tests) if run.outcomes[t] == "not checked"}
        verdict = "failed" if failed else "not checked" if unchecked else "passed"
        if partial and verdict == "passed":
            notes.append(f"gb10check stage status: {stage} not recorded: a partial run ({'; '.join(partial)}); "
                         f"the gate reads the last full {stage} run")
            continue
        counts: dict[str, int] = {}
        for t in tests:
            counts[run.outcomes[t]] = counts.get(run.outcomes[t], 0) + 1
        entry[stage] = {"cluster_sha256": file_hash(cluster_file), "time": time.time(), "full": not partial,
                        "partial_because": partial, "verdict": verdict, "counts": counts, "failed": failed,
                        "not_checked": unchecked}
        changed = True
        shown = verdict if verdict == "passed" else verdict.upper()
        notes.append(f"gb10check stage status: {stage} {shown}" + (f" (a partial run: {'; '.join(partial)})" if partial else "")
                     + f", recorded in {path}")
    if changed:
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(status, indent=1) + "\n")
        tmp.replace(path)
    return notes


def check(cluster_file: Path, max_age_s: float, waivers: dict[str, str] | None = None) -> tuple[bool, list[str]]:
    """(open?, lines): one line per gated stage, what it found; `waivers` maps a not-checked code to its reason."""
    waivers = waivers or {}
    recorded, sha = records(cluster_file), file_hash(cluster_file)
    ok, lines = True, []
    for stage in GATED:
        rec = recorded.get(stage)
        if rec is None:
            ok = False
            lines.append(f"{stage}: no full run recorded for {cluster_file}: run `pytest -m {stage} --cluster={cluster_file}`")
            continue
        age = time.time() - float(rec.get("time", 0))
        when = f"the last {stage} run ({age / 60:.0f} min ago)"
        unwaived = {t: codes for t, codes in rec.get("not_checked", {}).items() if not codes or any(c not in waivers for c in codes)}
        if rec.get("cluster_sha256") != sha:
            problem = f"the last {stage} run was for another version of {cluster_file}: run it again"
        elif not rec.get("full"):
            problem = (f"{when} was partial ({'; '.join(rec.get('partial_because', []))}) and did not pass: run the whole "
                       f"stage, `pytest -m {stage}`")
        elif rec.get("failed"):
            problem = f"{when} failed: {', '.join(rec['failed'])[:300]}"
        elif unwaived:
            problem = (f"{when} could not check {len(unwaived)} items: "
                       + ", ".join(f"{t} [{', '.join(c) or 'no code'}]" for t, c in unwaived.items())[:400]
                       + "; fix what stopped them and run it again (or waive the code in the cluster file: "
                       "gate: {waive: [{code: CODE, reason: WHY}]})")
        elif age > max_age_s:
            problem = f"the last full {stage} run passed {age / 3600:.1f} h ago (limit {max_age_s / 3600:.1f} h): run it again"
        else:
            problem = None
        if problem:
            ok = False
            lines.append(f"{stage}: {problem}")
            continue
        waived = sorted({c for codes in rec.get("not_checked", {}).values() for c in codes})
        lines.append(f"{stage}: passed {age / 60:.0f} min ago, a full run of this cluster file"
                     + (f"; {len(rec['not_checked'])} not checked, waived: "
                        + "; ".join(f"{c} ({waivers[c]})" for c in waived) if waived else ""))
    return ok, lines


def gate(cluster_file: Path, max_age_s: float, override: str | None = None, say=lambda m: print(m, file=sys.stderr),
         step: str = "gate") -> bool:
    """Open (True) or refused (False), said in lines starting `gate:`; `step` names the helper that asked."""
    from .cluster import ClusterError, load_cluster

    try:
        waivers = {w.code.value: w.reason for w in load_cluster(cluster_file).gate.waive}
    except ClusterError as exc:  # one line per mistake, each said as the gate's
        ok, lines = False, [f"invalid cluster file: {line}" for line in str(exc).splitlines() if line.strip()]
    else:
        ok, lines = check(cluster_file, max_age_s, waivers)
    if ok:
        for line in lines:
            say(f"gate: {line}")
        return True
    why = " | ".join(lines)
    if override:
        log = status_path(cluster_file).with_name(".gb10check-overrides.log")
        with log.open("a") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {step} {cluster_file}: override: {override!r}; gate said: {why}\n")
        say(f"gate: OVERRIDDEN ({override}); logged in {log}. It said: {why}")
        return True
    say(f"gate: refused: {why} (or pass --override 'REASON', which is logged)")
    return False
