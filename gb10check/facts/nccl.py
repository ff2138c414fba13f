"""nccl-tests output (all_reduce_perf, all_gather_perf, ...), old and new column sets.

New columns: size count type redop root time algbw busbw #wrong (x2, out-of-place and in-place).
Old columns: size count type redop time algbw busbw error (x2).
nccl-tests prints GB/s (10^9 bytes); bandwidth here is Gb/s (x8).
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
    oop_time_us: float
    oop_algbw_gbps: float
    oop_busbw_gbps: float
    oop_wrong: str
    ip_time_us: float
    ip_algbw_gbps: float
    ip_busbw_gbps: float
    ip_wrong: str


@dataclass
class NcclRank:
    rank: int
    host: str
    device_name: str


@dataclass
class NcclTest:
    collective: str | None
    version: str | None
    ranks: list[NcclRank] = field(default_factory=list)
    rows: list[NcclRow] = field(default_factory=list)
    avg_busbw_gbps: float | None = None
    max_busbw_gbps: float | None = None
    out_of_bounds_ok: bool | None = None
    errors_found: bool = False  # any #wrong > 0


RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*?)\s*$")


@parser
def parse(text: str) -> NcclTest:
    test = NcclTest(
        collective=(m[1] if (m := re.search(r"Collective test starting:\s*(\S+)", text)) else None),
        version=(m[1] if (m := re.search(r"nccl-tests version\s+(\S+)", text)) else None),
    )
    has_root = None
    for line in text.splitlines():
        s = line.strip()
        if (m := RANK.match(s)):
            test.ranks.append(NcclRank(int(m[1]), m[2], m[3]))
        elif s.startswith("#") and "size" in s and "count" in s:
            has_root = " root " in f" {s} "
        elif (m := re.search(r"Avg bus bandwidth\s*:\s*([\d.]+)", s)):
            test.avg_busbw_gbps = round(float(m[1]) * 8, 3)
        elif (m := re.search(r"Out of bounds values\s*:\s*(\d+)\s*(\w+)", s)):
            test.out_of_bounds_ok = m[2] == "OK"
        elif has_root is not None and re.match(r"^\d", s):
            t = s.split()
            if has_root:
                t = t[:4] + t[5:]  # drop root
            if len(t) < 12:
                continue
            try:
                row = NcclRow(int(t[0]), int(t[1]), t[2], t[3], float(t[4]), float(t[5]) * 8, float(t[6]) * 8, t[7],
                              float(t[8]), float(t[9]) * 8, float(t[10]) * 8, t[11])
            except ValueError:
                continue
            test.rows.append(row)
    if not test.rows and test.avg_busbw_gbps is None:
        raise ParseError("nccl_tests", "an nccl-tests result table with a '# size count type ...' header", text)
    if test.rows:
        test.max_busbw_gbps = round(max(max(r.oop_busbw_gbps, r.ip_busbw_gbps) for r in test.rows), 3)
        # "#wrong" counts wrong elements; the old "error" column is a float tolerance, e.g. 5e-07.
        test.errors_found = any(r.oop_wrong.isdigit() and int(r.oop_wrong) > 0 or r.ip_wrong.isdigit() and int(r.ip_wrong) > 0
                                for r in test.rows)
    return test
