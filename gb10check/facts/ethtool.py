"""ethtool IFACE (full, or piped through `grep Speed` with the command line kept), and ethtool -i IFACE.

One link per interface: a `Settings for IFACE:` block, or a captured `ethtool [-i] IFACE` command line
(several runs in one capture are several sections). `ethtool -i` output (driver, version,
firmware-version, bus-info) joins the link of the same interface, so one capture of `ethtool X;
ethtool -i X` reads as one link with its speed and its firmware. The speed is in Mb/s, read from the
unit ethtool printed; `Unknown!` (no link) and the "unknown" sentinels some drivers print read as None.
Error lines (`Cannot get wake-on-lan settings: Operation not permitted`, `netlink error: ...`) are
not facts.
"""

import re
from dataclasses import dataclass

from ._text import ParseError, parser

_UNIT_TO_MBPS = {"mb/s": 1, "mbps": 1, "mbit/s": 1, "gb/s": 1000, "gbps": 1000, "gbit/s": 1000}
_UNKNOWN_SPEEDS = {65535, 4294967295, 2147483647}  # SPEED_UNKNOWN as some drivers / old ethtool print it
_INFO_KEYS = {"driver", "version", "firmware-version", "expansion-rom-version", "bus-info", "supports-statistics",
              "supports-test", "supports-eeprom-access", "supports-register-dump", "supports-priv-flags"}
COMMAND = re.compile(r"\bethtool\s+(?:(?P<flags>(?:-[-\w]+\s+)*))(?P<iface>[\w.@:-]+)")


# The values of the keys the checks read, as ethtool prints them; any other value is a damaged line.
CHECKED = {"Speed": re.compile(r"\d+(?:\.\d+)?\s*(?:[KMGT]b/s|[KMGT]bps)|Unknown!?|N/A", re.I),
           "Duplex": re.compile(r"Full|Half|Unknown!?(?: \(\d+\))?", re.I),
           "Link detected": re.compile(r"(?:yes|no)(?: \(.*\))?"),
           "Auto-negotiation": re.compile(r"on|off"),
           "Lanes": re.compile(r"\d+|Unknown!?|N/A")}


@dataclass
class EthtoolLink:
    interface: str | None
    speed_mbps: int | None  # None when ethtool says Unknown! (no link) or prints no Speed line
    duplex: str | None  # full | half | None (Unknown!)
    lanes: int | None
    link_detected: bool | None
    port: str | None  # Direct Attach Copper, FIBRE, Twisted Pair, Other ...
    speed: str | None = None  # the Speed value as printed: "200000Mb/s", "Unknown!"
    auto_negotiation: bool | None = None
    driver: str | None = None  # ethtool -i: mlx5_core
    driver_version: str | None = None  # ethtool -i: version
    firmware: str | None = None  # ethtool -i: 28.45.4028 (the PSID in parentheses goes to psid)
    psid: str | None = None  # ethtool -i on ConnectX: "firmware-version: 28.45.4028 (NVD0000000087)"
    bus_info: str | None = None  # ethtool -i: 0000:01:00.0
    host: str | None = None  # several nodes' outputs in one paste: the node its prompt names (user@spark-2:~$)

    def has_facts(self, info_keys: int) -> bool:
        # `ethtool -i` facts count when several of its keys were there: one "driver:" line alone is not its output.
        return self.speed is not None or self.link_detected is not None or self.duplex is not None or info_keys >= 3


def _speed(value: str) -> int | None:
    m = re.match(r"(\d+(?:\.\d+)?)\s*([A-Za-z/]+)", value)
    if not m or m[2].lower() not in _UNIT_TO_MBPS:
        return None
    mbps = int(float(m[1]) * _UNIT_TO_MBPS[m[2].lower()])
    return None if mbps in _UNKNOWN_SPEEDS else mbps


def _value(value: str) -> str | None:
    value = value.strip()
    return value if value and value.lower() not in ("n/a", "unknown", "unknown!") else None


