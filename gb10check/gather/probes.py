"""Reachability probes, once per run and concurrently: ping, SSH between nodes, and the required ports over every link.

Three remote steps, each on every node at once:
1. listen: every node binds a listener on each of its link addresses for every required port (our own small
   program; it waits for a node-local lock first, so two runs on one cluster take turns instead of colliding);
2. probe: every node, from each of its links, pings each peer address (and once without fragmenting, filling the
   link's MTU), runs `ssh PEER hostname` and connects
   to each required port, all in threads, and prints one JSON line of results;
3. stop the listeners (named per run).
Each `test_ping[...]`, `test_path_mtu[...]`, `test_ssh_mesh[...]` and `test_port_open[...]` then judges its own result. The
programs are ours; what comes back is read as JSON data, never executed.
"""

import contextlib
import json
import shlex
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..cluster import Cluster
from ..poll import wait_until
from ..remote import NotRecorded, RemoteError, RemoteNode
from .shared import port_lock, run_shared

CONNECT_TIMEOUT_S = 3
WINDOW_S = 20  # how long a listener stays up at most

LISTEN = r'''
import fcntl, json, socket, sys, time
want, window, ready = json.loads(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
lock = open("/tmp/gb10check-listen.lock", "w")
deadline = time.time() + 30
while True:  # another run's listeners on this node: wait for them to finish
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB); break
    except OSError:
        if time.time() > deadline: break
        time.sleep(0.1)
socks, errors = [], {}
for ip, port in want:
    try:
        s = socket.create_server((ip, port)); s.setblocking(False); socks.append(s)
    except OSError as e:
        errors[f"{ip}:{port}"] = e.strerror  # in use: something already listens, which answers the probe as well
open(ready, "w").write(json.dumps(errors))
end = time.time() + window
while time.time() < end:
    for s in socks:
        try: s.accept()[0].close()
        except OSError: pass
    time.sleep(0.02)
'''

PROBE = r'''
import json, socket, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
jobs, timeout = json.loads(sys.argv[1]), float(sys.argv[2])
def run(argv, t):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=t)
        return [p.returncode, p.stdout, p.stderr]
    except subprocess.TimeoutExpired:
        return [124, "", "timed out"]
def connect(src, ip, port):
    try:
        socket.create_connection((ip, port), timeout=timeout, source_address=(src, 0)).close(); return [0, ""]
    except OSError as e:
        return [1, f"{type(e).__name__} {e}"]
def one(job):
    kind = job["kind"]
    if kind == "ping":
        return run(["ping", "-c", "2", "-i", "0.2", "-W", "1", "-I", job["dev"], job["ip"]], 10)
    if kind == "ping_df":  # one don't-fragment ping filling the link's MTU (the IPv4 and ICMP headers take 28 bytes)
        try:
            size = min(int(open("/sys/class/net/%s/mtu" % job["dev"]).read()), 65535) - 28
        except (OSError, ValueError) as e:
            return [2, "", "cannot read the MTU of %s: %s" % (job["dev"], e), 0]
        return run(["ping", "-M", "do", "-s", str(size), "-c", "1", "-W", "1", "-I", job["dev"], job["ip"]], 10) + [size]
    if kind == "ssh":
        return run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "StrictHostKeyChecking=yes", job["ip"], "hostname"], 20)
    return connect(job["src"], job["ip"], job["port"])
# SSH hops one at a time from each node: sshd drops new sessions beyond MaxStartups (10 by default), and on eight nodes
# every peer opening all its hops at once would reach that on each target. Pings and port probes all at once.
with ThreadPoolExecutor(max_workers=32) as pool, ThreadPoolExecutor(max_workers=1) as hops:
    futures = [(hops if job["kind"] == "ssh" else pool).submit(one, job) for job in jobs]
    print(json.dumps([f.result() for f in futures]))
'''


