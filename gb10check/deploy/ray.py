"""The Ray flow of `scripts/deploy` (deploy.executor: ray), in NVIDIA's two-node playbook's order:

  1. `ray-head`:    rank 0's compose stack up (`ray start --head --node-ip-address=<its QSFP address> --port=6379 --block`);
  2. `ray-workers`: every other rank's stack up (`ray start --address=<rank 0's QSFP address>:6379 --node-ip-address=<its
                    own> --block`);
  3. `ray-ready`:   wait until the node list read in rank 0's Ray container (ray.nodes()) has every node alive at its QSFP
                    address with its GPU. A node that registered at another address (its LAN or Wi-Fi one) fails at once,
                    named: it never corrects itself, and vLLM's placement group would wait forever. A node that is
                    merely not there yet is waited for until the timeout, then named;
  4. `vllm-serve`:  `vllm serve ... --distributed-executor-backend ray` in rank 0's Ray container (`docker exec -d`, its
                    output written to the container's own stdout, so `docker logs gb10-ray` carries vLLM's milestones;
                    its pid and exit status kept in the container, compose.SERVE_PID / SERVE_RC).

gb10check/deploy/run.py runs these steps (`deploy` below, with its `mark` for the deployment record) for a cluster with
`uses_ray`, then watches exactly as for mp: the memory watchdog kills every node's `gb10-ray`, the watcher follows
`docker logs gb10-ray` and reads vLLM's exit status in rank 0's container (the container outlives vLLM: Ray keeps it
up), and `scripts/down` stops vLLM first, then `docker compose down` on every node, followers first.
`readiness` and `wait_for_cluster` are pure over parsed node lists (clock and sleep passed in), so they are tested
without Ray.
"""

import shlex
import time
from dataclasses import dataclass, field
from typing import Callable

from .. import compose, gather
from ..checks import ray as ray_checks
from ..cluster import Cluster
from ..facts import ParseError, parse
from ..facts.ray import RayNode
from ..remedies import Code
from ..remote import RemoteNode
from ..verdict import Finding
from .launch import ComposeLauncher, DeployFailed

STEPS = ("ray-head", "ray-workers", "ray-ready", "vllm-serve")
FATAL = (Code.RAY_NODE_ADDRESS, Code.RAY_GPUS)  # waiting does not fix these


class RayNotReady(DeployFailed):
    """The Ray cluster did not form as the cluster file says: the message names each node and the fix."""


@dataclass
class Readiness:
    ready: bool
    fatal: list[Finding] = field(default_factory=list)  # a node at another address, or without its GPU: fail now
    waiting: list[Finding] = field(default_factory=list)  # nodes not (yet) in the cluster

    def text(self) -> str:
        return "\n".join(f.text for f in self.fatal + self.waiting)


def readiness(cluster: Cluster, ray_nodes: list[RayNode] | None) -> Readiness:
    """Where the Ray cluster stands, from rank 0's node list (None: it could not be read yet, e.g. the GCS not up)."""
    if ray_nodes is None:
        return Readiness(False, waiting=[Finding(Code.RAY_NODE_MISSING, cluster.head.name, "no node list from rank 0's Ray yet",
                                                 "the Ray head up", gcs=ray_checks.gcs_address(cluster, cluster.head))])
    found = [f for node in cluster.by_rank() for f in ray_checks.judge_node(cluster, node, ray_nodes)]
    fatal = [f for f in found if f.code in FATAL]
    return Readiness(not found, fatal, [f for f in found if f.code not in FATAL])


