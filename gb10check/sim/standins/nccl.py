"""mpirun + nccl-tests (all_gather_perf, all_reduce_perf): real SSH to every rank and a real bootstrap connection;
the transport NCCL would pick (RoCE only where every rank's HCAs are ACTIVE with RoCE v2 at the GID index given,
else the socket fallback) and the scenario's bus bandwidth, in nccl-tests' layout."""

import json
import os
import socket
import subprocess
import sys
import time

from .common import devices, ipv4_networks_of, ipv4_of, link_up, roce_v2_ipv4_index, state


SOCKET_BUSBW_GBPS = 20.0  # what a socket fallback over the 200G link gives, about 2.5 GB/s


def contexts(args: list[str]) -> list[tuple[list[str], dict, str, list[str]]]:
    """mpirun's application contexts (MPMD, separated by `:`), each (hosts, env, program, program's args): -np N,
    -H ip:1[,ip:1], -x VAR[=value], --mca K V, then PROGRAM ARGS, where PROGRAM may be `env VAR=value ... PROGRAM`."""
    out, hosts, env = [], [], {}
    segments: list[list[str]] = [[]]
    for a in args:
        if a == ":":
            segments.append([])
        else:
            segments[-1].append(a)
    for seg in segments:
        env = dict(env)  # -x of an earlier context is not this one's; the globals before the first are every one's
        hosts_here, i = [], 0
        while i < len(seg):
            a = seg[i]
            if a in ("-np", "-n", "--mca", "-H", "--host", "-x") and i + 1 < len(seg):
                if a in ("-H", "--host"):
                    hosts_here = [h.split(":")[0] for h in seg[i + 1].split(",")]
                elif a == "-x":
                    key, _, value = seg[i + 1].partition("=")
                    env[key] = value or os.environ.get(key, "")
                i += 3 if a == "--mca" else 2
                continue
            if a.startswith("-"):
                i += 1
                continue
            break
        rest = seg[i:]
        own = {}
        if rest and os.path.basename(rest[0]) == "env":
            rest = rest[1:]
            while rest and "=" in rest[0] and not rest[0].startswith("-"):
                key, _, value = rest.pop(0).partition("=")
                own[key] = value
        out.append((hosts_here or hosts, {**env, **own}, rest[0] if rest else "", rest[1:]))
        hosts = hosts_here or hosts
    return out


def mpirun(args: list[str]) -> int:
    """mpirun -np N -H ip:1,ip:1 [-x VAR[=value]]... PROGRAM ARGS, or one context per rank (`-np 1 -H ip:1 env VAR=value
    PROGRAM ARGS : ...`): reaches every host over real SSH first. Each rank takes the environment of its own context."""
    ranks = [(host, env, program) for hosts, env, program, _ in contexts(args) for host in hosts]
    hosts = [h for h, _, _ in ranks]
    envs = [e for _, e, _ in ranks]
    names = {os.path.basename(p) for _, _, p in ranks} or {""}
    program = names.pop() if len(names) == 1 else ""
    if program not in ("all_gather_perf", "all_reduce_perf"):
        shown = next((p for _, _, p in ranks if os.path.basename(p) not in ("all_gather_perf", "all_reduce_perf")), "")
        print(f"mpirun was unable to find the specified executable file: {shown}", file=sys.stderr)
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
    return nccl_test(program, hosts, peers, envs)


def hca_list(env: dict) -> list[str]:
    return [h.split(":")[0] for h in env.get("NCCL_IB_HCA", "").lstrip("=^").split(",") if h]


