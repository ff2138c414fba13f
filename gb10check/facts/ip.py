"""`ip addr` (text, also `-br`) and `ip -j addr` (JSON): interfaces with state, MTU and addresses.

Text: "N: NAME[@LINK]: <FLAGS> mtu M qdisc Q [master BOND] state S ..." then "link/TYPE ADDR brd ..." (ether,
loopback, infiniband with a 20-byte address, none), "altname X" lines, and "inet[6] ADDR/P [peer ADDR/P]
[metric N] [brd B] scope S [flags ...] [LABEL]" each followed by "valid_lft ... preferred_lft ...".
JSON: one array, on one line or re-wrapped; `ip -4 -j addr` leaves `{}` for interfaces it filtered out.
The state is the operstate: "up", "down" (DOWN, LOWERLAYERDOWN, NOTPRESENT, DORMANT) or "unknown".
"""

import json
import re
from dataclasses import dataclass, field

from ._text import ParseError, is_prompt, parser

FOREVER = 4294967295  # what ip -j prints for "forever"


@dataclass(frozen=True)
class Address:
    family: str  # inet | inet6
    address: str
    prefixlen: int
    scope: str | None
    flags: tuple[str, ...] = ()  # dynamic, noprefixroute, mngtmpaddr, secondary, temporary, deprecated, tentative ...
    valid_lft_s: int | None = None  # None = forever (or not shown)
    peer: str | None = None  # point-to-point: the peer's address/prefix

    @property
    def interface(self) -> str:
        return f"{self.address}/{self.prefixlen}"


@dataclass
class Interface:
    name: str
    index: int | None
    state: str  # up | down | unknown (from the operstate)
    mtu: int | None
    flags: list[str] = field(default_factory=list)
    mac: str | None = None  # the link-layer address as printed (20 bytes on InfiniBand)
    addresses: list[Address] = field(default_factory=list)
    operstate: str | None = None  # as printed: UP, DOWN, UNKNOWN, LOWERLAYERDOWN ...
    link_type: str | None = None  # ether, loopback, infiniband, none ...
    master: str | None = None  # the bond or bridge this interface is enslaved to
    altnames: list[str] = field(default_factory=list)

    @property
    def ipv4(self) -> list[str]:
        return [a.interface for a in self.addresses if a.family == "inet"]


HEAD = re.compile(r"^\s*(?:(?P<index>\d+):\s+)?(?P<name>[^:@\s]+)(?:@(?P<link>[^:\s]+))?:\s+<(?P<flags>[^>]*)>(?P<rest>.*)$")
INET = re.compile(r"^\s*(?P<family>inet6?)\s+\**(?P<addr>[0-9a-fA-F.:]+)\**(?:/(?P<prefix>\d+))?"
                  r"(?:\s+peer\s+(?P<peer>[0-9a-fA-F.:]+(?:/\d+)?))?(?P<rest>(?:\s.*)?)$")
LINK = re.compile(r"^\s*link/(?P<type>[\w-]+)(?:\s+(?P<addr>[0-9a-fA-F:]+)\b)?")
LFT = re.compile(r"^\s*valid_lft\s+(?P<valid>\S+)\s+preferred_lft\s+\S+")
# Lines of `ip addr` that no check reads: SR-IOV VF lines, `ip -d`'s details, `--` between grep -A groups.
OTHER_LINE = re.compile(r"^\s*(?:vf \d+\b|prop list\b|--$|(?:openvswitch|bridge|bond|vlan|vxlan|macvlan|veth|tun|"
                        r"geneve|ipvlan|team)\b.*|\w+ \S+ (?:\w+ \S+ )*numtxqueues\b)")
ALTNAME = re.compile(r"^\s*altname\s+(?P<name>\S+)\s*$")
ADDR_FLAGS = {"dynamic", "noprefixroute", "mngtmpaddr", "secondary", "temporary", "deprecated", "tentative", "dadfailed",
              "optimistic", "home", "nodad", "permanent", "stable-privacy", "autojoin"}
# `ip -o addr`: "N: NAME    inet ADDR/P ... scope S NAME\       valid_lft ..." (the index may be gone: see _text's srun labels).
ONELINE = re.compile(r"^\s*(?:(?P<index>\d+):\s+)?(?P<name>[^:@\s]+)(?:@\S+)?\s+(?=inet6?\s)")
# -br prints each address as "ADDR/P", or "LOCAL peer PEER/P" (point-to-point), and "metric N" after it where the
# address has a route priority (DHCP on systemd-networkd: "192.168.1.50/24 metric 100").
BRIEF_ADDR = re.compile(r"(?P<addr>[0-9a-fA-F.:]+)(?:\s+peer\s+(?P<peer>[0-9a-fA-F.:]+))?/(?P<prefix>\d+)(?:\s+metric\s+\d+)?")
BRIEF = re.compile(r"^(?P<name>[^\s@]+)(?:@\S+)?\s+(?P<state>UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT|NOTPRESENT|TESTING)"
                   r"(?P<addrs>(?:\s+" + re.sub(r"\?P<\w+>", "", BRIEF_ADDR.pattern) + r")*)\s*$")
