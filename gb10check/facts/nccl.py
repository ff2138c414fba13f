"""nccl-tests output (all_reduce_perf, all_gather_perf, ...), old and new column sets, with NCCL_DEBUG lines mixed in.

The result table's columns come from its own header line (with or without its leading `#`):
new: size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong  (out-of-place | in-place);
old: size count type redop      | time algbw busbw error  | time algbw busbw error   (`error` is a float deviation).
nccl-tests 2.17+ options widen it: `cputime` in place of `time` (-C 1), a `timestamp` after the in-place group
(`2025-10-28 12:34:56`, two words), and per-iteration columns in each group (`i_min i_max i_p99 i_cv%`).
Rank lines come with or without `Group` (`#   Rank  0 Pid ...` before 2.13, no Pid before 2.0), with padded host names,
one line per GPU also for a single process driving several (`-g N`). Before 2.0 the header read
`bytes N type op time algbw busbw res`, with the time in ms. One rank number on two hosts is a failed multi-node
run: every process ran a one-node test of its own (nccl-tests built without MPI=1).
`#wrong` is printed %g: a million wrong elements and more read `2.68435e+08`.

nccl-tests prints GB/s (10^9 bytes); bandwidth here is Gb/s (x8).
- `avg_busbw_gbps` is the `# Avg bus bandwidth` line as printed: the mean over EVERY size of a sweep (both
  in-place and out-of-place), None where the run was cut before it (`complete` is then False; nothing is computed
  in its place).
- `busbw_gbps` is the figure to judge: the bus bandwidth of the LARGEST size (mean of its out-of-place and in-place
  columns); small sizes of a sweep measure latency, not the link.

NCCL_DEBUG=INFO lines give the transport actually used: `transports` lists what the channel lines
(`Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0`) name: "NET/IB", "NET/Socket", "P2P", "SHM", ...
Plug-in start-up lines (`NET/Socket : Using [0]eth0`, `Using network Socket`) are NOT a transport: NCCL 2.28
prints them in runs whose data never touches the network; `network` keeps the latter for information only.
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError, parser


@dataclass
class NcclRow:
    size_bytes: int
    count: int
    type: str
    redop: str
    oop_time_us: float | None
    oop_algbw_gbps: float | None
    oop_busbw_gbps: float | None
    oop_wrong: str  # "#wrong" (a count of wrong elements) or the old "error" column (a float deviation), as printed
    ip_time_us: float | None = None
    ip_algbw_gbps: float | None = None
    ip_busbw_gbps: float | None = None
    ip_wrong: str | None = None
    root: int | None = None


@dataclass
class NcclRank:
    rank: int
    host: str
    device_name: str
    pid: int | None = None
    device: int | None = None  # the CUDA device index on its host
    bus_id: str | None = None
    group: int | None = None  # None in the old format, which printed no Group


@dataclass
class NcclTest:
    collective: str | None
    version: str | None  # nccl-tests' version
    nccl_version: str | None = None  # "2.28.9", from `NCCL version 2.28.9+cuda13.0` or nccl-tests' nccl-library=22809
    nccl_cuda: str | None = None  # "13.0" from `NCCL version ...+cuda13.0`
    ranks: list[NcclRank] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)  # the rank lines' hosts, in rank order, each once
    rows: list[NcclRow] = field(default_factory=list)
    avg_busbw_gbps: float | None = None  # the "# Avg bus bandwidth" line x8 (mean over all sizes); None if not printed
    busbw_gbps: float | None = None  # THE figure to judge: the largest size's bus bandwidth (mean of oop and ip)
    max_busbw_gbps: float | None = None
    out_of_bounds_ok: bool | None = None
    errors_found: bool = False  # any #wrong > 0 (the old float "error" column is a deviation, not a count)
    wrong_sizes: list[int] = field(default_factory=list)  # the sizes (bytes) whose rows counted wrong values
    complete: bool = False  # the "# Avg bus bandwidth" line was printed: the run was not cut
    transports: list[str] = field(default_factory=list)  # from channel lines: "NET/IB", "NET/Socket", "P2P", "SHM"
    net_gdr: bool | None = None  # NET channel lines with /GDRDMA (GPU Direct RDMA); None without NET channels
    network: str | None = None  # "Using network IB|Socket|...": the plug-in NCCL loaded, not what carried the data
    net_ib_devices: list[str] | None = None  # "NET/IB : Using [0]mlx5_0:1/RoCE ..." -> ["mlx5_0:1/RoCE"]; [] = No device
    gdr_disabled_hcas: list[str] = field(default_factory=list)  # "GPU Direct RDMA Disabled for HCA 0 'rocep1s0f1'"
    warnings: list[str] = field(default_factory=list)  # NCCL WARN messages, as printed after "NCCL WARN"
    error: str | None = None  # the first "Test NCCL failure ..." / "Test CUDA failure ..." line


RANK = re.compile(r"^#?\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?(?:Pid\s+(?P<pid>\d+)\s+)?on\s+(?P<host>\S+)\s+"
                  r"device\s+(?P<dev>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*?)\s*$")
NCCL_LINE = re.compile(r"\bNCCL (?P<level>INFO|WARN|ABORT)\b\s*(?P<msg>.*?)\s*$")
NCCL_VERSION = re.compile(r"\bNCCL version\s+(?P<v>\d+\.\d+\.\d+)(?:\S*?\+cuda(?P<cuda>[\d.]+))?")
CHANNEL = re.compile(r"\b(?:Channel|Ring)\s+\d+(?:/\d+)?\s*:\s*\d+(?:\[[^\]]*\])?\s*->\s*\d+(?:\[[^\]]*\])?\s*"
                     r"(?:\[(?:send|receive)\]\s*)?via\s+(?P<via>\S.*?)\s*$")
# A process that crashed says so through Open MPI's signal handler ("[node-1:12345] Signal: Segmentation fault (11)") or
# mpirun's summary ("mpirun noticed that process rank 1 ... exited on signal 11 (Segmentation fault)."), not through nccl-tests.
FAILURE = re.compile(r"\bTest (?:NCCL |CUDA )?failure\b.*$|\bNCCL failure\b.*$|\bTest timeout\b.*$"
                     r"|\bSignal: (?!0\b)\w[\w ]*\(\d+\)$|\b(?:mpirun|prterun) noticed that process rank \d+\b.*\bexited on signal\b.*$")
AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(?P<v>[\d.]+(?:e[-+]?\d+)?)")
OOB = re.compile(r"^#?\s*Out of bounds values\s*:\s*(?P<n>\d+)\s*(?P<word>\w+)")
TYPES = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float16", "float", "float32", "double", "float64",
         "bfloat16", "fp8_e4m3", "fp8_e5m2", "f8e4m3", "f8e5m2", "char", "int", "bf16"}
REDOPS = {"sum", "prod", "max", "min", "avg", "none", "mulsum", "premulsum"}


def _transport(via: str) -> tuple[str, bool]:
    """("NET/IB", gdr) from "NET/IB/0/GDRDMA"; ("P2P", False) from "P2P/direct pointer"; "SHM" from old wording."""
    if (m := re.match(r"NET/(?P<net>[^/]+?)(?=/|\s+comm\b|\s*$)", via)):
        return f"NET/{m['net']}", "GDRDMA" in via
    if via.startswith("direct shared memory"):
        return "SHM", False
    m = re.match(r"[A-Za-z0-9_]+", via)
    return (m[0] if m else via.split()[0]), False


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:  # "N/A" where a column does not apply
        return None


def _count(value: str | None) -> int:
    """A #wrong cell as a count: "0", "12", "2.68435e+08"; 0 for "N/A" or a fractional deviation."""
    number = _number(value or "")
    return int(number) if number is not None and number >= 1 and number == int(number) else 0


