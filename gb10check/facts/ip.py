"""`ip addr` (text) and `ip -j addr` (JSON): interfaces with state, MTU and addresses."""

import json
import re
from dataclasses import dataclass, field

from ._text import ParseError, is_prompt, parser


@dataclass(frozen=True)
class Address:
    family: str  # inet | inet6
    address: str
    prefixlen: int
    scope: str | None

    @property
    def interface(self) -> str:
        return f"{self.address}/{self.prefixlen}"


@dataclass
class Interface:
    name: str
    index: int | None
    state: str  # up | down | unknown (operstate)
    mtu: int | None
    flags: list[str] = field(default_factory=list)
    mac: str | None = None
    addresses: list[Address] = field(default_factory=list)

    @property
    def ipv4(self) -> list[str]:
        return [a.interface for a in self.addresses if a.family == "inet"]


HEAD = re.compile(r"^\s*(?P<index>\d+):\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>(?P<rest>.*)$")
INET = re.compile(r"^\s*(?P<family>inet6?)\s+\**(?P<addr>[0-9a-fA-F.:]+)\**/(?P<prefix>\d+)(?:.*?\bscope\s+(?P<scope>\w+))?")


def _state(value: str | None) -> str:
    value = (value or "").lower()
    return value if value in ("up", "down") else "unknown"


@parser
def parse_text(text: str) -> list[Interface]:
    ifaces: list[Interface] = []
    for line in text.splitlines():
        if is_prompt(line):
            continue
        if (h := HEAD.match(line)):
            rest = h["rest"]
            mtu = re.search(r"\bmtu\s+(\d+)", rest)
            state = re.search(r"\bstate\s+(\S+)", rest)
            ifaces.append(Interface(h["name"], int(h["index"]), _state(state[1] if state else None),
                                    int(mtu[1]) if mtu else None, h["flags"].split(",")))
        elif ifaces and (a := INET.match(line)):
            ifaces[-1].addresses.append(Address(a["family"], a["addr"], int(a["prefix"]), a["scope"]))
        elif ifaces and (mac := re.match(r"^\s*link/\w+\s+([0-9a-f:]{17})", line)):
            ifaces[-1].mac = mac[1]
    if not ifaces:
        raise ParseError("ip_addr", "'N: IFNAME: <FLAGS> mtu ...' blocks (output of `ip addr`)", text)
    return ifaces


@parser
def parse_json(text: str) -> list[Interface]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError("ip_j_addr", f"a JSON array (output of `ip -j addr`) ({exc.msg})", text) from None
    if not isinstance(data, list) or not all(isinstance(i, dict) and "ifname" in i for i in data):
        raise ParseError("ip_j_addr", "a JSON array of objects with 'ifname'", text)
    return [
        Interface(
            name=i["ifname"],
            index=i.get("ifindex"),
            state=_state(str(i.get("operstate") or "")),
            mtu=i.get("mtu"),
            flags=[str(f) for f in i.get("flags") or [] if isinstance(f, str)],
            mac=i.get("address"),
            addresses=[Address(str(a.get("family", "")), str(a.get("local", "")), a["prefixlen"], a.get("scope"))
                       for a in i.get("addr_info") or [] if isinstance(a, dict) and isinstance(a.get("prefixlen"), int)],
        )
        for i in data
    ]
