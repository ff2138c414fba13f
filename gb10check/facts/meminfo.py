"""/proc/meminfo and `free` (any unit flag, any procps version). Memory in GiB.

/proc/meminfo: every `Name: N kB` line becomes `name_gib`; lines without a unit (HugePages_Total,
HugePages_Free ...) are counts and stay counts. A one-node machine's /sys/devices/system/node/node0/meminfo
(`Node 0 MemTotal: N kB`, no MemAvailable) reads the same; several nodes' files together are refused.
Kernels before 3.14 print no MemAvailable: then `mem_available_gib` is None (the kernel did not say) and `mem_available_estimate_gib` is procps'
estimate for such kernels (MemFree + Active(file) + Inactive(file) + SReclaimable, low watermark
taken as 0, so an upper bound), when those lines are there.

free: the unit of a value comes from its suffix (`3.6G`, `143M`, `0B`, `15Gi`, `1,5Gi`: procps
before 3.3.12 printed G/M without the i, in the same 1024 steps; with `--si` they are powers of
1000), else from the command line's flag (-b -k -m -g, --tebi ..., --kilo ... with --si; -t is --total),
else from magnitude by one documented rule (see FREE_MAGNITUDE_RULE); the facts say which
(`unit_from`). Old procps (before 3.3.10) prints `buffers`/`cached` columns and a
`-/+ buffers/cache:` line and no `available`: then `mem_available_gib` is that line's free column,
and `mem_available_estimated` says so.
"""

import re

from ._text import ParseError, kib_to_gib, parser


def snake(name: str) -> str:
    """MemTotal -> mem_total, Active(file) -> active_file, DirectMap2M -> direct_map_2m, Committed_AS -> committed_as."""
    name = name.replace("(", "_").replace(")", "")
    name = re.sub(r"(?<=[a-z])(?=\d)", "_", name)  # DirectMap2M, DirectMap4k
    name = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name)
    name = re.sub(r"(?<=\d)(?=[A-Z])(?![A-Z]*[a-z])", "", name)
    return re.sub(r"_+", "_", name).lower()


# `grep -H` (or grep over several files) puts the file's name first: "/proc/meminfo:MemTotal: ...".
MEMINFO_LINE = re.compile(r"^\s*(?:\S*meminfo:)?(?:Node (?P<node>\d+) )?([A-Za-z][A-Za-z0-9_()]*):\s+(\d+)(?:\s+(kB))?\s*$")


MEMINFO_NAMES = {"MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapCached", "SwapTotal", "SwapFree", "Active",
                 "Inactive", "Active(anon)", "Inactive(anon)", "Active(file)", "Inactive(file)", "Dirty", "AnonPages",
                 "Shmem", "Slab", "SReclaimable", "SUnreclaim", "CommitLimit", "Committed_AS", "Hugepagesize", "Hugetlb"}


# /proc/meminfo lines added after MemAvailable (3.14): ShmemHugePages 4.8, Percpu 4.16, KReclaimable 4.20, FileHugePages 5.4.
AFTER_3_14 = {"ShmemHugePages", "ShmemPmdMapped", "Percpu", "KReclaimable", "FileHugePages", "FilePmdMapped"}


@parser
def parse_meminfo(text: str) -> dict[str, float | None]:
    """{'mem_total_gib': 121.69, 'mem_available_gib': ..., 'huge_pages_total': 0, 'hugepagesize_kb': 2048, ...}"""
    facts: dict[str, float | None] = {}
    kb: dict[str, int] = {}
    nodes = set()
    for line in text.splitlines():
        m = MEMINFO_LINE.match(line)
        if not m:
            continue
        nodes.add(m["node"])
        key = snake(m[2])
        if m[4]:
            if f"{key}_gib" in facts:
                continue  # a second dump in the same text: the first one counts
            kb[m[2]] = int(m[3])
            facts[f"{key}_gib"] = kib_to_gib(int(m[3]))
        elif key not in facts:
            facts[key] = int(m[3])
    if len(nodes) > 1:  # several NUMA nodes' files (/sys/devices/system/node/nodeN/meminfo): no one node is the machine
        raise ParseError("meminfo", "one /proc/meminfo, or the meminfo of a machine's only NUMA node", text)
    # `grep MemAvailable /proc/meminfo`, `head -5`: the lines that are there count, the others are absent (no key);
    # a /proc/PID/status (VmRSS: N kB) has none of meminfo's own names.
    if "mem_total_gib" not in facts and not any(name in MEMINFO_NAMES for name in kb):
        raise ParseError("meminfo", "'MemTotal:  N kB' lines (/proc/meminfo)", text)
    if "Hugepagesize" in kb:
        facts["hugepagesize_kb"] = kb["Hugepagesize"]  # 2048 kB is 0.002 GiB: keep the exact size too
        for count in ("huge_pages_total", "huge_pages_free"):
            if isinstance(facts.get(count), int):
                facts[f"{count}_gib"] = kib_to_gib(facts[count] * kb["Hugepagesize"])
    if "MemAvailable" not in kb and (newer := sorted(AFTER_3_14 & set(kb))):
        # the kernel that printed these prints MemAvailable too: a line lost from the paste, not an old kernel
        raise ParseError("meminfo", f"MemAvailable, which a kernel printing {newer[0]} prints (kernel 3.14+)", text)
    if "MemAvailable" not in kb:
        facts["mem_available_gib"] = None  # not printed (kernel < 3.14, or left out): not MemFree
        parts = ("MemFree", "Active(file)", "Inactive(file)", "SReclaimable")
        facts["mem_available_estimate_gib"] = kib_to_gib(sum(kb[p] for p in parts)) if all(p in kb for p in parts) else None
    return facts


