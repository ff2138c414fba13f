"""Stage gating: deploy only onto hosts that a recent preflight + network run passed.

A run that covered both suites records its verdict beside the cluster file
(`.gb10check-status.json`): the cluster file's sha256, the time, the counts. `gb10check gate`
(and the deploy steps) refuse without a passing record for the same cluster file that is fresh
enough; an explicit override is allowed and logged with its reason.
"""

import hashlib
import json
import sys
import time
from pathlib import Path

STAGES = ("preflight", "network", "serving", "soak")  # the stage markers, in order (soak: opt-in, never in -m serving)
GATED = ("preflight", "network")  # what a deployment waits for


def status_path(cluster_file: Path) -> Path:
    return cluster_file.resolve().parent / ".gb10check-status.json"


def deployment_record_path(cluster_file: Path) -> Path:
    """Where the deploy writes what it started, where, when and how long each stage took (read by the serving stage)."""
    return cluster_file.resolve().parent / ".gb10check-deployment.json"


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_stage(cluster_file: Path, outcomes: dict[str, str], stages: dict[str, str]) -> str | None:
    """After a run: record its verdict when it covered preflight and network (by marker); return a line to print.

    `stages` maps each test id to its stage marker. Not-checked items are counted apart: such a run did not pass.
    """
    covered = [t for t in outcomes if stages.get(t) in GATED]
    if not all(any(stages[t] == stage for t in covered) for stage in GATED):
        return None
    bad = sorted(t for t in covered if outcomes[t] in ("failed", "error"))
    unchecked = sorted(t for t in covered if outcomes[t] == "not checked")
    counts: dict[str, int] = {}
    for t in covered:
        counts[outcomes[t]] = counts.get(outcomes[t], 0) + 1
    record = {"cluster_file": str(cluster_file.resolve()), "cluster_sha256": file_hash(cluster_file), "time": time.time(),
              "passed": not bad and not unchecked, "counts": counts, "failed": bad[:20], "not_checked": unchecked[:20],
              "slow_included": any("test_ib_write_bw" in t for t in covered)}
    path = status_path(cluster_file)
    path.write_text(json.dumps(record, indent=1) + "\n")
    verdict = "FAILED" if bad else f"NOT CHECKED ({len(unchecked)} items)" if unchecked else "passed"
    return f"gb10check stage status: preflight+network {verdict}, recorded in {path}"


def check(cluster_file: Path, max_age_s: float) -> tuple[bool, str]:
    path = status_path(cluster_file)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return False, f"no preflight+network run recorded for {cluster_file} ({path} missing): run `pytest -m \"preflight or network\"` first"
    if record.get("cluster_sha256") != file_hash(cluster_file):
        return False, f"the last preflight+network run was for another version of {cluster_file}: run it again"
    age = time.time() - float(record.get("time", 0))
    if record.get("failed"):
        return False, f"the last preflight+network run ({age / 60:.0f} min ago) failed: {', '.join(record.get('failed', []))[:300]}"
    if record.get("not_checked"):
        return False, (f"the last preflight+network run ({age / 60:.0f} min ago) could not check "
                       f"{record.get('counts', {}).get('not checked', len(record['not_checked']))} items: "
                       f"{', '.join(record['not_checked'])[:300]}; fix what stopped them and run it again")
    if not record.get("passed"):
        return False, f"the last preflight+network run ({age / 60:.0f} min ago) did not pass"
    if age > max_age_s:
        return False, f"the last passing preflight+network run is {age / 3600:.1f} h old (limit {max_age_s / 3600:.1f} h): run it again"
    return True, f"preflight+network passed {age / 60:.0f} min ago for this cluster file"


def gate(cluster_file: Path, max_age_s: float, override: str | None = None, say=lambda m: print(m, file=sys.stderr)) -> bool:
    ok, why = check(cluster_file, max_age_s)
    if ok:
        say(f"gate: {why}")
        return True
    if override:
        log = status_path(cluster_file).with_name(".gb10check-overrides.log")
        with log.open("a") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} override: {override!r}; gate said: {why}\n")
        say(f"gate: OVERRIDDEN ({override}); logged in {log}. It said: {why}")
        return True
    say(f"gate: refused: {why} (or pass --override 'REASON', which is logged)")
    return False
