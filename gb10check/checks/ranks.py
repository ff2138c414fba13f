"""Which rank stopped, pure: two looks at every rank (facts/procfs.RankState, a few seconds apart) and each node's QSFP
links (facts/ip) in, the rank named with its evidence out. gb10check/stopped.py takes the looks; the soak (on a stall)
and `gb10check watch` (on every tick) judge them here.

Evidence that a rank stopped, strongest first: its container gone, paused, restarting or exited; a process of it stopped
(state T, t) or in uninterruptible sleep (D) at both looks; a QSFP link of its node down; its processes' CPU time not
moving between the looks while another rank's did. The age of its last log line is said beside the evidence (a follower
logs little while it serves, so its age alone names nothing).
"""

from dataclasses import dataclass, field

from ..facts.ip import Interface
from ..facts.procfs import RankState
from ..remedies import Code
from ..verdict import Finding

MOVING_TICKS = 5  # CPU time (clock ticks, 1/100 s) a rank that works spends between two looks, at the least
STOPPED_STATES = {"T": "stopped (SIGSTOP)", "t": "stopped by a tracer", "D": "in uninterruptible sleep"}


@dataclass
class RankLook:
    """What the two looks saw of one rank; `unreadable` says why a look could not be taken."""
    node: str
    rank: int
    first: RankState | None = None
    second: RankState | None = None
    links: dict[str, Interface | None] = field(default_factory=dict)  # QSFP netdev -> its interface (None: absent)
    unreadable: str | None = None

    @property
    def cpu_moved(self) -> int | None:
        """Clock ticks its processes spent between the looks (the processes of both looks), None without two looks."""
        if self.first is None or self.second is None or not self.second.processes:
            return None
        before = {p.pid: p.cpu_ticks for p in self.first.processes}
        return sum(p.cpu_ticks - before[p.pid] for p in self.second.processes if p.pid in before)

    @property
    def gap_s(self) -> float | None:
        return round(self.second.now - self.first.now, 1) if self.first and self.second else None


def container_evidence(state: RankState) -> str | None:
    c = state.container
    if c is None:
        return "its container is gone (docker inspect: no such container)"
    if c.status == "paused":
        return "its container is paused (docker pause: every process in it frozen)"
    if c.status == "restarting":
        return f"its container is restarting (restart count {c.restart_count})"
    if not c.running:
        return f"its container is {c.status}" + (f" (exit code {c.exit_code})" if c.exit_code is not None else "")
    return None


def process_evidence(first: RankState | None, second: RankState) -> list[str]:
    """Processes stopped or in uninterruptible sleep at both looks (a D state that passes is I/O, not a hang), one line
    per state."""
    before = {p.pid: p.state for p in first.processes} if first is not None else {}
    held = [p for p in second.processes if p.state in STOPPED_STATES and before.get(p.pid, p.state) in STOPPED_STATES]
    out = []
    for state, what in STOPPED_STATES.items():
        these = [f"{p.pid} ({p.comm})" for p in held if p.state == state]
        if these:
            out.append(f"its process{'es' if len(these) > 1 else ''} {', '.join(these)} "
                       f"{'are' if len(these) > 1 else 'is'} {what}")
    return out


def link_evidence(links: dict[str, Interface | None]) -> list[str]:
    return [f"its QSFP link {netdev} is " + ("missing" if i is None else f"down ({i.operstate or i.state})")
            for netdev, i in sorted(links.items()) if i is None or i.state == "down"]


def evidence(look: RankLook, others: list[RankLook]) -> list[str]:
    """Why this rank looks stopped ([]: it does not)."""
    if look.second is None:
        return []
    found = [e for e in [container_evidence(look.second)] if e]
    found += process_evidence(look.first, look.second) + link_evidence(look.links)
    moved, busy = look.cpu_moved, [o for o in others if (o.cpu_moved or 0) >= MOVING_TICKS]
    if moved is not None and moved == 0 and busy:
        found.append(f"its CPU time did not move in {look.gap_s:g} s while "
                     + ", ".join(f"rank {o.rank}'s moved {o.cpu_moved / 100:.2f} s" for o in busy))
    return found


def said(look: RankLook) -> str:
    """The rank as the looks saw it, for the evidence of every rank."""
    if look.second is None:
        return f"rank {look.rank} on {look.node}: not looked at ({look.unreadable or 'no look'})"
    s = look.second
    states = "".join(sorted({p.state for p in s.processes})) or "none"
    moved = look.cpu_moved
    return (f"rank {look.rank} on {look.node}: container {s.container.status if s.container else 'gone'}, "
            f"{len(s.processes)} processes (states {states}), CPU "
            + (f"{moved / 100:.2f} s in {look.gap_s:g} s" if moved is not None else "not compared")
            + (f", last log line {s.log_age_s:g} s ago" if s.log_age_s is not None else ", no log line"))


@dataclass
class Stopped:
    """The ranks named stopped, each with its evidence, and what every rank looked like."""
    named: list[tuple[RankLook, list[str]]]
    seen: list[str]

    @property
    def text(self) -> str:
        if not self.named:
            return "no rank shows why (" + "; ".join(self.seen) + ")"
        return "; ".join(f"rank {look.rank} on {look.node} stopped: " + ", ".join(ev) for look, ev in self.named)


def which_rank(looks: list[RankLook]) -> Stopped:
    """The ranks with evidence that they stopped, in rank order."""
    named = [(look, ev) for look in sorted(looks, key=lambda x: x.rank)
             if (ev := evidence(look, [o for o in looks if o is not look]))]
    return Stopped(named, [said(look) for look in sorted(looks, key=lambda x: x.rank)])


def judge_ranks(looks: list[RankLook], what: str) -> list[Finding]:
    """A finding per rank named stopped (`what`: what saw the stall, for the message), with every rank's state; a rank
    that could not be looked at is not checked, never running."""
    verdict = which_rank(looks)
    found = [Finding(Code.RANK_STOPPED, look.node, f"rank {look.rank} stopped ({what}): " + "; ".join(ev)
                     + f"\nevery rank: " + "; ".join(verdict.seen), "every rank's container running, its processes "
                     "running or sleeping, its CPU time moving, its QSFP links up", rank=look.rank)
             for look, ev in verdict.named]
    found += [Finding(Code.COMMAND_FAILED, look.node, f"could not look at rank {look.rank}: {look.unreadable}",
                      "the rank's container, processes and log readable", command="docker inspect; docker top; docker logs")
              for look in looks if look.unreadable]
    return found