@dataclass
class PathResult:
    ping: tuple[int, str, str] | None = None  # rc, stdout, stderr
    ssh: tuple[int, str, str] | None = None
    ping_df: tuple[int, str, str, int] | None = None  # rc, stdout, stderr, ICMP payload bytes (the link's MTU - 28)
    ports: dict[int, tuple[int, str]] = field(default_factory=dict)  # port -> (0 or 1, why)
    error: RemoteError | None = None  # the source node could not run the probe
    listener_error: RemoteError | None = None  # the target node could not start its listener: no verdict on its ports

    def port(self, port: int) -> tuple[int, str]:
        if self.listener_error is not None:
            raise self.listener_error
        return self.ports[port]


def _key(src: str, src_dev: str, dst: str, dst_dev: str) -> str:
    return f"{src}:{src_dev}->{dst}:{dst_dev}"


class Probes:
    """Every path's ping, SSH and port results, measured once, the first time a test asks."""

    def __init__(self, cluster: Cluster, node, timing: dict[str, float], run_id: str | None = None):
        self.cluster, self.node, self.timing = cluster, node, timing  # node(name) -> RemoteNode; timing["probes"]: wall s
        self.run_id = run_id  # pytest-xdist's testrunuid on a worker (gather.run_shared)
        self._results: dict[str, PathResult] | None = None
        self.recorded: dict | None = None  # judging a recording (--facts-from): its probes; nothing is measured
        self._lock = threading.Lock()

    def paths(self):
        for p in self.cluster.link_pairs():
            yield p.a, p.a_link, p.b, p.b_link
            yield p.b, p.b_link, p.a, p.a_link

    def measure(self) -> dict[str, PathResult]:
        """Every path's results, measured on the first call (the fleet starts it beside the facts' gather)."""
        with self._lock:
            if self._results is None:
                started = time.monotonic()
                if self.recorded is not None:
                    self._results = self._load(self.recorded)
                    return self._results
                # Under pytest-xdist the first worker measures and the others read its results (one set of listeners).
                self._results = run_shared(self.run_id, "probes", self._measure, self._dump, self._load)
                self.timing["probes"] = time.monotonic() - started
        return self._results

    def result(self, src: str, src_dev: str, dst: str, dst_dev: str) -> PathResult:
        res = self.measure().get(_key(src, src_dev, dst, dst_dev))
        if res is None:  # only a recording lacks a path (a live run measures every one)
            raise NotRecorded(f"no probe of {_key(src, src_dev, dst, dst_dev)} in the recording").at(self.node(src), "the probes")
        if res.error is not None:
            raise res.error
        return res

    def _measure(self) -> dict[str, PathResult]:
        ports = self.cluster.required_ports()
        paths = list(self.paths())
        listen = {n.name: sorted({(bl.ip, port) for a, al, b, bl in paths if b.name == n.name for port in ports})
                  for n in self.cluster.by_rank()}
        # The listeners hold these ports for a while (the perftest port among them): ib_write_bw's server waits (port_lock).
        with contextlib.ExitStack() as held:
            for name, port in sorted({(name, port) for name, pairs in listen.items() for _, port in pairs}):
                held.enter_context(port_lock(name, port))
            return self._measure_held(paths, ports, listen)

    def _measure_held(self, paths: list, ports: list[int], listen: dict[str, list]) -> dict[str, PathResult]:
        run_id = uuid.uuid4().hex[:12]
        results = {_key(a.name, al.netdev, b.name, bl.netdev): PathResult() for a, al, b, bl in paths}
        nodes = {n.name: self.node(n.name) for n in self.cluster.by_rank()}
        ready = f"/tmp/gb10check-listen-{run_id}.ready"

        def start(name: str) -> RemoteError | None:
            try:
                nodes[name].run(f"rm -f {ready}; nohup python3 -c {shlex.quote(LISTEN)} {shlex.quote(json.dumps(listen[name]))} "
                                f"{WINDOW_S} {ready} gb10check-listen-{run_id} >/dev/null 2>&1 &")
                # The listener may wait for another run's to finish; without one, the connections say what they met.
                wait_until(lambda: nodes[name].run(f"test -e {ready}").rc == 0, 35, interval_s=0.05)
                return None
            except RemoteError as exc:
                return exc

        def probe(name: str) -> tuple[list, list] | RemoteError:
            jobs, keys = [], []
            for a, al, b, bl in paths:
                if a.name != name:
                    continue
                key = _key(a.name, al.netdev, b.name, bl.netdev)
                jobs += [{"kind": "ping", "dev": al.netdev, "ip": bl.ip}, {"kind": "ssh", "ip": bl.ip},
                         {"kind": "ping_df", "dev": al.netdev, "ip": bl.ip}]
                keys += [(key, "ping"), (key, "ssh"), (key, "ping_df")]
                for port in ports:
                    jobs.append({"kind": "port", "src": al.ip, "ip": bl.ip, "port": port})
                    keys.append((key, port))
            if not jobs:
                return [], []
            try:
                out = nodes[name].run(f"python3 -c {shlex.quote(PROBE)} {shlex.quote(json.dumps(jobs))} {CONNECT_TIMEOUT_S}", timeout=60)
            except RemoteError as exc:
                return exc
            try:
                values = json.loads(out.stdout.strip().splitlines()[-1])
                if len(values) == len(jobs):
                    return keys, values
            except (ValueError, IndexError):
                pass
            detail = (out.stderr or out.stdout).strip()[-200:] or "no output"
            return RemoteError(f"{name}: the reachability probe printed no readable result (exit {out.rc}): {detail}").at(
                nodes[name], "python3 -c <gb10check reachability probe>")

        with ThreadPoolExecutor(max_workers=min(32, len(nodes))) as pool:
            started = dict(zip(nodes, pool.map(start, nodes)))
            probed = dict(zip(nodes, pool.map(probe, nodes)))
            list(pool.map(lambda n: self._stop(nodes[n], run_id), nodes))
        for a, al, b, bl in paths:
            res = results[_key(a.name, al.netdev, b.name, bl.netdev)]
            got = probed[a.name]
            if isinstance(got, RemoteError):
                res.error = got
            if isinstance(started.get(b.name), RemoteError):
                res.listener_error = started[b.name]
        for name, got in probed.items():
            if isinstance(got, RemoteError):
                continue
            keys, values = got
            for (key, what), value in zip(keys, values):
                if what == "ping":
                    results[key].ping = tuple(value)
                elif what == "ssh":
                    results[key].ssh = tuple(value)
                elif what == "ping_df":
                    results[key].ping_df = tuple(value)
                else:
                    results[key].ports[what] = tuple(value)
        return results

    @staticmethod
    def _dump(results: dict[str, PathResult]) -> dict:
        def error(exc):
            return None if exc is None else {"error": type(exc).__name__, "message": str(exc), "node": getattr(exc.node, "name", None),
                                             "command": exc.command}
        return {key: {"ping": r.ping, "ssh": r.ssh, "ping_df": r.ping_df, "ports": {str(p): v for p, v in r.ports.items()},
                      "error": error(r.error), "listener_error": error(r.listener_error)} for key, r in results.items()}

    def _load(self, dumped: dict) -> dict[str, PathResult]:
        from .. import remote

        def error(got):
            if got is None:
                return None
            exc = getattr(remote, got["error"], RemoteError)(got["message"])
            return exc.at(self.node(got["node"]) if got["node"] else None, got["command"])
        return {key: PathResult(tuple(r["ping"]) if r["ping"] else None, tuple(r["ssh"]) if r["ssh"] else None,
                                tuple(r["ping_df"]) if r["ping_df"] else None, {int(p): tuple(v) for p, v in r["ports"].items()},
                                error(r["error"]), error(r["listener_error"])) for key, r in dumped.items()}

    @staticmethod
    def _stop(node: RemoteNode, run_id: str) -> None:
        try:
            node.run(f"pkill -f gb10check-listen-{run_id}; rm -f /tmp/gb10check-listen-{run_id}.ready", timeout=10)
        except RemoteError:
            pass
