"""Start the stack rank 0 first, then the followers, and watch it until it serves, or stop it and say why.

vLLM never ends its own multi-node hangs (a follower without --headless dies while rank 0 waits
forever; a dropped rendezvous leaves both ranks waiting), and a checkpoint too big for unified
memory wedges a GB10 instead of failing. So the watch does what the field report did by hand:
  - memory watchdog (`MemoryWatchdog`, shared with the soak stage): MemAvailable on every node every
    poll_interval_s (0.5 s: a small file read over the open SSH connection); below min_mem_available on
    any node, every node's rank is stopped at once (kill: a wedging load does not wait for TERM);
  - a rank that exits fails the deploy at once, with its last log lines and the known cause
    (the follower's collective_rpc assertion, the -cc hyphen, Gloo timeouts ...); the others are
    stopped too (TERM, then KILL: a hung rank 0 ignores TERM), because both must restart together;
  - logs, exits and /health are read every FULL_CHECK_S (2 s), whatever the memory poll;
  - startup milestones (vllm_log) followed in order per rank; none new on any rank for
    stall_timeout_s fails the deploy with the milestone each rank is stuck at and the likely causes;
  - done when rank 0 logs "Application startup complete", /health answers and a first one-token completion
    comes back (`FirstAnswer`): /health is the API server alone, the first request is the first collective of
    every rank (a pair that hangs there looks healthy until a user asks), and its one-time start-up cost
    (28 s for TP=2 on the simulated pair) is then not the first user's, nor the soak's first stream's. Its
    limit is stall_timeout_s. nvidia-smi is never used as a probe (it blocks when the driver is stuck).
A deployment record (what, where, when, each stage's time) is written beside the cluster file.

Ranks are started by `ComposeLauncher`: each node's own compose file, `docker compose up -d`, over
the suite's SSH layer; the same on GB10s and on the simulated nodes (each runs its own dockerd).
Page caches are dropped on every node first (a full cache slows the load and misleads the watchdog).
With deploy.executor: ray (`launcher_for` picks deploy/ray.py's RayLauncher) the start is NVIDIA's playbook instead:
the Ray head on rank 0, the workers, the wait until every node is in at its QSFP address (a node registered elsewhere
or never joined fails the deploy, named), then `vllm serve` in rank 0's Ray container; the watch is the same.
"""

import json
import os
import re
import shlex
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .. import compose
from ..cluster import Cluster
from ..facts import vllm_log
from ..facts._text import ParseError
from ..facts.docker import parse_container
from ..facts.meminfo import parse_meminfo
from ..gather import compose_dry_run
from ..errors import line
from ..remote import RemoteError, RemoteNode

LIKELY_STALL = ("a firewall dropping the master port {port} on a follower (ufw allow from the QSFP subnets); "
                "GLOO_SOCKET_IFNAME / VLLM_HOST_IP naming the wrong interface; a rank that was never started")
LIKELY_STALL_RAY = ("a firewall dropping Ray's ports or the worker port range on a node (ufw allow from the QSFP subnets); "
                    "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME naming an interface a worker lacks (vLLM copies the head's "
                    "variables to the Ray workers); a placement group that cannot be placed (`ray status` on {head})")


LOG_PREFIX = re.compile(r"^(?:\([^)]*\)\s+)?(?:ERROR|WARNING|INFO)\s+\d\d-\d\d \S+ \[[^\]]*\]\s*")  # "(Worker pid=1) ERROR 11-30 07:36:12 [file.py:9] "


class DeployFailed(Exception):
    pass


def read_log(text: str) -> vllm_log.VllmLog:
    """A rank's log so far; empty or not yet recognisable is no milestone, not an error."""
    try:
        return vllm_log.parse(text)
    except vllm_log.ParseError:
        return vllm_log.VllmLog()


@dataclass
class Record:
    model: str
    nodes: list[str]
    started: float = field(default_factory=time.time)
    stages: dict[str, float] = field(default_factory=dict)  # stage -> seconds since start
    milestones: dict[str, dict[str, float]] = field(default_factory=dict)  # node -> milestone -> seconds
    outcome: str = "running"
    reason: str = ""


