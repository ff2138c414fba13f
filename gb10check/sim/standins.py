#!/usr/bin/python3
"""Stand-ins for the GB10 hardware tools, run inside simulated nodes (stdlib only).

One file, many names: installed as nvidia-smi, ibdev2netdev, show_gids, ibv_devinfo, ethtool and
ib_write_bw (argv[0] picks). Each prints the real tool's format, generated from the node's
state (/etc/gb10sim/state.json) and from the real interfaces: a veth that is down is a port that
is down, a ufw drop on the perftest port is a connection that fails.
"""

import ipaddress
import json
import os
import platform
import socket
import subprocess
import sys
import time

STATE = "/etc/gb10sim/state.json"
IB = "/sys/class/infiniband"
NET = "/sys/class/net"
DASHES = "-" * 87


def state() -> dict:
    with open(STATE) as f:
        return json.load(f)


def read(path: str, default: str = "") -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def link_up(netdev: str) -> bool:
    return read(f"{NET}/{netdev}/operstate") == "up"


def ipv4_of(netdev: str) -> list[str]:
    try:
        out = subprocess.run(["ip", "-j", "-4", "addr", "show", "dev", netdev], capture_output=True, text=True, timeout=5).stdout
        return [a["local"] for i in json.loads(out or "[]") for a in i.get("addr_info", [])]
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return []


def devices(s: dict) -> list[tuple[str, str, dict]]:
    return [(link["rdma_device"], netdev, link) for netdev, link in s["links"].items()]


# ---- /sys/class/infiniband and /proc/driver/nvidia/version, kept in step by the node's init ----


def gid_table(netdev: str, layout: str, up: bool) -> list[tuple[str, str]]:
    """(gid, type) by index, as the mlx5 driver fills it: link-local v1/v2, then per IPv4 address v1/v2
    (IP-based entries only while the netdev is up)."""
    mac = read(f"{NET}/{netdev}/address", "00:00:00:00:00:00").split(":")
    eui = [int(mac[0], 16) ^ 2, int(mac[1], 16), int(mac[2], 16), 0xFF, 0xFE, int(mac[3], 16), int(mac[4], 16), int(mac[5], 16)]
    link_local = "fe80:0000:0000:0000:" + ":".join(f"{eui[i]:02x}{eui[i + 1]:02x}" for i in range(0, 8, 2))
    table = [(link_local, "IB/RoCE v1"), (link_local, "RoCE v2")]
    for ip in ipv4_of(netdev) if up else []:
        mapped = ipaddress.IPv6Address(f"::ffff:{ip}").exploded
        if layout == "shifted":
            # After an IPv6 address came and went the IPv4 entries sit higher: v1 at 3, v2 at 5.
            site = "fd00:0000:0000:0000:" + link_local[20:]
            table += [(site, "IB/RoCE v1"), (mapped, "IB/RoCE v1"), (site, "RoCE v2"), (mapped, "RoCE v2")]
        else:
            table += [(mapped, "IB/RoCE v1"), (mapped, "RoCE v2")]
    return table


def write_if_changed(path: str, text: str) -> None:
    if read(path, None) != text.strip():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")


def refresh(s: dict) -> None:
    for dev, netdev, link in devices(s):
        port = f"{IB}/{dev}/ports/1"
        up = link_up(netdev)
        write_if_changed(f"{port}/state", "4: ACTIVE" if up else "1: DOWN")
        write_if_changed(f"{port}/phys_state", "5: LinkUp" if up else "3: Disabled")
        write_if_changed(f"{port}/rate", "200 Gb/sec (2X NDR)" if up and link["speed_mbps"] >= 200000
                         else f"{link['speed_mbps'] // 1000} Gb/sec (2X HDR)" if up else "40 Gb/sec (4X QDR)")
        write_if_changed(f"{port}/link_layer", "Ethernet")
        write_if_changed(f"{IB}/{dev}/fw_ver", s["fw_ver"])
        write_if_changed(f"{IB}/{dev}/board_id", s["board_id"])
        os.makedirs(f"{IB}/{dev}/device/net/{netdev}", exist_ok=True)
        table = gid_table(netdev, s.get("gid_layout", "standard"), up)
        wanted = {str(i) for i in range(len(table))}
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            os.makedirs(f"{port}/{sub}", exist_ok=True)
            for stale in set(os.listdir(f"{port}/{sub}")) - wanted:
                os.unlink(f"{port}/{sub}/{stale}")
        for i, (gid, kind) in enumerate(table):
            write_if_changed(f"{port}/gids/{i}", gid)
            write_if_changed(f"{port}/gid_attrs/types/{i}", kind)
            write_if_changed(f"{port}/gid_attrs/ndevs/{i}", netdev)
    write_meminfo(s)
    write_if_changed("/proc/driver/nvidia/version",
                     f"NVRM version: NVIDIA UNIX Open Kernel Module for {platform.machine()}  {s['kernel_module']}  Release Build  "
                     f"(dvs-builder@gb10sim)  Wed Jan  7 22:35:57 UTC 2026\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04.1) ")


