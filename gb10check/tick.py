"""`gb10check watch`: the deployed cluster looked at every few minutes, between runs of the suite, for weeks.

A tick (`tick()`), on every node at once through the fact registry (gather.fleet.look) and over one SSH connection each:
  1. first look: MemAvailable (meminfo), the GPU's temperature and active clock-event reasons (gpu_health), the boot id
     and the journal's boots (boots), each rank's container, processes and last log line (rank_state);
  2. one small streamed request through the serving client (serving.Api, the `openai` client), timed: its first token
     within watch.ttft_budget_s, no gap between tokens over watch.itl_budget_ms. Never more than this one request;
  3. second look: each rank again and its node's QSFP links, so a rank whose CPU time did not move while the others'
     did, whose container is paused, whose processes are stopped, or whose link is down is named
     (gb10check/checks/ranks.py: the same judge as the soak's stall);
  4. each rank's log since the last tick (the rank watch's reading, gb10check/watch.py: vllm_log's hang, memory and
     engine signatures), through the deployment's launcher over the same connections;
  5. judged (`judge()`, pure) against the cluster's last tick in the history: a boot id that changed is a reboot since
     the last look; each clock-event reason is counted tick by tick, with its change since the last tick.
Each tick is a run of stage `watch` in the run history (gb10check/history.py), printed as one JSON line on stdout
(its findings as text on stderr), optionally written as Prometheus text (--metrics-file); its exit status is 0 (passed,
warnings included), 1 (a failure) or 3 (nothing failed, but something could not be read).
"""

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import history as hist
from . import metrics
from .checks import ranks
from .cluster import Cluster
from .facts.procfs import Boots
from .gather import Unreadable
from .soak import HANG_SIGNATURES, MEMORY_SIGNATURES
from .watch import read_log
from .remedies import Code
from .remote import RemoteError, RemoteNode
from .serving import Api, ApiUnreachable, api_of
from .stopped import looks
from .verdict import Finding

STAGE = "watch"
HOST_FACTS = ("meminfo", "gpu_health", "boots")
READ_GRACE_S = 5.0  # the request's read timeout past its TTFT budget: a late first token is still timed
PASSED, FAILED, NOT_CHECKED = 0, 1, 3
# Clock-event reasons (NVML's clocksEventReasons bits) that mean heat or a power brake.
THERMAL = {0x8: "HW slowdown", 0x20: "SW thermal slowdown", 0x40: "HW thermal slowdown", 0x80: "HW power brake slowdown"}


@dataclass
class Request:
    """The tick's one request: answered (its TTFT, its longest inter-token gap, its tokens) or why not."""
    ttft_s: float | None = None
    max_gap_ms: float | None = None
    tokens: int = 0
    error: str | None = None  # refused (its status and message), no answer, a broken stream


def one_request(api: Api, cluster: Cluster) -> Request:
    w = cluster.watch
    body = {"model": cluster.deploy.served_model_name, "messages": [{"role": "user", "content": w.prompt}],
            "temperature": 0, "max_tokens": w.max_tokens, "chat_template_kwargs": {"enable_thinking": False},
            "stream_options": {"include_usage": True}}
    try:
        reply, timed = api.stream(body, read_timeout_s=w.ttft_budget_s + READ_GRACE_S)
    except ApiUnreachable as exc:
        return Request(error=str(exc))
    if reply is not None:
        return Request(error=f"{reply.status}: {reply.error}" if reply.status is not None else reply.error)
    gaps = timed.gaps
    return Request(round(timed.ttft_s, 3) if timed.ttft_s is not None else None,
                   round(max(gaps) * 1000, 1) if gaps else None, timed.completion_tokens or timed.token_chunks,
                   timed.broken or (f"error event: {timed.stream.error}" if timed.stream.error else None)
                   or (None if timed.token_chunks else "no token in the answer"))