class ComposeLauncher:
    """Each rank is its node's compose stack (`docker compose up -d` in deploy.workdir), reached over the suite's SSH
    layer: on real GB10s and on the simulated nodes alike (each runs its own dockerd)."""

    container = compose.CONTAINER_NAME  # the container each node's compose file runs

    def __init__(self, cluster: Cluster, nodes: dict[str, RemoteNode] | None = None):
        self.cluster = cluster
        self.nodes = nodes or {n.name: RemoteNode(n, cluster.ssh) for n in cluster.nodes}
        self.workdir = shlex.quote(cluster.deploy.workdir)

    def _run(self, node: str, command: str, timeout: float | None = None):
        return self.nodes[node].run(command, timeout=timeout)

    def rank_command(self, node: str) -> str:
        """The `vllm serve ...` this node's compose file runs (read back through the stub, as the compose lint does)."""
        d = self.cluster.deploy
        text = self.nodes[node].output(f"cat {self.workdir}/{shlex.quote(d.compose_file)}")
        env = compose.parse_env(self._run(node, f"cat {self.workdir}/.env").stdout)
        found = compose.vllm_service(yaml.safe_load(text) or {})
        dry = compose_dry_run(self.nodes[node], compose.interpolate(found[1], env)) if found else None
        args = dry.args if dry else None
        if not args or args[0] != "serve":
            why = f"the dry run could not run there (exit {dry.rc}: {dry.output[-200:]})" if dry and dry.could_not_run else f"saw {args}"
            raise DeployFailed(f"{node}: the compose file's command does not run `vllm serve` ({why})")
        return "vllm " + " ".join(args)

    def drop_caches(self, node: str) -> str:
        out = self.nodes[node].run("sync && echo 3 > /proc/sys/vm/drop_caches", sudo=True)
        return "dropped" if out.rc == 0 else f"not dropped ({(out.stderr or out.stdout).strip()[:120]})"

    def start(self, node: str) -> str:
        command = self.rank_command(node)
        out = self._run(node, f"cd {self.workdir} && docker compose up -d --pull never 2>&1", timeout=120)
        if out.rc != 0:
            raise DeployFailed(f"{node}: `docker compose up -d` exited {out.rc}:\n" + "\n".join(out.stdout.strip().splitlines()[-8:]))
        return "docker compose up -d: " + command

    def describe(self, node: str) -> str:
        return f"{node} (rank {self.cluster.node(node).rank})"

    def exit_code(self, node: str) -> int | None:
        """The rank's exit code, None while it runs."""
        return self.container_exit_code(node)

    def container_exit_code(self, node: str) -> int | None:
        out = self._run(node, f"docker inspect {self.container}")
        if out.rc != 0:
            return 255  # the container is gone (removed by hand, or never created)
        try:
            c = parse_container(out.stdout)
        except ParseError:
            return None  # unreadable this time: the next poll asks again
        return None if c.running or c.status in ("created", "restarting") else (c.exit_code if c.exit_code is not None else 255)

    def log(self, node: str) -> str:
        out = self._run(node, f"docker logs {self.container} 2>&1", timeout=30)
        return out.stdout if out.rc == 0 else ""

    def clock(self, node: str) -> float:
        """The node's own clock (what `docker logs --since` compares with)."""
        return float(self.nodes[node].output("date +%s.%N").strip())

    def log_since(self, node: str, since: float) -> tuple[float, str]:
        """(the node's clock now, the rank's log lines from `since` on that clock): a long run reads only what is new."""
        out = self._run(node, f"date +%s.%N; docker logs --since {since:.3f} {self.container} 2>&1", timeout=30)
        first, _, rest = out.stdout.partition("\n")
        try:
            now = float(first.strip())
        except ValueError:
            return since, ""
        return now, rest if out.rc == 0 else ""

    def stop(self, node: str, kill: bool = False, grace_s: float = 10) -> str:
        if self.container_exit_code(node) is not None:
            return "not running"
        # docker stop sends SIGTERM, then SIGKILL after the grace time (a hung rank 0 ignores TERM)
        command = f"docker kill {self.container}" if kill else f"docker stop -t {int(grace_s)} {self.container}"
        out = self._run(node, command, timeout=grace_s + 30)
        return ("killed" if kill else "stopped") if out.rc == 0 else f"did not stop ({(out.stderr or out.stdout).strip()[:120]})"

    def down(self, node: str) -> str:
        out = self._run(node, f"cd {self.workdir} && docker compose down --timeout 10 2>&1", timeout=60)
        return "down" if out.rc == 0 else f"down failed ({out.stdout.strip().splitlines()[-1:] or out.rc})"

    def mem_available_gib(self, node: str) -> float:
        facts = parse_meminfo(self.nodes[node].output("cat /proc/meminfo"))
        available = facts["mem_available_gib"]  # None on kernels without MemAvailable: use procps' estimate
        return available if available is not None else (facts.get("mem_available_estimate_gib") or 0.0)

    def close(self) -> None:
        for n in self.nodes.values():
            n.close()


