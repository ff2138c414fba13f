"""How the deploy starts, reads and stops each rank: `ComposeLauncher`, each node's own compose stack over the suite's SSH
layer (deploy/ray.py's RayLauncher builds on it); `DeployFailed`, how a deploy step says it could not go on. The watch
(deploy/run.py, gb10check/watch.py) reads the ranks only through a launcher.
"""

import shlex

import yaml

from .. import compose
from ..cluster import Cluster
from ..facts._text import ParseError
from ..facts.docker import parse_container
from ..facts.meminfo import parse_meminfo
from ..gather import compose_dry_run
from ..remote import RemoteNode


class DeployFailed(Exception):
    pass


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