DOWN_STATES = {"down", "lowerlayerdown", "notpresent", "dormant"}


def _state(value: str | None) -> str:
    value = (value or "").lower()
    return "up" if value == "up" else "down" if value in DOWN_STATES else "unknown"


def _family(address: str) -> str:
    return "inet6" if ":" in address else "inet"


def _text_address(a: re.Match) -> Address:
    words = a["rest"].split()
    scope = words[words.index("scope") + 1] if "scope" in words[:-1] else None
    prefix = int(a["prefix"]) if a["prefix"] else (32 if a["family"] == "inet" else 128)
    return Address(a["family"], a["addr"], prefix, scope, tuple(w for w in words if w in ADDR_FLAGS), peer=a["peer"])


def _parse_brief(text: str) -> list[Interface]:
    ifaces = []
    for line in text.splitlines():
        if not line.strip():
            continue
        b = BRIEF.match(line.strip())
        if not b:
            return []
        addrs = [Address(_family(a["addr"]), a["addr"], int(a["prefix"]), None, peer=f"{a['peer']}/{a['prefix']}" if a["peer"] else None)
                 for a in BRIEF_ADDR.finditer(b["addrs"])]
        ifaces.append(Interface(b["name"], None, _state(b["state"]), None, operstate=b["state"], addresses=addrs))
    return ifaces


def _parse_inet_lines(text: str) -> list[Interface]:
    """`ip addr | grep inet` (or `grep 169.254`): address lines alone. An IPv4 line ends with its label, the interface's
    name (`eth0:1` for an alias of eth0); an IPv6 line names none, so it is left out. Nothing is known of the states."""
    ifaces: dict[str, Interface] = {}
    for line in text.splitlines():
        if not line.strip() or line.strip() == "--" or is_prompt(line) or LFT.match(line):
            continue
        a = INET.match(line)
        if not a or not (a["prefix"] or a["peer"]):
            return []
        words = a["rest"].split()
        if a["family"] == "inet6":
            continue
        if len(words) < 3 or words[-1] in ADDR_FLAGS or words[-2] in ("scope", "brd", "metric", "proto") \
                or not re.fullmatch(r"[^\s/:]+(?::[\w.-]+)?", words[-1]):
            return []
        name = words[-1].split(":")[0]
        iface = ifaces.setdefault(name, Interface(name, None, "unknown", None))
        iface.addresses.append(_text_address(a))
    return list(ifaces.values())


