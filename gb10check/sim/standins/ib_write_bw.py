"""ib_write_bw: a real TCP exchange on the perftest port (a firewall drop is a real failure), the scenario's
bandwidth, printed in perftest's layout (perftest/*: the banner with its tab pairs, 87-dash rules,
`local address:`/`remote address:` lines each followed by its GID in decimal bytes, the result table with
perftest's column padding and tabs, MB/sec unless --report_gbits)."""

import ipaddress
import json
import random
import socket
import time

from .common import IB, active_mtu, devices, read, state, sysfs_gids

RULE = "-" * 87
TAKES_VALUE = {"-d", "-x", "-p", "-D", "-q", "-s", "-i", "-n", "--ib-dev", "--gid-index", "--port", "--duration", "--size"}
MARGIN_S = 2  # perftest leaves out a warm-up and a cool-down of this length in duration mode (-D)


def options(args: list[str]) -> tuple[dict, str | None]:
    opts, host, i = {}, None, 0
    while i < len(args):
        a = args[i]
        if a in TAKES_VALUE and i + 1 < len(args):
            opts[a.lstrip("-")[0] if len(a) == 2 else a] = args[i + 1]
            i += 2
        elif a.startswith("-"):
            opts[a] = True
            i += 1
        else:
            host = a
            i += 1
    return opts, host


def perftest_gid(dev: str, index: int) -> str | None:
    """perftest prints a GID as 16 decimal bytes."""
    for i, gid, _, _ in sysfs_gids(dev):
        if i == index:
            return ":".join(f"{b:02d}" for b in ipaddress.IPv6Address(gid).packed)
    return None


def address_line(side: str, qp: dict) -> str:
    """BASIC_ADDR_FMT + RDMA_FMT: LID %#04x, QPN %#06x, PSN %#06x, RKey %#08x, VAddr %#016x (C's '#' leaves 0 bare)."""
    return (f" {side} address: LID 0000 QPN {qp['qpn']:#06x} PSN {qp['psn']:#06x} RKey {qp['rkey']:#08x} "
            f"VAddr {qp['vaddr']:#016x}")


def banner(dev: str, qps: int, gid_index: int, mtu: int) -> list[str]:
    return [RULE, "                    RDMA_Write BW Test",
            f" Dual-port       : OFF\t\tDevice         : {dev}",
            f" Number of qps   : {qps}\t\tTransport type : IB",
            " Connection type : RC\t\tUsing SRQ      : OFF",
            " PCIe relax order: ON", " ibv_wr* API     : ON", " TX depth        : 128", " CQ Moderation   : 1",
            f" Mtu             : {mtu}[B]", " Link type       : Ethernet", f" GID index       : {gid_index}",
            " Max inline data : 0[B]", " rdma_cm QPs\t : OFF", " Data ex. method : Ethernet", RULE]


def result_row(size: int, iters: int, peak: float, average: float, msg_rate_mpps: float) -> str:
    """REPORT_FMT: ' %-7lu    %-10lu       %-7.2lf            %-7.2lf\\t\\t   %-7.6lf'."""
    return f" {size:<7}    {iters:<10}       {peak:<7.2f}            {average:<7.2f}\t\t   {msg_rate_mpps:<7.6f}"


def ib_write_bw(args: list[str]) -> int:
    s = state()
    opts, host = options(args)
    dev = opts.get("d") or devices(s)[0][0]
    found = next(((netdev, link) for d, netdev, link in devices(s) if d == dev), None)
    if found is None:
        print(f" IB device {dev} not found\n Unable to find the Infiniband/RoCE device")
        return 1
    netdev, link = found
    if not (read(f"{IB}/{dev}/ports/1/state") or "").endswith("ACTIVE"):
        print(" Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for the device")
        return 1
    gid_index = int(opts.get("x", 0))
    gid = perftest_gid(dev, gid_index)
    if gid is None:
        print(f" Failed to get GID of index {gid_index} on {dev}\n Couldn't get context for the device")
        return 1
    port = int(opts.get("p", 18515))
    duration = min(float(opts.get("D", 1)), 30.0)
    qps = int(opts.get("q", 1))
    me = {"gid": gid, "gbps": link["bandwidth_gbps"], "duration": duration, "qpn": random.randrange(0x100, 0x2000),
          "psn": random.randrange(1 << 24), "rkey": random.randrange(0x100000, 0x200000), "vaddr": random.randrange(1 << 44, 1 << 48) & ~0xFFF}
    if host is None:
        print("\n************************************\n* Waiting for client to connect... *\n************************************", flush=True)
        with socket.create_server(("", port), reuse_port=False) as srv:
            conn, _ = srv.accept()
        peer = exchange(conn, me, send_first=False)
    else:
        try:
            conn = socket.create_connection((host, port), timeout=5)
        except OSError:
            print(f"Couldn't connect to {host}:{port}\nUnable to open file descriptor for socket connection Unable to init the socket connection")
            return 1
        peer = exchange(conn, me, send_first=True)
    if peer is None:
        print(" Failed to exchange data between server and clients")
        return 1
    duration = peer.get("duration", duration) if host is None else duration
    bw_gbps = min(link["bandwidth_gbps"], peer["gbps"])
    gbits = "--report_gbits" in opts
    unit, value = ("Gb/sec", bw_gbps) if gbits else ("MB/sec", bw_gbps * 1e9 / 8 / 1048576)
    size = 65536
    msg_rate = bw_gbps * 1e9 / 8 / size / 1e6
    window = duration - 2 * MARGIN_S if duration > 2 * MARGIN_S else duration / 2
    mtu = active_mtu(netdev)[0]
    lines = banner(dev, qps, gid_index, mtu)
    lines += [address_line("local", me), f" GID: {gid}", address_line("remote", peer), f" GID: {peer['gid']}", RULE]
    lines += [f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]",
              result_row(size, int(msg_rate * 1e6 * window), 0.0, value, msg_rate), RULE]
    print("\n".join(lines))
    return 0


def exchange(conn: socket.socket, hello: dict, send_first: bool) -> dict | None:
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