OS_BASELINE_KB = 1024 * 1024  # what an idle GB10's own services hold, beside the node's processes


def node_rss_kb() -> int:
    """Resident memory of this node's own processes (its /proc shows only its PID namespace)."""
    total = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
            except (OSError, ValueError, IndexError):
                pass
    return total


def write_meminfo(s: dict) -> None:
    """A GB10's 119 GiB of unified memory; what this node's processes really hold (a loading vLLM rank or
    a memory hog, this node's only: each GB10 has its own memory) and the scenario's `extra_used_kb` are
    taken from it."""
    host = {}
    for line in read("/etc/gb10sim/host-meminfo").splitlines():
        key, _, rest = line.partition(":")
        host[key] = int(rest.split()[0]) if rest.split() else 0
    if not host.get("MemTotal"):
        return
    total = s.get("mem_total_kb", 127600816)
    used = OS_BASELINE_KB + node_rss_kb() + s.get("extra_used_kb", 0)
    available = max(0, total - used)
    cached = min(host.get("Cached", 0) + s.get("extra_cached_kb", 0), available)
    lines = [("MemTotal", total), ("MemFree", max(0, available - cached)), ("MemAvailable", available),
             ("Buffers", host.get("Buffers", 0)), ("Cached", cached), ("SwapCached", 0), ("SwapTotal", 0), ("SwapFree", 0),
             ("Shmem", host.get("Shmem", 0)), ("KReclaimable", host.get("KReclaimable", 0)), ("HugePages_Total", None)]
    text = "\n".join(f"{k + ':':<16}{v:>8} kB" if v is not None else f"{k + ':':<16}{0:>8}" for k, v in lines)
    with open("/proc/meminfo", "w") as f:  # in place: the file is bind-mounted over /proc/meminfo
        f.write(text + "\n")


def make_file(root: str, f: dict, owner: tuple[int, int]) -> None:
    """{"path", and one of "content" | "size" (sparse) | "link" | "tree" (a folder to copy, links kept); optional "mode"}.

    Parents are owned like the file."""
    path = root + f["path"]
    parent = os.path.dirname(path)
    missing = []
    while not os.path.exists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for d in missing:
        os.chown(d, *owner)
    if "tree" in f:
        import shutil

        shutil.copytree(f["tree"], path, symlinks=True, dirs_exist_ok=True)
        for top, dirs, files in os.walk(path):
            for name in [top] + [os.path.join(top, x) for x in dirs + files]:
                os.lchown(name, *owner)
        return
    if "link" in f:
        if not os.path.lexists(path):
            os.symlink(f["link"], path)
        os.lchown(path, *owner)
        return
    with open(path, "w") as out:
        if "content" in f:
            out.write(f["content"])
        else:
            out.truncate(f["size"])  # sparse: a 21 GiB shard costs nothing on tmpfs
    os.chmod(path, f.get("mode", 0o644))
    os.chown(path, *owner)


# ---- nvidia-smi ------------------------------------------------------------------


