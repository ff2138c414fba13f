"""ufw: `ufw status`, `status verbose`, `status numbered`, inactive; and /etc/ufw/user.rules.

A rule's ends are kept as ufw prints them and split into address, port, protocol, app, v6.
"""

import ipaddress
import re
from dataclasses import dataclass, field

from ._text import ParseError, parser

RULE = re.compile(
    r"^(?:\[\s*(?P<num>\d+)\]\s+)?(?P<to>.+?)\s+(?P<action>ALLOW|DENY|REJECT|LIMIT)(?:\s+(?P<dir>IN|OUT|FWD))?\s+(?P<from>.+?)"
    r"(?:\s+\(out\))?\s*$"
)
PORT = re.compile(r"^\d+(?:[,:]\d+)*(?:/(?:tcp|udp))?$")


@dataclass(frozen=True)
class Endpoint:
    address: str  # "any" or an address/network
    port: str | None  # "22", "137,138", "6000:6007"
    proto: str | None  # tcp | udp | None (both)
    app: str | None
    v6: bool

    def covers_address(self, network: str) -> bool:
        """True when every address of `network` matches this end."""
        if self.address == "any":
            return True
        try:
            return ipaddress.ip_network(network, strict=False).subnet_of(ipaddress.ip_network(self.address, strict=False))
        except (ValueError, TypeError):
            return False

    def covers_port(self, port: int, proto: str) -> bool:
        if self.port is None:
            return self.proto in (None, proto)
        if self.proto not in (None, proto):
            return False
        for part in self.port.split(","):
            lo, _, hi = part.partition(":")
            if int(lo) <= port <= int(hi or lo):
                return True
        return False


def endpoint(text: str) -> Endpoint:
    """'Anywhere', '22/tcp (OpenSSH (v6))', '192.168.0.1 25/tcp', '2001:db8::/32 137,138/udp (Samba)'."""
    text = text.strip()
    v6 = "(v6)" in text
    text = re.sub(r"\s*\(v6\)", "", text)
    app = None
    if (m := re.search(r"\s*\((.*)\)$", text)):
        app, text = m[1].strip() or None, text[: m.start()]
    address, port, proto = "any", None, None
    for token in text.split():
        if PORT.match(token):
            port, _, proto = token.partition("/")
            proto = proto or None
        elif token != "Anywhere":
            address = token
    return Endpoint(address, port, proto, app, v6 or ":" in address)


@dataclass(frozen=True)
class UfwRule:
    to: Endpoint
    action: str  # ALLOW | DENY | REJECT | LIMIT
    direction: str  # IN | OUT | FWD
    source: Endpoint
    number: int | None = None


@dataclass
class UfwStatus:
    active: bool
    logging: str | None = None
    default_incoming: str | None = None
    default_outgoing: str | None = None
    default_routed: str | None = None
    rules: list[UfwRule] = field(default_factory=list)

    def allows(self, source: str, port: int | None = None, proto: str = "tcp") -> bool:
        """First matching rule wins, as in ufw; then the incoming default."""
        for rule in self.rules:
            if rule.direction != "IN" or rule.to.v6 or rule.source.v6:
                continue
            if not rule.source.covers_address(source) or rule.source.port is not None:
                continue
            if port is None and (rule.to.port is not None or rule.to.address != "any"):
                continue
            if port is not None and not rule.to.covers_port(port, proto):
                continue
            return rule.action == "ALLOW"
        return self.default_incoming == "allow" if self.default_incoming else not self.active


@parser
def parse_status(text: str) -> UfwStatus:
    m = re.search(r"^Status:\s*(active|inactive)", text, re.M)
    if not m:
        raise ParseError("ufw_status", "'Status: active' or 'Status: inactive' (output of `ufw status`)", text)
    status = UfwStatus(active=m[1] == "active")
    if (m := re.search(r"^Logging:\s*(.+)$", text, re.M)):
        status.logging = m[1].strip()
    if (m := re.search(r"^Default:\s*(.+)$", text, re.M)):
        for value, chain in re.findall(r"(\w+) \((incoming|outgoing|routed)\)", m[1]):
            setattr(status, f"default_{chain}", value)
    in_table = False
    for line in text.splitlines():
        if re.match(r"^\s*--\s+-+\s+--", line):
            in_table = True
            continue
        if not in_table or not line.strip():
            continue
        r = RULE.match(line.rstrip())
        if r:
            status.rules.append(UfwRule(endpoint(r["to"]), r["action"], r["dir"] or "IN", endpoint(r["from"]),
                                        int(r["num"]) if r["num"] else None))
    return status


# ---- /etc/ufw/user.rules -------------------------------------------------------

TUPLE = re.compile(r"^### tuple ### (?P<body>.+)$")


@dataclass(frozen=True)
class RuleTuple:
    action: str  # allow | deny | reject | limit (with _log suffixes stripped)
    proto: str  # any | tcp | udp
    dport: str
    dst: str
    sport: str
    src: str
    direction: str  # in | out
    app: str | None = None


@dataclass
class UserRules:
    tuples: list[RuleTuple]
    iptables_rules: int  # "-A ..." lines, all chains

    def allows(self, source: str, port: int | None = None, proto: str = "tcp") -> bool:
        for t in self.tuples:
            if t.direction != "in" or t.action != "allow":
                continue
            src = Endpoint("any" if t.src in ("0.0.0.0/0", "any") else t.src, None, None, None, False)
            dst = Endpoint("any", None if t.dport == "any" else t.dport, None if t.proto == "any" else t.proto, None, False)
            if not src.covers_address(source):
                continue
            if port is None and t.dport == "any":
                return True
            if port is not None and dst.covers_port(port, proto):
                return True
        return False


@parser
def parse_user_rules(text: str) -> UserRules:
    if "*filter" not in text and "### RULES ###" not in text:
        raise ParseError("ufw_user_rules", "an iptables-restore file with '*filter' and '### RULES ###' (/etc/ufw/user.rules)", text)
    tuples = []
    for line in text.splitlines():
        m = TUPLE.match(line.strip())
        if not m:
            continue
        parts = m["body"].split()
        if len(parts) < 7:
            continue
        app = None
        # ufw appends app names after the direction: "... in - OpenSSH" or "... in OpenSSH -"
        if len(parts) > 7:
            app = next((p for p in parts[7:] if p != "-"), None)
        tuples.append(RuleTuple(parts[0].split("_")[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6], app))
    return UserRules(tuples, sum(1 for line in text.splitlines() if line.startswith("-A ")))