@dataclass
class Seen:
    """What one tick saw: per node its host facts (a value, or the Unreadable / RemoteError that stopped it), the ranks'
    looks, the request."""
    at: float
    hosts: dict[str, dict]
    rank_looks: list[ranks.RankLook]
    request: Request
    logs: dict[str, str] = field(default_factory=dict)  # node -> its rank's log since the last look (absent: not read)


@dataclass
class Last:
    """The cluster's last tick, as the history kept it: each node's boot id and clock-event counts."""
    run: int | None = None
    at: float | None = None
    boot_ids: dict[str, str] = field(default_factory=dict)
    clocks: dict[str, float] = field(default_factory=dict)  # node -> its clock at the last look (its log is read from there)
    counts: dict[tuple[str, str], float] = field(default_factory=dict)  # (figure, node) -> ticks it was seen


def last_tick(store: hist.History | None, cluster: str) -> Last:
    if store is None:
        return Last()
    for run in store.runs(cluster, limit=200):
        if STAGE in run.stages:
            got = store.show(run.id)
            last = Last(run.id, run.started)
            for what, where, value, _ in got.figures:
                if what == "boot id":
                    last.boot_ids[where] = str(value)
                elif what == "node clock":
                    last.clocks[where] = float(value)
                elif what.startswith("clock events "):
                    last.counts[(what, where)] = float(value)
            return last
    return Last()


def _value(hosts: dict, node: str, fact: str):
    got = hosts.get(node)
    if isinstance(got, RemoteError):
        return None, f"not reached: {got}"
    value = (got or {}).get(fact)
    if isinstance(value, Unreadable) or value is None:
        return None, value.why if isinstance(value, Unreadable) else "not read"
    return value, None


