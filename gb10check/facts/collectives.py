"""One rank's output of the collectives canary (gb10check/canary/collectives.py), with NCCL's INFO lines mixed in.

The canary's own lines: `gb10check-collective-start {json}` (rank, world, host, gpu, torch, nccl, env: the NCCL_*
variables the process had), one `gb10check-collective {json}` per collective and size (op, size in bytes, iters,
time_us, algbw and busbw in GB/s as nccl-tests computes them, wrong), `gb10check-collective-done {json}` at the end,
or `gb10check-collective-error {json}` (error) where it stopped.

NCCL's lines (NCCL_DEBUG=INFO), with or without their `host:pid:tid [dev]` prefix:
- `NCCL version 2.28.9+cuda13.0`;
- `Using network IB|Socket` and `NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB ...`,
  `NET/IB : No device found.`, `NET/Socket : Using [0]eth0:192.0.2.2<0>`: the plug-in and the devices NCCL found,
  in the order that numbers them (`NET/IB/1` in a channel line is the second of `NET/IB : Using`);
- channel lines `Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/1/GDRDMA`: per channel, the ranks it joins, the side
  this process is on, and the transport; only these say what carried the data (the plug-in lines are printed also
  by runs whose data never leaves the node);
- `NCCL WARN ...`: kept whole.

Bandwidth here is GB/s as printed (10^9 bytes/s); the judge converts.
"""

import json
import re
from dataclasses import dataclass, field

from ._text import ParseError, parser
from .nccl import NCCL_LINE, NCCL_VERSION, _transport

MARK = "gb10check-collective"
LINE = re.compile(rf"\b{MARK}(?P<kind>-start|-done|-error)?\s+(?P<json>\{{.*?)\s*$")
CHANNEL = re.compile(r"\bChannel\s+(?P<ch>\d+)(?:/\d+)?\s*:\s*(?P<src>\d+)(?:\[[^\]]*\])?\s*->\s*(?P<dst>\d+)(?:\[[^\]]*\])?\s*"
                     r"(?:\[(?P<side>send|receive)\]\s*)?via\s+(?P<via>\S.*?)\s*$")
OPS = ("all_reduce", "all_gather")


@dataclass
class CollectiveRow:
    op: str  # "all_reduce" | "all_gather"
    size: int  # bytes: the whole buffer each rank ends with (nccl-tests' size)
    time_us: float  # one call, the slowest rank's
    algbw_gbs: float
    busbw_gbs: float
    wrong: int  # elements that differ from what the collective must give
    iters: int | None = None


@dataclass
class Channel:
    channel: int
    src: int  # the ranks it joins
    dst: int
    side: str | None  # "send" | "receive" | None (P2P/SHM lines name no side)
    transport: str  # "NET/IB", "NET/Socket", "P2P", "SHM", ...
    net_device: int | None  # NET/IB/<n>: the n-th device of the `NET/IB : Using` line
    via: str  # as printed


@dataclass
class CollectiveRun:
    rank: int | None = None
    world: int | None = None
    host: str | None = None
    gpu: str | None = None
    nccl_version: str | None = None  # from NCCL's banner, else the canary's torch.cuda.nccl.version()
    env: dict[str, str] = field(default_factory=dict)  # the NCCL_* variables the process had
    rows: list[CollectiveRow] = field(default_factory=list)
    done: bool = False  # the done line: every size of both collectives ran
    error: str | None = None  # the canary's error line
    network: str | None = None  # "Using network IB|Socket": the plug-in NCCL loaded
    net_ib_devices: list[str] | None = None  # ["rocep1s0f1:1/RoCE", ...] in NCCL's order; [] for "No device found"
    net_socket_devices: list[str] | None = None  # ["eth0:192.0.2.2<0>", ...]
    channels: list[Channel] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # NCCL WARN messages

    @property
    def transports(self) -> list[str]:
        return list(dict.fromkeys(c.transport for c in self.channels))

    def hca_of(self, channel: Channel) -> str | None:
        """The HCA (`rocep1s0f1`) a NET/IB channel line names by its device number."""
        if channel.transport != "NET/IB" or channel.net_device is None or not self.net_ib_devices:
            return None
        if channel.net_device >= len(self.net_ib_devices):
            return None
        return self.net_ib_devices[channel.net_device].split(":")[0]

    def largest(self, op: str) -> CollectiveRow | None:
        return max((r for r in self.rows if r.op == op), key=lambda r: r.size, default=None)

    def at(self, op: str, size: int) -> CollectiveRow | None:
        return next((r for r in self.rows if r.op == op and r.size == size), None)