@parser
def parse_text(text: str) -> list[Interface]:
    ifaces: list[Interface] = []
    unplaced: list[str] = []
    lft_of = None  # (interface, address) the last valid_lft line belonged to
    lines = [part for line in text.splitlines() for part in re.split(r"\\\s+", line)]  # -o: "\" joins a block's lines
    for line in lines:
        if is_prompt(line):
            continue
        if (o := ONELINE.match(line)) and INET.match(line[o.end():]):
            if not ifaces or ifaces[-1].name != o["name"]:
                ifaces.append(Interface(o["name"], int(o["index"]) if o["index"] else None, "unknown", None))
            line = line[o.end():]
        if (h := HEAD.match(line)) and (h["index"] or " mtu " in h["rest"]):
            rest = h["rest"].split()

            def after(word: str) -> str | None:
                return rest[rest.index(word) + 1] if word in rest[:-1] else None

            mtu = after("mtu")
            if after("state") is None:  # every `ip addr` head says its state: this one is cut
                raise ParseError("ip_addr", "an interface head with its state ('... mtu 1500 qdisc mq state UP ...')", line)
            ifaces.append(Interface(h["name"], int(h["index"]) if h["index"] else None, _state(after("state")),
                                    int(mtu) if mtu and mtu.isdigit() else None, [f for f in h["flags"].split(",") if f],
                                    operstate=after("state"), master=after("master")))
        elif not ifaces:
            if line.strip():
                unplaced.append(line)
            continue
        elif (a := INET.match(line)) and (a["prefix"] or a["peer"] or a["rest"].split()[:1] in (["scope"], ["brd"], ["metric"])):
            if "scope" not in a["rest"].split():  # ip prints every address with its scope: a line without one is cut
                raise ParseError("ip_addr", "an address line with its scope ('inet ADDR/PREFIX ... scope link ...')", line)
            address = _text_address(a)
            if any((x.family, x.address, x.prefixlen) == (address.family, address.address, address.prefixlen)
                   for x in ifaces[-1].addresses):
                raise ParseError("ip_addr", f"each address once on {ifaces[-1].name}", line)
            ifaces[-1].addresses.append(address)
        elif (lft := LFT.match(line)) and ifaces[-1].addresses:
            if lft_of == (len(ifaces), len(ifaces[-1].addresses)):  # one per address: the address line above it was lost
                raise ParseError("ip_addr", "one valid_lft line per address line", line)
            lft_of = (len(ifaces), len(ifaces[-1].addresses))
            valid = lft["valid"]
            if (secs := re.fullmatch(r"(\d+)sec", valid)):
                last = ifaces[-1].addresses[-1]
                ifaces[-1].addresses[-1] = Address(last.family, last.address, last.prefixlen, last.scope, last.flags,
                                                   int(secs[1]), last.peer)
        elif (lk := LINK.match(line)):
            if ifaces[-1].link_type is not None:  # one link/ line per interface: the next one's head was lost
                raise ParseError("ip_addr", f"one link/ line per interface ({ifaces[-1].name} has two)", line)
            if lk["type"] in ("ether", "loopback") and lk["addr"] and len(lk["addr"].split(":")) != 6:
                raise ParseError("ip_addr", "a MAC address of 6 bytes after link/ether", line)
            ifaces[-1].link_type = lk["type"]
            ifaces[-1].mac = lk["addr"].lower() if lk["addr"] and ":" in lk["addr"] else None
        elif (alt := ALTNAME.match(line)):
            ifaces[-1].altnames.append(alt["name"])
        elif line.strip() and not OTHER_LINE.match(line):
            # an address or interface line cut short, or another tool's: never an address (or an interface) fewer, nor
            # the next interface's lines read as this one's
            raise ParseError("ip_addr", "'ip addr' lines (an interface's head, link/, inet/inet6 ADDR/PREFIX, valid_lft, "
                                        "altname)", line)
    if ifaces and unplaced:
        raise ParseError("ip_addr", "'N: IFNAME: <FLAGS> mtu ...' before an interface's lines", unplaced[0])
    if len({i.name for i in ifaces}) != len(ifaces) and not any(i.index is None for i in ifaces):
        raise ParseError("ip_addr", "each interface once", text)
    if not ifaces:
        ifaces = _parse_brief(text) or _parse_inet_lines(text)
    if not ifaces:
        raise ParseError("ip_addr", "'N: IFNAME: <FLAGS> mtu ...' blocks (output of `ip addr`)", text)
    return ifaces


def _json_values(text: str) -> list:
    """Every top-level JSON value in the text (several `ip -j` runs may follow each other)."""
    decoder = json.JSONDecoder()
    values, pos = [], 0
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ParseError("ip_j_addr", f"a JSON array (output of `ip -j addr`) ({exc.msg})", text[pos:] or text) from None
        values.append(value)
    return values


def _json_address(a: dict) -> Address:
    valid = a.get("valid_life_time")
    peer = a.get("address") if a.get("address") != a.get("local") else None
    family = a.get("family") if a.get("family") in ("inet", "inet6") else _family(a["local"])
    return Address(family, a["local"], a["prefixlen"],
                   a.get("scope") if isinstance(a.get("scope"), str) else None,
                   tuple(k for k in a if k in ADDR_FLAGS and a[k] is True),
                   valid if isinstance(valid, int) and not isinstance(valid, bool) and valid != FOREVER else None,
                   f"{peer}/{a['prefixlen']}" if isinstance(peer, str) else None)


@parser
def parse_json(text: str) -> list[Interface]:
    values = _json_values(text)
    items = [i for v in values for i in (v if isinstance(v, list) else [v])]
    if not values or not all(isinstance(v, list) for v in values) or not all(isinstance(i, dict) for i in items):
        raise ParseError("ip_j_addr", "a JSON array of objects with 'ifname' (output of `ip -j addr`)", text)
    items = [i for i in items if i]  # `ip -4 -j addr` prints {} for interfaces without an IPv4 address
    if not items or not all(isinstance(i.get("ifname"), str) for i in items):
        raise ParseError("ip_j_addr", "a JSON array of objects with 'ifname'", text)

    def ints(value) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def items_of(value) -> list:
        return value if isinstance(value, list) else []

    return [
        Interface(
            name=i["ifname"],
            index=ints(i.get("ifindex")),
            state=_state(str(i.get("operstate") or "")),
            mtu=ints(i.get("mtu")),
            flags=[f for f in items_of(i.get("flags")) if isinstance(f, str)],
            mac=i.get("address") if isinstance(i.get("address"), str) else None,
            addresses=[_json_address(a) for a in items_of(i.get("addr_info"))
                       if isinstance(a, dict) and ints(a.get("prefixlen")) is not None and isinstance(a.get("local"), str)],
            operstate=i.get("operstate") if isinstance(i.get("operstate"), str) else None,
            link_type=i.get("link_type") if isinstance(i.get("link_type"), str) else None,
            master=i.get("master") if isinstance(i.get("master"), str) else None,
            altnames=[n for n in items_of(i.get("altnames")) if isinstance(n, str)],
        )
        for i in items
    ]


