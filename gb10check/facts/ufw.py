"""ufw: `ufw status`, `status verbose`, `status numbered`, inactive; and /etc/ufw/user.rules.

A rule's ends are kept as ufw prints them and split into address, port, protocol, app, v6.
"""

import ipaddress
import re
from dataclasses import dataclass, field

from ._text import ParseError, parser

ACTIONS = r"ALLOW|DENY|REJECT|LIMIT"
# ufw prints "%-26s %-12s%-26s%s%s": To, "ACTION DIR" (DIR left out for incoming rules in plain `status`), From,
# then " (log)" / " (log-all)" / " (out)" / " (log, out)" attributes, then " # comment".
RULE = re.compile(
    rf"^(?:\[\s*(?P<num>\d+)\]\s*)?(?P<to>.+?)\s+(?P<action>{ACTIONS})(?:\s+(?P<dir>IN|OUT|FWD))?\s+(?P<from>.+?)"
    r"(?:\s+\((?P<attribs>(?:log|log-all|out|in)(?:,\s*(?:log|log-all|out|in))*)\))?(?:\s+#\s?(?P<comment>.*?))?\s*$"
)
PORT = re.compile(r"^\d+(?::\d+)?(?:,\d+(?::\d+)?)*(?:/(?:tcp|udp))?$")
PROTOS = ("tcp", "udp", "ipv6", "esp", "ah", "igmp", "gre", "vrrp")


def _address(token: str) -> tuple[str, str | None] | None:
    """('10.0.0.0/8', None) for an address or network, ('any', 'tcp') for Anywhere/tcp, ('10.0.0.1', 'tcp') for 10.0.0.1/tcp."""
    base, proto = token, None
    for p in PROTOS:
        if token.endswith("/" + p):
            base, proto = token[: -len(p) - 1], p
            break
    if base == "Anywhere":
        return "any", proto
    try:
        ipaddress.ip_network(base, strict=False)
    except ValueError:
        return None
    return base, proto


@dataclass(frozen=True)
class Endpoint:
    address: str  # "any" or an address/network
    port: str | None  # "22", "137,138", "6000:6007"
    proto: str | None  # tcp | udp | None (both)
    app: str | None  # application profile: "OpenSSH", "Apache Full"
    v6: bool
    interface: str | None = None  # "on eth0"

    def covers_address(self, network: str) -> bool:
        """True when every address of `network` matches this end."""
        if self.address == "any":
            return True
        try:
            return ipaddress.ip_network(network, strict=False).subnet_of(ipaddress.ip_network(self.address, strict=False))
        except (ValueError, TypeError):
            return False

    def covers_port(self, port: int, proto: str) -> bool:
        if self.proto not in (None, proto):
            return False
        if self.port is None:
            return self.app is None  # an app profile's ports are not printed in plain `status`: unknown, not all
        for part in self.port.split(","):
            lo, _, hi = part.partition(":")
            if int(lo) <= port <= int(hi or lo):
                return True
        return False


def endpoint(text: str) -> Endpoint:
    """'Anywhere', '22/tcp (OpenSSH (v6))', '192.168.0.1 25/tcp', '2001:db8::/32 137,138/udp (Samba)', 'Apache Full (v6)',
    'Anywhere on enp1s0f0np0', '22/tcp (v6) on eth0', 'Anywhere/tcp', '10.0.0.0/8/udp'."""
    text = text.strip()
    interface = None
    if (m := re.search(r"\s+on\s+(\S+)$", text)):
        interface, text = m[1], text[: m.start()]
    v6 = "(v6)" in text
    text = re.sub(r"\s*\(v6\)", "", text)
    app = None
    if (m := re.search(r"\s*\((.*)\)$", text)):
        app, text = m[1].strip() or None, text[: m.start()]
    address, port, proto = "any", None, None
    words = []
    for token in text.split():
        if PORT.match(token):
            port, _, proto = token.partition("/")
            proto = proto or None
        elif (a := _address(token)) is not None:
            address, proto = a[0], a[1] or proto
        else:
            words.append(token)
    if words:  # plain `status` prints an app profile by name: "OpenSSH", "Apache Full"
        app = " ".join(words) if app is None else f"{' '.join(words)} ({app})"
    return Endpoint(address, port, proto, app, v6 or ":" in address, interface)