def _devices(msg: str) -> list[str]:
    """`Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB ...` -> the devices, in their numbered order."""
    head = msg.split(";")[0]
    return [d for _, d in sorted((int(n), d) for n, d in re.findall(r"\[(\d+)\](\S+)", head))]


def _row(data: dict) -> CollectiveRow:
    try:
        op = data["op"]
        if op not in OPS:
            raise ValueError(op)
        return CollectiveRow(op, int(data["size"]), float(data["time_us"]), float(data["algbw"]), float(data["busbw"]),
                             int(data["wrong"]), int(data["iters"]) if data.get("iters") is not None else None)
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError("nccl_collectives", f"a result line with op, size, time_us, algbw, busbw, wrong (got {exc!r})",
                         json.dumps(data)) from None


@parser
def parse(text: str) -> CollectiveRun:
    run = CollectiveRun()
    evidence = False
    for line in text.splitlines():
        s = line.strip()
        if (m := LINE.search(s)):
            evidence = True
            try:
                data = json.loads(m["json"])
            except ValueError:
                raise ParseError("nccl_collectives", "the canary's lines with whole JSON", s) from None
            if not isinstance(data, dict):
                raise ParseError("nccl_collectives", "the canary's lines with a JSON object", s)
            if m["kind"] == "-start":
                run.rank, run.world, run.host, run.gpu = data.get("rank"), data.get("world"), data.get("host"), data.get("gpu")
                run.nccl_version = run.nccl_version or data.get("nccl")
                run.env = {str(k): str(v) for k, v in (data.get("env") or {}).items()}
            elif m["kind"] == "-done":
                run.done = True
            elif m["kind"] == "-error":
                run.error = run.error or str(data.get("error") or "an error without words")
                run.rank = data.get("rank", run.rank)
            else:
                run.rows.append(_row(data))
            continue
        if (v := NCCL_VERSION.search(s)) and "NCCL version" in s and "WARN" not in s:
            run.nccl_version = v["v"]
            evidence = True
        if not (n := NCCL_LINE.search(s)) and not s.startswith("NCCL INFO"):
            continue
        evidence = True
        level, msg = (n["level"], n["msg"]) if n else ("INFO", s[len("NCCL INFO"):].strip())
        if level != "INFO":
            run.warnings.append(msg)
        elif (c := CHANNEL.search(msg)):
            name, _ = _transport(c["via"])
            dev = re.match(r"NET/[^/]+/(\d+)", c["via"])
            run.channels.append(Channel(int(c["ch"]), int(c["src"]), int(c["dst"]), c["side"], name,
                                        int(dev[1]) if dev else None, c["via"]))
        elif (u := re.match(r"Using network\s+(\S+)", msg)):
            run.network = u[1]
        elif re.match(r"NET/IB\w*\s*:\s*No device found", msg):
            run.net_ib_devices = []
        elif re.match(r"NET/IB\w*\s*:\s*Using\b", msg):
            run.net_ib_devices = _devices(msg)
        elif re.match(r"NET/Socket\s*:\s*Using\b", msg):
            run.net_socket_devices = _devices(msg)
    if not evidence:
        raise ParseError("nccl_collectives", "the collectives canary's lines (gb10check-collective ...) or NCCL's", text)
    seen: set[tuple[str, int]] = set()
    for r in run.rows:
        if (r.op, r.size) in seen:
            raise ParseError("nccl_collectives", f"each collective and size once ({r.op} {r.size} twice)", text)
        seen.add((r.op, r.size))
    return run


def error_summary(error: str) -> str:
    """torch's NCCL error in one line: NCCL's result code and its last error (`ncclInvalidUsage: Duplicate GPU
    detected ...`); any other error's first line."""
    lines = [l.strip() for l in error.splitlines() if l.strip()]
    code = next((l.split(":")[0] for l in lines if re.match(r"nccl[A-Z]\w*:", l)), None)
    last = next((lines[i + 1] for i, l in enumerate(lines[:-1]) if l == "Last error:"), None)
    if code and last:
        return f"{code}: {last}"[:300]
    return lines[0][:300] if lines else "an empty error"
