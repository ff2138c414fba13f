"""perftest output: ib_write_bw, ib_read_bw, ib_send_bw (bandwidth) and ib_*_lat (latency), client or server side.

What varies in real outputs, and how it is read:
- header lines hold one or two `key : value` fields, apart by tabs or spaces (`Dual-port : OFF\t\tDevice : mlx5_0`);
- each `local address:` / `remote address:` line may be followed by its own `GID:` line (one per QP, so a
  bidirectional or multi-QP run prints many); rdma_cm runs print none. A GID belongs to the address line it follows;
- the result table's column header says the unit (`BW average[Gb/sec]`, or `[MB/sec]` before perftest 23.x and
  `[MiB/sec]` since, both 2^20 bytes); when the header was cut, the command line says it (`--report_gbits`, else perftest's MB/sec). Rows of an
  unknown unit are not read;
- warning lines (`WARNING: ...`, `Conflicting CPU frequency values detected ...`) may stand between the rows;
- `-a` sweeps print one row per message size; infinite (`--run_infinitely`) runs repeat rows of one size.
- `--output=bandwidth|latency` prints the figure alone, one bare number a size: read only when the command line
  says so (its unit, `-s` size or `-a` sweep come from there too);
- `-b --report-both` prints the bidirectional rows, then " Local results:" and " Remote results:" tables of each
  side's share; those are not read as rows (the judged figure is the two directions together, as without it).

The figure to judge is `bw_average_gbps`: the mean BW average of the rows of the LARGEST message size (in a
sweep, the small sizes measure message rate, not the link; in an infinite run every row has that size).
`bw_peak_gbps` is the highest peak of those rows, None where perftest did not measure it (prints 0.00 with -D and
infinite runs). Bandwidth is in Gb/s.

Failures are facts too: `errors` holds every failure line as printed, `error` the most telling one: the first
failure line, with its cause where perftest prints one on the next line (`Completion with error at client:
Failed status 4: wr_id 0 syndrom 0x51`). A run that printed a banner or header but no result rows has `error` set
too: it never passes as a measurement.
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError, parser
from .rdma import gid_ipv4

MIB_PER_S_TO_GBPS = 1048576 * 8 / 1e9

# Failure lines perftest prints (perftest_resources.c, perftest_communication.c, the *_bw/_lat mains), some after the
# name of the function that failed ("ethernet_read_keys: Couldn't read remote address").
FAILURE = re.compile(
    r"^(?:[a-z]\w*: )?(?:Couldn't|Could not|Can't|Unable to|Failed\b|Failure in|Completion with error|A completion with Error"
    r"|Port number \d+ state is (?!Active)|No IB devices found|IB device \S+ not found|Did not detect devices"
    r"|Mismatch in|Problems? (?:with|in)\b|Error\b|ERROR:|(?:\w+ ){0,2}\w+ failed\b|Bad wc status|Poll \w+ CQ error"
    r"|Received \d+ times ADDR_ERROR|Found Incompatibility|\w+(?: function)? exited with Error|Did not get Message"
    r"|Invalid (?:\w+ )*(?:IP address|MTU|Command)|Link layer on port \d+ is Unknown|Internal error|VALIDATION: (?:FAILED|ERROR)"
    r"|[Uu]nexpected CM event|bad event)"
)
CAUSE = re.compile(r"^Failed status \d+")  # the line after "Completion with error ..." that says why
# "Requested mtu is higher than active mtu" / "Changing to active mtu - 3": a notice; the run goes on at the active MTU.
WARNING = re.compile(r"^(?:WARNING:\s*(?P<msg>.*)|(?P<line>Conflicting CPU frequency values detected.*|(?:libibverbs: )?Warning:.*"
                     r"|VALIDATION: WARNING.*"
                     r"|Requested mtu is higher than active mtu.*|Changing to active mtu\b.*))$")
BANNER = re.compile(r"^\*\s*Waiting for client\b.*\*$")  # "to connect...", "rdma_cm QP to connect"
TEST = re.compile(r"^(?P<test>\S.*(?:BW|Latency|Lat)(?: forwarding)?(?: Multicast)? Test)$")
DASHES = re.compile(r"^-{20,}$")
KEY = r"[A-Za-z][\w .*#/()-]*?"
HEADER_FIELD = re.compile(rf"^(?P<key>{KEY})\s*:\s*(?P<value>\S.*?)$")
HEADER_SPLIT = re.compile(rf"(?:\t+ *| {{2,}})(?={KEY}\s*:(?:\s|$))")  # two fields on one line, tabs or spaces apart
ADDRESS = re.compile(r"^(?P<side>local|remote) address\s*:\s*(?P<rest>.*)$")
GID_LINE = re.compile(r"^M?GID\s*:\s*(?P<gid>\S+)$")
# Column header tokens: "#bytes", "BW peak[Gb/sec]", "MsgRate Port1[Mpps]", "99.9% percentile[usec]", "tps average".
COLUMN = re.compile(r"#\w+|[\d.]+% percentile\[[^\]]*\]|[A-Za-z_]+(?: [A-Za-z0-9_]+)?\[[^\]]*\]|tps average|\S+")
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:e[-+]?\d+)?$", re.I)


@dataclass
class BwRow:
    bytes: int
    iterations: int | None
    bw_peak_gbps: float | None
    bw_average_gbps: float
    msg_rate_mpps: float | None
    cpu_util_pct: float | None = None


@dataclass
class LatRow:
    bytes: int
    iterations: int | None
    t_min_us: float | None
    t_max_us: float | None
    t_typical_us: float | None
    t_avg_us: float | None
    t_stdev_us: float | None
    p99_us: float | None
    p99_9_us: float | None
    tps: float | None = None  # duration-mode latency runs (`tps average`)


@dataclass
class QpAddress:
    side: str  # "local" or "remote"
    lid: str | None
    qpn: str | None
    psn: str | None
    gid: str | None = None  # as printed (16 decimal bytes); None for rdma_cm runs
    ipv4: str | None = None  # the IPv4 address of an IPv4-mapped (RoCE v2) GID


@dataclass
class Perftest:
    test: str | None  # "RDMA_Write BW Test"
    device: str | None
    qps: int | None
    link_type: str | None
    gid_index: int | None
    mtu_bytes: int | None
    connection: str | None  # "Data ex. method": "Ethernet" or "rdma_cm"
    local_ipv4: str | None  # from the GID after the first local address line
    remote_ipv4: str | None  # from the GID after the first remote address line
    connection_type: str | None = None  # RC, UC, UD, XRC, DC
    # "... Bidirectional BW Test": the figure is both directions together. None: neither the banner nor the command line
    # is there (a `| tail -5` of the result table) to say which of its BW rows.
    bidirectional: bool | None = False
    addresses: list[QpAddress] = field(default_factory=list)
    unit: str | None = None  # the bandwidth unit perftest printed: "Gb/sec", "MB/sec" or "MiB/sec"
    warnings: list[str] = field(default_factory=list)  # one per kind, the first of each
    bw_rows: list[BwRow] = field(default_factory=list)
    lat_rows: list[LatRow] = field(default_factory=list)
    bw_bytes: int | None = None  # the message size whose rows give the judged figure (the largest)
    bw_average_gbps: float | None = None  # THE figure to judge: mean BW average of the largest size's rows
    bw_peak_gbps: float | None = None  # highest peak of those rows; None where perftest did not measure peaks
    complete: bool = False  # the result table was closed by its dashes line (infinite runs never are)
    waiting: bool = False  # the server's "Waiting for client to connect" banner was printed
    error: str | None = None
    errors: list[str] = field(default_factory=list)


def _header(lines: list[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in lines:
        if ADDRESS.match(line) or GID_LINE.match(line) or WARNING.match(line):
            continue
        for chunk in HEADER_SPLIT.split(line):
            if (m := HEADER_FIELD.match(chunk.strip())):
                fields.setdefault(re.sub(r"\s+", " ", m["key"].strip()), m["value"])
    return fields


def _int(value: str | None) -> int | None:
    return int(m[1]) if value and (m := re.match(r"(\d+)", value)) else None


def _address(side: str, rest: str) -> QpAddress:
    def part(name: str) -> str | None:
        m = re.search(rf"\b{name}[\s:]+([^\s,]+)", rest)
        return m[1] if m else None

    gid = part("GID")
    return QpAddress(side, part("LID"), part("QPN"), part("PSN"), gid, gid_ipv4(gid) if gid else None)


def _columns(header: str) -> list[str]:
    """Column names, lower case, unit dropped: ['#bytes', '#iterations', 'bw peak', ...]."""
    return [re.sub(r"\[[^\]]*\]$", "", c).strip().lower() for c in COLUMN.findall(header)]


def _unit_of(header: str) -> str | None:
    m = re.search(r"BW average\[([^\]]*)\]", header)
    return m[1] if m else None


def _default_columns(command: str | None) -> tuple[str | None, list[str], str | None]:
    """Rows after a cut-off column header: only a bandwidth test's command line says what its columns are."""
    if not command or not re.search(r"\bib_\w+_bw\b", command):
        return None, [], None
    unit = "Gb/sec" if re.search(r"--report[_-]g\w*", command) else "MB/sec"
    cols = ["#bytes", "#iterations", "bw peak", "bw average", "msgrate"]
    return "bw", cols + (["cpu_util"] if "--cpu_util" in command else []), unit