# ---- who answers on a port: `ping -6 -I PORT ff02::1` (gather.commands.link_peers) ---------------------------------------

@dataclass(frozen=True)
class PortPeers:
    """The IPv6 link-local addresses that answered an echo to all nodes (ff02::1) sent out of one port.

    ipv6_disabled: the port's net.ipv6.conf.PORT.disable_ipv6 (None: the line was not printed); error: ping's own
    refusal (no link-local address, no such device), when it sent nothing. A run that sent ends with its statistics."""

    ipv6_disabled: bool | None
    responders: tuple[str, ...]
    refused: bool = False  # ping could not send (its own "ping: ..." line: no link-local address, interval refused ...)


DISABLE_LINE = re.compile(r"^disable_ipv6 (?P<value>\S*)\s*$")
PING_HEAD = re.compile(r"^PING \S+\s*\(?")
REPLY = re.compile(r"^\d+ bytes from (?P<addr>[0-9a-fA-F:]+)(?:%[\w.@-]+)?: icmp_seq=\d+")
PING_WARNING = re.compile(r"^ping6?: Warning: ")  # "source address might be selected on device other than: PORT"
PING_ERROR = re.compile(r"^ping6?: (?P<why>.+)$")
STATS = re.compile(r"^\d+ packets transmitted, ")
PING_OTHER = re.compile(r"^(?:--- .* ping statistics ---|\d+ packets transmitted, .*|rtt .*|round-trip .*"
                        r"|From \S+ icmp_seq=\d+ .*|\s*)$")


@parser
def parse_port_peers(text: str) -> PortPeers:
    """`printf 'disable_ipv6 %s\\n' "$(cat /proc/sys/net/ipv6/conf/PORT/disable_ipv6)"; ping -6 -n -I PORT ff02::1 2>&1`:
    the sysctl's line, then ping's header and one line per reply (a node answering twice is one responder)."""
    disabled, responders, error, head, stats = None, [], None, False, False
    for line in text.splitlines():
        if (m := DISABLE_LINE.match(line)):
            if m["value"] not in ("0", "1", ""):
                raise ParseError("port_peers", "disable_ipv6 0 or 1 (the port's sysctl)", line)
            disabled = m["value"] != "0"  # empty: no /proc/sys/net/ipv6 (IPv6 off in the kernel)
        elif PING_HEAD.match(line):
            head = True
        elif (m := REPLY.match(line)):
            if not head:
                raise ParseError("port_peers", "ping's 'PING ff02::1 ...' line before its replies", line)
            if m["addr"].lower() not in responders:
                responders.append(m["addr"].lower())
        elif PING_WARNING.match(line):
            continue
        elif (m := PING_ERROR.match(line)):
            error = m["why"].strip()
        elif STATS.match(line):
            stats = True
        elif not PING_OTHER.match(line):
            raise ParseError("port_peers", "ping -6 lines (PING ..., N bytes from ADDR: icmp_seq=..., statistics)", line)
    if not head and error is None:
        raise ParseError("port_peers", "ping -6's 'PING ff02::1 ...' line or its error", text)
    if head and not stats:  # ping prints its statistics last: without them the output was cut
        raise ParseError("port_peers", "ping's 'N packets transmitted, ...' line after its replies", text)
    if disabled is None:  # the line the command prints first: without it, IPv6 off would read as nothing cabled
        raise ParseError("port_peers", "'disable_ipv6 N' before ping's lines", text)
    return PortPeers(disabled, tuple(sorted(responders)), error is not None and not head)  # who answered, not in what order


def link_local_owners(node: str, ifaces: list[Interface]) -> dict[str, tuple[str, str]]:
    """fe80:: address -> (node, interface) for every link-local IPv6 address of the node."""
    return {a.address.lower(): (node, i.name) for i in ifaces for a in i.addresses
            if a.family == "inet6" and a.address.lower().startswith("fe80:")}