@parser
def parse(text: str, sections: list[tuple[str | None, str]] = (), hosts: list[str | None] = ()) -> list[EthtoolLink]:
    links: list[EthtoolLink] = []
    by_name: dict[tuple[str | None, str], EthtoolLink] = {}
    info: dict[int, int] = {}  # id(link) -> `ethtool -i` keys seen
    several = len({h for h, (_, out) in zip(hosts, sections) if h and out.strip()}) > 1
    settings_blocks: set[int] = set()  # links whose output has its 'Settings for' line
    host: str | None = None

    def link_for(name: str | None, settings: bool = False) -> EthtoolLink:
        """The link of NAME on this host; a second `Settings for NAME` block (another node, or a later run) is a new
        link, not an overwrite of the first one's speed."""
        old = by_name.get((host, name)) if name is not None else None
        if old is not None and not (settings and (old.speed is not None or old.link_detected is not None)):
            return old
        link = EthtoolLink(name, None, None, None, None, None, host=host)
        links.append(link)
        if name is not None:
            by_name[(host, name)] = link
        return link

    for (command, output), section_host in zip(sections, hosts) if sections else [((None, text), None)]:
        host = section_host if several else None
        m = COMMAND.search(command or "")
        info_only = bool(m and re.search(r"(?:^|\s)(?:-i|--driver)\b", m["flags"] or ""))
        current = link_for(m["iface"], settings=not info_only) if m else None
        for line in output.splitlines():
            s = line.strip()
            if (h := re.match(r"^Settings for (\S+?):$", s)):
                if not (current is not None and current.interface == h[1] and current.speed is None
                        and current.link_detected is None):
                    current = link_for(h[1], settings=True)
                settings_blocks.add(id(current))
                continue
            if ":" not in s:
                continue
            key, _, value = s.partition(":")
            value = value.strip()
            if key in _INFO_KEYS and current is not None:
                info[id(current)] = info.get(id(current), 0) + 1
            if key == "driver" and current is not None and current.driver is not None and current.driver_version is None:
                raise ParseError("ethtool", "'driver:' then 'version:' (ethtool -i): this driver line is repeated", line)
            if key == "driver" and (current is None or current.driver is not None):
                current = link_for(None)  # an `ethtool -i` block without its command line
                info[id(current)] = 1
            if key == "Speed" and current is not None and current.interface is None and current.speed is not None:
                current = link_for(None)  # `for i in ...; do ethtool $i | grep Speed; done`: one unnamed link per line
            if current is None:
                if key not in ("Speed", "Duplex", "Lanes", "Link detected", "Port", "Auto-negotiation"):
                    continue
                current = link_for(None)
            if key in CHECKED and not CHECKED[key].fullmatch(value):
                # a value cut short or garbled reads as no value ("unknown"), which the checks would take for no link
                raise ParseError("ethtool", f"a {key} value ({CHECKED[key].pattern})", line)
            if key == "Speed":
                current.speed, current.speed_mbps = value, _speed(value)
            elif key == "Duplex":
                current.duplex = value.lower() if value.lower() in ("full", "half") else None
            elif key == "Lanes":
                current.lanes = int(value) if value.isdigit() else None
            elif key == "Link detected":
                # ethtool >= 5.10 adds the driver's reason on netlink: "no (No cable)", "no (Autoneg, No partner detected)"
                current.link_detected = {"yes": True, "no": False}.get(value.split("(")[0].strip().lower())
            elif key == "Port":
                current.port = _value(value)
            elif key == "Auto-negotiation":
                current.auto_negotiation = {"on": True, "off": False}.get(value.lower())
            elif key == "driver":
                current.driver = _value(value)
            elif key == "version" and current.driver is not None:
                current.driver_version = _value(value)
            elif key == "firmware-version":
                fw = _value(value)
                if fw and (p := re.fullmatch(r"(.+?)\s*\((\w+)\)", fw)):
                    current.firmware, current.psid = p[1], p[2]
                else:
                    current.firmware = fw
            elif key == "bus-info":
                current.bus_info = _value(value)
    # `ethtool IFACE` ends with Link detected (a driver may print no Speed): a "Settings for" block without it was cut.
    for link in links:
        if id(link) in settings_blocks and link.link_detected is None:
            raise ParseError("ethtool", f"'Link detected:' at the end of the settings of {link.interface} (the output "
                                        "is cut)", text)
    links = [link for link in links if link.has_facts(info.get(id(link), 0))]
    if not links:
        raise ParseError("ethtool", "'Speed: 200000Mb/s' / 'Link detected: yes' (output of `ethtool IFACE`) or `ethtool -i IFACE`", text)
    return links
