"""nvidia-smi (default table and --query-gpu CSV), /proc/driver/nvidia/version, NVML mismatch.

The NVML "Driver/library version mismatch" text is recognised wherever nvidia-smi output is
expected: it means the loaded kernel module and the installed user-mode library differ. It comes
as nvidia-smi's own two lines, through a container hook (`nvidia-container-cli: initialization
error: nvml error: driver/library version mismatch`, inside docker's escaped error text), from
pynvml (`NVML/RM version mismatch`), or as the kernel's `NVRM: API mismatch` line.
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError, parser, to_float

MISMATCH = re.compile(r"driver/library version mismatch|NVML/RM version mismatch|LibRmVersionMismatch|NVRM: API mismatch",
                      re.I)


@dataclass
class NvmlMismatch:
    nvml_mismatch: bool
    library_version: str | None  # the user-mode (NVML) library's version, when the text says it
    kernel_module_version: str | None = None  # only the kernel's `NVRM: API mismatch` line says it


def nvml_mismatch(text: str) -> NvmlMismatch | None:
    if not MISMATCH.search(text):
        return None
    lib = re.search(r"NVML library version:\s*(\d[\w.-]*\w)", text)
    # The kernel's lines each carry dmesg's / the journal's prefix ("[ 15.48] NVRM: this kernel module ..."); the
    # client's name may come before its version.
    api = re.search(r"NVRM: API mismatch: the client\b[^\n]*?\n?[^\n]*?has the version (\d[\w.-]*\w),? but[^\n]*\n?[^\n]*?"
                    r"this kernel module has[^\n]*\n?[^\n]*?the version (\d[\w.-]*\w)", text)
    return NvmlMismatch(True, lib[1] if lib else (api[1] if api else None), api[2] if api else None)


@parser
def parse_nvml_mismatch(text: str) -> NvmlMismatch:
    found = nvml_mismatch(text)
    if not found:
        raise ParseError("nvml_mismatch", "'Failed to initialize NVML: Driver/library version mismatch' (or the same error "
                                          "from nvidia-container-cli / pynvml)", text)
    return found


# ---- default table -------------------------------------------------------------


@dataclass
class SmiGpu:
    index: int
    name: str
    persistence_mode: str  # On | Off (Linux); WDDM | TCC (Windows driver model)
    bus_id: str  # as printed: "0000000F:01:00.0" (GB10), "00000000:18:00.0", "0000:03:00.0" (old tables)
    memory_usage: str  # "Not Supported" on GB10 (unified memory); else "9MiB / 4095MiB"
    display_active: str | None = None  # Disp.A: On | Off | N/A
    ecc: str | None = None  # Volatile Uncorr. ECC: "0", "N/A", "Off"
    fan: str | None = None  # "30%", "N/A"
    temperature_c: float | None = None
    perf: str | None = None  # P0..P12, N/A
    power_draw_w: float | None = None
    power_cap_w: float | None = None
    memory_used_gib: float | None = None  # None when the table prints no numbers (GB10: Not Supported)
    memory_total_gib: float | None = None
    gpu_util_pct: float | None = None
    compute_mode: str | None = None
    mig_mode: str | None = None  # only tables with the third `MIG M.` row


@dataclass
class SmiProcess:
    gpu: int
    pid: int
    type: str  # C | G | C+G | M | M+C; "" in old tables without a Type column
    name: str
    used_gib: float | None  # None for N/A


@dataclass
class ForwardCompat:
    """A container's `CUDA Forward Compatibility mode ENABLED` banner: the table's CUDA Version is the compat one."""
    cuda_version: str | None
    compat_driver_version: str | None  # the compat user-mode driver in the image (595.58.03)
    kernel_driver_version: str | None  # the host's kernel driver (580.159.03)


@dataclass
class NvidiaSmi:
    smi_version: str
    driver_version: str | None  # the kernel driver's, also inside a forward-compat container; None: N/A (Jetson JetPack 6)
    cuda_version: str | None  # None in old tables (no CUDA Version) and for N/A
    gpus: list[SmiGpu] = field(default_factory=list)
    processes: list[SmiProcess] = field(default_factory=list)
    processes_listed: bool = False  # False: no Processes section (trimmed, truncated, -q ...), or it says Not Supported
    truncated: bool = False  # the GPU table stops before its closing line; `gpus` holds the complete GPU rows
    forward_compat: ForwardCompat | None = None
    # Lines about GPUs nvidia-smi could not read, printed before the table of the others (or instead of it):
    # "Unable to determine the device handle for GPU0000:0F:00.0: Unknown Error", "... GPU is lost ...".
    errors: list[str] = field(default_factory=list)


# R610 and later print `KMD Version:` (the kernel-mode driver) and `CUDA UMD Version:` in place of `Driver Version:` and
# `CUDA Version:`; the values mean the same.
HEADER = re.compile(r"NVIDIA-SMI\s+(?:-\s+)?(?P<smi>\d[\w.-]*)\s+(?:\|\s*)?(?:Driver|KMD) Version:\s+(?P<driver>\d[\w.-]*|N/A)"
                    r"(?:\s+(?:\|\s*)?CUDA (?:UMD )?Version:\s+(?P<cuda>[\w.]+))?")
SEPARATOR = re.compile(r"^\s*\+[-=+]+\+\s*$")
RULE_ROW = re.compile(r"^\s*\|[=|+]+\|\s*$")
# Jetson's integrated GPU has no PCI address: `N/A              N/A`.
BUS_ID = re.compile(r"^([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]|N/A)(?:\s+(\S+))?$")
PERSISTENCE = r"On|Off|WDDM|TCC|N/A"
GPU_CELL = re.compile(rf"^(\d+)\s+(.+?)\s+({PERSISTENCE})$")
# Drivers 304-310 print no Persistence-M in the name cell (the header says `GPU  Name` alone).
GPU_CELL_NO_PM = re.compile(r"^(\d+)\s+(.+?)()$")
# Drivers before 331 print MB (the same 1024 steps as MiB); 304-310 put the memory utilization first: "1%   69MB / 5375MB".
MIB = re.compile(r"^(?:\d+%\s+)?(\d+)\s*Mi?B\s*/\s*(\d+)\s*Mi?B$")
PROC = re.compile(r"^(\d+|N/A)\s+(?:(\S+)\s+(\S+)\s+)?(\d+)\s+(?:(C\+G|M\+C|C|G|M)\s+)?(.+?)\s+(\d+\s*Mi?B|N/A)$")
PROC_HEADER = re.compile(r"^(?:GPU\s+(?:GI\s+CI\s+)?PID\b|ID\s+ID\b|GPU\s+PID\s+Type|GPU Memory\s*$|Usage\s*$|Processes:)")
GPU_ERROR = re.compile(r"Unable to determine the device handle for GPU|GPU is lost", re.I)
# What nvidia-smi prints in place of its output when it cannot read a GPU, or any (one line each; in place of the
# CSV rows of a query, and before or instead of the table).
SMI_FAILURE = re.compile(r"^(?:NVIDIA-SMI has failed\b|No devices were found|Failed to initialize NVML\b|Unable to determine the "
                         r"device handle for GPU|NVIDIA-SMI couldn't find libnvidia-ml|Failed to properly shut down NVML\b)", re.I)
# A CSV cell in place of a value when the GPU itself failed (not [N/A] / [Not Supported]: a field the GPU lacks).
GPU_STATE_ERROR = re.compile(r"^\[(?:GPU is lost|GPU requires reset|Unknown Error|Error)\]$", re.I)


def _cells(line: str) -> list[str] | None:
    """The cells of a `| a | b | c |` row, or None for any other line."""
    s = line.strip()
    if not (s.startswith("|") and s.endswith("|")) or len(s) < 2:
        return None
    return [c.strip() for c in s[1:-1].split("|")]


def _watts(text: str) -> float | None:
    return to_float(text.removesuffix("W").strip()) if text else None


def _gpu(rows: list[list[str]], gpu_cell: re.Pattern = GPU_CELL) -> SmiGpu | None:
    """One GPU from the rows of its block (2 rows in old tables, 3 with `MIG M.`); None if the first row is not a GPU."""
    if len(rows[0]) < 2 or not (g := gpu_cell.match(rows[0][0])) or not (b := BUS_ID.match(rows[0][1])):
        return None
    gpu = SmiGpu(int(g[1]), g[2].strip(), g[3] or "N/A", b[1], "", display_active=b[2],
                 ecc=rows[0][2] if len(rows[0]) > 2 and rows[0][2] else None)
    if len(rows) > 1 and len(rows[1]) >= 2:
        fan_temp_perf_power, memory = rows[1][0], rows[1][1]
        parts = fan_temp_perf_power.split()
        if len(parts) >= 3:
            gpu.fan = parts[0]
            gpu.temperature_c = to_float(parts[1].removesuffix("C")) if parts[1] != "N/A" else None
            gpu.perf = parts[2]
        if (p := re.search(r"(\S+)\s*/\s*(\S+)\s*$", fan_temp_perf_power)):
            gpu.power_draw_w, gpu.power_cap_w = _watts(p[1]), _watts(p[2])
        gpu.memory_usage = re.sub(r"\s+", " ", memory)
        if (m := MIB.match(memory)):
            gpu.memory_used_gib, gpu.memory_total_gib = round(int(m[1]) / 1024, 3), round(int(m[2]) / 1024, 3)
        if len(rows[1]) > 2:
            util = rows[1][2].split()
            if util:
                gpu.gpu_util_pct = to_float(util[0].removesuffix("%"))
                gpu.compute_mode = " ".join(util[1:]) or None
    if len(rows) > 2 and len(rows[2]) > 2 and rows[2][2]:
        gpu.mig_mode = rows[2][2]
    return gpu


def _forward_compat(text: str) -> ForwardCompat | None:
    if not re.search(r"CUDA Forward Compatibility mode ENABLED", text, re.I):
        return None
    m = re.search(r"Using CUDA ([\d.]+) driver version (\d[\w.]*\w) with kernel driver version (\d[\w.]*\w)", text)
    return ForwardCompat(m[1], m[2], m[3]) if m else ForwardCompat(None, None, None)


def _unwrap(text: str) -> str:
    """Table rows wrapped by a narrow terminal, `fold` or an email (the table is 89 columns) joined back.

    A wrapped row is a `|`/`+` line that does not end with `|`/`+`, or the tail of one: a line ending with `|`/`+` that
    does not start with one. A hard wrap cuts at a fixed column W (the longest line), mid-word, so a piece W long joins
    as is; a shorter piece lost its trailing spaces to the wrap (or to the paste), so it joins with a space."""
    lines = text.splitlines()
    width = max((len(line) for line in lines), default=0)
    out: list[str] = []
    for line in lines:
        s = line.strip()
        prev = out[-1].strip() if out else ""
        # A wrap right after a `|` leaves a whole-looking line; the tail after it starts with the row's own spaces (rows
        # themselves start at the margin).
        cut_at_bar = line[:1] == " " and s[:1] == "|"
        if s and prev[:1] in ("|", "+") and (prev[-1:] not in ("|", "+") or (s[-1:] in ("|", "+") and s[:1] not in ("|", "+"))
                                             or cut_at_bar):
            out[-1] = out[-1] + ("" if len(out[-1]) >= width else " ") + line
            continue
        out.append(line)
    return "\n".join(out)


@parser
def parse_smi(text: str) -> NvidiaSmi:
    """The first nvidia-smi table in the text (a banner, a timestamp or a `watch` line may come first).

    A table cut short keeps the GPUs whose rows are all there (as many rows as the header has) and says `truncated`.
    """
    if (mm := nvml_mismatch(text)):
        raise ParseError("nvidia_smi", f"an nvidia-smi table, but NVML reports a driver/library version mismatch "
                                       f"(library {mm.library_version})", text)
    text = _unwrap(text)
    m = HEADER.search(text)
    if not m:
        why = next((line.strip() for line in text.splitlines()
                    if re.search(r"NVIDIA-SMI has failed|No devices were found|couldn't communicate", line)
                    or GPU_ERROR.search(line) or SMI_FAILURE.match(line.strip())), None)
        raise ParseError("nvidia_smi", "the nvidia-smi table header 'NVIDIA-SMI X  Driver Version: Y  [CUDA Version: Z]' "
                                       "(R610+: 'KMD Version: Y  CUDA UMD Version: Z')",
                         why or text)
    cuda = m["cuda"] if m["cuda"] and m["cuda"][0].isdigit() else None  # N/A, or ERR! (a broken libcuda in a container)
    compat = _forward_compat(text[: m.start()])
    # Inside a forward-compat container the table's CUDA Version is the compat library's; the driver stays the kernel's.
    driver = compat.kernel_driver_version if compat and compat.kernel_driver_version else \
        (m["driver"] if m["driver"] != "N/A" else None)
    smi = NvidiaSmi(m["smi"], driver, cuda, forward_compat=compat,
                    errors=[line.strip() for line in text[: m.start()].splitlines() if GPU_ERROR.search(line)])
    # The first table only: another one after it is the next sample of a `-l` loop, or another machine's.
    following = HEADER.search(text, m.end())
    lines = text[m.end(): following.start() if following else len(text)].splitlines()[1:]

    # GPU section: header rows up to the `|===|` rule, then blocks of as many rows, each block closed by `+---+`
    # (or the next GPU's first row in tables that do not separate GPUs).
    n = 0
    header_rows = 0
    gpu_cell = GPU_CELL
    while n < len(lines) and not RULE_ROW.match(lines[n]):
        if (cells := _cells(lines[n])) is not None:
            header_rows += 1
            if header_rows == 1 and re.match(r"GPU\s+Name\s*$", cells[0]):
                gpu_cell = GPU_CELL_NO_PM
        n += 1
    n += 1
    block: list[list[str]] = []
    closed = False

    def gpu_of(block: list[list[str]], line: str) -> SmiGpu:
        # Every block of the GPU section is one GPU with all its rows: any other is a damaged table, never a GPU fewer.
        gpu = _gpu(block, gpu_cell)
        second = block[1][0].split() if len(block) > 1 else []
        if gpu is not None and (len(second) < 3 or not re.fullmatch(r"P\d+|N/A|ERR!|\[?Unknown\]?", second[2])
                                or (gpu.mig_mode and " " in gpu.mig_mode)):
            gpu = None  # its second row is no 'FAN TEMP PERF POWER' row, or its third no MIG row: rows out of place
        if len({len(row) for row in block}) > 1:
            gpu = None  # a row with fewer cells than the others: cut
        if gpu is None or len(block) < header_rows or len(block) > max(header_rows, 2):
            raise ParseError("nvidia_smi", f"GPU blocks of {header_rows or 2} rows, the first one 'N  NAME  On|Off | BUS-ID'",
                             line)
        return gpu

    start = n
    for n in range(start, len(lines)):
        line = lines[n]
        cells = _cells(line)
        if cells is None:
            if SEPARATOR.match(line):
                if block:
                    smi.gpus.append(gpu_of(block, line))
                block = []
                if not (n + 1 < len(lines) and _cells(lines[n + 1]) and gpu_cell.match(_cells(lines[n + 1])[0])):
                    closed = True
                    break
                continue
            if line.strip() and not (line.strip().startswith("|") and not any(rest.strip() for rest in lines[n + 1:])):
                raise ParseError("nvidia_smi", "only table rows in the GPU section", line)
            block = []  # the table cut here (a blank line, or the end inside a row): the block cut short is left out
            break
        if gpu_cell.match(cells[0]) and block:
            smi.gpus.append(gpu_of(block, line))
            block = []
        block.append(cells)
    if not closed:
        smi.truncated = True  # `gpus` keeps the complete blocks; a block cut short is left out (`grep driver`: none)
        if block and len(block) >= max(header_rows, 2):
            smi.gpus.append(gpu_of(block, "\n".join(lines[-len(block):])))  # the last GPU's rows all there
    elif not smi.gpus:
        raise ParseError("nvidia_smi", "a GPU table with a GPU in it (nvidia-smi prints 'No devices were found' instead)",
                         text)
    if len({gpu.index for gpu in smi.gpus}) != len(smi.gpus):
        raise ParseError("nvidia_smi", "each GPU once", text)

    # nvidia-smi prints ERR! in the fields it could not read from a failing GPU (fallen off the bus, Xid): the row is
    # still there, but its figures are not readings.
    for gpu in smi.gpus:
        if (bad := [name for name, value in (("name", gpu.name), ("ecc", gpu.ecc), ("fan", gpu.fan), ("perf", gpu.perf),
                                             ("memory", gpu.memory_usage), ("compute mode", gpu.compute_mode),
                                             ("MIG mode", gpu.mig_mode)) if value and "ERR!" in value]):
            smi.errors.append(f"GPU {gpu.index} ({gpu.bus_id}): ERR! in {', '.join(bad)}")

    # Processes section. Cut before its closing line it does not list them all: processes_listed stays False (the rows
    # read are kept: they are real).
    in_procs = False
    not_supported = False
    for line in lines:
        if re.search(r"\|\s*(?:Compute )?[Pp]rocesses:", line):  # `Compute processes:` before driver 340
            in_procs = True
            continue
        if not in_procs:
            continue
        if re.search(r"NVIDIA-SMI\s+\d", line):
            break  # the next table of a `-l` loop, before this one's closing line
        if SEPARATOR.match(line):
            smi.processes_listed = not not_supported
            break
        cells = _cells(line)
        if cells is None or len(cells) != 1:
            continue
        if re.match(r"^\d+\s+(?:ERROR:\s*)?Not Supported$", cells[0]):
            not_supported = True  # GeForce on old drivers: the tool could not list them, not "none running"
            continue
        if (p := PROC.match(cells[0])):
            used = None if p[7] == "N/A" else round(int(re.match(r"\d+", p[7])[0]) / 1024, 3)
            smi.processes.append(SmiProcess(int(p[1]) if p[1] != "N/A" else -1, int(p[4]), p[5] or "", p[6].strip(), used))
        elif cells[0] and not PROC_HEADER.match(cells[0]) and not re.fullmatch(r"No running processes found|[=-]+", cells[0]):
            not_supported = True  # a row that reads as no process: the list is not known to be whole
    return smi


def smi_failure(text: str) -> str | None:
    """nvidia-smi's own failure line in an output ("No devices were found", "Failed to initialize NVML: ..."), if any."""
    return next((line.strip() for line in text.splitlines() if SMI_FAILURE.match(line.strip())), None)