def _terse(command: str | None) -> tuple[str, str | None, list[int] | None, int] | None:
    """`--output=bandwidth|latency`: perftest prints the figure alone, one bare number a line ("92.548317").

    (kind, unit, the sizes of an `-a` sweep in order or None, the one size otherwise); only the command line says it."""
    m = re.search(r"--output[= ](bandwidth|latency)\b", command or "")
    if not m:
        return None
    size = re.search(r"(?:^|\s)(?:-s\s*|--size[= ])(\d+)\b", command)
    sweep = [2 << n for n in range(23)] if re.search(r"(?:^|\s)(?:-a|--all)(?:\s|$)", command) else None
    if m[1] == "latency":
        return "lat", "usec", sweep, int(size[1]) if size else 2
    atomic = re.search(r"\bib_atomic_bw\b", command)
    unit = "Gb/sec" if re.search(r"--report[_-]g\w*", command) else "MB/sec"
    return "bw", unit, sweep, int(size[1]) if size else (8 if atomic else 65536)


def _scale(unit: str) -> float | None:
    return {"gb/sec": 1.0, "mb/sec": MIB_PER_S_TO_GBPS, "mib/sec": MIB_PER_S_TO_GBPS}.get(unit.strip().lower())


def _bidirectional(test: str | None, command: str | None) -> bool | None:
    if test:
        return "Bidirectional" in test
    command = (command or "").split("|")[0]  # `ib_write_bw ... | tail -5`: the flags are perftest's, not tail's
    if re.search(r"\bib_\w+_(?:bw|lat)\b", command):
        return bool(re.search(r"\s(?:-b|--bidirectional)(?=\s|$)", command))
    return None


