"""RDMA device state: `rdma link`, `show_gids`, `ibv_devinfo`, `ibstat`, and sysfs reads.

GID types are normalised to "RoCE v1" / "RoCE v2" (sysfs writes "IB/RoCE v1", show_gids "v1").
Port states are normalised to the kernel's upper-case word (ACTIVE, DOWN, INIT, ARMED: ibstat's
"Initializing" is INIT, ibv_devinfo's PORT_ACTIVE is ACTIVE); every port also gets `state`, "up"
when its port state is ACTIVE and "down" otherwise. Physical states are kept as the tool prints
them (LinkUp in sysfs and ibstat, LINK_UP in rdma link and ibv_devinfo). Rates are in Gb/s, read
from the output's own unit (sysfs "200 Gb/sec (2X NDR)", ibstat "Rate: 200" which is Gb/s).
"""

import ipaddress
import json
import re
from dataclasses import dataclass, field

from ._text import ParseError, is_prompt, parser

PORT_STATES = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
PHYS_STATES = {"Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test", "PhyTest",
               "No state change"}
_IBSTAT_STATES = {"down": "DOWN", "initializing": "INIT", "init": "INIT", "armed": "ARMED", "active": "ACTIVE"}


def gid_type(raw: str | None) -> str | None:
    raw = (raw or "").strip()
    if raw.lower().endswith("v2"):
        return "RoCE v2"
    if raw.lower().endswith("v1"):
        return "RoCE v1"
    return raw or None


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


def up_down(port_state: str | None) -> str | None:
    """'up' for an ACTIVE port, 'down' for any other known state, None when the state is unknown."""
    if not port_state:
        return None
    return "up" if port_state == "ACTIVE" else "down"


def _int(value: str | None) -> int | None:
    m = re.match(r"\s*(?:0x(?P<hex>[0-9a-fA-F]+)|(?P<dec>\d+))\b", value or "")
    return None if not m else int(m["hex"], 16) if m["hex"] else int(m["dec"])


# ---- rdma link ---------------------------------------------------------------
# iproute2 >= 5.x:  link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 3 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP
#                   link rocep1s0f0/1 state ACTIVE physical_state LINK_UP netdev enp1s0f0np0
# iproute2 4.x:     0/1: mlx5_0/1: state DOWN physical_state DISABLED netdev ens1f0
# rdma -j link:     [{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"ens1f0"}]

LINK_HEAD = re.compile(r"^(?:link\s+|\d+/\d+:\s+)(?P<dev>[\w.-]+)/(?P<port>\d+):?(?:\s+(?P<rest>.*))?$")
LINK_KEYS = {"subnet_prefix", "lid", "sm_lid", "lmc", "state", "physical_state", "netdev", "netdev_index"}


@dataclass(frozen=True)
class RdmaLink:
    rdma_device: str
    port: int
    port_state: str
    phys_state: str | None
    netdev: str | None
    state: str | None = None  # up | down
    lid: int | None = None  # InfiniBand only
    sm_lid: int | None = None
    subnet_prefix: str | None = None


def _rdma_link(dev: str, port: int, kv: dict) -> RdmaLink:
    state = str(kv["state"]).upper()
    phys = kv.get("physical_state")
    return RdmaLink(dev, port, state, str(phys).upper() if phys else None, kv.get("netdev") or None, up_down(state),
                    _int(str(kv["lid"])) if kv.get("lid") is not None else None,
                    _int(str(kv["sm_lid"])) if kv.get("sm_lid") is not None else None, kv.get("subnet_prefix"))


