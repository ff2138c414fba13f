"""Start the stack rank 0 first, then the followers, and watch it until it serves, or stop it and say why.

vLLM never ends its own multi-node hangs (a follower without --headless dies while rank 0 waits
forever; a dropped rendezvous leaves both ranks waiting), and a checkpoint too big for unified
memory wedges a GB10 instead of failing. So the watch does what the field report did by hand:
  - memory watchdog (`MemoryWatchdog` of gb10check/watch.py, the rank watch shared with the soak stage): MemAvailable
    on every node every poll_interval_s (0.5 s: a small file read over the open SSH connection); below
    min_mem_available on any node, every node's rank is stopped at once (kill: a wedging load does not wait for TERM);
  - a rank that exits fails the deploy at once, with its last log lines and the known cause
    (the follower's collective_rpc assertion, the -cc hyphen, Gloo timeouts ...); the others are
    stopped too (TERM, then KILL: a hung rank 0 ignores TERM), because both must restart together;
  - logs, exits and /health are read every FULL_CHECK_S (2 s), whatever the memory poll;
  - startup milestones (vllm_log) followed in order per rank; rank 0's startup phases (deploy/phases.py: weights,
    compile, KV cache, graph capture, API) timed each on the watch's clock: a phase longer than its budget
    (expect.startup_phase_budgets_s, from the profile) fails the deploy with its name, its budget and that budget's
    source, and its likely causes. Before the first phase (process start, rendezvous) and from the first answer on,
    no new milestone on any rank for stall_timeout_s fails the deploy with the milestone each rank is stuck at;
  - done when rank 0 logs "Application startup complete", /health answers and a first one-token completion
    comes back (`FirstAnswer`): /health is the API server alone, the first request is the first collective of
    every rank (a pair that hangs there looks healthy until a user asks), and its one-time start-up cost
    (28 s for TP=2 on the simulated pair) is then not the first user's, nor the soak's first stream's. Its
    limit is stall_timeout_s. nvidia-smi is never used as a probe (it blocks when the driver is stuck).
A deployment record (what, where, when, each stage's time) is written beside the cluster file.

Ranks are started by `ComposeLauncher` (deploy/launch.py): each node's own compose file, `docker compose up -d`, over
the suite's SSH layer; the same on GB10s and on the simulated nodes (each runs its own dockerd).
Page caches are dropped on every node first (a full cache slows the load and misleads the watchdog).
With deploy.executor: ray (`launcher_for` picks deploy/ray.py's RayLauncher) the start is NVIDIA's playbook instead:
the Ray head on rank 0, the workers, the wait until every node is in at its QSFP address (a node registered elsewhere
or never joined fails the deploy, named), then `vllm serve` in rank 0's Ray container; the watch is the same.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..cluster import Cluster
from ..errors import line
from ..remote import RemoteError
from ..serving import Api, ApiUnreachable, api_of
from ..watch import FULL_CHECK_S, MemoryWatchdog, exited, read_log, stop_every_rank
from . import phases as startup_phases
from . import ray as ray_flow
from .launch import ComposeLauncher, DeployFailed
from .ray import RayLauncher

LIKELY_STALL = ("a firewall dropping the master port {port} on a follower (ufw allow from the QSFP subnets); "
                "GLOO_SOCKET_IFNAME / VLLM_HOST_IP naming the wrong interface; a rank that was never started")
LIKELY_STALL_RAY = ("a firewall dropping Ray's ports or the worker port range on a node (ufw allow from the QSFP subnets); "
                    "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME naming an interface a worker lacks (vLLM copies the head's "
                    "variables to the Ray workers); a placement group that cannot be placed (`ray status` on {head})")


@dataclass
class Record:
    model: str
    nodes: list[str]
    started: float = field(default_factory=time.time)
    stages: dict[str, float] = field(default_factory=dict)  # stage -> seconds since start
    milestones: dict[str, dict[str, float]] = field(default_factory=dict)  # node -> milestone -> seconds
    phases: dict[str, list[float]] = field(default_factory=dict)  # rank 0's phase -> [began, ended] seconds (ended: None)
    outcome: str = "running"
    reason: str = ""


class FirstAnswer(threading.Thread):
    """One completion of one token from the served model (serving.Api.first_token), in the background while the watch
    goes on. `status` is the HTTP status (None: no answer: `error` says why); `took_s` the seconds it took."""

    def __init__(self, api: Api, model: str):
        super().__init__(daemon=True, name="gb10check-first-answer")
        self.api, self.model = api, model
        self.status: int | None = None
        self.error = ""
        self.took_s = 0.0

    def run(self) -> None:
        self.api.client  # made (openai imported) before the clock starts: that second is not the server's to answer
        t = time.monotonic()
        try:
            reply = self.api.first_token(self.model)
            self.status = reply.status
            self.error = "" if reply.status == 200 else reply.error
        except ApiUnreachable as exc:
            self.error = str(exc)
        self.took_s = round(time.monotonic() - t, 1)


def launcher_for(cluster: Cluster) -> ComposeLauncher:
    """The launcher of the cluster's executor: mp's ranks, or the Ray playbook's containers (deploy/ray.py)."""
    if cluster.uses_ray:
        return RayLauncher(cluster)
    return ComposeLauncher(cluster)