def judge(cluster: Cluster, seen: Seen, last: Last) -> tuple[dict[str, list[Finding]], list[tuple]]:
    """Findings per check of the tick (check name -> findings; [] passed) and its figures (what, where, value, unit)."""
    w, checks, figures = cluster.watch, {}, []
    floor = w.min_mem_available if w.min_mem_available is not None else cluster.deploy.watchdog.min_mem_available
    head = cluster.head.name
    r = seen.request
    req: list[Finding] = []
    if r.error:
        req.append(Finding(Code.WATCH_NO_ANSWER, head, f"the watch's request: {r.error[:300]}",
                           f"an answer of up to {w.max_tokens} tokens, its first within {w.ttft_budget_s:g} s",
                           why=r.error[:120]))
    if r.ttft_s is not None:
        figures.append(("watch ttft", head, r.ttft_s, "s"))
        if r.ttft_s > w.ttft_budget_s:
            req.append(Finding(Code.WATCH_TTFT, head, f"the first token after {r.ttft_s:.2f} s",
                               f"within {w.ttft_budget_s:g} s (watch.ttft_budget_s)"))
    if r.max_gap_ms is not None:
        figures.append(("watch itl max", head, r.max_gap_ms, "ms"))
        if r.max_gap_ms > w.itl_budget_ms:
            req.append(Finding(Code.WATCH_ITL, head, f"a gap of {r.max_gap_ms:.0f} ms between two tokens ({r.tokens} tokens)",
                               f"none over {w.itl_budget_ms:g} ms (watch.itl_budget_ms)"))
    checks["watch::request"] = req
    what = f"the watch's request: {r.error[:120]}" if r.error else "the watch's request"
    found = ranks.judge_ranks(seen.rank_looks, what)
    checks["watch::ranks"] = found
    signs: list[Finding] = []
    for look in seen.rank_looks:
        if look.second is not None:
            figures.append(("node clock", look.node, look.second.now, "s"))
        text = seen.logs.get(look.node)
        for e in read_log(text).errors if text else []:
            code = (Code.SOAK_HANG_SIGNATURE if e.name in HANG_SIGNATURES else Code.SOAK_NO_MEMORY
                    if e.name in MEMORY_SIGNATURES else Code.SOAK_ENGINE_ERROR)
            signs.append(Finding(code, look.node, f"rank {look.rank}'s log since the last look: {e.text.strip()[:300]!r} "
                                 f"({e.name})", "no hang or engine error in any rank's log", hint=e.hint))
    checks["watch::logs"] = signs
    for look in seen.rank_looks:
        if look.second is not None and look.second.log_age_s is not None:
            figures.append(("watch last log line age", look.node, look.second.log_age_s, "s"))
    for spec in cluster.by_rank():
        n = spec.name
        meminfo, why = _value(seen.hosts, n, "meminfo")
        mem: list[Finding] = []
        if meminfo is not None and meminfo.get("mem_available_gib") is None and meminfo.get("mem_available_estimate_gib") is None:
            meminfo, why = None, "neither MemAvailable nor the fields to estimate it in /proc/meminfo"
        if meminfo is None:
            mem.append(Finding(Code.COMMAND_FAILED, n, f"MemAvailable: {why}", "/proc/meminfo readable", command="cat /proc/meminfo"))
        else:
            gib = meminfo.get("mem_available_gib")
            gib = gib if gib is not None else meminfo.get("mem_available_estimate_gib")
            figures.append(("watch mem available", n, round(gib, 2), "GiB"))
            if gib < floor:
                mem.append(Finding(Code.WATCH_MEMORY, n, f"MemAvailable {gib:.1f} GiB", f">= {floor:g} GiB "
                                   "(watch.min_mem_available, else deploy.watchdog.min_mem_available)"))
        checks[f"watch::memory[{n}]"] = mem
        gpu, why = _value(seen.hosts, n, "gpu_health")
        heat: list[Finding] = []
        if gpu is None:
            heat.append(Finding(Code.COMMAND_FAILED, n, f"the GPU's temperature: {why}", "nvidia-smi's temperature.gpu",
                                command="nvidia-smi --query-gpu=temperature.gpu,clocks_throttle_reasons.active --format=csv"))
        for i, row in enumerate(gpu or []):
            where = n if len(gpu) == 1 else f"{n} gpu{i}"
            temp = row.get("temperature_gpu")
            if temp is not None:
                figures.append(("watch gpu temperature", where, temp, "C"))
                if temp >= w.max_temperature_c:
                    heat.append(Finding(Code.WATCH_TEMPERATURE, where, f"GPU at {temp:g} C", f"under {w.max_temperature_c:g} C "
                                        "(watch.max_temperature_c)", warning=True))
            try:
                bits = int(str(row.get("clocks_event_reasons_active")), 16)
            except ValueError:
                bits = 0
            active = [name for bit, name in THERMAL.items() if bits & bit]
            for bit, name in THERMAL.items():
                key = (f"clock events {name}", where)
                count = last.counts.get(key, 0.0) + (1 if bits & bit else 0)
                figures.append((key[0], where, count, "ticks"))
            if active:
                grew = ", ".join(f"{name}: seen in {last.counts.get((f'clock events {name}', where), 0) + 1:g} ticks "
                                 f"(+1 since the last)" for name in active)
                heat.append(Finding(Code.WATCH_THERMAL_SLOWDOWN, where, f"clock-event reasons 0x{bits:x} active: {grew}",
                                    "no thermal or power-brake slowdown", warning=True, reasons=", ".join(active)))
        checks[f"watch::gpu[{n}]"] = heat
        boots, why = _value(seen.hosts, n, "boots")
        boot: list[Finding] = []
        if boots is None:
            boot.append(Finding(Code.COMMAND_FAILED, n, f"the boot id: {why}", "/proc/sys/kernel/random/boot_id readable",
                                command="cat /proc/sys/kernel/random/boot_id"))
        else:
            figures.append(("boot id", n, boots.boot_id, "id"))
            before = last.boot_ids.get(n)
            if before is not None and before != boots.boot_id:
                boot.append(Finding(Code.WATCH_REBOOTED, n, reboot_text(before, boots, last.at),
                                    f"boot {before} as at the last look (run #{last.run})"))
        checks[f"watch::boots[{n}]"] = boot
    return checks, figures