# ---- free ------------------------------------------------------------------------

KIB = {"B": 1 / 1024, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3, "P": 1024**4}
SI_KIB = {"B": 1 / 1024, "K": 1000 / 1024, "M": 1000**2 / 1024, "G": 1000**3 / 1024, "T": 1000**4 / 1024, "P": 1000**5 / 1024}
FLAGS = {"-b": "B", "--bytes": "B", "-k": "K", "--kibi": "K", "--kilo": "k", "-m": "M", "--mebi": "M", "--mega": "m",
         "-g": "G", "--gibi": "G", "--giga": "g", "--tebi": "T", "--tera": "t", "--peta": "p", "--pebi": "P"}
UNIT_NAME = {"B": "B", "K": "KiB", "M": "MiB", "G": "GiB", "T": "TiB", "P": "PiB"}
FREE_MAGNITUDE_RULE = ("bare numbers and no command line: the unit is the first of KiB, MiB, GiB, bytes for which Mem total "
                       "lies between 1 GiB and 16 TiB (KiB is free's default; a machine under 1 GiB needs its command line)")
# Column names of procps free, English; a translated header is mapped by position (see _columns).
KNOWN_COLUMNS = {"total", "used", "free", "shared", "buff/cache", "buffers", "cache", "cached", "available"}
NEW_COLUMNS = ["total", "used", "free", "shared", "buff/cache", "available"]
WIDE_COLUMNS = ["total", "used", "free", "shared", "buffers", "cache", "available"]
OLD_COLUMNS = ["total", "used", "free", "shared", "buffers", "cached"]
VALUE = re.compile(r"^(\d+(?:[.,]\d+)?)([KMGTPB]?)(i?)B?$")
# The label's colon is a full-width one in Chinese (内存：), and may follow a space in other locales.
ROW = re.compile(r"^\s*(?P<label>-/\+ [^:]+|[^\s:：]+) ?[:：]\s*(?P<values>\d.*)$")


def _flag_unit(command: str | None, unit_flag: str | None) -> str | None:
    # Only free's own arguments count: `ssh -t host free -m`, `docker exec -it c free -g` have flags before it.
    args = re.search(r"(?:^|[\s/;|&(])free((?:\s+[^\s|;&)]+)*)", command or "")
    flags = [unit_flag] if unit_flag else re.findall(r"(?:^|\s)(--[a-z]+|-[a-z]+)", args[1] if args else "")
    # Short options cluster: `free -mt`, `free -wh` are `-m -t`, `-w -h`.
    flags = [f for flag in flags for f in ([flag] if flag.startswith("--") else ["-" + c for c in flag[1:]])]
    si = "--si" in flags
    if "-h" in flags or "--human" in flags:
        return None  # human-readable: every value carries its suffix
    for flag in flags:
        unit = FLAGS.get(flag)
        if unit:
            return unit.upper() + ("si" if unit.islower() or si else "")
    if args and not unit_flag:
        return "K"  # `free` with no unit flag prints KiB
    return None


def _columns(header: list[str] | None, width: int, old: bool) -> list[str]:
    if header and all(h.lower() in KNOWN_COLUMNS for h in header):
        return [h.lower() for h in header]
    # A translated header (gesamt benutzt frei ...), or none: procps' column order.
    if old:
        return OLD_COLUMNS[:width]
    return (WIDE_COLUMNS if width >= 7 else NEW_COLUMNS)[:width]