@dataclass(frozen=True)
class UfwRule:
    to: Endpoint
    action: str  # ALLOW | DENY | REJECT | LIMIT
    direction: str  # IN | OUT | FWD
    source: Endpoint
    number: int | None = None
    log: str | None = None  # "log" | "log-all"
    comment: str | None = None


@dataclass
class UfwStatus:
    active: bool
    logging: str | None = None
    default_incoming: str | None = None
    default_outgoing: str | None = None
    default_routed: str | None = None
    new_profiles: str | None = None
    rules: list[UfwRule] = field(default_factory=list)

    def allows(self, source: str, port: int | None = None, proto: str = "tcp", netdevs: set[str] | None = None) -> bool:
        """First matching rule wins, as in ufw; then the incoming default. A rule bound to an interface (`on docker0`)
        applies only where traffic arrives on it: given `netdevs` (the QSFP ones), only rules on those count. LIMIT
        accepts (it drops only a source opening more than 6 connections in 30 s)."""
        for rule in self.rules:
            if rule.direction != "IN" or rule.to.v6 or rule.source.v6:
                continue
            if netdevs is not None and rule.to.interface is not None and rule.to.interface not in netdevs:
                continue
            if not rule.source.covers_address(source) or rule.source.port is not None or rule.source.app:
                continue
            if port is None and (rule.to.port is not None or rule.to.address != "any" or rule.to.app or rule.to.proto):
                continue
            if port is not None and not rule.to.covers_port(port, proto):
                continue
            return rule.action in ("ALLOW", "LIMIT")
        return self.default_incoming == "allow" if self.default_incoming else not self.active


@parser
def parse_status(text: str) -> UfwStatus:
    m = re.search(r"^Status:\s*(active|inactive)", text, re.M)
    body = [line.strip() for line in text.splitlines() if line.strip()]
    # `ufw status | grep 169.254`, or a paste that starts at the table: rule lines alone. ufw lists rules only when it
    # is active, so they say that much; every line must be a rule (or the table's header) to be read so.
    rules_only = not m and body and all(RULE.match(line) or re.match(r"^(?:To\s+Action\s+From|--\s+-+\s+--+)$", line)
                                        for line in body) and any(RULE.match(line) for line in body)
    if not m and not rules_only:
        raise ParseError("ufw_status", "'Status: active' or 'Status: inactive' (output of `ufw status`)", text)
    status = UfwStatus(active=True if rules_only else m[1] == "active")
    if (m := re.search(r"^Logging:\s*(.+)$", text, re.M)):
        status.logging = m[1].strip()
    if (m := re.search(r"^Default:\s*(.+)$", text, re.M)):
        for value, chain in re.findall(r"(\w+) \((incoming|outgoing|routed)\)", m[1]):
            setattr(status, f"default_{chain}", value)
    if (m := re.search(r"^New profiles:\s*(\S+)", text, re.M)):
        status.new_profiles = m[1]
    in_table = rules_only
    for line in text.splitlines():
        if re.match(r"^\s*--\s+-+\s+--", line):
            in_table = True
            continue
        if not in_table or not line.strip():
            continue
        r = RULE.match(line.strip()) if line.count("(") == line.count(")") else None  # "(Sa": an app name cut short
        if r and r["from"] in ("IN", "OUT", "FWD"):
            r = None  # "ALLOW IN" and nothing after it: the source was cut off
        if not r:
            if re.match(r"^To\s+Action\s+From$", line.strip()):
                continue  # the header again (a rules-only paste starts with it)
            # a rule line cut short, or another tool's: never a rule fewer (the first matching rule decides)
            raise ParseError("ufw_status", "rule lines 'TO  ACTION [DIR]  FROM' under the table's header", line)
        attribs = [a.strip() for a in (r["attribs"] or "").split(",")]
        direction = r["dir"] or ("OUT" if "out" in attribs else "IN")
        log = next((a for a in attribs if a.startswith("log")), None)
        rule = UfwRule(endpoint(r["to"]), r["action"], direction, endpoint(r["from"]), int(r["num"]) if r["num"] else None,
                       log, r["comment"] or None)
        if rule in status.rules or (rule.number is not None and any(o.number == rule.number for o in status.rules)):
            raise ParseError("ufw_status", "each rule once (ufw lists no rule twice)", line)
        status.rules.append(rule)
    return status


