"""The network path beside the links themselves: NetworkManager profiles that run DHCP on a QSFP port, and the RoCE
active MTU against the netdev's MTU (dgx-spark-playbooks PR 103: RoCE carries 4096-byte frames only when the port's
MTU leaves room for them beside the RoCE headers, e.g. 4200 or 9000)."""

import shlex

from ..cluster import Link
from ..remedies import Code
from ..verdict import Finding

IB_MTUS = (4096, 2048, 1024, 512, 256)
ROCE_HEADERS = 40 + 8 + 12 + 4 + 28 + 4  # GRH, UDP, BTH, XRC and atomic extension headers, ICRC (ib_core's iboe_get_mtu)


def roce_mtu_for(netdev_mtu: int) -> int:
    """The RoCE active MTU a port gets from its netdev's MTU: the largest IB MTU that fits beside the headers."""
    return next((m for m in IB_MTUS if netdev_mtu - ROCE_HEADERS >= m), 256)


def qsfp_netdevs(links: list[Link], mapped) -> set[str]:
    """The cluster file's QSFP netdevs of a node and every other ConnectX netdev ibdev2netdev names (the unused ports too);
    mapped: ibdev2netdev's facts, or None where it could not be read."""
    return {link.netdev for link in links} | {m.netdev for m in (mapped or []) if getattr(m, "netdev", None)}


def dhcp_on_qsfp(profiles, qsfp_netdevs: set[str]) -> list[tuple]:
    """(profile, the QSFP netdevs it is on) for each NetworkManager profile that runs DHCP on a QSFP port now (ipv4.method
    auto, active on one) or will when the port comes up (bound to one by connection.interface-name with autoconnect on).
    A profile with autoconnect off and not active is inert: what scripts/nm-release-qsfp leaves behind."""
    found = []
    for p in profiles.profiles:
        if p.ipv4_method != "auto":
            continue
        live = {p.device} if p.device else set()
        if p.interface and p.autoconnect != "no":
            live.add(p.interface)
        on = sorted(live & qsfp_netdevs)
        if on:
            found.append((p, on))
    return found


def judge_nm_dhcp(node: str, profiles, qsfp_netdevs: set[str]) -> list[Finding]:
    """A NetworkManager profile with ipv4.method auto (DHCP) active on a QSFP netdev, or bound to one with autoconnect on,
    fails: it fights the static/link-local addresses, adds routes, and waits for a DHCP server that is not there
    (dgx-spark-playbooks issue 56)."""
    found = []
    for p in profiles.profiles:  # nmcli listed it but could not show it (deleted meanwhile, or its daemon went away)
        if p.error and (not p.device or p.device in qsfp_netdevs):
            found.append(Finding(Code.GARBLED, node, f"nmcli listed profile {p.uuid} but could not show it: {p.error}",
                                 "each profile's ipv4.method and interface", command=f"nmcli connection show {p.uuid}",
                                 kind="nmcli_profiles"))
    for p, on in dhcp_on_qsfp(profiles, qsfp_netdevs):
        how = "active" if p.device in on else "autoconnect on"
        found.append(Finding(Code.NM_DHCP_QSFP, f"{node}:{on[0]}", f"NetworkManager profile {p.name!r} ({p.uuid}) with "
                             f"ipv4.method auto (DHCP) on {', '.join(on)} ({how})", "no DHCP on the QSFP ports (netplan's "
                             "static or link-local addresses only)", netdev=on[0],
                             delete=f"sudo nmcli connection delete {shlex.quote(p.uuid)}"))
    return found


def judge_roce_port_mtu(node: str, link: Link, netdev_mtu: int, hcas: list) -> list[Finding]:
    """judge_roce_mtu on the link's device as ibv_devinfo lists it; a port that is missing or not ACTIVE is not checked."""
    port = next((p for h in hcas if h.rdma_device == link.rdma_device for p in h.ports), None)
    if port is None or port.port_state != "ACTIVE":
        return [Finding(Code.PREREQUISITE, f"{node}:{link.rdma_device}",
                        f"{link.rdma_device} {'is not in ibv_devinfo' if port is None else 'is ' + str(port.port_state)}",
                        "an ACTIVE port in ibv_devinfo", check="test_rdma_port_active")]
    return judge_roce_mtu(node, link, netdev_mtu, port.active_mtu)


def judge_roce_mtu(node: str, link: Link, netdev_mtu: int, active_mtu: int | None) -> list[Finding]:
    """The RoCE active MTU (ibv_devinfo) is what the netdev's MTU allows: 1024 beside a 9000 MTU (RoCE stuck small),
    or larger than the netdev can carry, is a warning."""
    if active_mtu is None:
        return [Finding(Code.GARBLED, f"{node}:{link.rdma_device}", "ibv_devinfo gave no active_mtu for the port",
                        "the port's active_mtu", command="ibv_devinfo", kind="ibv_devinfo")]
    expected = roce_mtu_for(netdev_mtu)
    if active_mtu == expected:
        return []
    return [Finding(Code.ROCE_MTU, f"{node}:{link.rdma_device}", f"RoCE active_mtu {active_mtu} with {link.netdev} MTU "
                    f"{netdev_mtu}", f"active_mtu {expected} (the largest IB MTU that fits in MTU {netdev_mtu} beside "
                    f"{ROCE_HEADERS} bytes of RoCE headers)", warning=True, netdev=link.netdev, device=link.rdma_device,
                    netdev_mtu=netdev_mtu)]


def judge_path_mtu(src: str, src_link: Link, dst: str, dst_link: Link, rc: int, stdout: str, stderr: str, size: int) -> list[Finding]:
    """One don't-fragment ping filling the link's MTU reaches the peer: a larger MTU on this end than on the other (or on
    a switch port between) drops every full-sized frame while small pings pass."""
    if rc == 0:
        return []
    said = (stdout.strip().splitlines() or [""])[-1] or stderr.strip() or f"exit {rc}"
    return [Finding(Code.PATH_MTU, f"{src}:{src_link.netdev}->{dst}:{dst_link.netdev}",
                    f"no reply to a {size}-byte don't-fragment ping to {dst_link.ip} (MTU {size + 28} less 28 bytes of headers; "
                    f"{said})", f"replies at {src_link.netdev}'s MTU, as to a small ping", node=src, netdev=src_link.netdev,
                    peer=f"{dst} {dst_link.netdev}")]