@parser
def parse_rdma_link(text: str) -> list[RdmaLink]:
    expected = "lines like 'link rocep1s0f0/1 state ACTIVE physical_state LINK_UP netdev enp1s0f0np0'"
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ParseError("rdma_link", expected + " or `rdma -j link` JSON", text) from None
        links = [_rdma_link(str(d["ifname"]), int(d["port"]), d) for d in data if isinstance(d, dict)
                 and isinstance(d.get("ifname"), str) and isinstance(d.get("port"), int) and isinstance(d.get("state"), str)]
        if not links:
            raise ParseError("rdma_link", expected + " or `rdma -j link` JSON", text)
        return links
    links = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = LINK_HEAD.match(line.strip())
        if not m:  # every line of `rdma link` is a link line: another one is a cut or foreign line, never skipped
            raise ParseError("rdma_link", "only " + expected, line)
        tokens = (m["rest"] or "").split()
        if len(tokens) % 2:  # `rdma link` prints key-value pairs: an odd count is a line cut short
            raise ParseError("rdma_link", "key-value pairs after 'link DEV/PORT'", line)
        kv = {}
        i = 0
        while i < len(tokens) - 1:
            if tokens[i] in LINK_KEYS:
                kv[tokens[i]] = tokens[i + 1]
                i += 2
            else:
                i += 1
        if "state" not in kv:
            raise ParseError("rdma_link", "a state on every link line", line)
        if any((link.rdma_device, link.port) == (m["dev"], int(m["port"])) for link in links):
            raise ParseError("rdma_link", f"each link once ({m['dev']}/{m['port']} is listed twice)", line)
        links.append(_rdma_link(m["dev"], int(m["port"]), kv))
    if not links:
        raise ParseError("rdma_link", expected, text)
    return links


# ---- show_gids ---------------------------------------------------------------
# DEV  PORT  INDEX  GID  IPv4  VER  DEV: tab-separated (or tabs expanded); IPv4 empty for non-mapped GIDs,
# VER empty when the kernel has no GID types, the netdev empty on InfiniBand ports.

_GID = r"[0-9a-fA-Fx]{4}(?::[0-9a-fA-Fx]{4}){7}"
GID_ROW = re.compile(
    r"^(?P<dev>[A-Za-z][\w.-]*)\s+(?P<port>\d+)\s+(?P<index>\d+)\s+(?P<gid>" + _GID + r")"
    r"(?:\s+(?P<ipv4>\d{1,3}(?:\.\d{1,3}){3}))?(?:\s+(?P<ver>[vV]\d|(?:IB/)?RoCE\s+[vV]\d))?(?:\s+(?P<netdev>[A-Za-z][\w.@:-]*))?\s*$"
)
GIDS_HEADER = re.compile(r"^DEV\s+PORT\s+INDEX\s+GID\b")
GIDS_COUNT = re.compile(r"^n_gids_found\s*=\s*(\d+)$")


@dataclass(frozen=True)
class Gid:
    rdma_device: str
    port: int
    index: int
    gid: str
    type: str | None  # "RoCE v1" | "RoCE v2"; None when the tool shows no type
    ipv4: str | None
    netdev: str | None


@parser
def parse_show_gids(text: str) -> list[Gid]:
    gids = []
    header = False
    count = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("|"):  # the table re-drawn as a markdown table: "|rocep1s0f1 |1 |3 |0000:...|10.0.0.1 |v2 |enp1s0f1np1|"
            s = " ".join(cell.strip() for cell in s.strip("|").split("|"))
        if GIDS_HEADER.match(s):
            header = True
        elif (c := GIDS_COUNT.match(s)):
            count = int(c[1])
        elif (m := GID_ROW.match(s)):
            if any((g.rdma_device, g.port, g.index) == (m["dev"], int(m["port"]), int(m["index"])) for g in gids):
                raise ParseError("show_gids", f"each GID index once ({m['dev']} port {m['port']} index {m['index']} is "
                                              "listed twice)", line)
            gids.append(Gid(m["dev"], int(m["port"]), int(m["index"]), m["gid"].lower(), gid_type(m["ver"]),
                            m["ipv4"] or gid_ipv4(m["gid"]), m["netdev"]))
        elif s and not set(s) <= set("-| :\t"):  # a line that is no header, rule, row or count: cut or foreign
            raise ParseError("show_gids", "only the header, 'DEV PORT INDEX GID [IPv4] VER NETDEV' rows and n_gids_found=N",
                             line)
    if count is not None and count != len(gids):
        raise ParseError("show_gids", f"{count} GID rows, as n_gids_found={count} says (found {len(gids)})", text)
    if not gids and count is None:
        what = "rows after the header, or n_gids_found=0" if header else "rows 'DEV PORT INDEX GID [IPv4] VER NETDEV'"
        raise ParseError("show_gids", what, text)
    return gids


