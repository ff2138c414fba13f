"""/proc/meminfo and `free` (any unit flag). Memory in GiB."""

import re

from ._text import ParseError, is_prompt, kib_to_gib, parser


def snake(name: str) -> str:
    name = name.replace("(", "_").replace(")", "")
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"_+", "_", name).lower()


@parser
def parse_meminfo(text: str) -> dict[str, float]:
    """{'mem_total_gib': 121.69, 'mem_available_gib': ..., 'huge_pages_total': 0, ...}"""
    facts: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([A-Za-z0-9_()]+):\s+(\d+)(?:\s+kB)?\s*$", line)
        if not m:
            continue
        if line.rstrip().endswith("kB"):
            facts[f"{snake(m[1])}_gib"] = kib_to_gib(int(m[2]))
        else:
            facts[snake(m[1])] = int(m[2])
    if "mem_total_gib" not in facts:
        raise ParseError("meminfo", "'MemTotal:  N kB' lines (/proc/meminfo)", text)
    return facts


FREE_UNITS_KIB = {"-b": 1 / 1024, "--bytes": 1 / 1024, "-k": 1, "--kibi": 1, "-m": 1024, "--mebi": 1024,
                  "-g": 1024**2, "--gibi": 1024**2, "-t": 1024**3, "--tebi": 1024**3}
SUFFIX_KIB = {"B": 1 / 1024, "K": 1, "Ki": 1, "M": 1024, "Mi": 1024, "G": 1024**2, "Gi": 1024**2, "T": 1024**3, "Ti": 1024**3}


@parser
def parse_free(text: str, unit_flag: str | None = None, command: str | None = None) -> dict[str, float]:
    """`free [-b|-k|-m|-g|-h]`; the unit comes from `unit_flag` or a captured command line, else KiB."""
    lines = text.splitlines()
    if unit_flag is None and command:
        unit_flag = next((f for f in re.findall(r"(?:^|\s)(-{1,2}\w+)", command) if f in FREE_UNITS_KIB or f in ("-h", "--human")), None)
    scale = FREE_UNITS_KIB.get(unit_flag or "-k", 1)
    header = next((line.split() for line in lines if "total" in line and "used" in line), None)
    facts: dict[str, float] = {}
    for line in lines:
        m = re.match(r"^\s*(Mem|Swap):\s+(.*)$", line)
        if not m or not header:
            continue
        for name, raw in zip(header, m[2].split()):
            v = re.match(r"^([\d.]+)([A-Za-z]*)$", raw)
            if not v:
                continue
            kib = float(v[1]) * (SUFFIX_KIB.get(v[2], scale) if v[2] else scale)
            facts[f"{m[1].lower()}_{name.replace('/', '_')}_gib"] = kib_to_gib(kib)
    if "mem_total_gib" not in facts:
        raise ParseError("free", "a 'total used free ...' header and a 'Mem:' line (output of `free`)", text)
    return facts