def down(launcher: ComposeLauncher, order: list[str], say=print) -> bool:
    """`docker compose down` on every node, followers first; True when every node is down. With Ray, vLLM in rank 0's
    container is stopped first (TERM, then KILL), then Ray with each node's container. A node that cannot be reached is
    one line with its fix, and every other node is still taken down."""
    ok = True
    if hasattr(launcher, "stop_vllm"):
        try:
            say(f"{order[0]}: vLLM {launcher.stop_vllm(order[0])}")
        except RemoteError as exc:
            say(f"{order[0]}: vLLM not stopped: {line(exc)}")
            ok = False
    for n in reversed(order):
        try:
            result = launcher.down(n)
        except RemoteError as exc:
            result = f"not taken down: {line(exc)}"
        say(f"{n}: {result}")
        ok = ok and result == "down"
    return ok


def deploy(cluster: Cluster, launcher, record_path: Path, say=print, stall_timeout_s: float | None = None,
           ready_timeout_s: float = 1800, clock=time.monotonic, sleep=time.sleep) -> Record:
    """`clock` and `sleep` are the watch's time (a self-test scripts both: selftests/test_watches_on_their_clock.py)."""
    d = cluster.deploy
    wd = d.watchdog
    stall = stall_timeout_s if stall_timeout_s is not None else wd.stall_timeout_s
    order = [n.name for n in cluster.by_rank()]
    rec = Record(d.model_id, order)
    t0 = clock()

    def mark(stage: str) -> None:
        rec.stages[stage] = round(clock() - t0, 1)
        record_path.write_text(json.dumps(rec.__dict__, indent=1) + "\n")

    def stop_all(kill: bool) -> str:
        return stop_every_rank(launcher, order, kill)

    def fail(reason: str, kill: bool) -> None:
        stopped = stop_all(kill)
        rec.outcome, rec.reason = "failed", reason + f"\nstopped every rank ({stopped})"
        mark("failed")
        raise DeployFailed(rec.reason)

    try:
        return _start_and_watch(cluster, launcher, rec, order, mark, fail, stop_all, say, stall, ready_timeout_s, t0, clock, sleep)
    except RemoteError as exc:  # a node lost mid-deploy: the deploy fails, named, and the other ranks stop
        fail(line(exc), kill=True)
    except DeployFailed as exc:
        if rec.outcome == "running":  # a rank that would not start: the ranks already started must not stay up alone
            fail(str(exc), kill=False)
        raise
    except BaseException:
        stop_all(kill=True)  # never leave ranks running behind a crashed or interrupted watcher
        raise