# ---- --query-gpu CSV -----------------------------------------------------------

# nvidia-smi prints the canonical name in the header whatever alias was queried; a noheader query's
# field names come from the command line, so they are mapped the same way.
ALIASES = {"gpu_name": "name", "gpu_bus_id": "pci.bus_id", "gpu_uuid": "uuid", "gpu_serial": "serial",
           "clocks.sm": "clocks.current.sm", "clocks.gr": "clocks.current.graphics", "clocks.mem": "clocks.current.memory",
           "clocks.video": "clocks.current.video", "clocks.max.gr": "clocks.max.graphics", "clocks.max.mem": "clocks.max.memory",
           "clocks.applications.gr": "clocks.applications.graphics", "clocks.applications.mem": "clocks.applications.memory",
           "clocks.default_applications.gr": "clocks.default_applications.graphics",
           "clocks.default_applications.mem": "clocks.default_applications.memory",
           "used_memory": "used_gpu_memory"}  # --query-compute-apps: the header says used_gpu_memory [MiB]
# Units of numeric fields, for noheader/nounits output where neither header nor value says it.
FIELD_UNITS = [(re.compile(r"^memory\.(total|used|free|reserved)$|^used_memory$|^used_gpu_memory$"), "MiB"),
               (re.compile(r"^(enforced\.)?power\.(draw|limit|default_limit|min_limit|max_limit|draw\.\w+)$|^enforced\.power\.limit$"), "W"),
               (re.compile(r"^clocks\."), "MHz"),
               (re.compile(r"^utilization\.|^fan\.speed$"), "%")]