@parser
def parse(text: str, command: str | None = None) -> Perftest:
    lines = [line.strip() for line in text.splitlines()]
    h = _header(lines)
    test = next((m["test"] for line in lines if (m := TEST.match(line))), None)
    result = Perftest(
        test=test,
        device=h.get("Device"),
        qps=_int(h.get("Number of qps")),
        link_type=h.get("Link type"),
        gid_index=_int(h.get("GID index")),
        mtu_bytes=_int(h.get("Mtu")),
        connection=h.get("Data ex. method"),
        local_ipv4=None,
        remote_ipv4=None,
        connection_type=h.get("Connection type"),
        bidirectional=_bidirectional(test, command),
    )
    kind, columns, unit = _default_columns(command)
    terse = _terse(command)
    seen_warnings: set[str] = set()
    in_table = False
    per_side = False
    for line in lines:
        if (m := ADDRESS.match(line)):
            result.addresses.append(_address(m["side"], m["rest"]))
            continue
        if (m := GID_LINE.match(line)):
            if result.addresses and result.addresses[-1].gid is None:
                last = result.addresses[-1]
                last.gid, last.ipv4 = m["gid"], gid_ipv4(m["gid"])
            continue
        if (m := WARNING.match(line)):
            message = (m["line"] if m["msg"] is None else m["msg"]).strip()
            if not message:  # "WARNING:" with its words cut off (a truncated capture): nothing to report
                continue
            if (key := re.sub(r"[\d.]+", "N", message)) not in seen_warnings:
                seen_warnings.add(key)
                result.warnings.append(message)
            continue
        if BANNER.match(line):
            result.waiting = True
            continue
        if re.fullmatch(r"(?:Local|Remote) results:", line):
            per_side = True  # --report-both: each side's share of the bidirectional rows above, not another measurement
            continue
        if FAILURE.match(line):
            result.errors.append(line)
            continue
        if line.startswith("#bytes"):
            columns = _columns(line)
            if "bw average" in columns:
                kind, unit = "bw", _unit_of(line)
            elif "t_min" in columns or "t_avg" in columns or "t_typical" in columns:
                kind, unit = "lat", "usec"
            else:
                kind = None
            in_table = True
            continue
        if DASHES.match(line):
            if in_table and (result.bw_rows or result.lat_rows):
                result.complete = True
            continue
        if terse and re.fullmatch(r"\d+\.\d+", line):
            n = len(result.bw_rows) + len(result.lat_rows)
            size = terse[2][n] if terse[2] and n < len(terse[2]) else terse[3]
            if terse[0] == "bw" and (scale := _scale(terse[1])) is not None:
                value = float(line) if scale == 1.0 else round(float(line) * scale, 4)
                result.unit = terse[1]
                result.bw_rows.append(BwRow(size, None, None, value, None))
            elif terse[0] == "lat":
                result.lat_rows.append(LatRow(size, None, None, None, None, float(line), None, None, None))
            continue
        tokens = line.split()
        if kind is None or not tokens or not all(NUMBER.match(t) for t in tokens) or not tokens[0].isdigit():
            continue
        row = dict(zip(columns, (float(t) for t in tokens)))
        if "#bytes" not in row or per_side:
            continue
        result.complete = False  # a row after a dashes line: the table goes on
        iterations = int(row["#iterations"]) if "#iterations" in row else None
        if kind == "bw" and "bw average" in row and unit and (scale := _scale(unit)) is not None:
            result.unit = unit

            def gbps(name: str) -> float | None:
                if name not in row:
                    return None
                return row[name] if scale == 1.0 else round(row[name] * scale, 4)

            result.bw_rows.append(BwRow(int(row["#bytes"]), iterations, gbps("bw peak"), gbps("bw average"),
                                        row.get("msgrate"), row.get("cpu_util")))
        elif kind == "lat":
            result.lat_rows.append(LatRow(int(row["#bytes"]), iterations, row.get("t_min"), row.get("t_max"),
                                          row.get("t_typical"), row.get("t_avg"), row.get("t_stdev"),
                                          row.get("99% percentile"), row.get("99.9% percentile"), row.get("tps average")))
    # perftest prints one local and one remote address line per QP before its table: with the table there, another count
    # is a paste that lost or repeated one (the GIDs, and the addresses they say, would be another QP's).
    if result.qps and (result.bw_rows or result.lat_rows) and result.addresses:
        for side in ("local", "remote"):
            count = sum(a.side == side for a in result.addresses)
            if count != result.qps:
                raise ParseError("perftest", f"{result.qps} {side} address lines (Number of qps: {result.qps}); "
                                             f"got {count}", text)
    # A sweep (-a) prints each message size once, growing; an infinite run repeats one size. A size again after a larger
    # one, or twice among several sizes, is a repeated or misplaced row.
    sizes = [r.bytes for r in result.bw_rows] or [r.bytes for r in result.lat_rows]
    if len(set(sizes)) > 1 and sizes != sorted(set(sizes)):
        raise ParseError("perftest", "result rows with each message size once, in growing order", text)
    local = next((a for a in result.addresses if a.side == "local"), None)
    remote = next((a for a in result.addresses if a.side == "remote"), None)
    result.local_ipv4 = local.ipv4 if local else None
    result.remote_ipv4 = remote.ipv4 if remote else None
    if result.bidirectional is None and not result.bw_rows:
        result.bidirectional = False  # no bandwidth figure for it to qualify (latency rows, an error, a cut run)
    if result.bw_rows:
        result.bw_bytes = max(r.bytes for r in result.bw_rows)
        judged = [r for r in result.bw_rows if r.bytes == result.bw_bytes]
        result.bw_average_gbps = round(sum(r.bw_average_gbps for r in judged) / len(judged), 3)
        peaks = [r.bw_peak_gbps for r in judged if r.bw_peak_gbps]  # 0.00: not measured (-D, infinite runs)
        result.bw_peak_gbps = max(peaks) if peaks else None
    if result.errors:
        first = result.errors[0]
        cause = next((e for e in result.errors[1:] if CAUSE.match(e)), None)
        result.error = f"{first}: {cause}" if first.startswith("Completion with error") and cause else first
    elif not (result.bw_rows or result.lat_rows):
        if "Client closed connection" in lines:  # the write server of a --run_infinitely run: the client has the figures
            result.error = "no result rows: the server side of an infinite run prints none (read the client's output)"
        elif result.waiting and not (result.test or result.addresses):
            result.error = "no result rows: only the server's 'Waiting for client to connect' banner (no client came)"
        elif result.test or result.addresses or result.waiting or in_table or h.get("Device"):
            result.error = "no result rows (the run was cut short or the peer never connected)"
        else:
            raise ParseError("perftest", "perftest output with a '#bytes' result table, or a perftest error line", text)
    return result
