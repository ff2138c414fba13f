"""ibdev2netdev, plain, -v and old-style forms, devices in any order.

plain:     rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)
-v:        0000:01:00.0 rocep1s0f0 (MT4129 - NVD0000000087) ConnectX-7 ... fw 28.45.4028 port 1 (ACTIVE) ==> enp1s0f0np0 (Up)
old style: mlx4_0 port 1 <===> eth2            (MLNX_OFED's script on drivers without dev_id: no state)

The mlnx-tools script pads the -v fields with printf: the part ID to 11 characters inside its
parentheses, the port state to 6 (`(DOWN  )`), and the board description (free text from the VPD,
with spaces, commas, dashes and parentheses of its own) sits between the `(MTxxxx - PSID)` group and
`fw`; some builds put it inside the group (`(MT4129 - PSID - description)`). The PCI address is
empty when the device has none (a leading space), and its domain is 4 hex digits or more. People
pipe the output through `column -t` and append their own `# comments`.
"""

import dataclasses
import re
from dataclasses import dataclass

from ._text import ParseError, is_prompt, parser

# An author's note after the line: "# CX-7 1/8 infiniband", "<- cabled", "// port 0", "(o2ib)".
_NOTE = r"(?:\s+(?:#|<-+|←|//).*|\s+\([\w ,./-]*\))?"
_STATE = r"\(\s*(?P<state>[A-Za-z]*)\s*\)"  # empty "()": the script found no dev_id file for the netdev
PLAIN = re.compile(r"^(?P<device>[\w.-]+)\s+port\s+(?P<port>\d+)\s+==>\s+(?P<netdev>[\w.@:-]+)\s+" + _STATE + _NOTE + r"$")
OLD_STYLE = re.compile(r"^(?P<device>[\w.-]+)\s+port\s+(?P<port>\d+)\s+<===>\s+(?P<netdev>[\w.@:-]+)" + _NOTE + r"$")
# -v: everything up to the last "fw X port N (STATE) ==> NETDEV (State)" is "[pci] device [board]".
VERBOSE = re.compile(r"^(?P<left>.*\S)\s+fw\s+(?P<firmware>\S+)\s+port\s+(?P<port>\d+)\s+\(\s*(?P<port_state>[A-Za-z_]+)\s*\)"
                     r"\s+==>\s+(?P<netdev>[\w.@:-]+)\s+" + _STATE + _NOTE + r"$")
PCI = re.compile(r"^(?P<pci>(?P<domain>[0-9a-fA-F]{4,}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+")
DEVICE = re.compile(r"^(?P<device>[A-Za-z][\w.-]*)(?:\s+(?P<board>.*))?$")

# The netdev's carrier (Up/Down) is what the plain form reports; NA when the script cannot read it.
_UP = {"up", "active"}
_DOWN = {"down", "init", "initializing", "polling", "armed", "disabled", "sleep"}


@dataclass(frozen=True)
class RdmaNetdev:
    rdma_device: str
    port: int
    netdev: str
    state: str  # "up" | "down" | "unknown" (NA, or the old-style form that prints no state)
    port_state: str | None = None  # -v only: ACTIVE, DOWN, INIT, ARMED (padding removed)
    pci: str | None = None  # -v only
    firmware: str | None = None  # -v only
    link_state: str | None = None  # the state word as printed: Up, Down, NA
    device_id: str | None = None  # -v only: MT4129
    part_id: str | None = None  # -v only: the board's part number / PSID, e.g. NVD0000000087
    description: str | None = None  # -v only: the board description from the VPD
    host: str | None = None  # several nodes' outputs in one paste: the node its prompt names (user@spark-2:~$)


def _state(word: str | None) -> str:
    word = (word or "").lower()
    return "up" if word in _UP else "down" if word in _DOWN else "unknown"


def _na(value: str | None) -> str | None:
    value = (value or "").strip()
    return None if value in ("", "NA") else value


def _board(text: str) -> tuple[str | None, str | None, str | None]:
    """(device_id, part_id, description) from "(MT4129 - PSID) description" or "(MT4129 - PSID - description)"."""
    text = text.strip()
    if not text.startswith("("):
        return None, None, _na(text)
    depth = 0
    for end, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            break
    else:  # unbalanced: the description was cut; keep what is certain
        end = len(text)
    inner, after = text[1:end], text[end + 1:]
    parts = [p.strip() for p in inner.split(" - ", 2)]
    device_id = _na(parts[0]) if parts else None
    part_id = _na(parts[1]) if len(parts) > 1 else None
    description = " ".join(p for p in (parts[2] if len(parts) > 2 else "", after.strip()) if p)
    return device_id, part_id, _na(description)


def _line(line: str) -> RdmaNetdev | None:
    if (m := PLAIN.match(line)):
        return RdmaNetdev(m["device"], int(m["port"]), m["netdev"], _state(m["state"]), link_state=m["state"] or None)
    if (m := OLD_STYLE.match(line)):
        return RdmaNetdev(m["device"], int(m["port"]), m["netdev"], "unknown")
    if (m := VERBOSE.match(line)):
        left = m["left"].strip()
        pci = PCI.match(left)
        rest = left[pci.end():] if pci else left
        dev = DEVICE.match(rest)
        if not dev:
            return None
        device_id, part_id, description = _board(dev["board"] or "")
        port_state = _na(m["port_state"])
        return RdmaNetdev(dev["device"], int(m["port"]), m["netdev"], _state(m["state"]),
                          port_state=port_state.upper() if port_state else None,
                          # Without its domain (the noise front end takes "0000:" for an srun label) the address is ambiguous.
                          pci=pci["pci"] if pci and pci["domain"] else None,
                          firmware=_na(m["firmware"]), link_state=m["state"] or None, device_id=device_id, part_id=part_id,
                          description=description)
    return None


@parser
def parse(text: str, sections: list[tuple[str | None, str]] = (), hosts: list[str | None] = ()) -> list[RdmaNetdev]:
    """Every content line is a device line: one that is not (cut, or another tool's) makes the output unreadable, and a
    device port listed twice for one node is not what the script prints (a paste that repeated or mixed lines)."""
    found = []
    # Two nodes' outputs pasted one after the other, each after its own prompt: each line keeps its node's name.
    several = len({h for h, (_, out) in zip(hosts, sections) if h and out.strip()}) > 1
    for (_, output), host in zip(sections, hosts) if sections else [((None, text), None)]:
        for line in output.splitlines():
            if not line.strip() or is_prompt(line):
                continue
            if (entry := _line(line.strip())) is None:
                raise ParseError("ibdev2netdev", "only lines like 'rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)'", line)
            entry = dataclasses.replace(entry, host=host) if several else entry
            if any((e.host, e.rdma_device, e.port) == (entry.host, entry.rdma_device, entry.port) for e in found):
                raise ParseError("ibdev2netdev", f"each device port once ({entry.rdma_device} port {entry.port} is listed "
                                                 "twice)", line)
            found.append(entry)
    if not found:
        raise ParseError("ibdev2netdev", "lines like 'rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)'", text)
    return found