# Fields whose values are numbers (with or without unit); everything else stays text, so that a
# driver version "535.54" or a compute capability "12.1" is not turned into a float.
NUMERIC = re.compile(r"^(index|count|pid|temperature\.|memory\.|power\.|enforced\.power|clocks\.|utilization\.|fan\.speed|"
                     r"encoder\.stats\.|fbc\.stats\.|pcie\.link\.(gen|width)\.|ecc\.errors\.|retired_pages\.|used_memory|"
                     r"used_gpu_memory|protected_memory\.)")
UNIT_KEY = {"MiB": "gib", "W": "w", "MHz": "mhz", "%": "pct", "C": "c", "s": "s", "us": "us", "KiB/s": "kib_s"}
VALUE_UNIT = re.compile(r"^(-?[\d.]+)\s*(MiB|MB|GiB|W|MHz|%|C|us|s|KiB/s)$")
FIELD_NAME = re.compile(r"^[a-z][A-Za-z0-9_.]*(?:\s*\[[^\]]+\])?$")


def _field(header: str) -> tuple[str, str | None]:
    """('memory.total', 'MiB') from 'memory.total [MiB]'; aliases mapped to the canonical name."""
    m = re.match(r"^\s*([\w.]+)\s*(?:\[(.+?)\])?\s*$", header)
    name, unit = (m[1], m[2]) if m else (header.strip(), None)
    name = ALIASES.get(name, name)
    if unit == "MB":
        unit = "MiB"  # older drivers print MB, in nvidia-smi's 1024 steps as the table does
    if name.startswith("clocks_throttle_reasons."):  # renamed in drivers 535+, which print the new name in the header
        name = "clocks_event_reasons." + name.removeprefix("clocks_throttle_reasons.")
    if unit is None:
        unit = next((u for pattern, u in FIELD_UNITS if pattern.search(name)), None)
    return name, unit