# ---- /etc/ufw/user.rules -------------------------------------------------------

TUPLE = re.compile(r"^### tuple ###\s*(?P<body>.+)$")


@dataclass(frozen=True)
class RuleTuple:
    action: str  # allow | deny | reject | limit (with _log suffixes stripped)
    proto: str  # any | tcp | udp
    dport: str
    dst: str
    sport: str
    src: str
    direction: str  # in | out
    app: str | None = None  # the destination app profile (dapp), spaces unescaped
    source_app: str | None = None
    interface_in: str | None = None
    interface_out: str | None = None
    route: bool = False  # a `ufw route` rule (forwarded traffic)
    log: str | None = None  # log | log-all
    comment: str | None = None  # decoded from ufw's hex


@dataclass
class UserRules:
    tuples: list[RuleTuple]
    iptables_rules: int  # "-A ..." lines, all chains
    complete: bool = True  # ends with COMMIT (ufw itself calls a file without it truncated)

    def allows(self, source: str, port: int | None = None, proto: str = "tcp", netdevs: set[str] | None = None) -> bool:
        """As UfwStatus.allows, on the tuples ufw persisted."""
        for t in self.tuples:
            if t.direction != "in" or t.action not in ("allow", "limit") or t.route:
                continue
            if netdevs is not None and t.interface_in is not None and t.interface_in not in netdevs:
                continue
            src = Endpoint("any" if t.src in ("0.0.0.0/0", "::/0", "any") else t.src, None, None, None, False)
            dst = Endpoint("any", None if t.dport == "any" else t.dport, None if t.proto == "any" else t.proto, None, False)
            if not src.covers_address(source) or t.sport != "any" or t.source_app:
                continue
            if port is None and t.dport == "any" and t.proto == "any" and t.dst in ("0.0.0.0/0", "::/0", "any"):
                return True
            if port is not None and dst.covers_port(port, proto):
                return True
        return False


def _tuple(body: str) -> RuleTuple | None:
    """ufw's own reading: 6 or 8 fields (old, direction in), or 7 or 9 (direction last, `in_eth0`, `in_eth0!out_eth1`);
    with 8 or 9 the 7th and 8th are the destination and source apps ('-' for none, spaces as %20)."""
    comment = None
    if " comment=" in body:
        body, _, hexed = body.partition(" comment=")
        try:
            comment = bytes.fromhex(hexed.strip()).decode("utf-8", "replace")
        except ValueError:
            comment = hexed.strip()
    parts = body.split()
    if not 6 <= len(parts) <= 9:
        return None
    direction, iface_in, iface_out = "in", None, None
    if len(parts) in (7, 9):
        last = parts[-1]
        direction = last.split("_")[0]
        for part in last.split("!"):
            kind, _, name = part.partition("_")
            if name:
                if kind == "in":
                    iface_in = name
                elif kind == "out":
                    iface_out = name
    if direction not in ("in", "out"):
        return None
    app = sapp = None
    if len(parts) >= 8:
        app = None if parts[6] == "-" else parts[6].replace("%20", " ")
        sapp = None if parts[7] == "-" else parts[7].replace("%20", " ")
    action = parts[0]
    route = action.startswith("route:")
    action = action.removeprefix("route:")
    base, _, log = action.partition("_")
    return RuleTuple(base, parts[1], parts[2], parts[3], parts[4], parts[5], direction, app, sapp, iface_in, iface_out,
                     route, log or None, comment)


@parser
def parse_user_rules(text: str) -> UserRules:
    if "*filter" not in text and "### RULES ###" not in text:
        raise ParseError("ufw_user_rules", "an iptables-restore file with '*filter' and '### RULES ###' (/etc/ufw/user.rules)", text)
    tuples = []
    for line in text.splitlines():
        m = TUPLE.match(line.strip())
        if m and (t := _tuple(m["body"])):
            tuples.append(t)
    lines = [line.strip() for line in text.splitlines()]
    return UserRules(tuples, sum(1 for line in lines if line.startswith("-A ")), "COMMIT" in lines)