def nvidia_smi(args: list[str]) -> int:
    if not os.path.exists(STATE):  # in a container the GPU was not given to (no --gpus / no toolkit)
        print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.\n")
        return 9
    s = state()
    if s["kernel_module"] != s["user_driver"]:
        print("Failed to initialize NVML: Driver/library version mismatch")
        print(f"NVML library version: {s['user_driver']}")
        return 18
    query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
    if query is not None:
        fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv")
        values = {"name": (s["gpu_name"], ""), "driver_version": (s["user_driver"], ""), "memory.total": ("[N/A]", " [MiB]"),
                  "memory.used": ("[N/A]", " [MiB]"), "memory.free": ("[N/A]", " [MiB]"), "utilization.gpu": ("0 %", " [%]"),
                  "power.draw": ("11.17 W", " [W]"), "temperature.gpu": ("35", ""), "pci.bus_id": ("00000000F:01:00.0", ""),
                  "uuid": (s["gpu_uuid"], ""), "persistence_mode": ("Enabled", "")}
        fields = query.split(",")
        unknown = [f for f in fields if f not in values]
        if unknown:
            print(f'Field "{unknown[0]}" is not a valid field to query.\n')
            return 2
        if "noheader" not in fmt:
            print(", ".join(f + ("" if "nounits" in fmt else values[f][1]) for f in fields))
        cells = [values[f][0] for f in fields]
        if "nounits" in fmt:
            cells = [c.rsplit(" ", 1)[0] if c.endswith((" %", " W")) else c for c in cells]
        print(", ".join(cells))
        return 0
    if "-L" in args:
        print(f"GPU 0: {s['gpu_name']} (UUID: {s['gpu_uuid']})")
        return 0
    v, cuda = s["user_driver"], s["cuda_version"]
    bar = "+" + "-" * 89 + "+"
    cols = "+-----------------------------------------+------------------------+----------------------+"
    print(time.strftime("%a %b %e %H:%M:%S %Y"))
    print(bar)
    print(f"| NVIDIA-SMI {v:<23}Driver Version: {v:<15}CUDA Version: {cuda:<9}|")
    print(cols)
    print("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |")
    print("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |")
    print("|                                         |                        |               MIG M. |")
    print("|=========================================+========================+======================|")
    print(f"|   0  {s['gpu_name']:<31}On  |   0000000F:01:00.0 Off |                  N/A |")
    print("| N/A   36C    P8              3W /  N/A  | Not Supported          |      0%      Default |")
    print("|                                         |                        |                  N/A |")
    print(cols)
    print()
    print(bar)
    print(f"| {'Processes:':<88}|")
    print("|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |")
    print("|        ID   ID                                                               Usage      |")
    print("|" + "=" * 89 + "|")
    print(f"|  {'No running processes found':<87}|")
    print(bar)
    return 0


# ---- ibdev2netdev, show_gids, ibv_devinfo, ethtool -----------------------------------

PCI = {"rocep1s0f0": "0000:01:00.0", "rocep1s0f1": "0000:01:00.1", "roceP2p1s0f0": "0002:01:00.0", "roceP2p1s0f1": "0002:01:00.1"}


def ibdev2netdev(args: list[str]) -> int:
    s = state()
    for dev, netdev, _ in devices(s):
        up = link_up(netdev)
        port_state = read(f"{IB}/{dev}/ports/1/state", "1: DOWN").split()[-1]
        if "-v" in args:
            print(f"{PCI.get(dev, '0000:00:00.0')} {dev} (MT4129 - {s['board_id']}) fw {s['fw_ver']} port 1 ({port_state}) ==> "
                  f"{netdev} ({'Up' if up else 'Down'})")
        else:
            print(f"{dev} port 1 ==> {netdev} ({'Up' if up else 'Down'})")
    return 0


def sysfs_gids(dev: str) -> list[tuple[int, str, str, str]]:
    base = f"{IB}/{dev}/ports/1"
    out = []
    for name in sorted(os.listdir(f"{base}/gids") if os.path.isdir(f"{base}/gids") else [], key=int):
        out.append((int(name), read(f"{base}/gids/{name}"), read(f"{base}/gid_attrs/types/{name}"), read(f"{base}/gid_attrs/ndevs/{name}")))
    return out