# ---- sysfs -------------------------------------------------------------------
# Shapes: `grep -H . /sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer,gids/*,gid_attrs/types/*,
# gid_attrs/ndevs/*}` (what the suite runs: "PATH:VALUE"), `head` over the same files ("==> PATH <==" then the
# value), `cat` of one file with the command line kept, per-device tables printed by shell loops (what people
# post: "rocep1s0f1: 4: ACTIVE rate=200 Gb/sec (2X NDR) ..."), and `ibstatus` (infiniband-diags' script over the same
# files: "Infiniband device 'DEV' port N status:" then "<tab>state:<tabs> 4: ACTIVE", "phys state:", "rate:" ...).

SYSFS_PATH = r"/sys/class/infiniband/(?P<dev>[^/\s]+)/ports/(?P<port>\d+)/(?P<leaf>[\w/]+)"
SYSFS = re.compile(r"^" + SYSFS_PATH + r":(?P<value>.*)$")
HEAD_BANNER = re.compile(r"^==>\s+" + SYSFS_PATH + r"\s+<==$")
STATE = re.compile(r"\b(?P<num>\d):\s*(?P<word>Phy Test|[A-Za-z_]+)\b")
RATE = re.compile(r"(?P<gbps>\d+(?:\.\d+)?)\s*Gb/sec(?:\s*\((?P<width>[^)]*)\))?")
LINK_LAYER = re.compile(r"link_layer[=:]\s*(\w+)")
IBSTATUS_HEAD = re.compile(r"^Infiniband device '(?P<dev>[^']+)' port (?P<port>\d+) status:$")
IBSTATUS_LEAF = {"default gid": "gids/0", "state": "state", "phys state": "phys_state", "rate": "rate", "link_layer": "link_layer"}
ROW_LEAVES = {"state", "phys", "phys_state", "rate", "link_layer", "default", "base", "sm", "port", "ports"}  # a file's name, not a device
ROW_DEV = re.compile(r"^(?P<dev>[A-Za-z][\w.-]*?)(?:/(?P<port>\d+)|\s+port\s+(?P<port2>\d+))?:?(?:\s|$)")


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
    state: str | None = None  # up | down, from port_state


def _state_word(value: str) -> tuple[str | None, str | None]:
    """(port_state, phys_state) found in a text such as '4: ACTIVE' or '5: LinkUp'."""
    port_state = phys_state = None
    for s in STATE.finditer(value):
        word = s["word"]
        if word.upper() in PORT_STATES and word.isupper() and port_state is None:
            port_state = word
        elif word in PHYS_STATES and phys_state is None:
            phys_state = word
    return port_state, phys_state


def _sysfs_lines(text: str, sections) -> list[str]:
    """The output as 'PATH:VALUE' lines where a `head` banner or a `cat PATH` command names the file."""
    lines = []
    for command, output in sections or [(None, text)]:
        paths = re.findall(r"/sys/class/infiniband/[^\s;|&<>]+", command or "")
        single = paths[0] if len(paths) == 1 and not re.search(r"[*?{\[]", paths[0]) and re.fullmatch(SYSFS_PATH, paths[0]) else None
        banner = ibstatus = None
        # A loop typed over several lines (`$ for d in ...; do` ... `done`): the lines up to its `done` are the command's.
        looping = bool(command and re.match(r"(?:for|while|until)\b", command) and not re.search(r"\bdone\b", command))
        for line in output.splitlines():
            s = line.strip()
            if looping:
                looping = not re.search(r"(?:^|;\s*)done\b", s)
                continue
            if HEAD_BANNER.match(s):
                banner = s[3:-3].strip()
                continue
            if (h := IBSTATUS_HEAD.match(s)):
                ibstatus = f"/sys/class/infiniband/{h['dev']}/ports/{h['port']}"
                continue
            if not s:
                banner = ibstatus = None
                continue
            if ibstatus:
                key, _, value = s.partition(":")
                if (leaf := IBSTATUS_LEAF.get(key.strip())) and value.strip() != "unknown":
                    lines.append(f"{ibstatus}/{leaf}:{value.strip()}")
                continue
            if banner and not s.startswith("/sys/"):
                lines.append(f"{banner}:{s}")
                banner = None
            elif single and not s.startswith("/sys/"):
                lines.append(f"{single}:{s}")
                single = None
            else:
                lines.append(s)
    return lines


