"""Cabling: which node and port each link really reaches, judged against the cluster file's topology.

Discovery needs no daemon and no IPv4: every port has an IPv6 link-local address as soon as it is up, so an echo to all
nodes (ff02::1) sent out of one port is answered by exactly the ports on the other end of its cable (or, behind a switch,
by every port on that switch); each node's `ip -j addr` names the port that owns each answering address. LLDP would need
lldpd on every node; ARP needs the IPv4 addresses this check is meant to verify first.
"""

from ..cluster import port_of
from ..remedies import Code
from ..verdict import Finding

Port = tuple[str, str]  # (node, netdev)


def who(port: Port) -> str:
    return f"{port[0]} {port[1]}"


def reached_ports(me: Port, responders, owners: dict[str, Port]) -> tuple[list[Port], list[str]]:
    """(the cluster's ports that answered, other than `me`'s node; the addresses no node of the cluster owns)."""
    ports, strangers = [], []
    for addr in responders:
        owner = owners.get(addr)
        if owner is None:
            strangers.append(addr)
        elif owner[0] != me[0] and owner not in ports:
            ports.append(owner)
    return ports, strangers


def judge_cabling(me: Port, topology: str, expected: list[Port], peers, owners: dict[str, Port]) -> list[Finding]:
    """One link: the ports that answered on it (peers: facts.ip.PortPeers) against the ports it must reach.

    owners: every node's link-local address -> (node, interface). A port with IPv6 off cannot be judged: not checked."""
    node, netdev = me
    where = f"{node}:{netdev}"
    if peers.ipv6_disabled or peers.refused:
        why = (f"IPv6 is off on {netdev} (net.ipv6.conf.{netdev}.disable_ipv6=1)" if peers.ipv6_disabled
               else f"ping -6 on {netdev} could not send (its `ping: ...` line in the command's output says why)")
        return [Finding(Code.CABLING_UNKNOWN, where, why, "a link-local IPv6 address on the port to discover its peer",
                        netdev=netdev)]
    reached, strangers = reached_ports(me, peers.responders, owners)
    if sorted(reached) == sorted(expected):
        return []
    others = f"; also answered: {', '.join(strangers)} (no node of the cluster)" if strangers else ""
    seen = (f"its cable reaches {', '.join(map(who, reached))}" if reached else "its cable reaches nothing") + others
    should = f"{', '.join(map(who, expected)) or 'no port'} (topology: {topology})"
    if not reached:
        return [Finding(Code.CABLE_NOTHING, where, seen, should, netdev=netdev, should=', '.join(map(who, expected)))]
    if topology != "switch" and len(reached) > 1:
        return [Finding(Code.CABLE_SWITCHED, where, seen + " (a switch)", should + ", over one direct cable",
                        netdev=netdev)]
    if topology == "switch" and len(reached) == 1 and len(expected) > 1:
        return [Finding(Code.CABLE_BESIDE_SWITCH, where, seen + " only (a direct cable)", should + " through the switch",
                        netdev=netdev, peer=who(reached[0]))]
    missing = [p for p in expected if p not in reached]
    if topology == "switch" and len(reached) > 1 and set(reached) < set(expected):
        return [Finding(Code.CABLE_PEER_MISSING, where, seen, should, netdev=netdev, missing=', '.join(map(who, missing)))]
    same = [p for p in reached if topology == "ring" and port_of(p[1]) and port_of(netdev) and
            port_of(p[1])[1] == port_of(netdev)[1]]
    if same:
        index = port_of(netdev)[1]
        seen += f" (port {index} on both ends of the cable)"
    return [Finding(Code.CABLE_WRONG_PEER, where, seen, should, netdev=netdev, peer=', '.join(map(who, reached)),
                    should=', '.join(map(who, expected)))]
