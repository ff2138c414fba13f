"""ibdev2netdev, plain and -v forms, devices in any order.

plain: rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)
-v:    0000:01:00.0 rocep1s0f0 (MT4129 - NVD0000000087) fw 28.45.4028 port 1 (ACTIVE) ==> enp1s0f0np0 (Up)
"""

import re
from dataclasses import dataclass

from ._text import ParseError, is_prompt, parser

LINE = re.compile(
    r"^(?:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+)?"
    r"(?P<device>\S+)\s+"
    r"(?:\((?P<description>[^)]*)\)\s+)?"
    r"(?:fw\s+(?P<firmware>\S+)\s+)?"
    r"port\s+(?P<port>\d+)\s+"
    r"(?:\((?P<port_state>[A-Z_]+)\)\s+)?"
    r"==>\s+(?P<netdev>\S+)\s+\((?P<state>\w+)\)\s*$"
)


@dataclass(frozen=True)
class RdmaNetdev:
    rdma_device: str
    port: int
    netdev: str
    state: str  # "up" | "down"
    port_state: str | None = None  # -v only: ACTIVE, DOWN, INIT ...
    pci: str | None = None
    firmware: str | None = None


@parser
def parse(text: str) -> list[RdmaNetdev]:
    found = []
    for line in text.splitlines():
        if not line.strip() or is_prompt(line):
            continue
        m = LINE.match(line.strip())
        if m:
            found.append(
                RdmaNetdev(
                    rdma_device=m["device"],
                    port=int(m["port"]),
                    netdev=m["netdev"],
                    state="up" if m["state"].lower() == "up" else "down",
                    port_state=m["port_state"],
                    pci=m["pci"],
                    firmware=m["firmware"],
                )
            )
    if not found:
        raise ParseError("ibdev2netdev", "lines like 'rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)'", text)
    return found
