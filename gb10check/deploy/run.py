"""Start the stack rank 0 first, then the followers, and watch it until it serves, or stop it and say why.

vLLM never ends its own multi-node hangs (a follower without --headless dies while rank 0 waits
forever; a dropped rendezvous leaves both ranks waiting), and a checkpoint too big for unified
memory wedges a GB10 instead of failing. So the watch does what the field report did by hand:
  - memory watchdog: MemAvailable on every node every poll_interval_s; below min_mem_available on
    any node, every node's rank is stopped at once (kill: a wedging load does not wait for TERM);
  - a rank that exits fails the deploy at once, with its last log lines and the known cause
    (the follower's collective_rpc assertion, the -cc hyphen, Gloo timeouts ...); the others are
    stopped too (TERM, then KILL: a hung rank 0 ignores TERM), because both must restart together;
  - startup milestones (vllm_log) followed in order per rank; none new on any rank for
    stall_timeout_s fails the deploy with the milestone each rank is stuck at and the likely causes;
  - done when rank 0 logs "Application startup complete" and /health answers. nvidia-smi is never
    used as a probe (it blocks when the driver is stuck).
A deployment record (what, where, when, each stage's time) is written beside the cluster file.

How ranks are started is a Launcher. `SimLauncher` runs, inside each simulated node, exactly the
`vllm serve` command and environment that node's compose file would run (read back through the
compose stub), as a process instead of a container: the simulation has no container runtime.
"""

import json
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .. import compose
from ..cluster import Cluster
from ..facts import vllm_log
from ..facts.meminfo import parse_meminfo

LIKELY_STALL = ("a firewall dropping the master port {port} on a follower (ufw allow from the QSFP subnets); "
                "GLOO_SOCKET_IFNAME / VLLM_HOST_IP naming the wrong interface; a rank that was never started")


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


class SimLauncher:
    """Ranks as processes in the simulated nodes, with their compose file's own command and environment."""

    def __init__(self, cluster: Cluster):
        from ..sim import control, provision

        self.cluster, self.control, self.provision = cluster, control, provision
        self.procs: dict[str, subprocess.Popen] = {}

    def log_path(self, node: str) -> Path:
        return self.control.state_dir() / f"deploy-{node}.log"

    def command(self, node: str) -> tuple[list[str], dict[str, str]]:
        d = self.cluster.deploy
        text = self.control.node_exec(node, f"cat {d.workdir}/{d.compose_file}").stdout
        env_text = self.control.node_exec(node, f"cat {d.workdir}/.env").stdout
        svc = compose.interpolate(compose.vllm_service(yaml.safe_load(text))[1], compose.parse_env(env_text))
        args = compose.vllm_args(svc)
        if not args or args[0] != "serve":
            raise DeployFailed(f"{node}: the compose file's command does not run `vllm serve` (saw {args})")
        env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
        rank = self.cluster.node(node).rank
        # What the container would have from its image and mounts, on this CPU-only machine.
        env.update({"HF_HOME": d.hf_cache, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
                    "VLLM_CPU_OMP_THREADS_BIND": str(rank % 2), "HOME": "/root", "PATH": "/usr/bin:/bin"})
        return [str(self.provision.vllm_bin())] + args, env

    def start(self, node: str) -> str:
        argv, env = self.command(node)
        import shlex

        shell = "exec env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + shlex.join(argv)
        log = open(self.log_path(node), "w")
        self.procs[node] = subprocess.Popen(
            ["nsenter", "-t", str(self.control.pid_of(node)), "-m", "-u", "-n", "-p", "-i", "-r", "-w", "/bin/sh", "-c", shell],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        return "vllm " + " ".join(argv[1:])

    def exit_code(self, node: str) -> int | None:
        return self.procs[node].poll() if node in self.procs else None

    def log(self, node: str) -> str:
        try:
            return self.log_path(node).read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, node: str, kill: bool = False, grace_s: float = 10) -> str:
        import os
        import signal

        p = self.procs.get(node)
        if p is None or p.poll() is not None:
            return "not running"
        sigs = [signal.SIGKILL] if kill else [signal.SIGTERM, signal.SIGKILL]
        for sig in sigs:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                return "stopped"
            try:
                p.wait(timeout=grace_s if sig == signal.SIGTERM else 10)
                return "stopped by " + sig.name
            except subprocess.TimeoutExpired:
                continue
        return "did not stop"

    def mem_available_gib(self, node: str) -> float:
        return parse_meminfo(self.control.node_exec(node, "cat /proc/meminfo").stdout)["mem_available_gib"]