@parser
def parse_sysfs(text: str, sections: list[tuple[str | None, str]] = ()) -> list[IbPort]:
    ports: dict[tuple[str, int], IbPort] = {}
    gid_parts: dict[tuple[str, int, int], dict[str, str]] = {}

    def port_of(dev: str, port: int) -> IbPort:
        return ports.setdefault((dev, port), IbPort(dev, port))

    for line in _sysfs_lines(text, sections):
        if not line or is_prompt(line) or "$" in line:
            continue
        m = SYSFS.match(line)
        if m:
            p = port_of(m["dev"], int(m["port"]))
            leaf, value = m["leaf"], m["value"].strip()
            # A file the checks read whose value does not read (cut, or another file's) is no answer, not an unknown one.
            if leaf in ("state", "phys_state", "rate") and not (
                    _state_word(value)[leaf == "phys_state"] if leaf != "rate" else RATE.search(value)):
                raise ParseError("ib_sysfs", f"a {leaf} value ('4: ACTIVE', '5: LinkUp', '200 Gb/sec (2X NDR)')", line)
            if leaf == "state" and (s := _state_word(value)[0]):
                p.port_state = s
            elif leaf == "phys_state" and (s := _state_word(value)[1]):
                p.phys_state = s
            elif leaf == "rate" and (r := RATE.search(value)):
                p.rate_gbps, p.rate_width = float(r["gbps"]), r["width"]
            elif leaf == "link_layer" and value:
                p.link_layer = value
            elif (g := re.fullmatch(r"(gids|gid_attrs/types|gid_attrs/ndevs)/(\d+)", leaf)):
                gid_parts.setdefault((m["dev"], int(m["port"]), int(g[2])), {})[g[1]] = value
            continue
        if line.startswith("/"):
            raise ParseError("ib_sysfs", "'PATH:VALUE' lines of /sys/class/infiniband/DEV/ports/N/...", line)
        dev = ROW_DEV.match(line)
        (state, phys), rate = _state_word(line), RATE.search(line)
        if not (dev and dev["dev"].lower() not in ROW_LEAVES and (state or phys or rate)):
            # a line that names no port and no state: cut, or another tool's; never a port that is not there
            raise ParseError("ib_sysfs", "'grep -H' lines of /sys/class/infiniband/DEV/ports/N/... or 'DEV: 4: ACTIVE ... "
                                         "Gb/sec' rows", line)
        if re.search(r"\brate\b", line) and not rate or re.search(r"link_layer[=:]\s*$", line):
            raise ParseError("ib_sysfs", "a rate ('200 Gb/sec (2X NDR)') and link layer where the row names them", line)
        p = port_of(dev["dev"], int(dev["port"] or dev["port2"] or 1))
        p.port_state = state or p.port_state
        p.phys_state = phys or p.phys_state
        if rate:
            p.rate_gbps, p.rate_width = float(rate["gbps"]), rate["width"]
        if (ll := LINK_LAYER.search(line)):
            p.link_layer = ll[1]
    for (dev, port, index), parts in sorted(gid_parts.items()):
        gid = parts.get("gids", "")
        # Unused table slots read as all zeros and have no type: not a GID.
        if re.fullmatch(_GID, gid) and set(gid) <= {"0", ":"}:
            continue
        if not re.fullmatch(_GID, gid):
            raise ParseError("ib_sysfs", f"a GID (8 groups of 4 hex digits) in {dev}/{port}/gids/{index}", gid or "<empty>")
        port_of(dev, port).gids.append(
            Gid(dev, port, index, gid.lower(), gid_type(parts.get("gid_attrs/types")), gid_ipv4(gid),
                parts.get("gid_attrs/ndevs") or None)
        )
    if not ports:
        raise ParseError("ib_sysfs", "'grep -H' lines of /sys/class/infiniband/DEV/ports/N/... or 'DEV: 4: ACTIVE ... Gb/sec' rows", text)
    for p in ports.values():
        p.state = up_down(p.port_state)
    return list(ports.values())


# ---- ibv_devinfo -------------------------------------------------------------
# hca_id:<tab>DEV, HCA keys at one tab, "port:<tab>N" at two, port keys at three; tabs may be expanded to
# spaces. -v adds capability keys, flag lines without a colon, and per port active_width, active_speed,
# (newer) effective_speed, phys_state and "GID[  N]:<tab>GID[, RoCE v2]" lines; RoCE v2 GIDs are printed compressed
# by inet_ntop ("::ffff:10.0.0.1, RoCE v2"), the others as eight 4-digit groups.