def show_gids(args: list[str]) -> int:
    s = state()
    print("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV")
    print("---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---")
    n = 0
    for dev, _, _ in devices(s):
        if args and args[0] != dev:
            continue
        for index, gid, kind, ndev in sysfs_gids(dev):
            mapped = ipaddress.IPv6Address(gid).ipv4_mapped
            ver = "v2" if kind.endswith("v2") else "v1"
            print(f"{dev}\t1\t{index}\t{gid}\t{str(mapped or ''):<15}\t{ver}\t{ndev}")
            n += 1
    print(f"n_gids_found={n}")
    return 0


def ibv_devinfo(args: list[str]) -> int:
    s = state()
    for i, (dev, netdev, _) in enumerate(devices(s)):
        if "-d" in args and args[args.index("-d") + 1] != dev:
            continue
        active = read(f"{IB}/{dev}/ports/1/state").endswith("ACTIVE")
        guid = f"4cbb:4703:002d:{0x1a16 + i:04x}"
        print(f"hca_id:\t{dev}")
        for key, tabs, value in [("transport", 3, "InfiniBand (0)"), ("fw_ver", 4, s["fw_ver"]), ("node_guid", 3, guid),
                                 ("sys_image_guid", 3, "4cbb:4703:002d:1a16"), ("vendor_id", 3, "0x02c9"),
                                 ("vendor_part_id", 3, "4129"), ("hw_ver", 4, "0x0"), ("board_id", 3, s["board_id"]),
                                 ("phys_port_cnt", 3, "1")]:
            print(f"\t{key}:" + "\t" * tabs + value)
        print("\t\tport:\t1")
        print("\t\t\tstate:\t\t\t" + ("PORT_ACTIVE (4)" if active else "PORT_DOWN (1)"))
        print("\t\t\tmax_mtu:\t\t4096 (5)")
        print("\t\t\tactive_mtu:\t\t" + ("1024 (3)"))
        print("\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t0\n\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tEthernet")
        print()
    return 0


def ethtool(args: list[str]) -> int:
    names = [a for a in args if not a.startswith("-")]
    if not names:
        print("ethtool: bad command line argument(s)\nFor more information run ethtool -h", file=sys.stderr)
        return 1
    netdev = names[0]
    if not os.path.exists(f"{NET}/{netdev}"):
        print("netlink error: no device matches name (offset 24)\nnetlink error: No such device", file=sys.stderr)
        return 1
    link = state()["links"].get(netdev)
    up = link_up(netdev)
    print(f"Settings for {netdev}:")
    if link:
        print("\tSupported ports: [ FIBRE ]\n\tSupported link modes:   200000baseCR4/Full\n\tSupported pause frame use: Symmetric")
        print("\tSupports auto-negotiation: Yes\n\tAdvertised link modes:  200000baseCR4/Full\n\tAdvertised auto-negotiation: Yes")
    print(f"\tSpeed: {str(link['speed_mbps']) + 'Mb/s' if (link and up) else 'Unknown!'}")
    if link and up:
        print("\tLanes: 2")
    print(f"\tDuplex: {'Full' if up else 'Unknown! (255)'}")
    print(f"\tAuto-negotiation: {'on' if link else 'off'}")
    print(f"\tPort: {'Direct Attach Copper' if link else 'Other'}")
    print(f"\tLink detected: {'yes' if up else 'no'}")
    return 0


# ---- ib_write_bw: a real TCP exchange on the perftest port, the scenario's bandwidth --------


def _opts(args: list[str]) -> tuple[dict, str | None]:
    takes_value = {"-d", "-x", "-p", "-D", "-q", "-s", "-i", "-n", "--ib-dev", "--gid-index", "--port", "--duration", "--size"}
    opts, host, i = {}, None, 0
    while i < len(args):
        a = args[i]
        if a in takes_value and i + 1 < len(args):
            opts[a.lstrip("-")[0] if len(a) == 2 else a] = args[i + 1]
            i += 2
        elif a.startswith("-"):
            opts[a] = True
            i += 1
        else:
            host = a
            i += 1
    return opts, host


