"""RDMA device state: `rdma link`, `show_gids`, `ibv_devinfo`, `ibstat`, and sysfs reads.

GID types are normalised to "RoCE v1" / "RoCE v2" (sysfs writes "IB/RoCE v1", show_gids "v1").
Port states are normalised to the upper-case word (ACTIVE, DOWN ...), link states to up/down.
"""

import ipaddress
import re
from dataclasses import dataclass, field

from ._text import ParseError, is_prompt, parser


def gid_type(raw: str) -> str:
    raw = raw.strip()
    if raw.endswith("v2"):
        return "RoCE v2"
    if raw.endswith("v1"):
        return "RoCE v1"
    return raw


def gid_ipv4(gid: str) -> str | None:
    """The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), else None."""
    parts = gid.split(":")
    if len(parts) == 16:  # perftest prints 16 decimal bytes
        try:
            gid = ":".join(f"{int(parts[i]):02x}{int(parts[i + 1]):02x}" for i in range(0, 16, 2))
        except ValueError:
            return None
    try:
        mapped = ipaddress.IPv6Address(gid).ipv4_mapped
    except ValueError:  # redacted ("xxxx") or not a GID
        return None
    return str(mapped) if mapped else None


# ---- rdma link ---------------------------------------------------------------

LINK = re.compile(r"^link\s+(?P<dev>\S+)/(?P<port>\d+)\s+state\s+(?P<state>\S+)\s+physical_state\s+(?P<phys>\S+)(?:\s+netdev\s+(?P<netdev>\S+))?")


@dataclass(frozen=True)
class RdmaLink:
    rdma_device: str
    port: int
    port_state: str
    phys_state: str
    netdev: str | None


@parser
def parse_rdma_link(text: str) -> list[RdmaLink]:
    links = [
        RdmaLink(m["dev"], int(m["port"]), m["state"].upper(), m["phys"].upper(), m["netdev"])
        for m in (LINK.match(line.strip()) for line in text.splitlines())
        if m
    ]
    if not links:
        raise ParseError("rdma_link", "lines like 'link rocep1s0f0/1 state ACTIVE physical_state LINK_UP netdev enp1s0f0np0'", text)
    return links


# ---- show_gids ---------------------------------------------------------------

GID_ROW = re.compile(
    r"^(?P<dev>\S+)\s+(?P<port>\d+)\s+(?P<index>\d+)\s+(?P<gid>[0-9a-fA-Fx:]{20,})\s+"
    r"(?:(?P<ipv4>\d+\.\d+\.\d+\.\d+)\s+)?(?P<ver>v\d)\s+(?P<netdev>\S+)\s*$"
)


@dataclass(frozen=True)
class Gid:
    rdma_device: str
    port: int
    index: int
    gid: str
    type: str  # "RoCE v1" | "RoCE v2"
    ipv4: str | None
    netdev: str | None


@parser
def parse_show_gids(text: str) -> list[Gid]:
    gids = []
    for line in text.splitlines():
        m = GID_ROW.match(line.strip())
        if m:
            gids.append(Gid(m["dev"], int(m["port"]), int(m["index"]), m["gid"].lower(), gid_type(m["ver"]),
                            m["ipv4"] or gid_ipv4(m["gid"]), m["netdev"]))
    if not gids:
        raise ParseError("show_gids", "rows 'DEV PORT INDEX GID [IPv4] VER NETDEV'", text)
    return gids


# ---- sysfs -------------------------------------------------------------------
# Two shapes: `grep -H . /sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer,gids/*,
# gid_attrs/types/*,gid_attrs/ndevs/*}` (what the suite runs), and per-device tables printed by
# shell loops (what people post: "rocep1s0f1: 4: ACTIVE rate=200 Gb/sec (2X NDR) ...").

SYSFS = re.compile(r"^/sys/class/infiniband/(?P<dev>[^/]+)/ports/(?P<port>\d+)/(?P<leaf>[^:]+):(?P<value>.*)$")
STATE = re.compile(r"\b(?P<num>\d):\s*(?P<word>[A-Za-z_]+)\b")
RATE = re.compile(r"(?P<gbps>\d+(?:\.\d+)?)\s*Gb/sec(?:\s*\((?P<width>[^)]*)\))?")
LINK_LAYER = re.compile(r"link_layer=(\S+)")


@dataclass
class IbPort:
    rdma_device: str
    port: int
    port_state: str | None = None  # ACTIVE, DOWN ...
    phys_state: str | None = None  # LinkUp, Disabled ...
    rate_gbps: float | None = None
    rate_width: str | None = None
    link_layer: str | None = None
    gids: list[Gid] = field(default_factory=list)