@dataclass
class HcaPort:
    port: int
    port_state: str | None  # PORT_ACTIVE -> ACTIVE
    active_mtu: int | None
    max_mtu: int | None
    link_layer: str | None
    state: str | None = None  # up | down
    phys_state: str | None = None  # -v: LINK_UP, DISABLED, POLLING ...
    active_width: str | None = None  # -v: 4X
    active_speed: str | None = None  # -v, as printed: "25.0 Gbps (32)"
    rate_gbps: float | None = None  # -v: lanes x lane speed (else rdma-core 61+'s "effective_speed: 200.0 Gbps")
    port_lid: int | None = None
    sm_lid: int | None = None
    gids: list[Gid] = field(default_factory=list)  # -v


@dataclass
class Hca:
    rdma_device: str
    firmware: str | None = None
    board_id: str | None = None
    node_guid: str | None = None
    ports: list[HcaPort] = field(default_factory=list)
    transport: str | None = None  # InfiniBand, iWARP ...
    vendor_part_id: int | None = None  # 4129 = ConnectX-7
    sys_image_guid: str | None = None


def _word(value: str | None) -> str | None:
    """'PORT_ACTIVE (4)' -> 'PORT_ACTIVE'; 'InfiniBand (0)' -> 'InfiniBand'."""
    value = re.sub(r"\s*\(\d+\)\s*$", "", (value or "").strip())
    return value or None


def _hca_port(hca: Hca, port: dict[str, str], gids: list[tuple[int, str]]) -> HcaPort:
    state = _word(port.get("state"))
    state = state.removeprefix("PORT_") if state else None
    width = re.match(r"(\d+)X", port.get("active_width", ""))
    speed = re.match(r"(\d+(?:\.\d+)?)\s*Gbps", port.get("active_speed", ""))
    typed = []
    for index, raw in gids:
        gid, _, kind = raw.partition(",")
        gid = gid.strip()
        if not re.fullmatch(_GID, gid):
            # rdma-core prints RoCE v2 GIDs with inet_ntop ("::ffff:192.168.100.10", "fe80::1a2b:3cff:fe4d:5e6f");
            # written out in full here, as sysfs and show_gids print them
            try:
                gid = ipaddress.IPv6Address(gid).exploded
            except ValueError:
                continue
        typed.append(Gid(hca.rdma_device, int(port["port"]), index, gid.lower(), gid_type(kind), gid_ipv4(gid), None))
    return HcaPort(
        port=int(port["port"]), port_state=state, active_mtu=_mtu(port.get("active_mtu")), max_mtu=_mtu(port.get("max_mtu")),
        link_layer=port.get("link_layer") or None, state=up_down(state), phys_state=_word(port.get("phys_state")),
        active_width=f"{width[1]}X" if width else None, active_speed=port.get("active_speed") or None,
        rate_gbps=(round(int(width[1]) * float(speed[1]), 3) if width and speed
                   else float(effective[1]) if (effective := re.match(r"(\d+(?:\.\d+)?)\s*Gbps", port.get("effective_speed", "")))
                   else None),
        port_lid=_int(port.get("port_lid")), sm_lid=_int(port.get("sm_lid")), gids=typed,
    )


# Keys ibv_devinfo prints under "port:". `ibv_devinfo | grep -E 'hca_id|state|active_mtu'` drops the "port:" lines; the
# ports are printed in order from 1 (or the one `-i N` asks for), so a port key without its "port:" line opens the next.
DEVINFO_PORT_KEYS = {"state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer", "phys_state",
                     "active_width", "active_speed", "effective_speed", "max_msg_sz", "port_cap_flags", "port_cap_flags2",
                     "max_vl_num", "bad_pkey_cntr", "qkey_viol_cntr", "sm_sl", "pkey_tbl_len", "gid_tbl_len",
                     "subnet_timeout", "init_type_reply"}