def _key(name: str, unit: str | None) -> str:
    base = name.replace(".", "_")
    if unit is None:
        return base
    return f"{base}_{UNIT_KEY.get(unit, re.sub(r'[^a-z0-9]+', '_', unit.lower()).strip('_'))}"


def _value(name: str, unit: str | None, cell: str):
    if cell.startswith("[") and cell.endswith("]") or cell in ("N/A", "Not Supported", "Unknown Error", ""):
        return None  # [N/A], [Not Supported], [Unknown Error], [Insufficient Permissions], [GPU is lost] ...
    if not NUMERIC.match(name) and unit is None:
        return cell  # names, versions, uuids, bus ids, pstate P0, hex bit masks, Enabled/Disabled
    number, value_unit = cell, None
    if (v := VALUE_UNIT.match(cell)):
        number, value_unit = v[1], v[2]
    num = to_float(number)
    if num is None:
        return cell
    if (value_unit or unit) in ("MiB", "MB"):
        return round(num / 1024, 3)
    if value_unit == "GiB":
        return round(num, 3)
    if name in ("index", "count", "pid") and num.is_integer():
        return int(num)
    return num


def _query_fields(command: str | None) -> list[str] | None:
    if not command:
        return None
    m = re.search(r"--query-(?:gpu|compute-apps|accounted-apps|supported-clocks|retired-pages|remapped-rows)[= ]"
                  r"[\"']?([\w.,\s]+?)[\"']?(?:\s+-|\s*$|\s*\|)", command)
    return [f.strip() for f in m[1].split(",") if f.strip()] if m else None