@parser
def parse_sysfs(text: str) -> list[IbPort]:
    ports: dict[tuple[str, int], IbPort] = {}
    gid_parts: dict[tuple[str, int, int], dict[str, str]] = {}

    def port_of(dev: str, port: int) -> IbPort:
        return ports.setdefault((dev, port), IbPort(dev, port))

    for raw in text.splitlines():
        line = raw.strip()
        if not line or is_prompt(line) or line.startswith(("rate=", "paste", "printf", "done")):
            continue
        m = SYSFS.match(line)
        if m:
            p = port_of(m["dev"], int(m["port"]))
            leaf, value = m["leaf"], m["value"].strip()
            if leaf == "state" and (s := STATE.search(value)):
                p.port_state = s["word"]
            elif leaf == "phys_state" and (s := STATE.search(value)):
                p.phys_state = s["word"]
            elif leaf == "rate" and (r := RATE.search(value)):
                p.rate_gbps, p.rate_width = float(r["gbps"]), r["width"]
            elif leaf == "link_layer":
                p.link_layer = value
            elif (g := re.fullmatch(r"(gids|gid_attrs/types|gid_attrs/ndevs)/(\d+)", leaf)):
                gid_parts.setdefault((m["dev"], int(m["port"]), int(g[2])), {})[g[1]] = value
            continue
        dev = re.match(r"^(\S+?):?\s", line + " ")
        state, rate = STATE.search(line), RATE.search(line)
        if dev and (state or rate):
            p = port_of(dev[1], 1)
            if state:
                p.port_state = state["word"]
            if rate:
                p.rate_gbps, p.rate_width = float(rate["gbps"]), rate["width"]
            if (ll := LINK_LAYER.search(line)):
                p.link_layer = ll[1]
    for (dev, port, index), parts in sorted(gid_parts.items()):
        gid = parts.get("gids", "")
        # Unused table slots read as all zeros and have no type: not a GID.
        if not gid or set(gid) <= {"0", ":"}:
            continue
        port_of(dev, port).gids.append(
            Gid(dev, port, index, gid.lower(), gid_type(parts.get("gid_attrs/types", "")), gid_ipv4(gid),
                parts.get("gid_attrs/ndevs"))
        )
    if not ports:
        raise ParseError("ib_sysfs", "'grep -H' lines of /sys/class/infiniband/DEV/ports/N/... or 'DEV: 4: ACTIVE ... Gb/sec' rows", text)
    return list(ports.values())


# ---- ibv_devinfo -------------------------------------------------------------


@dataclass
class HcaPort:
    port: int
    port_state: str  # PORT_ACTIVE -> ACTIVE
    active_mtu: int | None
    max_mtu: int | None
    link_layer: str | None


@dataclass
class Hca:
    rdma_device: str
    firmware: str | None = None
    board_id: str | None = None
    node_guid: str | None = None
    ports: list[HcaPort] = field(default_factory=list)


@parser
def parse_ibv_devinfo(text: str) -> list[Hca]:
    hcas: list[Hca] = []
    port: dict[str, str] | None = None

    def close_port():
        if port is not None and hcas and port["port"].isdigit():
            hcas[-1].ports.append(
                HcaPort(
                    port=int(port["port"]),
                    port_state=port.get("state", "").split()[0].removeprefix("PORT_") if port.get("state") else "UNKNOWN",
                    active_mtu=_mtu(port.get("active_mtu")),
                    max_mtu=_mtu(port.get("max_mtu")),
                    link_layer=port.get("link_layer"),
                )
            )

    for raw in text.splitlines():
        if ":" not in raw:
            continue
        key, _, value = raw.strip().partition(":")
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            close_port()
            port = None
            hcas.append(Hca(value))
        elif not hcas:
            continue
        elif key == "port":
            close_port()
            port = {"port": value}
        elif port is not None:
            port[key] = value
        elif key == "fw_ver":
            hcas[-1].firmware = value
        elif key == "board_id":
            hcas[-1].board_id = value
        elif key == "node_guid":
            hcas[-1].node_guid = value
    close_port()
    if not hcas:
        raise ParseError("ibv_devinfo", "blocks starting with 'hca_id:'", text)
    return hcas


def _mtu(value: str | None) -> int | None:
    if not value:
        return None
    m = re.match(r"(\d+)", value)
    return int(m[1]) if m else None


# ---- ibstat ------------------------------------------------------------------


@dataclass
class IbstatPort:
    rdma_device: str
    port: int
    port_state: str  # Active -> ACTIVE
    phys_state: str
    rate_gbps: float | None
    link_layer: str | None
    firmware: str | None


@parser
def parse_ibstat(text: str) -> list[IbstatPort]:
    out: list[IbstatPort] = []
    ca = fw = None
    cur: dict[str, str] | None = None

    def close():
        if cur is not None and ca and cur["port"].isdigit():
            rate = cur.get("Rate")
            out.append(IbstatPort(ca, int(cur["port"]), cur.get("State", "").upper(), cur.get("Physical state", ""),
                                  float(rate) if rate and rate.replace(".", "").isdigit() else None,
                                  cur.get("Link layer"), fw))

    for raw in text.splitlines():
        line = raw.strip()
        if (m := re.match(r"^CA '([^']+)'", line)):
            close()
            ca, fw, cur = m[1], None, None
        elif (m := re.match(r"^Port (\d+):$", line)):
            close()
            cur = {"port": m[1]}
        elif ":" in line:
            k, _, v = line.partition(":")
            if cur is not None:
                cur[k.strip()] = v.strip()
            elif k.strip() == "Firmware version":
                fw = v.strip()
    close()
    if not out:
        raise ParseError("ibstat", "blocks \"CA 'mlx5_0'\" with 'Port 1:' sections", text)
    return out