def nccl_test(program: str, hosts: list[str], peers: list[dict], envs: list[dict]) -> int:
    """Each rank (peers[r], with envs[r], its own environment) on RoCE only where its HCAs are ACTIVE on its node with
    RoCE v2 at the GID index it is given; one rank that cannot is the whole run on the socket fallback."""
    ib_ok = bool(peers)
    for peer, env in zip(peers, envs):
        hcas, gid = hca_list(env), env.get("NCCL_IB_GID_INDEX")  # GID unset: NCCL finds the RoCE v2 IPv4 entry by itself
        right_index = roce_v2_ipv4_index(peer.get("gid_layout", "standard"))  # the same table the sysfs stand-in writes
        ib_ok = ib_ok and bool(hcas) and (gid is None or gid == str(right_index)) and set(hcas) <= peer.get("active", set())
    busbw = min(p.get("nccl_busbw_gbps", 183.7) for p in peers) if ib_ok else SOCKET_BUSBW_GBPS
    for r, (peer, env) in enumerate(zip(peers, envs)):
        me = peer.get("name") or socket.gethostname()
        ifname = env.get("NCCL_SOCKET_IFNAME", "enp1s0f0np0")
        hcas = hca_list(env)
        mine_ok = bool(hcas) and set(hcas) <= peer.get("active", set())
        if mine_ok:
            print(f"{me}:{4242 + r}:{4242 + r} [0] NCCL INFO NET/IB : Using " +
                  " ".join(f"[{i}]{h}:1/RoCE" for i, h in enumerate(hcas)) + f" [RO]; OOB {ifname}:{hosts[r] if r < len(hosts) else ''}<0>")
        else:
            print(f"{me}:{4242 + r}:{4242 + r} [0] NCCL INFO NET/IB : No device found.")
            print(f"{me}:{4242 + r}:{4242 + r} [0] NCCL INFO NET/Socket : Using [0]{ifname}:{hosts[r] if r < len(hosts) else ''}<0>")
        side = "send" if r == 0 else "receive"
        print(f"{me}:{4242 + r}:{4242 + r} [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [{side}] via NET/{'IB' if ib_ok else 'Socket'}/0")
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
    wrong = sum(p.get("nccl_wrong", 0) for p in peers)  # elements a rank's path corrupts (state: a bad cable or HCA)
    print(f" {size:12d}  {size // 4:12d}     float    {redop:>4}      -1  {t_us:7.0f}  {algbw:6.2f}  {gbs:6.2f}  {wrong:6d}  {t_us:7.0f}  "
          f"{algbw:6.2f}  {gbs:6.2f}  {wrong:6d}")
    print(f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}")
    print(f"# Avg bus bandwidth    : {gbs:.4f}")
    print("#")
    print(f"# Collective test concluded: {program}")
    print("#")
    return 0


def all_gather_perf(args: list[str]) -> int:
    """Run alone (no mpirun): one rank, this node."""
    return nccl_test("all_gather_perf", [], [state()], [{}])


# ---- the collectives canary (gb10check/canary/collectives.py) in the image's python3 ---------------------------------

CANARY_MARK = "gb10check-collective"
IB_SMALL_LATENCY_US = 30.0  # an 8 KB all_reduce across a GB10 pair over RoCE: 28-35 us in the field (issue #30)
SOCKET_SMALL_LATENCY_US = 42.19  # our real two-H200 run kept on NET/Socket: 42.19 us at 8 KB (selftests/captures/nccl_tests)


def _opts(args: list[str]) -> dict:
    opts, i = {}, 0
    while i < len(args):
        if args[i].startswith("--") and i + 1 < len(args):
            opts[args[i][2:]] = args[i + 1]
            i += 2
        else:
            i += 1
    return opts


def _say(kind: str, **fields) -> None:
    print(f"{CANARY_MARK}{kind} {json.dumps(fields, sort_keys=True)}", flush=True)


class StoreTimeout(Exception):
    """Rank 0's store waited its timeout for the other ranks (torch's DistStoreError)."""