def _start_and_watch(cluster, launcher, rec, order, mark, fail, stop_all, say, stall, ready_timeout_s, t0, clock, sleep) -> Record:
    d = cluster.deploy
    wd = d.watchdog
    for n in order:
        say(f"page cache on {n}: {launcher.drop_caches(n)}")
    mark("caches dropped")
    if cluster.uses_ray:  # NVIDIA's playbook: Ray head, workers, every node in at its QSFP address, then vLLM on the head
        ray_flow.deploy(cluster, launcher, timeout_s=stall, mark=mark, say=say, take_down=False)
    else:
        for n in order:
            say(f"starting rank {cluster.node(n).rank} on {n}: {launcher.start(n)}")
            mark(f"started {n}")
    seen: dict[str, int] = {n: 0 for n in order}
    last_progress = clock()
    api = api_of(cluster, timeout_s=stall + 30)  # the first token's bound: the stall check below names a hang first
    url = f"{api.root}/health"
    watchdog = MemoryWatchdog(launcher, order, wd.min_mem_available, clock=clock)
    last_full = float("-inf")
    first: FirstAnswer | None = None
    phase, phase_since = None, clock()  # rank 0's startup phase and when the watch saw it begin
    while True:
        crossing = watchdog.check()
        if crossing is not None:
            rec.outcome, rec.reason = "failed", crossing.reason
            rec.stages["watchdog_reaction_s"] = crossing.reaction_s
            mark("failed")
            raise DeployFailed(rec.reason)
        if clock() - last_full < max(FULL_CHECK_S, wd.poll_interval_s):
            sleep(wd.poll_interval_s)
            continue
        last_full = clock()
        logs = {}
        for n in order:
            log = logs[n] = read_log(launcher.log(n))
            for m in log.milestones[seen[n]:]:
                rec.milestones.setdefault(n, {})[m.name] = round(clock() - t0, 1)
                say(f"  {clock() - t0:6.1f} s  {n}: {m.name}")
                last_progress = clock()
            seen[n] = len(log.milestones)
            gone = exited(launcher, n)
            if gone is not None:
                known = f"\ncause: {gone.cause}" if gone.cause else ""
                tail = "\n".join(gone.last_lines)
                fail(f"{launcher.describe(n)} exited with code {gone.code} during startup{known}\nlast log lines:\n{tail}",
                     kill=False)
        now = startup_phases.current(logs[order[0]])
        if now != phase:
            if phase is not None:
                rec.phases[phase][1] = round(clock() - t0, 1)
            if now is not None:
                rec.phases[now] = [round(clock() - t0, 1), None]
                say(f"  {clock() - t0:6.1f} s  {order[0]}: phase {now} ({startup_phases.WHAT[now]})")
            phase, phase_since = now, clock()
        if phase is not None:
            limit, source = startup_phases.budget(cluster, phase)
            took = clock() - phase_since
            if took > limit:
                fail(f"startup stalled in phase '{phase}' ({startup_phases.WHAT[phase]}) on {launcher.describe(order[0])}: "
                     f"{took:.0f} s in it, over its budget of {limit:g} s ({source}); last milestone "
                     f"'{logs[order[0]].last_milestone}'; likely causes: {startup_phases.LIKELY[phase]}", kill=False)
        if logs[order[0]].startup_complete and first is None:  # the log just recorded: its milestones are all in rec
            try:
                healthy = api.get("/health", root=True, timeout_s=3).status == 200
            except ApiUnreachable:
                healthy = False
            if healthy:
                mark("health")
                say(f"health: {url} answers, {rec.stages['health']:.1f} s after the first start; asking for a first token")
                first = FirstAnswer(api, d.served_model_name)
                first.start()
                last_progress = clock()
        if first is not None and not first.is_alive():
            if first.status is None or first.status >= 500:
                what = f"HTTP {first.status}: {first.error[:300]}" if first.status else first.error[:300]
                fail(f"{url} answers but the first completion failed after {first.took_s:.0f} s ({what}); "
                     "every rank's log (docker logs) says why", kill=False)
            rec.outcome = "serving"
            mark("serving")
            note = "" if first.status == 200 else f" (it answered HTTP {first.status}: {first.error[:160]}; not a token)"
            say(f"serving: a first completion came back in {first.took_s:.1f} s{note}, {rec.stages['serving']:.1f} s after "
                "the first start")
            return rec
        stuck = clock() - last_progress
        if first is not None and stuck > stall:
            fail(f"startup stalled: {url} answers but a first one-token completion got no answer in {stuck:.0f} s; "
                 "likely causes: a rank hung at its first collective (NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME naming the "
                 "wrong interface, a firewall dropping the NCCL ports between nodes); read every rank's log", kill=False)
        if (stuck > stall and phase is None) or clock() - t0 > ready_timeout_s:  # in a phase: its own budget
            where = ", ".join(f"{n} at '{(read_log(launcher.log(n)).last_milestone or 'no milestone')}'" for n in order)
            likely = LIKELY_STALL_RAY.format(head=order[0]) if cluster.uses_ray else LIKELY_STALL.format(port=d.master_port)
            fail(f"startup stalled: no new milestone on any rank for {stuck:.0f} s ({where}); likely causes: " + likely, kill=False)
        sleep(wd.poll_interval_s)
