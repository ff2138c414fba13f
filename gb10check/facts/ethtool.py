"""ethtool IFACE (full, or piped through `grep Speed` with the command line kept)."""

import re
from dataclasses import dataclass

from ._text import ParseError, parser


@dataclass
class EthtoolLink:
    interface: str | None
    speed_mbps: int | None  # None when ethtool says Unknown!
    duplex: str | None
    lanes: int | None
    link_detected: bool | None
    port: str | None


@parser
def parse(text: str, sections: list[tuple[str | None, str]] = ()) -> list[EthtoolLink]:
    """One link per `Settings for IFACE:` block, or per captured `ethtool IFACE` command line."""
    links: list[EthtoolLink] = []
    lines = []
    for command, output in sections or [(None, text)]:
        if command and (m := re.search(r"\bethtool\s+(?:-\w+\s+)*([\w.-]+)", command)):
            lines.append(f"Settings for {m[1]}:")
        lines.extend(output.splitlines())
    for line in lines:
        s = line.strip()
        if m := re.match(r"^Settings for (\S+?):$", s):
            if not (links and links[-1].interface == m[1] and links[-1].speed_mbps is None and links[-1].link_detected is None):
                links.append(EthtoolLink(m[1], None, None, None, None, None))
            continue
        if not s or ":" not in s:
            continue
        key, _, value = s.partition(":")
        value = value.strip()
        if key == "Speed":
            if not links:
                links.append(EthtoolLink(None, None, None, None, None, None))
            sp = re.match(r"(\d+)\s*Mb/s", value)
            links[-1].speed_mbps = int(sp[1]) if sp else None
        elif links and key == "Duplex":
            links[-1].duplex = value.lower()
        elif links and key == "Lanes":
            links[-1].lanes = int(value) if value.isdigit() else None
        elif links and key == "Link detected":
            links[-1].link_detected = value == "yes"
        elif links and key == "Port":
            links[-1].port = value
    links = [link for link in links if link.speed_mbps is not None or link.link_detected is not None or link.duplex]
    if not links:
        raise ParseError("ethtool", "'Speed: 200000Mb/s' (output of `ethtool IFACE`)", text)
    return links
