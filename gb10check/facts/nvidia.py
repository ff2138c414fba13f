"""nvidia-smi (default table and --query-gpu CSV), /proc/driver/nvidia/version, NVML mismatch.

The NVML "Driver/library version mismatch" text is recognised wherever nvidia-smi output is
expected: it means the loaded kernel module and the installed user-mode library differ.
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError, is_prompt, parser, to_float

MISMATCH = re.compile(r"Failed to initialize NVML: Driver/library version mismatch")


@dataclass
class NvmlMismatch:
    nvml_mismatch: bool
    library_version: str | None


def nvml_mismatch(text: str) -> NvmlMismatch | None:
    if not MISMATCH.search(text):
        return None
    m = re.search(r"NVML library version:\s*(\S+)", text)
    return NvmlMismatch(True, m[1] if m else None)


@parser
def parse_nvml_mismatch(text: str) -> NvmlMismatch:
    found = nvml_mismatch(text)
    if not found:
        raise ParseError("nvml_mismatch", "'Failed to initialize NVML: Driver/library version mismatch'", text)
    return found


# ---- default table -------------------------------------------------------------


@dataclass
class SmiGpu:
    index: int
    name: str
    persistence_mode: str
    bus_id: str
    memory_usage: str  # "Not Supported" on GB10 (unified memory)


@dataclass
class SmiProcess:
    gpu: int
    pid: int
    type: str
    name: str
    used_gib: float | None


@dataclass
class NvidiaSmi:
    smi_version: str
    driver_version: str
    cuda_version: str | None
    gpus: list[SmiGpu] = field(default_factory=list)
    processes: list[SmiProcess] = field(default_factory=list)


GPU_LINE = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(On|Off)\s+\|\s+(\S+)\s+(?:On|Off)\s+\|")
MEM_LINE = re.compile(r"^\|\s+\S+\s+\S+\s+\S+\s+.*?\|\s+(.+?)\s+\|")
PROC_LINE = re.compile(r"^\|\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s+(\w+)\s+(.+?)\s+(\d+)MiB\s+\|")


@parser
def parse_smi(text: str) -> NvidiaSmi:
    if (mm := nvml_mismatch(text)):
        raise ParseError("nvidia_smi", f"an nvidia-smi table, but NVML reports a driver/library version mismatch "
                                       f"(library {mm.library_version})", text)
    m = re.search(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s+(\S+)(?:\s+CUDA Version:\s+(\S+))?", text)
    if not m:
        raise ParseError("nvidia_smi", "the nvidia-smi table header 'NVIDIA-SMI X  Driver Version: Y  CUDA Version: Z'", text)
    smi = NvidiaSmi(m[1], m[2], m[3])
    lines = text.splitlines()
    in_procs = False
    for i, line in enumerate(lines):
        if "Processes:" in line:
            in_procs = True
        if not in_procs and (g := GPU_LINE.match(line)):
            mem = MEM_LINE.match(lines[i + 1]) if i + 1 < len(lines) else None
            smi.gpus.append(SmiGpu(int(g[1]), g[2].strip(), g[3], g[4], mem[1].strip() if mem else ""))
        elif in_procs and (p := PROC_LINE.match(line)):
            smi.processes.append(SmiProcess(int(p[1]), int(p[2]), p[3], p[4].strip(), round(int(p[5]) / 1024, 3)))
    return smi


# ---- --query-gpu CSV -----------------------------------------------------------


def _key(header: str) -> tuple[str, str | None]:
    m = re.match(r"^\s*([\w.]+)\s*(?:\[(.+?)\])?\s*$", header)
    name, unit = (m[1], m[2]) if m else (header.strip(), None)
    name = name.replace(".", "_")
    if unit == "MiB":
        return f"{name}_gib", unit
    if unit:
        return f"{name}_{unit.strip('%').lower() or 'pct'}" if unit != "%" else f"{name}_pct", unit
    return name, None


@parser
def parse_query(text: str, fields: list[str] | None = None, command: str | None = None) -> list[dict]:
    """Rows of `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`.

    With noheader the field names come from `fields`, or from the command line if it was captured.
    """
    if (mm := nvml_mismatch(text)):
        raise ParseError("nvidia_smi_query", f"CSV rows, but NVML reports a driver/library version mismatch "
                                             f"(library {mm.library_version})", text)
    lines = [line for line in text.splitlines() if line.strip()]
    header: list[str] | None = None
    if command and (m := re.search(r"--query-gpu[= ](\S+)", command)) and "noheader" in command:
        header = m[1].split(",")
    if header is None and fields:
        header = fields
    if header is None and lines and not re.search(r"\d", lines[0].split(",")[0]) and "NVIDIA" not in lines[0]:
        header = [h.strip() for h in lines.pop(0).split(",")]
    if header is None:
        raise ParseError("nvidia_smi_query", "a CSV header line, or the field names of a noheader query", text)
    keys = [_key(h) for h in header]
    rows = []
    for line in lines:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(keys):
            raise ParseError("nvidia_smi_query", f"{len(keys)} comma-separated values per line", line)
        row: dict = {}
        for (key, unit), cell in zip(keys, cells):
            if cell in ("[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]"):
                row[key] = None
            elif (num := to_float(re.sub(r"\s*(%|W|MiB|MHz|C)$", "", cell))) is not None:
                row[key] = round(num / 1024, 3) if (unit == "MiB" or cell.endswith("MiB")) else num
            else:
                row[key] = cell  # names and versions ("580.173.02") stay text
        rows.append(row)
    if not rows:
        raise ParseError("nvidia_smi_query", "at least one CSV row", text)
    return rows


# ---- /proc/driver/nvidia/version -----------------------------------------------


@dataclass
class KernelModule:
    version: str
    flavor: str  # "open" | "proprietary"
    arch: str
    build: str | None
    gcc: str | None


NVRM = re.compile(
    r"NVRM version:\s+NVIDIA UNIX\s+(?:(?P<open>Open )?Kernel Module for (?P<arch1>\S+)|(?P<arch2>\S+) Kernel Module)\s+"
    r"(?P<version>\d[\w.-]*)\s+(?P<build>.*?)\s*$",
    re.M,
)


@parser
def parse_proc_version(text: str) -> KernelModule:
    m = NVRM.search(text)
    if not m:
        raise ParseError("proc_driver_nvidia_version",
                         "'NVRM version: NVIDIA UNIX [Open] Kernel Module ... VERSION ...' (/proc/driver/nvidia/version)", text)
    gcc = re.search(r"^GCC version:\s+(.*?)\s*$", text, re.M)
    return KernelModule(m["version"], "open" if m["open"] else "proprietary", m["arch1"] or m["arch2"],
                        m["build"] or None, gcc[1] if gcc else None)