def deploy(cluster: Cluster, launcher, record_path: Path, say=print, stall_timeout_s: float | None = None,
           ready_timeout_s: float = 1800) -> Record:
    d = cluster.deploy
    wd = d.watchdog
    stall = stall_timeout_s if stall_timeout_s is not None else wd.stall_timeout_s
    order = [n.name for n in sorted(cluster.nodes, key=lambda n: n.rank)]
    rec = Record(d.model_id, order)
    t0 = time.monotonic()

    def mark(stage: str) -> None:
        rec.stages[stage] = round(time.monotonic() - t0, 1)
        record_path.write_text(json.dumps(rec.__dict__, indent=1) + "\n")

    def stop_all(kill: bool) -> str:
        return "; ".join(f"{n}: {launcher.stop(n, kill=kill)}" for n in order)

    def fail(reason: str, kill: bool) -> None:
        stopped = stop_all(kill)
        rec.outcome, rec.reason = "failed", reason + f"\nstopped every rank ({stopped})"
        mark("failed")
        raise DeployFailed(rec.reason)

    try:
        return _start_and_watch(cluster, launcher, rec, order, mark, fail, stop_all, say, stall, ready_timeout_s, t0)
    except DeployFailed:
        raise
    except BaseException:
        stop_all(kill=True)  # never leave ranks running behind a crashed or interrupted watcher
        raise


def _start_and_watch(cluster, launcher, rec, order, mark, fail, stop_all, say, stall, ready_timeout_s, t0) -> Record:
    d = cluster.deploy
    wd = d.watchdog
    for n in order:
        say(f"starting rank {cluster.node(n).rank} on {n}: {launcher.start(n)}")
        mark(f"started {n}")
    seen: dict[str, int] = {n: 0 for n in order}
    last_progress = time.monotonic()
    url = f"http://{cluster.head.address}:{d.api_port}/health"
    while True:
        for n in order:  # the watchdog first: a wedging load leaves no time for anything else
            avail = launcher.mem_available_gib(n)
            if avail < wd.min_mem_available:
                t_cross = time.monotonic()
                stopped = stop_all(kill=True)
                rec.outcome = "failed"
                rec.reason = (f"watchdog: {n} MemAvailable {avail:.1f} GiB < {wd.min_mem_available:g} GiB; stopped every rank "
                              f"in {time.monotonic() - t_cross:.1f} s ({stopped})")
                rec.stages["watchdog_reaction_s"] = round(time.monotonic() - t_cross, 2)
                mark("failed")
                raise DeployFailed(rec.reason)
        for n in order:
            log = read_log(launcher.log(n))
            for m in log.milestones[seen[n]:]:
                rec.milestones.setdefault(n, {})[m.name] = round(time.monotonic() - t0, 1)
                say(f"  {time.monotonic() - t0:6.1f} s  {n}: {m.name}")
                last_progress = time.monotonic()
            seen[n] = len(log.milestones)
            code = launcher.exit_code(n)
            if code is not None:
                tail = "\n".join(launcher.log(n).rstrip().splitlines()[-12:])
                known = "".join(f"\ncause: {e.hint} ({e.text.strip()[:160]})" for e in log.errors[:2])
                fail(f"{n} (rank {cluster.node(n).rank}) exited with code {code} during startup{known}\nlast log lines:\n{tail}",
                     kill=False)
        if read_log(launcher.log(order[0])).startup_complete:
            try:
                with urllib.request.urlopen(url, timeout=3) as r:
                    if r.status == 200:
                        rec.outcome = "serving"
                        mark("serving")
                        say(f"serving: {url} answers, {rec.stages['serving']:.1f} s after the first start")
                        return rec
            except OSError:
                pass
        stuck = time.monotonic() - last_progress
        if stuck > stall or time.monotonic() - t0 > ready_timeout_s:
            where = ", ".join(f"{n} at '{(read_log(launcher.log(n)).last_milestone or 'no milestone')}'" for n in order)
            fail(f"startup stalled: no new milestone on any rank for {stuck:.0f} s ({where}); likely causes: "
                 + LIKELY_STALL.format(port=d.master_port), kill=False)
        time.sleep(wd.poll_interval_s)