@parser
def parse_ibv_devinfo(text: str, command: str | None = None) -> list[Hca]:
    hcas: list[Hca] = []
    port: dict[str, str] | None = None
    gids: list[tuple[int, str]] = []
    only = re.search(r"(?:\s-i\s*|--ib-port[= ])(\d+)", command or "")

    def close_port():
        if port is not None and hcas:
            if not port["port"].isdigit():
                raise ParseError("ibv_devinfo", "a port number after 'port:'", f"port: {port['port']}")
            if any(p.port == int(port["port"]) for p in hcas[-1].ports):
                # one HCA's ports once each: a second "port: 1" is the next HCA's, whose hca_id line was lost
                raise ParseError("ibv_devinfo", f"each port of {hcas[-1].rdma_device} once", f"port: {port['port']}")
            state = _word(port.get("state"))
            if state is not None and state.removeprefix("PORT_") not in PORT_STATES:  # cut or garbled: never "down"
                raise ParseError("ibv_devinfo", "a port state (PORT_ACTIVE, PORT_DOWN, PORT_INIT, PORT_ARMED)",
                                 port["state"])
            hcas[-1].ports.append(_hca_port(hcas[-1], port, gids))

    for raw in text.splitlines():
        if ":" not in raw:
            continue
        key, _, value = raw.strip().partition(":")
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            close_port()
            port, gids = None, []
            if value:
                hcas.append(Hca(value))
        elif not hcas:
            if raw.strip() and not re.fullmatch(r"\s*No IB devices found\s*", raw):
                raise ParseError("ibv_devinfo", "'hca_id:' before an HCA's lines", raw)
            continue
        elif key == "Device ports":
            continue
        elif key == "port":
            close_port()
            port, gids = {"port": value}, []
        elif (key in DEVINFO_PORT_KEYS or re.fullmatch(r"GID\[\s*\d+\]", key)) and (
                port is None or (port.get("implicit") and key in port)):
            close_port()  # a filtered paste: no "port:" line before this port's keys
            number = only[1] if only else str(len(hcas[-1].ports) + 1)
            port, gids = {"port": number, "implicit": "1"}, []
            if (g := re.fullmatch(r"GID\[\s*(\d+)\]", key)):
                gids.append((int(g[1]), value))
            else:
                port[key] = value
        elif port is not None:
            if (g := re.fullmatch(r"GID\[\s*(\d+)\]", key)):
                gids.append((int(g[1]), value))
            else:
                port.setdefault(key, value)
        elif key == "fw_ver":
            hcas[-1].firmware = value or None
        elif key == "board_id":
            hcas[-1].board_id = value or None
        elif key == "node_guid":
            hcas[-1].node_guid = value or None
        elif key == "sys_image_guid":
            hcas[-1].sys_image_guid = value or None
        elif key == "transport":
            hcas[-1].transport = _word(value)
        elif key == "vendor_part_id":
            hcas[-1].vendor_part_id = _int(value)
    close_port()
    for hca in hcas:
        # ibv_devinfo prints every HCA with its ports: one without (cut after hca_id, or a repeated hca_id line) is not
        # an HCA with no ports
        if not hca.ports:
            raise ParseError("ibv_devinfo", f"the port blocks of {hca.rdma_device}", f"hca_id: {hca.rdma_device}")
        for guid in (hca.node_guid, hca.sys_image_guid):
            if guid is not None and not re.fullmatch(r"[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3}", guid):
                raise ParseError("ibv_devinfo", "GUIDs of four 4-digit groups", guid)
    if not hcas and re.fullmatch(r"\s*No IB devices found\s*", text):  # ibv_devinfo's own answer on a machine without one
        return []
    if not hcas:
        raise ParseError("ibv_devinfo", "blocks starting with 'hca_id:'", text)
    return hcas


def _mtu(value: str | None) -> int | None:
    if not value:
        return None
    m = re.match(r"(\d+)", value)
    return int(m[1]) if m else None


# ---- ibstat ------------------------------------------------------------------
# CA 'mlx5_0' / <tab>CA type, Number of ports, Firmware version ... / <tab>Port 1: / <tab><tab>State, Physical state,
# Rate (Gb/s; "2.5", "40 (FDR10)"), Base lid, LMC, SM lid, Capability mask, Port GUID, Link layer (newer versions).
# `ibstat CA PORT` prints "CA: 'mlx5_0'" and the port unindented. Tabs may be expanded to spaces.