def reboot_text(before: str, boots: Boots, since: float | None) -> str:
    """How many times the node booted since the boot seen last (the journal's list, when it keeps the old boot)."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since)) if since else "the last look"
    if before in boots.journal:
        n = len(boots.journal) - 1 - boots.journal.index(before)
        return f"{n} boot{'s' if n != 1 else ''} since {when} (boot {before} -> {boots.boot_id}, in the journal's boot list)"
    return f"booted since {when} (boot {before} -> {boots.boot_id}; the journal no longer lists the old boot)"


def outcome(findings: list[Finding]) -> str:
    if any(f.severity == "failure" for f in findings):
        return "failed"
    if any(f.severity == "not-checked" for f in findings):
        return "not checked"
    return "passed"


def exit_status(outcomes: dict[str, str]) -> int:
    values = set(outcomes.values())
    return FAILED if "failed" in values else NOT_CHECKED if "not checked" in values else PASSED


def look_and_ask(cluster: Cluster, nodes: dict[str, RemoteNode], api: Api) -> Seen:
    """The tick's two looks with its one request between them."""
    at = time.time()
    asked: list[Request] = []
    first: dict = {}
    rank_looks = looks(cluster, nodes, between=lambda: asked.append(one_request(api, cluster)), also=HOST_FACTS, first_seen=first)
    return Seen(at, first, rank_looks, asked[0])


def logs_since(cluster: Cluster, nodes: dict[str, RemoteNode], rank_looks: list[ranks.RankLook], last: Last) -> dict[str, str]:
    """Each rank's log since the last tick's look (the first tick: watch.every_s back), through the deployment's launcher;
    a node whose clock or log could not be read is left out (its rank look says why)."""
    from .deploy.launch import ComposeLauncher
    from .deploy.ray import RayLauncher

    launcher = (RayLauncher if cluster.uses_ray else ComposeLauncher)(cluster, nodes)
    out = {}
    for look in rank_looks:
        if look.first is None:
            continue
        since = last.clocks.get(look.node, look.first.now - cluster.watch.every_s)
        try:
            out[look.node] = launcher.log_since(look.node, since)[1]
        except RemoteError:
            continue
    return out


def tick(cluster: Cluster, cluster_file: Path, store: hist.History | None, metrics_file: Path | None = None,
         out=sys.stdout, err=sys.stderr) -> int:
    """One tick: look, ask, judge, record, say. Its exit status."""
    from .stage import file_hash

    nodes = {n.name: RemoteNode(n, cluster.ssh) for n in cluster.by_rank()}
    last = last_tick(store, cluster.history_name)
    try:
        seen = look_and_ask(cluster, nodes, api_of(cluster, timeout_s=cluster.watch.ttft_budget_s + READ_GRACE_S))
        seen.logs = logs_since(cluster, nodes, seen.rank_looks, last)
    finally:
        for n in nodes.values():
            n.close()
    checks, figures = judge(cluster, seen, last)
    outcomes = {name: outcome(found) for name, found in checks.items()}
    findings = {name: [f.as_dict() for f in found] for name, found in checks.items()}
    run_id = None
    if store is not None:
        run_id = store.record(started=seen.at, cluster=cluster.history_name, cluster_file=str(cluster_file.resolve()),
                              cluster_sha256=file_hash(cluster_file), outcomes=outcomes, stages={t: STAGE for t in outcomes},
                              complete_stages=[STAGE], findings=findings, measured=figures, versions={})
    if metrics_file is not None:
        metrics.write(metrics_file, metrics.text(cluster.name, figures, outcomes, time.time(), hist.green(outcomes)))
    status = exit_status(outcomes)
    for found in checks.values():
        for f in found:
            print(f.text, file=err)
    line = {"time": round(seen.at, 3), "cluster": cluster.name, "run": run_id, "status": status,
            "outcomes": outcomes, "stopped": ranks.which_rank(seen.rank_looks).text,
            "figures": {f"{what} {where}": value for what, where, value, _ in figures},
            "findings": [f for fs in findings.values() for f in fs]}
    print(json.dumps(line, sort_keys=True), file=out, flush=True)
    return status
