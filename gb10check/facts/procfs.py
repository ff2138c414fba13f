"""What the watch reads of a rank and of its node, pure: /proc/PID/stat lines (each process's state and CPU time), the
kernel's boot id with journalctl's list of boots, and the rank's state as one look takes it (gather.RANK_STATE: the
node's clock, `docker inspect` of the rank's container, /proc/PID/stat of each of its processes, its last log line).
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError
from .docker import Container, parse_container, timestamp

# pid (comm) state ppid ...: comm may hold spaces and parentheses, so it ends at the line's last ") ".
STAT = re.compile(r"^(?P<pid>\d+) \((?P<comm>.*)\) (?P<state>[A-Za-z]) (?P<rest>-?\d+(?: -?\d+){11,})")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    comm: str
    state: str  # R running, S sleeping, D uninterruptible sleep, T stopped, t traced, Z zombie, I idle ...
    cpu_ticks: int  # utime + stime, in clock ticks (USER_HZ, 100 on Linux)
    pgrp: int  # its process group


def parse_stat(text: str) -> list[ProcStat]:
    """/proc/PID/stat of each process, one line each; nothing at all is no process (an empty list)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = STAT.match(line.strip())
        if not m:
            raise ParseError("proc_stat", "pid (comm) state ppid ... lines of /proc/PID/stat", line)
        rest = m["rest"].split()  # ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
        out.append(ProcStat(int(m["pid"]), m["comm"], m["state"], int(rest[10]) + int(rest[11]), int(rest[1])))
    return out


BOOT_LINE = re.compile(r"^\s*(?P<idx>-?\d+)\s+(?P<id>[0-9a-f]{32})\b")


@dataclass(frozen=True)
class Boots:
    boot_id: str  # the running kernel's, without hyphens (as journalctl prints it)
    journal: list[str] = field(default_factory=list)  # the boots the journal knows, oldest first ([]: none kept)


def parse_boots(text: str) -> Boots:
    """/proc/sys/kernel/random/boot_id, then `journalctl --list-boots` (with or without its header line; a journal that
    keeps no boots, or no journalctl, gives no list)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", lines[0]):
        raise ParseError("boots", "the boot id (/proc/sys/kernel/random/boot_id), then journalctl --list-boots",
                         lines[0] if lines else text)
    journal = [(int(m["idx"]), m["id"]) for line in lines[1:] if (m := BOOT_LINE.match(line))]
    return Boots(lines[0].replace("-", ""), [i for _, i in sorted(journal)])


@dataclass
class RankState:
    """One look at a node's rank: None where the node did not say."""
    now: float  # the node's clock (date +%s.%N)
    container: Container | None  # None: no such container
    processes: list[ProcStat]  # every process of the container ([]: none, or the container is not running)
    last_log_at: float | None  # the time docker stamped on its last log line
    last_log: str = ""

    @property
    def log_age_s(self) -> float | None:
        return round(self.now - self.last_log_at, 1) if self.last_log_at is not None else None

    @property
    def cpu_ticks(self) -> int:
        return sum(p.cpu_ticks for p in self.processes)


SECTIONS = ("-- inspect", "-- stat", "-- log")
NO_SUCH = re.compile(r"No such (?:object|container)", re.I)


def parse_rank_state(text: str) -> RankState:
    """The node's clock, then `-- inspect` (docker inspect of the container), `-- stat` (/proc/PID/stat of its
    processes) and `-- log` (`docker logs -t --tail 1`) sections."""
    head, *parts = re.split(r"^(-- (?:inspect|stat|log))\s*$", text.strip(), flags=re.M)
    got = dict(zip(parts[0::2], parts[1::2]))
    if set(got) != set(SECTIONS):
        raise ParseError("rank_state", "the node's clock, then the -- inspect, -- stat and -- log sections", text[:300])
    try:
        now = float(head.strip())
    except ValueError:
        raise ParseError("rank_state", "the node's clock (date +%s.%N)", head) from None
    inspect = got["-- inspect"].strip()
    container = None if NO_SUCH.search(inspect) or inspect == "[]" else parse_container(inspect)
    if isinstance(container, list):
        raise ParseError("rank_state", "one container", inspect[:300])
    log = got["-- log"].strip().splitlines()
    stamp, _, line = (log[-1] if log else "").partition(" ")
    return RankState(now, container, parse_stat(got["-- stat"]), timestamp(stamp), line[:300])
