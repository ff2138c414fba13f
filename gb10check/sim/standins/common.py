"""What every stand-in shares: the node's simulated state, sysfs reads, and the GID table (stdlib only)."""

import json
import os

STATE = "/etc/gb10sim/state.json"
IB = "/sys/class/infiniband"
NET = "/sys/class/net"


def state() -> dict:
    with open(STATE) as f:
        return json.load(f)


def read(path: str, default: str | None = "") -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def link_up(netdev: str) -> bool:
    return read(f"{NET}/{netdev}/operstate") == "up"


def mac_of(netdev: str) -> list[int]:
    return [int(b, 16) for b in (read(f"{NET}/{netdev}/address") or "00:00:00:00:00:00").split(":")]


def ipv4_interfaces_of(netdev: str) -> list[str]:
    """The netdev's IPv4 addresses with their prefix (`169.254.10.2/24`), as `ip -j -4 addr` lists them."""
    import subprocess  # here, not at the top: most tools never need it, and each tool is a fresh interpreter

    try:
        out = subprocess.run(["ip", "-j", "-4", "addr", "show", "dev", netdev], capture_output=True, text=True, timeout=5).stdout
        return [f"{a['local']}/{a['prefixlen']}" for i in json.loads(out or "[]") for a in i.get("addr_info", [])]
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired):
        return []


def ipv4_of(netdev: str) -> list[str]:
    return [a.split("/")[0] for a in ipv4_interfaces_of(netdev)]


def ipv4_networks_of(netdev: str) -> list[str]:
    """The subnets (`169.254.10.0/24`) of the netdev's IPv4 addresses."""
    import ipaddress

    return [str(ipaddress.ip_interface(a).network) for a in ipv4_interfaces_of(netdev)]


def devices(s: dict) -> list[tuple[str, str, dict]]:
    """(rdma device, netdev, link state) in the order the node lists them."""
    return [(link["rdma_device"], netdev, link) for netdev, link in s["links"].items()]


# ---- the GID table: one place decides which index holds what -----------------------------------


def gid_table_for(link_local: str, ipv4s: list[str], layout: str) -> list[tuple[str, str]]:
    """(gid, sysfs type) by index, as the mlx5 driver fills it: link-local v1/v2, then per IPv4 address v1/v2.
    layout "shifted": an IPv6 address came and went, so the IPv4 entries sit higher (v1 at 3, v2 at 5)."""
    import ipaddress  # as subprocess above

    table = [(link_local, "IB/RoCE v1"), (link_local, "RoCE v2")]
    for ip in ipv4s:
        mapped = ipaddress.IPv6Address(f"::ffff:{ip}").exploded
        if layout == "shifted":
            site = "fd00:0000:0000:0000:" + link_local[20:]
            table += [(site, "IB/RoCE v1"), (mapped, "IB/RoCE v1"), (site, "RoCE v2"), (mapped, "RoCE v2")]
        else:
            table += [(mapped, "IB/RoCE v1"), (mapped, "RoCE v2")]
    return table


def gid_table(netdev: str, layout: str, up: bool) -> list[tuple[str, str]]:
    """The table of a netdev now: its MAC's link-local GID, its IPv4 addresses (IP-based entries only while up)."""
    mac = mac_of(netdev)
    eui = [mac[0] ^ 2, mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]]
    link_local = "fe80:0000:0000:0000:" + ":".join(f"{eui[i]:02x}{eui[i + 1]:02x}" for i in range(0, 8, 2))
    return gid_table_for(link_local, ipv4_of(netdev) if up else [], layout)


def roce_v2_ipv4_index(layout: str) -> int:
    """The index of the RoCE v2 GID of a port's (first) IPv4 address: what NCCL picks by itself and what
    NCCL_IB_GID_INDEX must name. Read off the same table the sysfs stand-in writes."""
    table = gid_table_for("fe80:0000:0000:0000:0000:0000:0000:0000", ["192.0.2.1"], layout)
    return next(i for i, (gid, kind) in enumerate(table) if kind == "RoCE v2" and gid.startswith("0000:0000:0000:0000:0000:ffff:"))


def sysfs_gids(dev: str) -> list[tuple[int, str, str, str]]:
    """(index, gid, type, netdev) of port 1 as /sys/class/infiniband shows it."""
    base = f"{IB}/{dev}/ports/1"
    try:
        names = sorted(os.listdir(f"{base}/gids"), key=int)
    except OSError:
        names = []
    return [(int(n), read(f"{base}/gids/{n}"), read(f"{base}/gid_attrs/types/{n}"), read(f"{base}/gid_attrs/ndevs/{n}"))
            for n in names]


def node_guid(mac: list[int]) -> str:
    """mlx5 derives the node GUID from the port's MAC: OUI, 03:00, the rest (4c:bb:47:2d:1a:16 -> 4cbb:4703:002d:1a16)."""
    b = mac[:3] + [0x03, 0x00] + mac[3:]
    return ":".join(f"{b[i]:02x}{b[i + 1]:02x}" for i in range(0, 8, 2))


IB_MTUS = [(4096, 5), (2048, 4), (1024, 3), (512, 2), (256, 1)]
ROCE_HEADERS = 40 + 8 + 12 + 4 + 28 + 4  # GRH, UDP, BTH, XRC and atomic extension headers, ICRC (ib_core's iboe_get_mtu)


def active_mtu(netdev: str) -> tuple[int, int]:
    """A RoCE port's active MTU (bytes, enum): the largest IB MTU that fits in the netdev's MTU beside the headers."""
    mtu = int(read(f"{NET}/{netdev}/mtu") or "1500") - ROCE_HEADERS
    return next(((size, code) for size, code in IB_MTUS if mtu >= size), (256, 1))