@parser
def parse_query(text: str, fields: list[str] | None = None, command: str | None = None) -> list[dict]:
    """Rows of `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`, one per GPU and sample (`-l N` loops).

    Field names come from the printed header; with noheader from `fields`, or from the command line if it was
    captured. Keys carry the unit: memory.total [MiB] -> memory_total_gib (in GiB), power.draw -> power_draw_w,
    clocks.sm -> clocks_current_sm_mhz, utilization.gpu -> utilization_gpu_pct. [N/A] and [Not Supported] are None.
    """
    if (mm := nvml_mismatch(text)):
        raise ParseError("nvidia_smi_query", f"CSV rows, but NVML reports a driver/library version mismatch "
                                             f"(library {mm.library_version})", text)
    # nvidia-smi's own warnings (`WARNING: infoROM is corrupted at gpu 0000:17:00.0`) come on stderr, often merged in;
    # the GPU still answers, so its row counts.
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("WARNING:")]
    # nvidia-smi's failure lines are never values, not even of a one-field noheader query: a GPU it could not read
    # is missing from the rows, so the rows would undercount the GPUs.
    if (failed := next((line for line in lines if SMI_FAILURE.match(line)), None)):
        raise ParseError("nvidia_smi_query", "CSV rows, but nvidia-smi could not read the GPU(s)", failed)
    header: list[str] | None = None

    def looks_like_header(line: str) -> bool:
        cells = [c.strip() for c in line.split(",")]
        return all(FIELD_NAME.match(c) for c in cells) and any(c not in ("N/A",) for c in cells)

    if lines and looks_like_header(lines[0]) and (not fields or len(lines[0].split(",")) == len(fields)):
        # A printed header wins; with given fields it must at least have as many columns.
        if not fields or all(_field(h)[0] == _field(f)[0] for h, f in zip(lines[0].split(","), fields)) \
                or "noheader" not in (command or ""):
            header = [h.strip() for h in lines.pop(0).split(",")]
    apps = bool(re.search(r"--query-(?:compute|accounted)-apps", command or ""))
    if header is None:
        from_command = _query_fields(command) if command and "noheader" in command else None
        header = fields or from_command
        if header and apps:  # in an apps query `name` is the process's (the header prints process_name)
            header = ["process_name" if f.strip() == "name" else f for f in header]
    if header is None:
        raise ParseError("nvidia_smi_query", "a CSV header line (memory.total [MiB], ...), or the field names of a "
                                             "noheader query (from its command line)", text)
    spec = [_field(h) for h in header]
    header_line = ", ".join(header)
    rows = []
    for n, line in enumerate(lines):
        if line.replace(" ", "") == header_line.replace(" ", ""):
            continue  # the header again (a loop that reprints it)
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(spec):
            if n == len(lines) - 1 and rows and len(cells) < len(spec):
                break  # the last sample of a loop, cut short
            raise ParseError("nvidia_smi_query", f"{len(spec)} comma-separated values per line ({', '.join(header)})", line)
        if (broken := [c for c in cells if GPU_STATE_ERROR.match(c)]) and (len(broken) == len(cells) or any(
                re.search(r"lost|reset", c, re.I) for c in broken)):
            raise ParseError("nvidia_smi_query", "CSV values, but nvidia-smi could not read the GPU "
                                                 f"({broken[0]} in place of its values)", line)
        rows.append({_key(name, unit): _value(name, unit, cell) for (name, unit), cell in zip(spec, cells)})
    if not rows:
        if apps and not lines:
            return []  # no process on the GPUs: the header alone, or nothing with noheader
        raise ParseError("nvidia_smi_query", "at least one CSV row", text)
    return rows