def _gbps(value: str) -> float | None:
    number = _number(value)
    return None if number is None else round(number * 8, 3)


def _version_from_code(code: str) -> str | None:
    """NCCL_VERSION_CODE: 22809 -> 2.28.9 (2.9 on: X*10000+Y*100+Z); 2708 -> 2.7.8 (before: X*1000+Y*100+Z)."""
    n = int(code)
    if n >= 20900:
        return f"{n // 10000}.{n // 100 % 100}.{n % 100}"
    if 2000 <= n < 10000:
        return f"{n // 1000}.{n // 100 % 10}.{n % 100}"
    return None


TIME_COLUMNS = ("time", "cputime", "time_ms")
OLD_COLUMNS = {"bytes": "size", "N": "count", "op": "redop", "time": "time_ms", "res": "error"}
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}")
STANDARD_GROUP = ["time", "algbw", "busbw", "#wrong"]
PER_ITER_GROUP = STANDARD_GROUP + ["i_min", "i_max", "i_p99", "i_cv%"]


def _layout(header: list[str]) -> tuple[list[str], list[str]]:
    """(prefix, group) of a column header: the columns before the first time column, and one result group's columns."""
    first = next(n for n, t in enumerate(header) if t in TIME_COLUMNS)
    rest = [t for t in header[first:] if t != "timestamp"]
    second = next((n for n, t in enumerate(rest) if n and t in TIME_COLUMNS), len(rest))
    return header[:first], rest[:second]