def _perftest_gid(dev: str, index: int) -> str | None:
    for i, gid, _, _ in sysfs_gids(dev):
        if i == index:
            return ":".join(f"{b:02d}" for b in ipaddress.IPv6Address(gid).packed)
    return None


def ib_write_bw(args: list[str]) -> int:
    s = state()
    opts, host = _opts(args)
    dev = opts.get("d") or devices(s)[0][0]
    link = next((l for d, _, l in devices(s) if d == dev), None)
    if link is None:
        print(f" IB device {dev} not found\n Unable to find the Infiniband/RoCE device")
        return 1
    if not read(f"{IB}/{dev}/ports/1/state").endswith("ACTIVE"):
        print(" Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for the device")
        return 1
    gid_index = int(opts.get("x", 0))
    gid = _perftest_gid(dev, gid_index)
    if gid is None:
        print(f" Failed to get GID of index {gid_index} on {dev}\n Couldn't get context for the device")
        return 1
    port = int(opts.get("p", 18515))
    duration = min(float(opts.get("D", 1)), 30.0)
    gbits = "--report_gbits" in opts
    hello = {"gid": gid, "gbps": link["bandwidth_gbps"], "duration": duration}
    if host is None:
        print("\n************************************\n* Waiting for client to connect... *\n************************************", flush=True)
        with socket.create_server(("", port), reuse_port=False) as srv:
            conn, _ = srv.accept()
        peer = _exchange(conn, hello, send_first=False)
    else:
        try:
            conn = socket.create_connection((host, port), timeout=5)
        except OSError:
            print(f"Couldn't connect to {host}:{port}\nUnable to open file descriptor for socket connection Unable to init the socket connection")
            return 1
        peer = _exchange(conn, hello, send_first=True)
        duration = hello["duration"]
    if peer is None:
        print(" Failed to exchange data between server and clients")
        return 1
    bw = min(link["bandwidth_gbps"], peer["gbps"])
    duration = peer.get("duration", duration) if host is None else duration
    unit, value = ("Gb/sec", bw) if gbits else ("MB/sec", bw * 1e9 / 8 / 1048576)
    iters = int(bw * 1e9 / 8 * duration / 65536)
    print(DASHES)
    print("                    RDMA_Write BW Test")
    print(f" Dual-port       : OFF\t\tDevice         : {dev}")
    print(f" Number of qps   : {opts.get('q', 1)}\t\tTransport type : IB")
    print(" Connection type : RC\t\tUsing SRQ      : OFF")
    print(" PCIe relax order: ON\n ibv_wr* API     : ON\n TX depth        : 128\n CQ Moderation   : 1\n Mtu             : 1024[B]")
    print(f" Link type       : Ethernet\n GID index       : {gid_index}\n Max inline data : 0[B]\n rdma_cm QPs\t : OFF")
    print(" Data ex. method : Ethernet")
    print(DASHES)
    print(f" local address: LID 0000 QPN 0x0129 PSN 0x57279d RKey 0x184300 VAddr 0x00ec99bedad000\n GID: {gid}")
    print(f" remote address: LID 0000 QPN 0x0129 PSN 0x531b7 RKey 0x184300 VAddr 0x00ffeec955d000\n GID: {peer['gid']}")
    print(DASHES)
    print(f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]")
    print(f" 65536      {iters:<16} {value:<18.2f} {value:<18.2f} {bw * 1e9 / 8 / 65536 / 1e6:.6f}")
    print(DASHES)
    return 0


def _exchange(conn: socket.socket, hello: dict, send_first: bool) -> dict | None:
    conn.settimeout(60)
    with conn, conn.makefile("rw") as f:
        try:
            if send_first:
                f.write(json.dumps(hello) + "\n")
                f.flush()
                peer = json.loads(f.readline())
                time.sleep(hello["duration"])
                f.write("done\n")
                f.flush()
            else:
                peer = json.loads(f.readline())
                f.write(json.dumps(hello) + "\n")
                f.flush()
                f.readline()
            return peer
        except (OSError, ValueError):
            return None


# ---- mpirun + nccl-tests: the transport NCCL would pick, the scenario's bus bandwidth -------------