# ---- /proc/driver/nvidia/version -----------------------------------------------


@dataclass
class KernelModule:
    version: str
    flavor: str  # "open" | "proprietary"
    arch: str  # x86_64 | aarch64 | ppc64le | x86 | ...
    build: str | None  # the rest of the line as printed: "Release Build  (builder@host)  date"
    gcc: str | None
    builder: str | None = None  # dvs-builder@U22-..., portage@localhost
    date: str | None = None  # as printed (the builder's locale: "Сб 29 июн 2024 14:36:22 MSK")


NVRM = re.compile(
    r"NVRM version:\s+NVIDIA UNIX\s+(?:(?P<open1>Open )?Kernel Module for (?P<arch1>\S+)|(?P<arch2>\S+)\s+(?P<open2>Open )?Kernel Module)"
    r"\s+(?P<version>\d[\w.-]*)(?:\s+(?P<build>.*?))?\s*$",
    re.M,
)


@parser
def parse_proc_version(text: str) -> KernelModule:
    m = NVRM.search(text)
    if not m:
        raise ParseError("proc_driver_nvidia_version",
                         "'NVRM version: NVIDIA UNIX [Open] Kernel Module ... VERSION ...' (/proc/driver/nvidia/version)", text)
    gcc = re.search(r"^\s*GCC version:\s+(.*?)\s*$", text[m.end():], re.M)
    build = m["build"] or None
    if not build:
        # the NVRM line goes on after its version (the build, the builder, the date): ending at it, it is cut, and the
        # version may be too ("580.12")
        raise ParseError("proc_driver_nvidia_version", "the NVRM line with its build after the version ('... 580.126.09  "
                                                       "Release Build  (builder@host)  DATE')", m[0])
    builder = re.search(r"\(([^()\s]+@[^()\s]*)\)", build or "")
    date = re.sub(r"^(?:Release Build|Debug Build|Develop Build)?\s*(?:\([^()]*\)\s*)?", "", build or "").strip() or None
    return KernelModule(m["version"], "open" if (m["open1"] or m["open2"]) else "proprietary", m["arch1"] or m["arch2"],
                        build, gcc[1] if gcc else None, builder[1] if builder else None, date)