def _row(tokens: list[str], prefix: list[str], group: list[str] = STANDARD_GROUP) -> NcclRow | None:
    n, g = len(prefix), len(group)
    if len(tokens) >= 2 and TIMESTAMP.fullmatch(tokens[-2]) and re.fullmatch(r"\d{2}:\d{2}:\d{2}", tokens[-1]):
        tokens = tokens[:-2]  # the timestamp column: date and time
    if len(tokens) not in (n + g, n + 2 * g) or not (tokens[0].isdigit() and tokens[1].isdigit()):
        return None
    named = dict(zip(prefix, tokens))
    oop = dict(zip(group, tokens[n:n + g]))
    ip = dict(zip(group, tokens[n + g:n + 2 * g]))
    wrong = next((c for c in group if c in ("#wrong", "error", "wrong")), group[-1])
    time = next((c for c in group if c in TIME_COLUMNS), group[0])
    if _number(oop.get(time, "")) is None and _number(oop.get("busbw", "")) is None:
        return None
    root = named.get("root")

    def opt(d: dict, key: str, conv):
        return conv(d[key]) if key in d else None

    def us(value: str) -> float | None:
        number = _number(value)
        return round(number * 1000, 3) if number is not None and time == "time_ms" else number

    return NcclRow(int(tokens[0]), int(tokens[1]), named.get("type", "?"), named.get("redop", "none"),
                   us(oop.get(time, "")), _gbps(oop.get("algbw", "")), _gbps(oop.get("busbw", "")), oop.get(wrong, ""),
                   opt(ip, time, us), opt(ip, "algbw", _gbps), opt(ip, "busbw", _gbps), ip.get(wrong),
                   int(root) if root and re.fullmatch(r"-?\d+", root) else None)


def _headerless_prefix(tokens: list[str]) -> tuple[list[str], list[str]] | None:
    """Rows whose column header was cut off (tail -n): known only by their type and redop words."""
    if len(tokens) >= 10 and TIMESTAMP.fullmatch(tokens[-2]):
        tokens = tokens[:-2]
    if len(tokens) < 8 or tokens[2] not in TYPES or tokens[3] not in REDOPS:
        return None
    for group in (STANDARD_GROUP, PER_ITER_GROUP):
        g = len(group)
        if len(tokens) in (5 + 2 * g, 5 + g) and re.fullmatch(r"-?\d+", tokens[4]):
            return ["size", "count", "type", "redop", "root"], group
        if len(tokens) in (4 + 2 * g, 4 + g):
            return ["size", "count", "type", "redop"], group
    return None


