"""The simulated head node's real vLLM server: start it, wait until it serves, stop it.

It runs inside the head node (its network, mount, PID and UTS namespaces) as a container would:
`vllm serve MODEL` with the deployment's own arguments (compose.serve_args, the same place the
compose file takes them from), one node, TP=1, the model resolved offline from the node's HF cache.
Its log is written inside the head node (NODE_LOG), where the serving stage reads it as it reads a server run outside
docker (serving.log_command: `cat NODE_LOG`); a failed start shows its tail.

Serving faults are options of the start, recorded in serve.json:
  drop: flags removed (with their value), e.g. ["--reasoning-parser"]
  set: flag -> value replaced, e.g. {"--served-model-name": "other"}
  cpu_quota: cores the server may use (a cgroup CPU quota: a throttled machine)
  api_key: true: the server requires a key (VLLM_API_KEY, random, kept mode 600 in the state dir)
  stopped: true: no server at all
  env: {VARIABLE: value} more in the server's environment (a variable this vLLM does not know)
"""

import json
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

from .. import compose
from ..cluster import load_cluster
from ..facts.procfs import parse_stat
from ..poll import wait_until
from ..serving import Api, ApiUnreachable, api_of
from . import control, provision, topology


def cgroup() -> Path:
    """The throttled server's group: cgroup v1 cpu controller, as on this kind of machine; one per sim instance."""
    return Path(f"/sys/fs/cgroup/cpu/{topology.prefix()}vllm")

FLAGS_WITHOUT_VALUE = {"--enable-auto-tool-choice", "--enable-prefix-caching", "--enforce-eager", "--headless"}


class ServeError(Exception):
    pass


def record_path() -> Path:
    return control.state_dir() / "serve.json"


NODE_LOG = "/var/log/gb10check-vllm.log"  # inside the head node
LOG_COMMAND = f"cat {NODE_LOG}"  # serving.log_command of a cluster file judged against this server


def log_path() -> Path:
    """The server's log, seen from the runner: the head node's NODE_LOG through its init's root."""
    cluster = load_cluster(control.state_dir() / "cluster.yaml")
    return Path(f"/proc/{control.pid_of(cluster.head.name)}/root{NODE_LOG}")


def key_path() -> Path:
    return control.state_dir() / "api_key"


def argv_for(cluster, options: dict) -> list[str]:
    args = compose.serve_args(cluster)
    drop = set(options.get("drop", []))
    if "--tool-call-parser" in drop:
        drop.add("--enable-auto-tool-choice")  # one feature, two flags
    out, i = [], 0
    while i < len(args):
        flag = args[i]
        takes_value = flag.startswith("--") and flag not in FLAGS_WITHOUT_VALUE and i + 1 < len(args)
        value = args[i + 1] if takes_value else None
        i += 2 if takes_value else 1
        if flag in drop:
            continue
        if flag in options.get("set", {}):
            value = options["set"][flag]
        out += [flag] + ([value] if value is not None else [])
    return [str(provision.vllm_bin()), "serve", cluster.deploy.model_id] + out


def stop(quiet: bool = True) -> None:
    """Stop the server (SIGTERM, then SIGKILL after 10 s: a hung vLLM does not always end on TERM)."""
    try:
        rec = json.loads(record_path().read_text())
    except (OSError, ValueError):
        rec = {}
    pgid = rec.get("pgid")
    if pgid:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            if wait_until(lambda: not _alive(pgid), wait, interval_s=0.2):
                break
    remove_cgroup()
    if record_path().exists():
        record_path().unlink()
    if not quiet:
        print("vLLM stopped", flush=True)


def _alive(pgid: int) -> bool:
    """A process of the group is still running. A zombie has ended (it waits only for its parent to read its status,
    and the server's first process is the caller's own child, reaped here when it is one)."""
    try:
        os.waitpid(pgid, os.WNOHANG)
    except ChildProcessError:
        pass
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # ended while listed
        if any(p.pgrp == pgid and p.state != "Z" for p in parse_stat(text)):
            return True
    return False


def remove_cgroup() -> None:
    group = cgroup()
    if group.exists():
        try:
            group.rmdir()
        except OSError:
            pass  # still has processes; the node's teardown kills them, down() retries


