"""ufw: the QSFP subnets and the API port allowed, and persisted so they survive a reboot."""

import ipaddress
import re

from ..facts import ufw
from ..remedies import Code
from ..verdict import Finding


def judge(node: str, status: ufw.UfwStatus, user_rules: ufw.UserRules | None, ufw_conf: str, live_input: str,
          sources: list[str], ports: list[str], qsfp_netdevs: set[str] | None = None) -> list[Finding]:
    """The QSFP subnets allowed by a rule on any interface or on a QSFP netdev (one `on docker0` does not carry them);
    the ports (the API's, reached from the LAN) by a rule on any interface."""
    if not status.active:
        return []
    findings = []
    for source in sources:
        if not status.allows(source, netdevs=qsfp_netdevs):
            by_hand = _live_accepts(live_input, source)
            if by_hand:
                findings.append(Finding(Code.UFW_NOT_PERSISTED, node, f"{source} accepted only by a hand-made iptables rule "
                                        f"({by_hand.strip()})", f"a ufw rule allowing {source}", source=source))
            else:
                findings.append(Finding(Code.UFW_SOURCE, node, f"ufw active, default {status.default_incoming or '?'} incoming, "
                                        f"no rule allowing {source}", f"traffic from {source} allowed", source=source))
        elif user_rules is not None and not user_rules.allows(source, netdevs=qsfp_netdevs):
            findings.append(Finding(Code.UFW_NOT_PERSISTED, node, f"{source} allowed now but not in /etc/ufw/user.rules",
                                    "the rule persisted in /etc/ufw/user.rules", source=source))
    for port_proto in ports:
        port, proto = port_proto.split("/")
        if not (status.allows("0.0.0.0/0", int(port), proto) or all(status.allows(src, int(port), proto) for src in sources)):
            findings.append(Finding(Code.UFW_PORT, node, f"no ufw rule allowing {port_proto}", f"{port_proto} allowed",
                                    port=port_proto))
    if not re.search(r"^\s*ENABLED\s*=\s*\"?yes\"?\s*$", ufw_conf, re.M):  # a commented "#ENABLED=yes" does not count
        findings.append(Finding(Code.UFW_NOT_AT_BOOT, node, "ENABLED is not yes in /etc/ufw/ufw.conf",
                                "ufw enabled at boot (its rules loaded after a reboot)"))
    return findings


def _live_accepts(iptables_s: str, source: str) -> str | None:
    net = ipaddress.ip_network(source)
    for line in iptables_s.splitlines():
        parts = line.split()
        if "-s" in parts and "ACCEPT" in parts:
            try:
                if net.subnet_of(ipaddress.ip_network(parts[parts.index("-s") + 1], strict=False)):
                    return line
            except ValueError:
                continue
    return None
