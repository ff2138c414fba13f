"""The run's nodes: one RemoteNode each; the facts the run's checks declared, gathered once per node in one batch (every
node at once, on first use); programs run once per node, or on every node at the same time."""

import contextlib
import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..cluster import Cluster
from ..remote import NotRecorded, RemoteError, RemoteNode
from . import registry
from .batch import LOOK_FIRST, Output, Unreadable, batch_script, read_batch
from .probes import Probes
from .shared import dump_output, load_output, run_shared

Key = tuple[str, Any]  # (fact, arg)


class Fleet:
    """The run's nodes, their declared facts gathered once, concurrently, on first use."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.nodes: dict[str, RemoteNode] = {}
        self._facts: dict[str, dict[Key, Output] | RemoteError] | None = None
        self._lock = threading.Lock()
        self._probes = None
        self._once: dict[tuple[str, str], Output | RemoteError] = {}
        self._together = threading.Lock()  # long programs (the compute canary): every node at once, once per run
        self.timing: dict[str, float] = {}  # phase -> wall seconds (gather, probes), for the run's summary and the bench
        self.wanted: set[str] = set()  # the facts the run's selected checks declared (@reads)
        self.run_id: str | None = None  # pytest-xdist's testrunuid on a worker: its fleets share what they gather
        self.recorded: dict | None = None  # facts read from a recording (--facts-from): no node is reached for them
        self.replay: dict | None = None  # the whole recording judged (gather.recording.replay): nothing is run live

    def probes(self):
        """The run's reachability probes (ping, SSH mesh, ports), measured once when first asked."""
        with self._lock:
            if self._probes is None:
                self._probes = Probes(self.cluster, self.node, self.timing, self.run_id)
                if self.replay is not None:
                    self._probes.recorded = self.replay.get("probes") or {}
        return self._probes

    def node(self, name: str) -> RemoteNode:
        if name not in self.nodes:
            self.nodes[name] = RemoteNode(self.cluster.node(name), self.cluster.ssh)
            self.nodes[name].fleet = self
        return self.nodes[name]

    def _gather_node(self, node: RemoteNode) -> dict[Key, Output] | RemoteError:
        wanted = registry.batch_commands(self.cluster, node.spec, self.wanted)
        timeout = self.cluster.ssh.command_timeout_s
        longer = {command: registry.FACTS[k[0]].timeout(self.cluster) for k, (command, _) in wanted.items()
                  if registry.FACTS[k[0]].timeout is not None}

        def batch(sudo: bool) -> dict[Key, Output]:
            keys = [k for k, (_, s) in wanted.items() if s == sudo]
            commands = list(dict.fromkeys(wanted[k][0] for k in keys))
            if not commands:
                return {}
            # Each command is bounded by its timeout (then killed 2 s later); the batch gets room for the longest, after
            # the looks that hold the containers back (LOOK_FIRST).
            mine = {c: t for c, t in longer.items() if c in commands}
            longest = timeout + 2 + max([timeout, *mine.values()])
            out = node.run(batch_script(commands, timeout, mine, first=LOOK_FIRST), timeout=longest + 10, sudo=sudo)
            got = read_batch(commands, out.stdout)
            # sudo refused, or the batch died: every command answers as the batch did
            return {k: got.get(wanted[k][0]) or Output(wanted[k][0], out.rc or 1, "", out.stderr) for k in keys}

        try:  # the user's batch, then the root batch (at once on two channels was slower: the nodes' work is CPU)
            return {**batch(False), **batch(True)}
        except RemoteError as exc:
            return exc

    def _gather_all(self) -> dict[str, dict[Key, Output] | RemoteError]:
        nodes = [self.node(n.name) for n in self.cluster.by_rank()]
        with ThreadPoolExecutor(max_workers=min(32, len(nodes))) as pool:
            return dict(zip([n.name for n in nodes], pool.map(self._gather_node, nodes)))

    @staticmethod
    def dump_facts(gathered: dict) -> dict:
        return {name: dump_output(got) if isinstance(got, RemoteError)
                else [{"fact": f, "arg": arg, "command": out.command, **dump_output(out)} for (f, arg), out in got.items()]
                for name, got in gathered.items()}

    def load_facts(self, dumped: dict) -> dict:
        return {name: load_output(self.node(name), "<the facts' batch>", got) if isinstance(got, dict)
                else {(o["fact"], o["arg"]): load_output(self.node(name), o["command"], o) for o in got}
                for name, got in dumped.items()}

    def facts(self, name: str) -> dict[Key, Output]:
        with self._lock:
            if self._facts is None:
                started = time.monotonic()
                if self.recorded is not None:
                    self._facts = self.load_facts(self.recorded)
                else:
                    self._facts = run_shared(self.run_id, "facts", self._gather_all, self.dump_facts, self.load_facts)
                self.timing["gather"] = time.monotonic() - started
        got = self._facts.get(name)
        if got is None:
            raise NotRecorded(f"{name} is not in the recording").at(self.node(name), "the facts' batch")
        if isinstance(got, RemoteError):
            raise got
        return got

    def fact_output(self, name: str, fact: str, arg: Any = None) -> Output:
        """The output of one declared fact on one node, from the run's batch; never run live."""
        got = self.facts(name).get((fact, arg))
        if got is None and self.replay is not None:
            raise NotRecorded(f"fact {fact!r}{f' ({arg})' if arg is not None else ''} of {name} is not in the recording").at(
                self.node(name), registry.FACTS[fact].what)
        if got is None:
            raise registry.FactNotDeclared(f"fact {fact!r} ({arg}) was not gathered on {name} in this run: the check that reads "
                                           "it must declare it with @reads(...)")
        return got

    def once(self, name: str, command: str, timeout: float) -> Output:
        """A program run on the node once per run (too long for the batch, or run on every node at once)."""
        key = (name, command)
        if key not in self._once and self.replay is not None:
            recorded = self.replay.get("once", {}).get(name, {}).get(command)
            self._once[key] = (load_output(self.node(name), command, recorded) if recorded is not None else
                               NotRecorded(f"{name}: `{command[:200]}` is not in the recording").at(self.node(name), command))
        if key not in self._once:
            try:
                out = self.node(name).run(command, timeout=timeout)
                self._once[key] = Output(command, out.rc, out.stdout, out.stderr)
            except RemoteError as exc:
                self._once[key] = exc
        got = self._once[key]
        if isinstance(got, RemoteError):
            raise got
        return got

    def at_once(self, command: str | dict[str, str], timeout: float) -> dict[str, Output | RemoteError]:
        """`command` on every node at the same time, once per run (under pytest-xdist, once for every worker); each
        node's Output or its RemoteError. A dict gives each node its own command (a rank's own arguments and
        environment). At once: every node's figure is taken in the same seconds, so where nodes share
        a machine (the simulation) they share it evenly and see the same neighbours; GB10s are machines of their own,
        and eight of them take one run's time, not eight."""
        commands = command if isinstance(command, dict) else {n.name: command for n in self.cluster.by_rank()}
        with self._together:
            if self.replay is not None:  # each node's recorded run, or not-recorded
                for n in self.cluster.by_rank():
                    with contextlib.suppress(RemoteError):
                        self.once(n.name, commands[n.name], timeout)
            if not all((n.name, commands[n.name]) in self._once for n in self.cluster.by_rank()):
                key = hashlib.sha256("\0".join(commands[n.name] for n in self.cluster.by_rank()).encode()).hexdigest()[:12]
                got = run_shared(self.run_id, f"together-{key}", lambda: self._run_at_once(commands, timeout),
                                 lambda outs: {name: dump_output(out) for name, out in outs.items()},
                                 lambda dumped: {name: load_output(self.node(name), commands[name], out)
                                                 for name, out in dumped.items()})
                for name, out in got.items():
                    self._once[(name, commands[name])] = out
            return {n.name: self._once[(n.name, commands[n.name])] for n in self.cluster.by_rank()}

    def _run_at_once(self, commands: dict[str, str], timeout: float) -> dict[str, Output | RemoteError]:
        def run(name: str) -> None:
            with contextlib.suppress(RemoteError):
                self.once(name, commands[name], timeout)

        names = [self.node(n.name).name for n in self.cluster.by_rank()]  # made here, not in the threads
        with ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(run, names))
        return {name: self._once[(name, commands[name])] for name in names}


def look(cluster: Cluster, nodes: dict[str, RemoteNode], names) -> dict[str, dict[str, Any] | RemoteError]:
    """A fresh reading of the named facts (one per node: no per-link fact) on every node at once, over the caller's
    connections, nothing kept: a watch's tick, a stall's evidence. Each node's fact -> value, or the Unreadable that
    says why it could not be read; or the node's RemoteError."""
    fleet = Fleet(cluster)
    fleet.nodes.update(nodes)
    fleet.wanted = set(names)
    gathered = fleet._gather_all()
    out: dict[str, dict[str, Any] | RemoteError] = {}
    for node, outputs in gathered.items():
        if isinstance(outputs, RemoteError):
            out[node] = outputs
            continue
        out[node] = {}
        for name in names:
            try:
                out[node][name] = registry.value_of(registry.FACTS[name], outputs[(name, None)], node)
            except Unreadable as exc:
                out[node][name] = exc
    return out