FULL_CHECK_S = 2.0  # logs, exit codes and /health: read this often, whatever the memory poll interval


def stop_every_rank(launcher, order: list[str], kill: bool) -> str:
    """Every rank at once: a rank that ignores TERM holds only its own grace time, not the others' too; a node that
    cannot be reached is said, and the others are still stopped."""
    def stop(n: str) -> str:
        try:
            return launcher.stop(n, kill=kill)
        except RemoteError as exc:
            return f"not reached ({exc})"

    with ThreadPoolExecutor(max_workers=len(order) or 1) as pool:
        said = list(pool.map(stop, order))
    return "; ".join(f"{n}: {s}" for n, s in zip(order, said))


@dataclass
class Crossing:
    """MemAvailable under the floor on one node, and what stopping every rank then said."""
    node: str
    gib: float
    floor: float
    stopped: str
    reaction_s: float  # from the reading under the floor to every rank stopped

    @property
    def reason(self) -> str:
        return (f"watchdog: {self.node} MemAvailable {self.gib:.1f} GiB < {self.floor:g} GiB; stopped every rank "
                f"in {self.reaction_s:.1f} s ({self.stopped})")


class MemoryWatchdog:
    """The memory watchdog of every deployment and of the soak stage: `check()` reads MemAvailable on every node
    through the launcher (rank order) and, below `floor` on any node, kills every rank at once. Each reading is kept
    in `samples` as (monotonic time, node, GiB), so a long run can report the minimum per node."""

    def __init__(self, launcher, order: list[str], floor: float, clock=time.monotonic):
        self.launcher, self.order, self.floor, self.clock = launcher, order, floor, clock
        self.samples: list[tuple[float, str, float]] = []

    def check(self) -> Crossing | None:
        for n in self.order:  # the watchdog first: a wedging load leaves no time for anything else
            avail = self.launcher.mem_available_gib(n)
            t = self.clock()
            self.samples.append((t, n, avail))
            if avail < self.floor:
                stopped = stop_every_rank(self.launcher, self.order, kill=True)
                return Crossing(n, avail, self.floor, stopped, round(self.clock() - t, 2))
        return None

    def minimum(self) -> dict[str, float]:
        """The lowest MemAvailable seen per node (GiB)."""
        low: dict[str, float] = {}
        for _, n, gib in self.samples:
            low[n] = min(gib, low.get(n, gib))
        return low


class FirstAnswer(threading.Thread):
    """One completion of one token from the served model, in the background while the watch goes on. `status` is
    the HTTP status (None: no answer: `error` says why); `took_s` the seconds it took."""

    def __init__(self, cluster: Cluster, timeout_s: float):
        super().__init__(daemon=True, name="gb10check-first-answer")
        d = cluster.deploy
        self.url = f"http://{cluster.head.address}:{d.api_port}/v1/completions"
        self.body = json.dumps({"model": d.served_model_name, "prompt": "Hello", "max_tokens": 1}).encode()
        key = os.environ.get(cluster.serving.api_key_env) if cluster.serving.api_key_env else None
        self.headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        self.timeout_s = timeout_s
        self.status: int | None = None
        self.error = ""
        self.took_s = 0.0

    def run(self) -> None:
        t = time.monotonic()
        try:
            request = urllib.request.Request(self.url, data=self.body, headers=self.headers, method="POST")
            with urllib.request.urlopen(request, timeout=self.timeout_s) as r:
                self.status = r.status
        except urllib.error.HTTPError as exc:
            self.status, self.error = exc.code, exc.read(300).decode(errors="replace").strip()
        except (OSError, ValueError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        self.took_s = round(time.monotonic() - t, 1)


def launcher_for(cluster: Cluster) -> ComposeLauncher:
    """The launcher of the cluster's executor: mp's ranks, or the Ray playbook's containers (deploy/ray.py)."""
    if cluster.uses_ray:
        from .ray import RayLauncher

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
           ready_timeout_s: float = 1800) -> Record:
    d = cluster.deploy
    wd = d.watchdog
    stall = stall_timeout_s if stall_timeout_s is not None else wd.stall_timeout_s
    order = [n.name for n in cluster.by_rank()]
    rec = Record(d.model_id, order)
    t0 = time.monotonic()

    def mark(stage: str) -> None:
        rec.stages[stage] = round(time.monotonic() - t0, 1)
        record_path.write_text(json.dumps(rec.__dict__, indent=1) + "\n")

    def stop_all(kill: bool) -> str:
        return stop_every_rank(launcher, order, kill)

    def fail(reason: str, kill: bool) -> None:
        stopped = stop_all(kill)
        rec.outcome, rec.reason = "failed", reason + f"\nstopped every rank ({stopped})"
        mark("failed")
        raise DeployFailed(rec.reason)

    try:
        return _start_and_watch(cluster, launcher, rec, order, mark, fail, stop_all, say, stall, ready_timeout_s, t0)
    except RemoteError as exc:  # a node lost mid-deploy: the deploy fails, named, and the other ranks stop
        fail(line(exc), kill=True)
    except DeployFailed as exc:
        if rec.outcome == "running":  # a rank that would not start: the ranks already started must not stay up alone
            fail(str(exc), kill=False)
        raise
    except BaseException:
        stop_all(kill=True)  # never leave ranks running behind a crashed or interrupted watcher
        raise


