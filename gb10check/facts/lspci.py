"""lspci -vv: each PCI function's PCIe link, capable (LnkCap) and negotiated (LnkSta).

Forms read: with or without the domain (`0002:01:00.0` / `01:00.0`, which is domain 0000), with or without `-nn`
(`Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]`), tab-indented capability
blocks, LnkSta with pciutils' comparison against LnkCap (`Speed 32GT/s (ok), Width x2 (downgraded)`, 3.7 and later)
or without it (`Speed 32GT/s, Width x4`, older), with the status flags on the same line (old pciutils) or the next,
`Speed unknown`, pciutils before 3.0 (`Speed 2.5Gb/s`), a `(prog-if 00 [Normal decode])` after the ids, and
`LnkCap2`/`LnkSta2`/`LnkCtl2` lines (never read as LnkCap/LnkSta). Run without root, lspci prints
`Capabilities: <access denied>` instead of the blocks: the function's `access_denied` says so, its link is None.
Functions with no PCI Express capability (a root complex's integrated devices) have no link either.
"""

import re
from dataclasses import dataclass

from ._text import ParseError, parser

# 0002:01:00.0 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021] (rev 00)
HEADER = re.compile(r"^(?P<addr>(?:[0-9a-fA-F]{4,}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<rest>\S.*)$")
# The ids, then "(rev a1)" and "(prog-if 02 [NVM Express])" (bridges, NVMe and VGA controllers print a programming interface).
PROG_IF = r"\s*\(prog-if [0-9a-fA-F]+(?: \[[^\]]*\])?\)"
IDS = re.compile(r"\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\](?:\s*\(rev [0-9a-fA-F]+\))?(?:" + PROG_IF + r")?\s*$")
CLASS = re.compile(r"^(?P<cls>[^:\[]+?)(?:\s*\[[0-9a-fA-F]{4}\])?:\s*(?P<name>.*)$")
LINK = re.compile(r"^\s*(?P<which>LnkCap|LnkSta):\s*(?P<body>.*)$")
SPEED = re.compile(r"Speed\s+(?P<speed>\d+(?:\.\d+)?(?:GT/s|Gb/s)|unknown)(?:\s*\((?P<mark>ok|downgraded|strange)\))?", re.I)
WIDTH = re.compile(r"Width\s+x(?P<width>\d+)(?:\s*\((?P<mark>ok|downgraded|strange)\))?", re.I)
MELLANOX = "15b3"
CONNECTX7 = {"1021"}  # MT2910 Family [ConnectX-7] (GB10's NIC); its functions all carry this device id


@dataclass
class PciLink:
    speed_gts: float | None  # None: "unknown"
    width: int | None
    speed_mark: str | None = None  # pciutils' comparison with LnkCap: ok / downgraded / strange (3.7 and later)
    width_mark: str | None = None

    def __str__(self) -> str:
        speed = f"{self.speed_gts:g}GT/s" if self.speed_gts is not None else "unknown speed"
        return f"{speed} x{self.width if self.width is not None else '?'}"


@dataclass
class PciFunction:
    address: str  # domain:bus:device.function, the domain filled in (0000) when lspci left it out
    description: str  # what lspci names it: "Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]"
    vendor_id: str | None = None  # with -nn only: 15b3
    device_id: str | None = None  # 1021
    cap: PciLink | None = None  # LnkCap: what the function can do
    sta: PciLink | None = None  # LnkSta: what it negotiated
    access_denied: bool = False  # lspci without root: no capability blocks

    @property
    def is_connectx7(self) -> bool:
        if self.vendor_id is not None and self.device_id is not None:
            return self.vendor_id.lower() == MELLANOX and self.device_id.lower() in CONNECTX7
        return "Mellanox" in self.description and ("MT2910" in self.description or "ConnectX-7" in self.description)


def _link(body: str) -> PciLink | None:
    speed, width = SPEED.search(body), WIDTH.search(body)
    if speed is None and width is None:
        return None
    value = speed["speed"] if speed else None
    gts = float(value[:-len("GT/s")]) if value and value.lower() != "unknown" else None  # pciutils < 3.0 said Gb/s
    return PciLink(gts, int(width["width"]) if width else None, speed["mark"].lower() if speed and speed["mark"] else None,
                   width["mark"].lower() if width and width["mark"] else None)


def full_address(addr: str) -> str:
    return addr.lower() if addr.count(":") == 2 else f"0000:{addr.lower()}"


@parser
def parse(text: str) -> list[PciFunction]:
    functions: list[PciFunction] = []
    current: PciFunction | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace() and (m := HEADER.match(line)):
            rest = m["rest"]
            ids = IDS.search(rest)
            desc = IDS.sub("", rest).strip() if ids else re.sub(r"\s*\(rev [0-9a-fA-F]+\)(?:" + PROG_IF + r")?\s*$", "", rest).strip()
            c = CLASS.match(desc)
            desc = f"{c['cls'].strip()}: {c['name'].strip()}" if c else desc
            current = PciFunction(full_address(m["addr"]), desc, ids["vendor"].lower() if ids else None,
                                  ids["device"].lower() if ids else None)
            functions.append(current)
            continue
        if current is None:
            continue
        if "Capabilities: <access denied>" in line:
            current.access_denied = True
            continue
        if (link := LINK.match(line)) is not None:
            parsed = _link(link["body"])
            if link["which"] == "LnkCap" and current.cap is None:
                current.cap = parsed
            elif link["which"] == "LnkSta" and current.sta is None:
                current.sta = parsed
    if not functions:
        raise ParseError("lspci", "PCI functions (`0000:01:00.0 Ethernet controller: ...`) with their capability blocks "
                                  "(sudo lspci -vv)", text)
    return functions