def start(options: dict | None = None, timeout_s: float = 300, say=lambda msg: None) -> dict:
    """(Re)start the head's server with `options`; return once /health answers, or raise with the log's tail."""
    options = dict(options or {})
    if not provision.ready():
        raise ServeError("vLLM for CPU is not provisioned: run `gb10check sim provision` first")
    names = control.nodes()
    if not names:
        raise ServeError("no simulated cluster is up: run `gb10check sim up` first")
    stop()
    cluster = load_cluster(control.state_dir() / "cluster.yaml")
    head = cluster.head
    if options.get("stopped"):
        record_path().write_text(json.dumps({"options": options}))
        say("vLLM not started (scenario)")
        return {"options": options}
    argv = argv_for(cluster, options)
    # VLLM_ENABLE_V1_MULTIPROCESSING=0: the one worker of TP=1 runs in the engine's process (vLLM for CPU spawns it
    # otherwise: one more Python start importing torch and vLLM, 10-14 s of the ~40 s start on this box).
    env = {"HF_HOME": cluster.deploy.hf_cache, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
           "VLLM_CPU_OMP_THREADS_BIND": "0", "PYTHONUNBUFFERED": "1", "HOME": "/root", "PATH": "/usr/bin:/bin",
           # the compile cache a container of the deployment mounts at /root/.cache/vllm (the node boots with it filled)
           "VLLM_CACHE_ROOT": f"{cluster.deploy.compile_cache}/vllm"}
    env.update(options.get("env", {}))
    if options.get("api_key"):
        key_path().write_text(secrets.token_hex(16))
        key_path().chmod(0o600)
        env["VLLM_API_KEY"] = key_path().read_text()  # in the environment, never on the command line
    pid = control.pid_of(head.name)
    shell = "exec env -i " + " ".join(f"{k}={v}" for k, v in env.items()) + " " + " ".join(argv)
    log = open(log_path(), "w")
    started = time.time()
    proc = subprocess.Popen(["nsenter", "-t", str(pid), "-m", "-u", "-n", "-p", "-i", "-r", "-w", "/bin/sh", "-c", shell],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
)
    log.close()
    rec = {"pgid": proc.pid, "options": options, "argv": argv[1:], "node": head.name, "started": started}
    record_path().write_text(json.dumps(rec))
    say(f"vLLM starting on {head.name}: vllm {' '.join(argv[1:])}")
    api = api_of(cluster)
    url = f"{api.root}/health"
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise ServeError(f"vLLM exited with code {proc.returncode} before it served; last log lines:\n{tail_log()}")
        if _answers(api, timeout_s=2):
            break
        if time.monotonic() > deadline:
            stop()
            raise ServeError(f"vLLM did not answer {url} within {timeout_s:.0f} s; last log lines:\n{tail_log()}")
        time.sleep(0.5)
    rec["ready_s"] = round(time.time() - started, 1)
    record_path().write_text(json.dumps(rec))
    say(f"vLLM ready on {head.name} in {rec['ready_s']} s ({url})")
    if options.get("cpu_quota"):
        throttle(proc.pid, options["cpu_quota"])
        say(f"vLLM on {head.name} capped at {options['cpu_quota']:g} of a core")
    return rec


def ensure(options: dict | None = None, timeout_s: float = 300, say=lambda msg: None) -> dict:
    """The server with `options`, restarted only when that changes what runs (its command line, its key): a CPU quota
    is put on or taken off the running server (a throttled machine is the same server, slower), and a serving server
    with the same command line is kept (a start is 15-35 s on this machine)."""
    options = dict(options or {})
    try:
        rec = json.loads(record_path().read_text())
    except (OSError, ValueError):
        rec = {}
    cluster = load_cluster(control.state_dir() / "cluster.yaml")
    same = (not options.get("stopped") and rec.get("argv") == argv_for(cluster, options)[1:]
            and bool(rec.get("options", {}).get("api_key")) == bool(options.get("api_key"))
            and rec.get("options", {}).get("env", {}) == options.get("env", {}))
    pgid = rec.get("pgid")
    if not same or not pgid or not _alive(pgid) or "ready_s" not in rec or not _answers(api_of(cluster)):
        return start(options, timeout_s=timeout_s, say=say)
    if options.get("cpu_quota"):
        throttle(pgid, options["cpu_quota"])
        say(f"vLLM on {rec['node']} capped at {options['cpu_quota']:g} of a core")
    else:
        unthrottle()
    rec["options"] = options
    record_path().write_text(json.dumps(rec))
    return rec


def _answers(api: Api, timeout_s: float = 5) -> bool:
    """/health answers 200."""
    try:
        return api.get("/health", root=True, timeout_s=timeout_s).status == 200
    except ApiUnreachable:
        return False


def unthrottle() -> None:
    """Take the CPU quota off: every process back in the root cpu cgroup, the server's cgroup removed."""
    group = cgroup()
    if not group.exists():
        return
    for pid in (group / "cgroup.procs").read_text().split():
        try:
            (group.parent / "cgroup.procs").write_text(pid)
        except OSError:
            pass  # it exited meanwhile
    remove_cgroup()


def throttle(pgid: int, cores: float) -> None:
    """Cap a running server's process group with a cgroup CPU quota (after start-up, so loading is not slowed)."""
    group = cgroup()
    group.mkdir(exist_ok=True)
    (group / "cpu.cfs_period_us").write_text("100000")
    (group / "cpu.cfs_quota_us").write_text(str(int(cores * 100000)))
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # field 5 of stat: the process group
            try:
                (group / "cgroup.procs").write_text(stat.parent.name)
            except OSError:
                pass  # it exited meanwhile


def tail_log(lines: int = 20) -> str:
    try:
        text = log_path().read_text(errors="replace")
    except (OSError, control.SimError):
        return "(no log)"
    return "\n".join(text.rstrip().splitlines()[-lines:])
