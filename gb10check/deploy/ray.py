"""The Ray flow of `scripts/deploy` (deploy.executor: ray), in NVIDIA's two-node playbook's order:

  1. `ray-head`:    rank 0's compose stack up (`ray start --head --node-ip-address=<its QSFP address> --port=6379 --block`);
  2. `ray-workers`: every other rank's stack up (`ray start --address=<rank 0's QSFP address>:6379 --node-ip-address=<its
                    own> --block`);
  3. `ray-ready`:   wait until the node list read in rank 0's Ray container (ray.nodes()) has every node alive at its QSFP
                    address with its GPU. A node that registered at another address (its LAN or Wi-Fi one) fails at once,
                    named: it never corrects itself, and vLLM's placement group would wait forever. A node that is
                    merely not there yet is waited for until the timeout, then named;
  4. `vllm-serve`:  `vllm serve ... --distributed-executor-backend ray` in rank 0's Ray container (`docker exec -d`, its
                    output written to the container's own stdout, so `docker logs gb10-ray` carries vLLM's milestones).

How it plugs into gb10check/deploy/run.py (left to the deploy's owner): for a cluster with `uses_ray`, start ranks with
`RayLauncher` (rank 0 first, then the others), call `wait_for_cluster(cluster, launcher.ray_nodes, ...)`, then
`launcher.serve()`; the watcher follows `docker logs gb10-ray` on rank 0 (RayLauncher.log) exactly as for mp, the
memory watchdog kills every node's `gb10-ray` container, and `scripts/down` runs `docker compose down` on every node,
followers first (vLLM stops with rank 0's container, Ray with each node's).
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

STEPS = ("ray-head", "ray-workers", "ray-ready", "vllm-serve")
FATAL = (Code.RAY_NODE_ADDRESS, Code.RAY_GPUS)  # waiting does not fix these


class RayNotReady(Exception):
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
                                                 "the Ray head up", gcs=ray_checks.gcs_address(cluster))])
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


class RayLauncher:
    """Each node's compose stack (the Ray container), and vLLM in rank 0's, over the suite's SSH layer."""

    def __init__(self, cluster: Cluster, nodes: dict[str, RemoteNode]):
        self.cluster = cluster
        self.nodes = nodes
        self.workdir = shlex.quote(cluster.deploy.workdir)

    def start(self, node: str) -> str:
        out = self.nodes[node].run(f"cd {self.workdir} && docker compose up -d --pull never 2>&1", timeout=120)
        if out.rc != 0:
            raise RayNotReady(f"{node}: `docker compose up -d` exited {out.rc}:\n" + "\n".join(out.stdout.strip().splitlines()[-8:]))
        return "ray start (head)" if node == self.cluster.head.name else "ray start (worker)"

    def ray_nodes(self) -> list[RayNode] | None:
        """rank 0's node list, None while it cannot be read (the head's GCS still starting, the container not up)."""
        out = self.nodes[self.cluster.head.name].run(gather.RAY_NODES, timeout=60)
        if out.rc != 0:
            return None
        try:
            return parse("ray_nodes", out.stdout)
        except ParseError:
            return None

    def serve(self) -> str:
        command = compose.serve_exec_command(self.cluster)
        out = self.nodes[self.cluster.head.name].run(command, timeout=60)
        if out.rc != 0:
            raise RayNotReady(f"{self.cluster.head.name}: starting vLLM in {compose.RAY_CONTAINER_NAME} exited {out.rc}: "
                              f"{(out.stderr or out.stdout).strip()[-300:]}")
        return command

    def log(self, node: str) -> str:
        out = self.nodes[node].run(f"docker logs {compose.RAY_CONTAINER_NAME} 2>&1", timeout=30)
        return out.stdout if out.rc == 0 else ""

    def down(self, node: str) -> None:
        self.nodes[node].run(f"cd {self.workdir} && docker compose down 2>&1", timeout=120)


def deploy(cluster: Cluster, launcher: RayLauncher, timeout_s: float = 300.0, interval_s: float = 2.0,
           clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> dict[str, float]:
    """Steps 1-4 in order; the seconds at which each ended (the deployment record's stages). On a failure every
    node's Ray is taken down (they must restart together) and RayNotReady says why."""
    start, stages = clock(), {}
    order = cluster.by_rank()
    try:
        launcher.start(order[0].name)
        stages["ray-head"] = clock() - start
        for node in order[1:]:
            launcher.start(node.name)
        stages["ray-workers"] = clock() - start
        wait_for_cluster(cluster, launcher.ray_nodes, timeout_s, interval_s, clock, sleep)
        stages["ray-ready"] = clock() - start
        launcher.serve()
        stages["vllm-serve"] = clock() - start
    except RayNotReady:
        for node in reversed(order):
            launcher.down(node.name)
        raise
    return stages
