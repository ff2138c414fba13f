"""Links: RDMA device -> netdev mapping and state, port state, speed, addressing, GIDs."""

import ipaddress

from ..cluster import Link
from ..facts.ethtool import EthtoolLink
from ..facts.ibdev2netdev import RdmaNetdev
from ..facts.ip import Interface
from ..facts.rdma import IbPort
from ..remedies import Code
from ..verdict import Finding


def judge_ibdev2netdev(node: str, links: list[Link], mapping: list[RdmaNetdev]) -> list[Finding]:
    by_dev = {m.rdma_device: m for m in mapping}
    findings = []
    for link in links:
        where = f"{node}:{link.netdev}"
        m = by_dev.get(link.rdma_device)
        if m is None or m.netdev != link.netdev:
            seen = f"{link.rdma_device} ==> {m.netdev}" if m else f"no {link.rdma_device} in ibdev2netdev"
            findings.append(Finding(Code.LINK_MISSING, where, seen, f"{link.rdma_device} ==> {link.netdev}",
                                    device=link.rdma_device, netdev=link.netdev))
        elif m.state != "up":  # "down", or "unknown" (NA / an old ibdev2netdev that prints no state): not seen Up
            findings.append(Finding(Code.LINK_DOWN, where, f"{m.rdma_device} port {m.port} ==> {m.netdev} ({m.link_state or 'no state'})",
                                    f"{link.netdev} (Up)", netdev=link.netdev))
    return findings


def up_links(mapping: list[RdmaNetdev]) -> set[str]:
    return {f"{m.rdma_device}->{m.netdev}" for m in mapping if m.state == "up"}


def judge_port(node: str, link: Link, ports: list[IbPort]) -> list[Finding]:
    port = next((p for p in ports if p.rdma_device == link.rdma_device), None)
    where = f"{node}:{link.netdev}"
    if port is None:
        return [Finding(Code.LINK_MISSING, where, f"no /sys/class/infiniband/{link.rdma_device}", "the RDMA device present",
                        device=link.rdma_device, netdev=link.netdev)]
    if port.port_state != "ACTIVE" or (port.phys_state or "LinkUp") != "LinkUp":
        return [Finding(Code.PORT_NOT_ACTIVE, where, f"{link.rdma_device} port {port.port} state {port.port_state}, "
                        f"phys_state {port.phys_state}", "ACTIVE, LinkUp", device=link.rdma_device)]
    return []


def judge_speed(node: str, link: Link, eth: list[EthtoolLink], expected_mbps: int) -> list[Finding]:
    where = f"{node}:{link.netdev}"
    seen = next((e for e in eth if e.interface in (link.netdev, None)), None)
    speed = seen.speed_mbps if seen else None
    if speed is None:
        printed = f"Speed: {seen.speed}" if seen and seen.speed else "no Speed line (ethtool run without root?)"
        return [Finding(Code.LINK_DOWN, where, f"ethtool {printed}", f"{expected_mbps} Mb/s", netdev=link.netdev)]
    if speed < expected_mbps:
        return [Finding(Code.LINK_SPEED, where, f"{speed} Mb/s", f"{expected_mbps} Mb/s", warning=True, netdev=link.netdev)]
    return []


def judge_address(node: str, link: Link, ifaces: list[Interface]) -> list[Finding]:
    """The link's address on its netdev; a netdev the node does not have is that (LINK_MISSING, naming the node's
    interfaces), not an address to give it."""
    missing = missing_netdevs(node, [link], ifaces)
    if missing:
        return missing
    iface = next(i for i in ifaces if i.name == link.netdev)
    where = f"{node}:{link.netdev}"
    have = iface.ipv4
    if str(link.address) not in have:
        return [Finding(Code.ADDRESS_MISSING, where, f"IPv4 {', '.join(have) or 'none'}", str(link.address),
                        netdev=link.netdev, address=str(link.address))]
    return []


def missing_netdevs(node: str, links: list[Link], ifaces: list[Interface]) -> list[Finding]:
    """A link whose netdev the node does not have: nothing about it can hold."""
    names = {i.name for i in ifaces}
    return [Finding(Code.LINK_MISSING, f"{node}:{l.netdev}", f"no interface {l.netdev} (the node has {', '.join(sorted(names)) or 'none'})",
                    f"{l.netdev} present", device=l.rdma_device or "its RDMA device", netdev=l.netdev)
            for l in links if l.netdev not in names]


def judge_distinct_subnets(node: str, links: list[Link], ifaces: list[Interface]) -> list[Finding]:
    missing = missing_netdevs(node, links, ifaces)
    if missing:
        return missing
    nets = []
    for link in links:
        iface = next((i for i in ifaces if i.name == link.netdev), None)
        for addr in iface.ipv4 if iface else []:
            nets.append((link.netdev, ipaddress.ip_interface(addr).network))
    findings = []
    for i, (dev_a, net_a) in enumerate(nets):
        for dev_b, net_b in nets[i + 1:]:
            if dev_a != dev_b and net_a.overlaps(net_b):
                findings.append(Finding(Code.SAME_SUBNET, node, f"{dev_a} {net_a} and {dev_b} {net_b} overlap",
                                        "each logical link on its own subnet"))
    return findings