SOCKET_BUSBW_GBPS = 20.0  # what a socket fallback over the 200G link gives, about 2.5 GB/s


def mpirun(args: list[str]) -> int:
    """mpirun -np N -H ip:1,ip:1 [-x VAR[=value]]... PROGRAM ARGS: reaches every host over real SSH first."""
    hosts, env, i = [], {}, 0
    while i < len(args):
        a = args[i]
        if a in ("-np", "-n", "--mca", "-H", "--host", "-x") and i + 1 < len(args):
            if a in ("-H", "--host"):
                hosts = [h.split(":")[0] for h in args[i + 1].split(",")]
            elif a == "-x":
                key, _, value = args[i + 1].partition("=")
                env[key] = value or os.environ.get(key, "")
            i += 3 if a == "--mca" else 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        break
    program = os.path.basename(args[i]) if i < len(args) else ""
    if program not in ("all_gather_perf", "all_reduce_perf"):
        print(f"mpirun was unable to find the specified executable file: {args[i] if i < len(args) else ''}", file=sys.stderr)
        return 1
    peers = []
    listen = ("nohup python3 -c 'import socket,sys; s=socket.create_server((sys.argv[1],29600)); s.settimeout(8); s.accept()' "
              "{ip} >/dev/null 2>&1 & sleep 0.2; cat /etc/gb10sim/state.json; echo; echo '=== port states'; "
              "for f in /sys/class/infiniband/*/ports/1/state; do d=${{f#/sys/class/infiniband/}}; echo \"${{d%%/*}} $(cat $f)\"; done")
    for host in hosts:
        probe = subprocess.run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", host, listen.format(ip=host)],
                               capture_output=True, text=True, timeout=30)
        if probe.returncode != 0:
            print("--------------------------------------------------------------------------\n"
                  "ORTE was unable to reliably start one or more daemons.\n"
                  f"This usually is caused by: not finding the required libraries on the remote node ({host}: "
                  f"{probe.stderr.strip()})\n--------------------------------------------------------------------------", file=sys.stderr)
            return 1
        text, _, states = probe.stdout.partition("=== port states")
        peer = json.loads(text)
        peer["active"] = {line.split()[0] for line in states.splitlines() if line.endswith("ACTIVE")}
        peers.append(peer)
    me = socket.gethostname()
    for host in hosts[1:]:  # NCCL's bootstrap: a real connection to every other rank
        try:
            socket.create_connection((host, 29600), timeout=5).close()
        except OSError as exc:
            print(f"{me}:4242:4242 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to {host}<29600> failed : {exc}")
            print(f"{me}: Test NCCL failure common.cu:1279 'remote process exited or there was a network error'")
            return 1
    return nccl_test(program, hosts, peers, env)


