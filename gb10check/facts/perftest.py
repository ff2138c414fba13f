"""perftest output: ib_write_bw, ib_read_bw, ib_send_bw (bandwidth) and ib_*_lat (latency).

Bandwidth is normalised to Gb/s. perftest's MB/sec is 2^20 bytes per second.
Failures ("Couldn't connect to HOST:PORT", "Unable to init the socket connection", ...) are
facts too: `error` holds the first failure line.
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError, parser
from .rdma import gid_ipv4

MIB_PER_S_TO_GBPS = 1048576 * 8 / 1e9

ERRORS = re.compile(
    r"(Couldn't connect to \S+|Unable to init the socket connection|Unable to open file descriptor[^\n]*"
    r"|Failed to [^\n]+|Couldn't [^\n]+|Unable to [^\n]+|ERROR[^\n]*|Conflicting CPU frequency[^\n]*)"
)
HEADER_FIELD = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z .*#_-]*?)\s*:\s*(?P<value>\S.*?)\s*$")


@dataclass
class BwRow:
    bytes: int
    iterations: int
    bw_peak_gbps: float
    bw_average_gbps: float
    msg_rate_mpps: float
    cpu_util_pct: float | None = None


@dataclass
class LatRow:
    bytes: int
    iterations: int
    t_min_us: float
    t_max_us: float
    t_typical_us: float
    t_avg_us: float | None
    t_stdev_us: float | None
    p99_us: float | None
    p99_9_us: float | None


@dataclass
class Perftest:
    test: str | None  # "RDMA_Write BW Test"
    device: str | None
    qps: int | None
    link_type: str | None
    gid_index: int | None
    mtu_bytes: int | None
    connection: str | None  # "Ethernet" or "rdma_cm"
    local_ipv4: str | None
    remote_ipv4: str | None
    warnings: list[str] = field(default_factory=list)
    bw_rows: list[BwRow] = field(default_factory=list)
    lat_rows: list[LatRow] = field(default_factory=list)
    bw_average_gbps: float | None = None  # mean over the result rows
    bw_peak_gbps: float | None = None
    error: str | None = None


def _header(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        # Two "key : value" pairs can share a line: " Dual-port : OFF    Device : rocep1s0f0"
        for chunk in re.split(r"\s{3,}(?=[A-Za-z][A-Za-z .*#_-]*\s*:)", line.strip()):
            m = HEADER_FIELD.match(chunk)
            if m:
                fields.setdefault(m["key"].strip(), m["value"])
    return fields


@parser
def parse(text: str) -> Perftest:
    h = _header(text)
    gids = re.findall(r"^\s*GID:\s*(\S+)", text, re.M)
    result = Perftest(
        test=(m[1].strip() if (m := re.search(r"^\s*(\S.*(?:BW|Latency) Test)\s*$", text, re.M)) else None),
        device=h.get("Device"),
        qps=int(h["Number of qps"]) if h.get("Number of qps", "").isdigit() else None,
        link_type=h.get("Link type"),
        gid_index=int(h["GID index"]) if h.get("GID index", "").isdigit() else None,
        mtu_bytes=int(m[1]) if (m := re.match(r"(\d+)", h.get("Mtu", ""))) else None,
        connection=h.get("Data ex. method"),
        local_ipv4=gid_ipv4(gids[0]) if gids else None,
        remote_ipv4=gid_ipv4(gids[1]) if len(gids) > 1 else None,
        warnings=[w.strip() for w in re.findall(r"^\s*WARNING:\s*(.*)$", text, re.M)],
    )
    columns = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#bytes"):
            columns = s
            continue
        if columns is None or not re.match(r"^\d", s):
            continue
        values = s.split()
        try:
            nums = [float(v) for v in values]
        except ValueError:
            continue
        if "BW" in columns and len(nums) >= 5:
            scale = 1.0 if "Gb/sec" in columns else MIB_PER_S_TO_GBPS
            result.bw_rows.append(BwRow(int(nums[0]), int(nums[1]), round(nums[2] * scale, 3), round(nums[3] * scale, 3),
                                        nums[4], nums[5] if len(nums) > 5 and "CPU_Util" in columns else None))
        elif "t_min" in columns and len(nums) >= 5:
            pad = nums + [None] * (9 - len(nums))
            result.lat_rows.append(LatRow(int(nums[0]), int(nums[1]), *pad[2:9]))
    if result.bw_rows:
        result.bw_average_gbps = round(sum(r.bw_average_gbps for r in result.bw_rows) / len(result.bw_rows), 3)
        result.bw_peak_gbps = max(r.bw_peak_gbps for r in result.bw_rows)
    err = ERRORS.search(text)
    if err and not result.bw_rows and not result.lat_rows:
        result.error = err[1].strip()
    if not (result.bw_rows or result.lat_rows or result.error):
        if result.test:
            result.error = "no result rows (the run was cut short or the peer never connected)"
        else:
            raise ParseError("perftest", "perftest output with a '#bytes' result table, or a perftest error line", text)
    return result