def roce_gid_indexes(ports: list[IbPort], link: Link, gid_type: str) -> list[int]:
    """The GID indexes of the link's RDMA device that hold gid_type (RoCE v2) with the link's IPv4 address: the one
    lookup the GID check and the compose lint share."""
    port = next((p for p in ports if p.rdma_device == link.rdma_device), None)
    return [g.index for g in (port.gids if port else []) if g.type == gid_type and g.ipv4 == link.ip]


def judge_gid(node: str, link: Link, ports: list[IbPort], index: int, gid_type: str) -> list[Finding]:
    port = next((p for p in ports if p.rdma_device == link.rdma_device), None)
    where = f"{node}:{link.rdma_device}"
    if port is not None and port.port_state != "ACTIVE":  # a down port holds no IP-based GIDs
        return [Finding(Code.PREREQUISITE, where, f"the GID table of a port that is {port.port_state}",
                        "an ACTIVE port, whose GIDs hold its addresses", check="test_rdma_port_active")]
    ip = link.ip
    gids = port.gids if port else []
    right = roce_gid_indexes(ports, link, gid_type)
    at = next((g for g in gids if g.index == index), None)
    if at is not None and at.type == gid_type and at.ipv4 == ip:
        return []
    seen = f"GID {index} is {at.type} {at.ipv4 or at.gid}" if at else f"no GID at index {index}"
    where_right = f"{gid_type} with {ip} is at index {right[0]}" if right else f"no {gid_type} GID holds {ip}"
    return [Finding(Code.GID_NOT_ROCE_V2, where, f"{seen}; {where_right}", f"GID {index} = {gid_type} with {ip}",
                    device=link.rdma_device, right_index=right[0] if right else "?")]


def judge_same_up_links(node: str, head: str, mine: set[str], heads: set[str]) -> list[Finding]:
    return [] if mine == heads else [Finding(Code.UP_LINKS_DIFFER, node, f"Up: {', '.join(sorted(mine)) or 'none'}",
                                             f"Up: {', '.join(sorted(heads)) or 'none'} as on {head}")]


def judge_netplan(node: str, path: str, mode: str | None, content: str, links: list[Link]) -> list[Finding]:
    """mode: `stat -c %a` of the file, None when it does not exist."""
    if mode is None:
        return [Finding(Code.NETPLAN_MISSING, node, f"no {path}", f"{path} describing the QSFP links", path=path)]
    findings = []
    if mode.strip() != "600":
        findings.append(Finding(Code.NETPLAN_MODE, node, f"{path} mode {mode.strip()}", "mode 600", path=path))
    findings += [Finding(Code.NETPLAN_CONTENT, node, f"{path} does not mention {l.netdev}", f"{l.netdev} configured",
                         path=path, netdev=l.netdev) for l in links if l.netdev not in content]
    return findings


def judge_default_route(node: str, routes: list[dict], links: list[Link], ifaces: list[Interface]) -> list[Finding]:
    """routes: `ip -j route show default`; ifaces: the node's interfaces (a QSFP netdev it lacks cannot be judged)."""
    qsfp = {l.netdev for l in links}
    return missing_netdevs(node, links, ifaces) + [Finding(Code.DEFAULT_ROUTE_QSFP, node, f"default via {r.get('gateway', '?')} dev {r['dev']}",
                    "no default route through a QSFP link", netdev=r["dev"]) for r in routes if r.get("dev") in qsfp]


def judge_mtu(a: str, a_link: Link, a_mtu: int, b: str, b_link: Link, b_mtu: int) -> list[Finding]:
    return [] if a_mtu == b_mtu else [Finding(Code.MTU_MISMATCH, f"{a}:{a_link.netdev}",
                                              f"{a}:{a_link.netdev} MTU {a_mtu}, {b}:{b_link.netdev} MTU {b_mtu}",
                                              "the same MTU at both ends", netdev=a_link.netdev)]


def judge_route(src: str, src_link: Link, dst: str, dst_link: Link, dev: str | None, error: str) -> list[Finding]:
    """dev: the device `ip route get` picks for the peer's address (None: no route, `error` says why)."""
    return [] if dev == src_link.netdev else \
        [Finding(Code.ROUTE_WRONG_DEV, f"{src}:{src_link.netdev}", f"route to {dst_link.ip} via {dev or 'nothing: ' + (error or 'no route')}",
                 f"via {src_link.netdev}", netdev=src_link.netdev, peer=f"{dst} {dst_link.ip}")]


def judge_bandwidth(where: str, peer: str, device: str, result, parse_error: str | None, minimum_gbps: float) -> list[Finding]:
    """One ib_write_bw run. result: facts.perftest.Perftest (None when its output could not be read: parse_error says why).

    bw_average_gbps is the figure to judge: the mean BW average of the largest message size's rows; a run with failure
    lines has `error` set even when it printed rows before failing."""
    if result is None:
        return [Finding(Code.RDMA_RUN, where, parse_error or "no output", "ib_write_bw results", peer=peer)]
    if result.error or result.bw_average_gbps is None:
        return [Finding(Code.RDMA_RUN, where, result.error or "no bandwidth figure", "ib_write_bw results", peer=peer)]
    return [] if result.bw_average_gbps >= minimum_gbps else \
        [Finding(Code.RDMA_BANDWIDTH, where, f"{result.bw_average_gbps:.2f} Gb/s", f">= {minimum_gbps:g} Gb/s", device=device)]