def nccl_test(program: str, hosts: list[str], peers: list[dict], env: dict) -> int:
    hcas = [h.split(":")[0] for h in env.get("NCCL_IB_HCA", "").lstrip("=^").split(",") if h]
    gid = env.get("NCCL_IB_GID_INDEX", "3")
    ib_ok = bool(hcas)
    for peer in peers:  # RoCE only where every rank's HCAs are ACTIVE with RoCE v2 at the GID index given
        right_index = "5" if peer.get("gid_layout", "standard") == "shifted" else "3"
        ib_ok = ib_ok and gid == right_index and set(hcas) <= peer.get("active", set())
    busbw = min(p.get("nccl_busbw_gbps", 183.7) for p in peers) if ib_ok else SOCKET_BUSBW_GBPS
    me = socket.gethostname()
    ifname = env.get("NCCL_SOCKET_IFNAME", "enp1s0f0np0")
    if ib_ok:
        print(f"{me}:4242:4242 [0] NCCL INFO NET/IB : Using " + " ".join(f"[{i}]{h}:1/RoCE" for i, h in enumerate(hcas)) +
              f" [RO]; OOB {ifname}:{hosts[0] if hosts else ''}<0>")
    else:
        print(f"{me}:4242:4242 [0] NCCL INFO NET/IB : No device found.")
        print(f"{me}:4242:4242 [0] NCCL INFO NET/Socket : Using [0]{ifname}:{hosts[0] if hosts else ''}<0>")
    print(f"{me}:4242:4242 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/{'IB' if ib_ok else 'Socket'}/0")
    size = 1 << 30
    gbs = busbw / 8  # nccl-tests prints GB/s
    n = max(1, len(peers))
    algbw = gbs * n / max(1, n - 1)
    t_us = size / (algbw * 1e9) * 1e6
    print("# nccl-tests version 2.18.5 nccl-headers=22809 nccl-library=22809")
    print(f"# Collective test starting: {program}")
    print(f"# nThread 1 nGpus 1 minBytes {size} maxBytes {size} step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0")
    print("#")
    print("# Using devices")
    for r, (host, peer) in enumerate(zip(hosts, peers)):
        print(f"#  Rank {r:2d} Group  0 Pid  {4242 + r:5d} on {peer['name']} device  0 [000f:01:00] {peer['gpu_name']}")
    print("#")
    print("#                                                              out-of-place                       in-place")
    print("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong")
    print("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)")
    redop = "none" if program == "all_gather_perf" else "sum"
    print(f" {size:12d}  {size // 4:12d}     float    {redop:>4}      -1  {t_us:7.0f}  {algbw:6.2f}  {gbs:6.2f}       0  {t_us:7.0f}  "
          f"{algbw:6.2f}  {gbs:6.2f}       0")
    print("# Out of bounds values : 0 OK")
    print(f"# Avg bus bandwidth    : {gbs:.4f}")
    print("#")
    print(f"# Collective test concluded: {program}")
    print("#")
    return 0


def nvidia_container_runtime_hook(args: list[str]) -> int:
    """The OCI prestart hook docker runs for `--gpus` (it registers its "nvidia" device driver only when this hook is on
    dockerd's PATH, as with the real toolkit): gives the container what the driver stand-ins read, as the real
    hook bind-mounts the driver's libraries and nvidia-smi. Runs before pivot_root, in the runtime's namespaces."""
    if not args or args[0] != "prestart":
        return 0
    container = json.load(sys.stdin)
    with open(os.path.join(container["bundle"], "config.json")) as f:
        rootfs = json.load(f)["root"]["path"]
    rootfs = rootfs if os.path.isabs(rootfs) else os.path.join(container["bundle"], rootfs)
    script = (f"mkdir -p {rootfs}/etc/gb10sim && mount --bind /etc/gb10sim {rootfs}/etc/gb10sim "
              f"&& mount -o remount,bind,ro {rootfs}/etc/gb10sim")
    done = subprocess.run(["nsenter", "-t", str(container["pid"]), "-m", "-r", "/bin/sh", "-c", script], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"nvidia-container-cli: mount error: {done.stderr.strip()}", file=sys.stderr)
    return done.returncode


COMMANDS = {"nvidia-container-runtime-hook": nvidia_container_runtime_hook, "nvidia-smi": nvidia_smi, "mpirun": mpirun, "all_gather_perf": lambda a: nccl_test("all_gather_perf", [], [state()], {}), "ibdev2netdev": ibdev2netdev, "show_gids": show_gids, "ibv_devinfo": ibv_devinfo,
            "ethtool": ethtool, "ib_write_bw": ib_write_bw}

def refresh_loop(args: list[str]) -> int:
    """What the plain init does between reaping children; a unit of its own in systemd mode."""
    while True:
        try:
            refresh(state())
        except Exception as exc:  # keep going; the journal says what broke
            print(f"refresh failed: {exc!r}", file=sys.stderr, flush=True)
        time.sleep(0.5)


COMMANDS["refresh-loop"] = refresh_loop

if __name__ == "__main__":
    name = os.path.basename(sys.argv[0])
    if name in COMMANDS:
        sys.exit(COMMANDS[name](sys.argv[1:]))
    if len(sys.argv) > 1 and sys.argv[1] in COMMANDS:
        sys.exit(COMMANDS[sys.argv[1]](sys.argv[2:]))
    print(f"usage: {name} {{{','.join(COMMANDS)}}} ARGS", file=sys.stderr)
    sys.exit(2)