CA_HEAD = re.compile(r"^(?:CA|Switch|Router|iWARP RNIC|\?\?\?):?\s+'(?P<name>[^']+)'$")
PORT_HEAD = re.compile(r"^Port (\d+):$")
# Keys ibstat prints under "Port N:". `ibstat | grep -E "CA '|State|Rate"` drops the "Port N:" lines; ibstat prints
# a CA's ports in order from 1 (or the one `ibstat CA N` asks for), so a port key without its line opens the next.
IBSTAT_PORT_KEYS = {"State", "Physical state", "Rate", "Base lid", "LMC", "SM lid", "Capability mask", "Port GUID",
                    "Link layer"}


@dataclass
class IbstatPort:
    rdma_device: str
    port: int
    port_state: str | None  # Active -> ACTIVE, Initializing -> INIT
    phys_state: str | None  # as printed: LinkUp, Disabled, Polling ...
    rate_gbps: float | None
    link_layer: str | None
    firmware: str | None
    state: str | None = None  # up | down
    ca_type: str | None = None  # MT4129
    base_lid: int | None = None
    sm_lid: int | None = None
    port_guid: str | None = None
    node_guid: str | None = None


@parser
def parse_ibstat(text: str, command: str | None = None) -> list[IbstatPort]:
    out: list[IbstatPort] = []
    ca: dict[str, str] | None = None
    cur: dict[str, str] | None = None
    only = re.search(r"\bibstat\s+(?:-\S+\s+)*[\w.-]+\s+(\d+)\b", command or "")  # `ibstat mlx5_0 1`
    ports_seen = 0

    def close():
        # A port block is kept once its State line is there (a capture cut inside a block keeps what is certain).
        if cur is not None and ca is not None and cur.get("State"):
            raw_state = cur["State"].strip()
            state = _IBSTAT_STATES.get(raw_state.lower())
            if state is None:  # a state cut short or garbled is no state: never "down"
                raise ParseError("ibstat", "a port State (Down, Initializing, Armed, Active)", raw_state)
            if any(cur.get(k) and not re.fullmatch(r"0x[0-9a-fA-F]{16}", cur[k].strip()) for k in ("Port GUID",)):
                raise ParseError("ibstat", "a Port GUID of 16 hex digits", cur["Port GUID"])
            if cur.get("Rate") and not re.fullmatch(r"\d+(?:\.\d+)?(?: \(\w+\))?", cur["Rate"].strip()):
                raise ParseError("ibstat", "a port Rate ('200', '40 (FDR10)')", cur["Rate"])
            if any((p.rdma_device, p.port) == (ca["name"], int(cur["port"])) for p in out):
                # one CA's ports once each: a second "Port 1:" is the next CA's, whose "CA '...'" line was lost
                raise ParseError("ibstat", f"each port of CA '{ca['name']}' once", f"Port {cur['port']}:")
            rate = re.match(r"(\d+(?:\.\d+)?)\b", cur.get("Rate", ""))
            out.append(IbstatPort(ca["name"], int(cur["port"]), state, cur.get("Physical state") or None,
                                  float(rate[1]) if rate else None, cur.get("Link layer") or None,
                                  ca.get("Firmware version") or None, up_down(state), ca.get("CA type") or None,
                                  _int(cur.get("Base lid")), _int(cur.get("SM lid")), cur.get("Port GUID") or None,
                                  ca.get("Node GUID") or None))

    for raw in text.splitlines():
        line = raw.strip()
        if (m := CA_HEAD.match(line)):
            close()
            ca, cur, ports_seen = {"name": m["name"]}, None, 0
        elif ca is None:
            if line and (":" in line or PORT_HEAD.match(line)):
                raise ParseError("ibstat", "\"CA 'NAME'\" before a CA's lines", raw)
            continue
        elif (m := PORT_HEAD.match(line)):
            close()
            cur = {"port": m[1]}
            ports_seen += 1
        elif ":" in line:
            k, _, v = line.partition(":")
            k = k.strip()
            if k in IBSTAT_PORT_KEYS and (cur is None or (cur.get("implicit") and k in cur)):
                close()  # a filtered paste: no "Port N:" line before this port's keys
                ports_seen += 1
                cur = {"port": only[1] if only else str(ports_seen), "implicit": "1"}
            (cur if cur is not None else ca).setdefault(k, v.strip())
    close()
    if not out:
        raise ParseError("ibstat", "blocks \"CA 'mlx5_0'\" with 'Port 1:' sections", text)
    return out