@parser
def parse_free(text: str, unit_flag: str | None = None, command: str | None = None) -> dict:
    """`free [-b|-k|-m|-g|-h|-w|-t|-l]`: {'mem_total_gib': .., 'mem_available_gib': .., 'swap_total_gib': .., 'unit_from': ..}."""
    lines = text.splitlines()
    rows = [(m["label"], m["values"].split()) for line in lines if (m := ROW.match(line))]
    if not rows:
        raise ParseError("free", "a 'total used free ...' header and a 'Mem:' line (output of `free`)", text)
    old = any(label.startswith("-/+") for label, _ in rows)
    # The header is the last line without digits above the first row: prose pasted before it is no header.
    first_row = next(n for n, line in enumerate(lines) if ROW.match(line))
    header = next((line.split() for line in reversed(lines[:first_row]) if len(line.split()) >= 3
                   and not re.search(r"\d", line)), None)
    mem_values = next((v for label, v in rows if label == "Mem"), rows[0][1])
    columns = _columns(header, len(mem_values), old)
    if header and len(header) < len(mem_values) and not all(h.lower() in KNOWN_COLUMNS for h in header):
        raise ParseError("free", "a header with one name per column of the 'Mem:' line", text)
    if header and all(h.lower() in KNOWN_COLUMNS for h in header) and len(mem_values) < len(header):
        # a 'Mem:' line with fewer figures than its header names is cut: its available memory is not 'unknown'
        raise ParseError("free", f"{len(header)} figures on the 'Mem:' line, one per header column", text)
    if not all(VALUE.match(v) for v in mem_values):
        raise ParseError("free", "numbers (with or without a K/M/G/Ki/Mi/Gi suffix) on the 'Mem:' line", text)

    si = "--si" in (command or "") or unit_flag == "--si"
    suffixed = any(VALUE.match(v)[2] for _, values in rows for v in values if VALUE.match(v))
    flag = _flag_unit(command, unit_flag)
    facts: dict = {}
    if suffixed:
        facts["unit_from"], bare_scale = "suffix", KIB["K"]
    elif flag:
        facts["unit_from"] = "command"
        bare_scale = (SI_KIB if flag.endswith("si") else KIB)[flag[0]]
    else:
        total = float(mem_values[0].replace(",", "."))
        unit = next((u for u in ("K", "M", "G", "B") if KIB["G"] <= total * KIB[u] < 16 * KIB["T"]), None)
        if unit is None:
            raise ParseError("free", "a unit for bare numbers: a -b/-k/-m/-g command line or values that tell it ("
                             + FREE_MAGNITUDE_RULE + ")", text)
        facts["unit_from"], bare_scale = "magnitude", KIB[unit]
        facts["unit_inferred"] = UNIT_NAME[unit]

    def kib(raw: str) -> float | None:
        v = VALUE.match(raw)
        if not v:
            return None
        number = float(v[1].replace(",", "."))
        if not v[2]:
            return number * bare_scale
        return number * ((SI_KIB if si and not v[3] else KIB)[v[2]])

    for label, values in rows:
        if label.startswith("-/+"):
            prefix, cols = "buffers_cache", ["used", "free"]
        else:
            prefix = {"Mem": "mem", "Swap": "swap", "Total": "total", "Low": "low", "High": "high", "Comm": "comm"}.get(label)
            if prefix is None:  # a translated label (Speicher:, Mémoire:): the first row is Mem, the next Swap
                prefix = "mem" if values is mem_values else ("swap" if "swap_total_gib" not in facts else None)
            if prefix is None:
                continue
            cols = columns if prefix == "mem" else ["total", "used", "free"] if prefix in ("swap", "total", "low", "high") \
                else ["limit", "used", "available"]
        for name, raw in zip(cols, values):
            value = kib(raw)
            if value is not None:
                facts[f"{prefix}_{name.replace('/', '_')}_gib"] = kib_to_gib(value)
    if "mem_total_gib" not in facts:
        raise ParseError("free", "a 'total used free ...' header and a 'Mem:' line (output of `free`)", text)
    if "mem_buff_cache_gib" not in facts and "mem_buffers_gib" in facts:
        cache = facts.get("mem_cache_gib", facts.get("mem_cached_gib"))
        if cache is not None:
            facts["mem_buff_cache_gib"] = round(facts["mem_buffers_gib"] + cache, 3)
    facts["mem_available_estimated"] = "mem_available_gib" not in facts and "buffers_cache_free_gib" in facts
    if "mem_available_gib" not in facts:
        facts["mem_available_gib"] = facts.get("buffers_cache_free_gib")  # old procps: the -/+ line's free, else None
    return facts
