"""The rank watch shared by the deploy (gb10check/deploy/run.py) and the soak stage (gb10check/soak.py): what each reads of
every rank through its launcher and how it reads it.

  - memory floor (`MemoryWatchdog`): MemAvailable on every node, in rank order; below the floor on any node, every rank
    is killed at once (a wedging load does not wait for TERM), and the `Crossing` says which node, how low, how fast;
  - exits (`exited`): a rank's exit code, its last log lines and the known cause;
  - log signatures (`read_log(text).errors`): vllm_log's named errors (hangs, memory, NCCL, a dead engine);
  - one cause rule (`cause_of`): the log's most specific fatal error, with its hint.
Logs, exits and signatures are read every FULL_CHECK_S, whatever the memory poll. The launcher is the deployment's
(deploy/run.ComposeLauncher, deploy/ray.RayLauncher) or a self-test's scripted one; the clock is the caller's.
"""

import copy
import functools
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .facts import vllm_log

FULL_CHECK_S = 2.0  # logs, exit codes and /health: read this often, whatever the memory poll interval
LAST_LINES = 12  # of a rank's log, shown when it exits

LOG_PREFIX = re.compile(r"^(?:\([^)]*\)\s+)?(?:ERROR|WARNING|INFO)\s+\d\d-\d\d \S+ \[[^\]]*\]\s*")  # "(Worker pid=1) ERROR 11-30 07:36:12 [file.py:9] "


def read_log(text: str) -> vllm_log.VllmLog:
    """A rank's log so far; empty or not yet recognisable is no milestone, not an error. A log that has not grown since
    the last full check is not parsed again; each caller gets a copy of its own."""
    return copy.deepcopy(_parsed_log(text))


@functools.lru_cache(maxsize=8)
def _parsed_log(text: str) -> vllm_log.VllmLog:
    try:
        return vllm_log.parse(text)
    except vllm_log.ParseError:
        return vllm_log.VllmLog()


def cause_of(log: vllm_log.VllmLog) -> str | None:
    """The known cause in a rank's log: its most specific fatal error's hint and line (without vLLM's log prefix)."""
    cause = log.cause
    return f"{cause.hint} ({LOG_PREFIX.sub('', cause.text.strip())[:200]})" if cause else None


@dataclass
class Exited:
    """A rank that is no longer running: its exit code, its last log lines, the known cause (None: none recognised)."""
    node: str
    code: int
    last_lines: list[str]
    cause: str | None


def exited(launcher, node: str) -> Exited | None:
    """The rank on `node` if it has exited, None while it runs."""
    code = launcher.exit_code(node)
    if code is None:
        return None
    text = launcher.log(node)
    return Exited(node, code, text.rstrip().splitlines()[-LAST_LINES:], cause_of(read_log(text)))


def stop_every_rank(launcher, order: list[str], kill: bool) -> str:
    """Every rank at once: a rank that ignores TERM holds only its own grace time, not the others' too; a node that
    cannot be reached is said, and the others are still stopped."""
    from .remote import RemoteError

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
    in `samples` as (clock time, node, GiB), so a long run can report the minimum per node."""

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