# ---- GPU compute processes: nvidia-smi --query-compute-apps with their lines in the process table ----------------

PS_MARK = "-- ps --"
PS_LINE = re.compile(r"^(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(.*)$")


@dataclass
class GpuProcess:
    pid: int
    name: str  # nvidia-smi's process name (vLLM names its engine VLLM::EngineCore, its workers VLLM::Worker...)
    used_gib: float | None  # None: nvidia-smi reports no figure ([N/A])
    ppid: int | None = None  # the process table's line, when the process still ran when ps looked
    elapsed_s: int | None = None
    args: str | None = None
    container: str | None = None  # the docker container id (12 hex) whose cgroup holds it; None: on the host


@parser
def parse_compute_apps(text: str) -> list[GpuProcess]:
    """`nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`, then a line `-- ps --` and, per
    process, `CONTAINER PID PPID ETIMES ARGS` (CONTAINER: the docker id in /proc/PID/cgroup, or -). A process the
    table no longer holds (it ended between the two) keeps its nvidia-smi figures. No process: the header alone."""
    if PS_MARK not in text:
        raise ParseError("nvidia_compute_apps", f"nvidia-smi's compute processes, then a line {PS_MARK!r}", text)
    smi, _, ps = text.partition(PS_MARK)
    if not smi.strip():
        raise ParseError("nvidia_compute_apps", "nvidia-smi's CSV header (pid, process_name, used_gpu_memory [MiB])", text)
    rows = parse_query(smi, command="nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv")
    table = {}
    for line in ps.splitlines():
        if not line.strip():
            continue
        m = PS_LINE.match(line.strip())
        if not m:
            raise ParseError("nvidia_compute_apps", "CONTAINER PID PPID ETIMES ARGS per process", line)
        table[int(m[2])] = (None if m[1] == "-" else m[1], int(m[3]), int(m[4]), m[5])
    found, seen = [], set()
    for row in rows:
        # one process on two GPUs is listed once per GPU, with each GPU's memory: the same line twice is the output's damage
        if (key := tuple(sorted(row.items()))) in seen:
            raise ParseError("nvidia_compute_apps", "each process line once", str(row))
        seen.add(key)
        pid = row.get("pid")
        if not isinstance(pid, int):
            raise ParseError("nvidia_compute_apps", "a process id in the pid column", str(row))
        container, ppid, elapsed, args = table.get(pid, (None, None, None, None))
        found.append(GpuProcess(pid, str(row.get("process_name") or "?"), row.get("used_gpu_memory_gib"), ppid, elapsed,
                                args, container))
    return found