def wait_for_cluster(cluster: Cluster, poll: Callable[[], list[RayNode] | None], timeout_s: float, interval_s: float = 2.0,
                     clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> float:
    """Poll until every node is in; seconds it took. Raises RayNotReady at once on a fatal finding, or at the timeout
    with the nodes still missing."""
    start = clock()
    while True:
        state = readiness(cluster, poll())
        if state.ready:
            return clock() - start
        if state.fatal:
            raise RayNotReady(state.text())
        if clock() - start >= timeout_s:
            raise RayNotReady(f"after {timeout_s:.0f} s:\n{state.text()}")
        sleep(interval_s)


class RayLauncher(ComposeLauncher):
    """Each node's compose stack (its `gb10-ray` container: the Ray head or a worker), and vLLM in rank 0's, over the
    suite's SSH layer. As a ComposeLauncher it serves the watcher (exit codes, logs, stop, memory) as mp's does."""

    container = compose.RAY_CONTAINER_NAME

    def __init__(self, cluster: Cluster, nodes: dict[str, RemoteNode] | None = None):
        super().__init__(cluster, nodes)
        self.serving = False  # vLLM started in rank 0's container: from then on rank 0's exit code is vLLM's

    def rank_command(self, node: str) -> str:
        spec = self.cluster.node(node)
        return "ray " + " ".join(compose.ray_start_args(self.cluster, spec.rank == 0, spec.links[0].ip,
                                                            self.cluster.rendezvous_addr(spec)))

    def start(self, node: str) -> str:
        command = self.rank_command(node)
        out = self.nodes[node].run(f"cd {self.workdir} && docker compose up -d --pull never 2>&1", timeout=120)
        if out.rc != 0:
            raise RayNotReady(f"{node}: `docker compose up -d` exited {out.rc}:\n" + "\n".join(out.stdout.strip().splitlines()[-8:]))
        return "docker compose up -d: " + command

    def describe(self, node: str) -> str:
        spec = self.cluster.node(node)
        if spec.rank == 0:
            return f"{node} (rank 0, {'vLLM in' if self.serving else 'the Ray head'} {self.container})"
        return f"{node} (rank {spec.rank}, Ray worker {self.container})"

    def exit_code(self, node: str) -> int | None:
        code = self.container_exit_code(node)
        if code is not None or not self.serving or node != self.cluster.head.name:
            return code
        out = self.nodes[node].run(f"docker exec {self.container} cat {compose.SERVE_RC}")
        try:
            return int(out.stdout.strip()) if out.rc == 0 else None  # no file yet: vLLM still runs
        except ValueError:
            return None

    def ray_nodes(self) -> list[RayNode] | None:
        """rank 0's node list, None while it cannot be read (the head's GCS still starting, the container not up)."""
        out = self.nodes[self.cluster.head.name].run(gather.RAY_NODES, timeout=60)
        if out.rc != 0:
            return None
        try:
            return parse("ray_nodes", out.stdout)
        except ParseError:
            return None

    def joined(self) -> list[RayNode] | None:
        """`ray_nodes`, after making sure no node's Ray container has ended (`ray: command not found`, a bad flag): that
        node would never join, so the wait stops at once and names it with its last log lines."""
        for node in self.cluster.by_rank():
            code = self.container_exit_code(node.name)
            if code is not None:
                tail = "\n".join(self.log(node.name).rstrip().splitlines()[-8:])
                raise RayNotReady(f"{self.describe(node.name)} exited with code {code} before the Ray cluster formed\n"
                                  f"last log lines:\n{tail}")
        return self.ray_nodes()

    def serve(self) -> str:
        command = compose.serve_exec_command(self.cluster)
        out = self.nodes[self.cluster.head.name].run(command, timeout=60)
        if out.rc != 0:
            raise RayNotReady(f"{self.cluster.head.name}: starting vLLM in {compose.RAY_CONTAINER_NAME} exited {out.rc}: "
                              f"{(out.stderr or out.stdout).strip()[-300:]}")
        self.serving = True
        return command

    def stop_vllm(self, node: str, grace_s: float = 10) -> str:
        """vLLM in rank 0's container: TERM, then KILL after grace_s (Ray stays up; `down` takes it next)."""
        pid = f"$(cat {compose.SERVE_PID} 2>/dev/null)"
        script = (f'p={pid}; [ -n "$p" ] && kill -0 "$p" 2>/dev/null || {{ echo not running; exit 0; }}; kill -TERM "$p"; '
                  f'for i in $(seq {int(grace_s * 10)}); do kill -0 "$p" 2>/dev/null || {{ echo stopped; exit 0; }}; sleep 0.1; done; '
                  'kill -KILL "$p"; echo killed')
        out = self.nodes[node].run(f"docker exec {self.container} /bin/sh -c {shlex.quote(script)}", timeout=grace_s + 30)
        if out.rc != 0:
            return "not running" if "No such container" in out.stdout + out.stderr or "is not running" in out.stdout + out.stderr \
                else f"did not stop ({(out.stderr or out.stdout).strip()[:120]})"
        return out.stdout.strip() or "stopped"


def deploy(cluster: Cluster, launcher: RayLauncher, timeout_s: float = 300.0, interval_s: float = 2.0,
           clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
           mark: Callable[[str], None] | None = None, say: Callable[[str], None] = lambda m: None,
           take_down: bool = True) -> dict[str, float]:
    """Steps 1-4 in order; the seconds at which each ended (the deployment record's stages; `mark` is called with each
    stage's name as it ends). On a failure every node's Ray is taken down (they must restart together; with take_down
    False the caller does it) and RayNotReady says why."""
    start, stages = clock(), {}
    order = cluster.by_rank()

    def done(stage: str) -> None:
        stages[stage] = clock() - start
        if mark:
            mark(stage)

    try:
        say(f"starting the Ray head on {order[0].name}: {launcher.start(order[0].name)}")
        done("ray-head")
        for node in order[1:]:
            say(f"starting a Ray worker on {node.name}: {launcher.start(node.name)}")
        done("ray-workers")
        wait_for_cluster(cluster, launcher.joined, timeout_s, interval_s, clock, sleep)
        say(f"Ray cluster ready: {len(order)} nodes at their QSFP addresses")
        done("ray-ready")
        say(f"starting vLLM in {compose.RAY_CONTAINER_NAME} on {order[0].name}: {launcher.serve()}")
        done("vllm-serve")
    except RayNotReady:
        if take_down:
            for node in reversed(order):
                launcher.down(node.name)
        raise
    return stages