@parser
def parse(text: str) -> NcclTest:
    test = NcclTest(
        collective=(m[1] if (m := re.search(r"Collective test starting:\s*(\S+)", text)) else None),
        version=(m[1] if (m := re.search(r"nccl-tests version\s+(\S+)", text)) else None),
    )
    if (m := re.search(r"nccl-library=(\d+)", text)):
        test.nccl_version = _version_from_code(m[1])
    layout: tuple[list[str], list[str]] | None = None  # (prefix, group) from the column header
    evidence = False  # anything nccl-tests or NCCL prints
    transports: dict[str, None] = {}
    gdr: list[bool] = []
    for line in text.splitlines():
        s = line.strip()
        bare = s.lstrip("#").strip()
        if (m := RANK.match(s)):
            test.ranks.append(NcclRank(int(m["rank"]), m["host"], m["name"], int(m["pid"]) if m["pid"] else None,
                                       int(m["dev"]), m["bus"], int(m["group"]) if m["group"] else None))
            continue
        tokens = bare.split()
        if {"bytes", "N", "busbw"} <= set(tokens):  # before nccl-tests 2.0: "bytes N type op time algbw busbw res", time in ms
            tokens = [OLD_COLUMNS.get(t, t) for t in tokens]
        if "size" in tokens and "count" in tokens and "busbw" in tokens and any(t in TIME_COLUMNS for t in tokens):
            layout = _layout(tokens)
            evidence = True
            continue
        if (m := AVG.match(s)):
            test.avg_busbw_gbps = round(float(m["v"]) * 8, 3)
            test.complete = True
            continue
        if (m := OOB.match(s)):
            test.out_of_bounds_ok = m["word"] == "OK" and m["n"] == "0"
            evidence = True
            continue
        if (m := NCCL_VERSION.search(s)):
            test.nccl_version, test.nccl_cuda = m["v"], m["cuda"]
            evidence = True
        if (m := FAILURE.search(s)) and test.error is None:
            test.error = m[0].strip()
            evidence = True
        if (m := NCCL_LINE.search(s)):
            evidence = True
            msg = m["msg"]
            if m["level"] != "INFO":
                test.warnings.append(msg)
            elif (c := CHANNEL.search(msg)):
                name, with_gdr = _transport(c["via"])
                transports.setdefault(name)
                if name.startswith("NET/"):
                    gdr.append(with_gdr)
            elif (u := re.match(r"Using network\s+(\S.*)$", msg)):
                test.network = u[1]
            elif re.match(r"NET/IB\w*\s*:\s*No device found", msg):
                test.net_ib_devices = []
            elif re.match(r"NET/IB\w*\s*:\s*Using\b", msg):
                test.net_ib_devices = re.findall(r"\[\d+\](\S+?:\d+/\w+)", msg)
            elif (g := re.search(r"GPU Direct RDMA Disabled for HCA \d+ '([^']+)'", msg)):
                test.gdr_disabled_hcas.append(g[1])
            continue
        if tokens and tokens[0].isdigit():
            row_layout = layout if layout is not None else _headerless_prefix(tokens)
            if row_layout and (row := _row(tokens, *row_layout)):
                test.rows.append(row)
                # "#wrong" counts wrong elements (printed %g: 2.68435e+08 from a million on); the old "error" column is
                # a float deviation (5e-07), not a count
                if "error" not in row_layout[1] and any(_count(w) for w in (row.oop_wrong, row.ip_wrong)):
                    test.errors_found = True
                    test.wrong_sizes.append(row.size_bytes)
        elif s.startswith("#") and re.match(r"(?:nThread|Using devices|nccl-tests version|Collective test)", bare):
            evidence = True
    test.transports = list(transports)
    test.net_gdr = any(gdr) if gdr else None
    test.hosts = list(dict.fromkeys(r.host for r in sorted(test.ranks, key=lambda r: r.rank)))
    # One rank number on two hosts: every process ran a test of its own (nccl-tests built without MPI=1, each mpirun
    # process rank 0 of a one-node communicator). Its rows measure each node alone, never the link between them.
    if test.error is None and (split := [k for k in dict.fromkeys(r.rank for r in test.ranks)
                                         if len({r.host for r in test.ranks if r.rank == k}) > 1]):
        alone = sorted({r.host for r in test.ranks if r.rank == split[0]})
        test.error = (f"every process ran its own test: rank {split[0]} printed on {', '.join(alone)} "
                      "(nccl-tests built without MPI=1?)")
    from collections import Counter

    runs_pasted = max(1, len(re.findall(r"^#\s*Using devices\s*$", text, re.M)))
    if max(Counter((r.rank, r.host, r.pid, r.device) for r in test.ranks).values(), default=0) > runs_pasted:
        raise ParseError("nccl_tests", "each rank line once (per run)", text)  # a paste that repeated one
    test.ranks.sort(key=lambda r: r.rank)  # printed in rank order; a paste that swapped two says the same
    if test.ranks and test.error is None and sorted({r.rank for r in test.ranks}) != list(range(len({r.rank for r in test.ranks}))):
        # ranks are numbered from 0 without a gap: a missing number is a lost rank line (and maybe a node fewer)
        raise ParseError("nccl_tests", "rank lines numbered 0..N-1 without a gap", text)
    if not (test.rows or test.ranks or evidence or test.complete):
        raise ParseError("nccl_tests", "nccl-tests output (a '# size count type ...' result table) or NCCL_DEBUG lines", text)
    if test.rows:
        def bus(r: NcclRow) -> list[float]:
            return [b for b in (r.oop_busbw_gbps, r.ip_busbw_gbps) if b is not None]

        # A sweep prints each size once, growing; a paste of several runs repeats the same sweep. Rows out of that order
        # are repeated or misplaced. And one run's printed average is the mean of every row's bus bandwidths (in-place
        # and out-of-place): rows that do not give it back are not all the run's rows.
        sizes = [r.size_bytes for r in test.rows]
        runs: list[list[int]] = []
        for n, size in enumerate(sizes):
            if n == 0 or size <= sizes[n - 1]:
                runs.append([])
            runs[-1].append(size)
        if test.error is None and any(run != runs[0] for run in runs):
            raise ParseError("nccl_tests", "result rows with each size once, in growing order (or the same sweep again)",
                             text)
        every = [b for r in test.rows for b in bus(r)]
        if test.error is None and len(runs) == 1 and test.avg_busbw_gbps is not None and every and len(every) == 2 * len(test.rows) and \
                abs(sum(every) / len(every) - test.avg_busbw_gbps) > max(0.2, 0.01 * test.avg_busbw_gbps):
            raise ParseError("nccl_tests", f"rows whose bus bandwidths average to the printed {test.avg_busbw_gbps / 8:g} "
                                           f"GB/s (they give {sum(every) / len(every) / 8:.3f}: a row lost or repeated)", text)
        largest = max(sizes)
        judged = [b for r in test.rows if r.size_bytes == largest for b in bus(r)]
        test.busbw_gbps = round(sum(judged) / len(judged), 3) if judged else None
        test.max_busbw_gbps = max((b for r in test.rows for b in bus(r)), default=None)
    return test