def _start_and_watch(cluster, launcher, rec, order, mark, fail, stop_all, say, stall, ready_timeout_s, t0) -> Record:
    d = cluster.deploy
    wd = d.watchdog
    for n in order:
        say(f"page cache on {n}: {launcher.drop_caches(n)}")
    mark("caches dropped")
    if cluster.uses_ray:  # NVIDIA's playbook: Ray head, workers, every node in at its QSFP address, then vLLM on the head
        from . import ray as ray_flow

        ray_flow.deploy(cluster, launcher, timeout_s=stall, mark=mark, say=say, take_down=False)
    else:
        for n in order:
            say(f"starting rank {cluster.node(n).rank} on {n}: {launcher.start(n)}")
            mark(f"started {n}")
    seen: dict[str, int] = {n: 0 for n in order}
    last_progress = time.monotonic()
    url = f"http://{cluster.head.address}:{d.api_port}/health"
    watchdog = MemoryWatchdog(launcher, order, wd.min_mem_available)
    last_full = float("-inf")
    first: FirstAnswer | None = None
    while True:
        crossing = watchdog.check()
        if crossing is not None:
            rec.outcome, rec.reason = "failed", crossing.reason
            rec.stages["watchdog_reaction_s"] = crossing.reaction_s
            mark("failed")
            raise DeployFailed(rec.reason)
        if time.monotonic() - last_full < max(FULL_CHECK_S, wd.poll_interval_s):
            time.sleep(wd.poll_interval_s)
            continue
        last_full = time.monotonic()
        logs = {}
        for n in order:
            log = logs[n] = read_log(launcher.log(n))
            for m in log.milestones[seen[n]:]:
                rec.milestones.setdefault(n, {})[m.name] = round(time.monotonic() - t0, 1)
                say(f"  {time.monotonic() - t0:6.1f} s  {n}: {m.name}")
                last_progress = time.monotonic()
            seen[n] = len(log.milestones)
            code = launcher.exit_code(n)
            if code is not None:
                tail = "\n".join(launcher.log(n).rstrip().splitlines()[-12:])
                known = "".join(f"\ncause: {e.hint} ({LOG_PREFIX.sub('', e.text.strip())[:200]})" for e in log.errors[:2])
                fail(f"{launcher.describe(n)} exited with code {code} during startup{known}\nlast log lines:\n{tail}",
                     kill=False)
        if logs[order[0]].startup_complete and first is None:  # the log just recorded: its milestones are all in rec
            try:
                with urllib.request.urlopen(url, timeout=3) as r:
                    healthy = r.status == 200
            except OSError:
                healthy = False
            if healthy:
                mark("health")
                say(f"health: {url} answers, {rec.stages['health']:.1f} s after the first start; asking for a first token")
                first = FirstAnswer(cluster, timeout_s=stall + 30)  # the stall check below names a hang first
                first.start()
                last_progress = time.monotonic()
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
        stuck = time.monotonic() - last_progress
        if first is not None and stuck > stall:
            fail(f"startup stalled: {url} answers but a first one-token completion got no answer in {stuck:.0f} s; "
                 "likely causes: a rank hung at its first collective (NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME naming the "
                 "wrong interface, a firewall dropping the NCCL ports between nodes); read every rank's log", kill=False)
        if stuck > stall or time.monotonic() - t0 > ready_timeout_s:
            where = ", ".join(f"{n} at '{(read_log(launcher.log(n)).last_milestone or 'no milestone')}'" for n in order)
            likely = LIKELY_STALL_RAY.format(head=order[0]) if cluster.uses_ray else LIKELY_STALL.format(port=d.master_port)
            fail(f"startup stalled: no new milestone on any rank for {stuck:.0f} s ({where}); likely causes: " + likely, kill=False)
        time.sleep(wd.poll_interval_s)