def _rendezvous(rank: int, world: int, master: str, port: int, timeout: float, mine: dict) -> list[dict]:
    """Every rank's view, through a real TCP connection to rank 0 (as torch's TCP store): rank 0 gathers, then answers."""
    if rank == 0:
        server = socket.create_server(("", port))  # torch's TCP store listens on every address of rank 0's node
        server.settimeout(timeout)
        views, peers = [mine], []
        try:
            while len(views) < world:
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    raise StoreTimeout(f"DistStoreError: Timed out after {timeout:g} seconds waiting for clients. "
                                       f"{len(views)}/{world} clients joined.") from None
                conn.settimeout(timeout)
                views.append(json.loads(conn.makefile().readline()))
                peers.append(conn)
            answer = (json.dumps(sorted(views, key=lambda v: v["rank"])) + "\n").encode()
            for conn in peers:
                conn.sendall(answer)
                conn.close()
        finally:
            server.close()
        return sorted(views, key=lambda v: v["rank"])
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn = socket.create_connection((master, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    conn.settimeout(timeout)
    conn.sendall((json.dumps(mine) + "\n").encode())
    views = json.loads(conn.makefile().readline())
    conn.close()
    return views


def collectives(args: list[str]) -> int:
    """What the canary prints on a node whose GPU and RDMA devices are the state's: the rank's own environment decides
    its transport (RoCE where every HCA it names is ACTIVE here, with RoCE v2 at its GID index; else NET/Socket), a real
    rendezvous with rank 0 over the network, then NCCL's lines in the shape of our real runs' and one result line per
    collective and size with the scenario's figures (the slowest rank's, as the program reduces them)."""
    o = _opts(args)
    rank, world, master, port = int(o["rank"]), int(o["world"]), o["master"], int(o["port"])
    timeout = float(o.get("timeout", 120))
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")}
    s = state()
    me = s.get("name") or socket.gethostname()
    _say("-start", rank=rank, world=world, host=me, device=0, gpu=s.get("gpu_name", "NVIDIA GB10"), torch="(stand-in)",
         nccl="2.28.9", env=env)
    hcas = hca_list(env)
    active = {dev for dev, netdev, _ in devices(s) if link_up(netdev)}
    gid = env.get("NCCL_IB_GID_INDEX")
    ib = bool(hcas) and set(hcas) <= active and (gid is None or gid == str(roce_v2_ipv4_index(s.get("gid_layout", "standard"))))
    netdev_of = {dev: netdev for dev, netdev, _ in devices(s)}
    subnets = [ipv4_networks_of(netdev_of[h]) if h in netdev_of else [] for h in hcas]  # per NET/IB index
    mine = {"rank": rank, "ib": ib, "busbw_gbps": s.get("nccl_busbw_gbps", 183.7), "wrong": s.get("nccl_wrong", 0),
            "latency_us": s.get("nccl_small_latency_us", IB_SMALL_LATENCY_US), "subnets": subnets}
    pid = 4242 + rank
    prefix = f"{me}:{pid}:{pid} [0] NCCL INFO "
    try:
        views = _rendezvous(rank, world, master, port, timeout, mine)
    except StoreTimeout as exc:
        _say("-error", rank=rank, error=str(exc))
        return 1
    except (OSError, ValueError) as exc:
        print(f"{me}:{pid}:{pid} [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to {master}<{port}> failed : {exc}")
        _say("-error", rank=rank, error=f"DistNetworkError: failed to reach rank 0 at {master}:{port}: {exc}")
        return 1
    every_ib = all(v["ib"] for v in views)
    ifname = env.get("NCCL_SOCKET_IFNAME", "")
    ip = (ipv4_of(ifname) or [master])[0] if ifname else master
    if rank == 0:
        print("NCCL version 2.28.9+cuda13.0")
    if ib:
        print(prefix + "NET/IB : Using " + " ".join(f"[{i}]{h}:1/RoCE" for i, h in enumerate(hcas)) + f" [RO]; OOB {ifname}:{ip}<0>")
    else:
        print(prefix + "NET/IB : No device found.")
    print(prefix + f"NET/Socket : Using [0]{ifname}:{ip}<0>")
    print(prefix + f"Using network {'IB' if ib else 'Socket'}")
    nets = max(1, len(hcas)) if every_ib else 1
    aware = env.get("NCCL_IB_SUBNET_AWARE_ROUTING") == "1"

    def device(ch: int, peer: dict) -> int:
        """Channel ch's NET/IB index towards peer: with subnet-aware routing the ch-th of this rank's devices on a subnet
        the peer also has; without it (stock NCCL) the ch-th device whatever it reaches."""
        theirs = {net for nets_ in peer.get("subnets", []) for net in nets_}
        shared = [i for i, own in enumerate(subnets) if theirs & set(own)]
        return shared[ch % len(shared)] if aware and shared else ch % nets

    for ch in range(2):
        prev, nxt = views[(rank - 1) % world], views[(rank + 1) % world]
        via_in = f"NET/IB/{device(ch, prev)}" if every_ib else "NET/Socket/0"
        via_out = f"NET/IB/{device(ch, nxt)}" if every_ib else "NET/Socket/0"
        print(prefix + f"Channel {ch:02d}/0 : {(rank - 1) % world}[0] -> {rank}[0] [receive] via {via_in}")
        print(prefix + f"Channel {ch:02d}/0 : {rank}[0] -> {(rank + 1) % world}[0] [send] via {via_out}")
    busbw = min(v["busbw_gbps"] for v in views) if every_ib else SOCKET_BUSBW_GBPS
    latency = max(v["latency_us"] for v in views) if every_ib else SOCKET_SMALL_LATENCY_US
    wrong = sum(v["wrong"] for v in views)
    low, high, factor = int(o.get("min-bytes", 8 << 10)), int(o.get("max-bytes", 256 << 20)), int(o.get("factor", 2))
    for op, share in (("all_reduce", 2 * (world - 1) / world), ("all_gather", (world - 1) / world)):
        size = low
        while size <= high:
            algbw = busbw / 8 / share  # GB/s at full size
            t_us = latency + size / (algbw * 1e3)
            a = size / (t_us * 1e3)
            _say("", rank=rank, op=op, size=size, iters=max(5, min(100, (1 << 30) // size)), time_us=round(t_us, 2),
                 algbw=round(a, 3), busbw=round(a * share, 3), wrong=wrong if size == high else 0)
            size *= factor
    _say("-done", rank=rank)
    return 0
