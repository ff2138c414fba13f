"""Bring the simulated cluster up and down; run commands inside its nodes as root.

State lives in one directory (default /run/gb10check-sim, or $GB10CHECK_SIM_DIR): the runner's
SSH key and known_hosts, the cluster file, each node's boot spec and the PID of its init.
Everything `up` creates is named gb10sim-* so `down` can find and remove it, also after a
failed `up`. Instance N of $GB10CHECK_SIM_INSTANCE (topology.instance) is named gb10simN-* and
kept in /run/gb10check-sim-N instead, so that two can run side by side.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .. import compose
from ..deploy import netplan as netplan_step
from ..cluster import load_cluster
from ..poll import wait_until
from . import image, provision, topology
from .topology import SimNode

BOOT = Path(__file__).with_name("boot.py")
PYTHON = "/usr/bin/python3"  # the system python: it exists inside every node's overlay


class SimError(Exception):
    pass


def state_dir() -> Path:
    n = topology.instance()
    return Path(os.environ.get("GB10CHECK_SIM_DIR") or f"/run/gb10check-sim{f'-{n}' if n else ''}")


def need_root() -> None:
    if os.geteuid() != 0:
        raise SimError("the simulated cluster needs root (network namespaces, mounts, veth): run it with sudo or as root")
    for tool in ("ip", "unshare", "nsenter", "/usr/sbin/sshd", "ufw", "ssh-keygen", PYTHON):
        if not shutil.which(tool):
            raise SimError(f"{tool} is missing: apt-get install iproute2 util-linux openssh-server openssh-client ufw python3")


def run(*argv: str, check: bool = True, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SimError(f"`{' '.join(argv)}` did not finish within {timeout:g} s") from None
    if check and proc.returncode != 0:
        raise SimError(f"`{' '.join(argv)}` failed: {(proc.stderr or proc.stdout).strip()}")
    return proc


def keygen(path: Path, comment: str) -> tuple[str, str]:
    if not path.exists():
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))
    path.chmod(0o600)
    return path.read_text(), path.with_suffix(".pub").read_text().strip()


FIREWALL_SOURCES = ["169.254.0.0/16", "192.168.101.0/24"]
FIREWALL_PORTS = ["20001/tcp"]


def ufw_cache() -> Path:
    """Where a node's /etc/ufw is kept after the ufw commands of its first boot, for the next boots (boot.firewall): keyed
    by the rules and by everything those commands start from (ufw itself, its templates, this machine's /etc/ufw)."""
    digest = hashlib.sha256(json.dumps([FIREWALL_SOURCES, FIREWALL_PORTS]).encode())
    for path in sorted(["/usr/sbin/ufw", "/etc/default/ufw", *map(str, Path("/usr/share/ufw/iptables").glob("*")),
                        *map(str, Path("/etc/ufw").glob("*"))]):
        if os.path.isfile(path):
            digest.update(path.encode() + b"\0" + Path(path).read_bytes())
    return provision.cache_dir() / "ufw" / digest.hexdigest()[:16]


def keep_ufw_files(pid: int, target: Path) -> None:
    """A booted node's /etc/ufw into `target` (ufw_cache()), once, when its ufw is set up (ufw reset's dated backups left out)."""
    conf = Path(f"/proc/{pid}/root/etc/ufw/ufw.conf")
    if target.exists() or not conf.exists() or "ENABLED=yes" not in conf.read_text():
        return
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(f"/proc/{pid}/root/etc/ufw", tmp, ignore=lambda _, names: [n for n in names if re.search(r"\.\d{8}_\d{6}$", n)])
    try:
        tmp.rename(target)
    except OSError:  # another boot kept it first
        shutil.rmtree(tmp, ignore_errors=True)


def pub_key_only(pub: str) -> str:
    return " ".join(pub.split()[:2])


# ---- networking (root namespace side) ----------------------------------------------


def wire(nodes: list[SimNode], addresses: bool = True, topo: str | None = None) -> None:
    """addresses False: the QSFP links come up without addresses (systemd-networkd gives them from netplan at boot).
    topo: pair (2 nodes), ring or switch (topology.build); a switch is one bridge per logical link."""
    topo = topo or ("pair" if len(nodes) == 2 else "switch")
    p, bridge = topology.prefix(), topology.mgmt_bridge()
    run("ip", "link", "add", bridge, "type", "bridge")
    run("ip", "addr", "add", f"{topology.mgmt_net()}.1/24", "dev", bridge)
    run("ip", "link", "set", bridge, "up")
    for n in nodes:
        ns = n.netns
        run("ip", "netns", "add", ns)
        run("ip", "-n", ns, "link", "set", "lo", "up")
        run("ip", "link", "add", f"{p}m{n.rank}", "type", "veth", "peer", "name", "enP7s7", "netns", ns)
        run("ip", "link", "set", f"{p}m{n.rank}", "master", bridge, "up")
        run("ip", "-n", ns, "addr", "add", f"{n.mgmt_ip}/24", "dev", "enP7s7")
        run("ip", "-n", ns, "link", "set", "enP7s7", "up")
        used = {l.netdev for l in n.links}
        for i, (netdev, _) in enumerate(topology.UNCABLED):  # the second QSFP port: present, no cable (kept down)
            if netdev not in used:
                run("ip", "link", "add", f"{p}u{n.rank}{i}", "type", "veth", "peer", "name", netdev, "netns", ns)
    for a, b in topology.cables(nodes, topo):  # one QSFP cable per logical link: the real names at both ends
        cable(nodes, a, b)
    if topo == "switch":
        for i, _ in enumerate(nodes[0].links):  # a switch: one bridge per logical link, no address of its own
            run("ip", "link", "add", f"{p}sw{i}", "type", "bridge")
            quiet_l2(f"{p}sw{i}")
            run("ip", "link", "set", f"{p}sw{i}", "up")
            for n in nodes:
                run("ip", "link", "add", f"{p}s{i}n{n.rank}", "type", "veth", "peer", "name", n.links[i].netdev, "netns", n.netns)
                quiet_l2(f"{p}s{i}n{n.rank}")
                run("ip", "link", "set", f"{p}s{i}n{n.rank}", "master", f"{p}sw{i}", "up")
    for n in nodes:
        for link in n.links:
            if addresses:
                run("ip", "-n", n.netns, "addr", "add", link.address, "dev", link.netdev)
            run("ip", "-n", n.netns, "link", "set", link.netdev, "up")


def quiet_l2(dev: str) -> None:
    """A switch's side of a link answers nothing itself (a plain L2 switch): no IPv6 on it."""
    run("sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.disable_ipv6=1")


def cable(nodes: list[SimNode], a: tuple[int, str], b: tuple[int, str]) -> None:
    """A direct cable (a veth) from rank a's netdev to rank b's."""
    na, nb = nodes[a[0]], nodes[b[0]]
    run("ip", "link", "add", a[1], "netns", na.netns, "type", "veth", "peer", "name", b[1], "netns", nb.netns)


def recable(plan: list[tuple[tuple[int, str], tuple[int, str]]]) -> None:
    """Move cables on the running simulation: each (rank, netdev) named loses its cable (and the far end of it) and
    the plan's cables join them, each end keeping the addresses, MTU and state of its netdev as it was."""
    names = nodes()
    sim = [topology.SimNode(name, rank, topology.mgmt_ip(rank)) for rank, name in enumerate(names)]
    ends = [end for pair in plan for end in pair]
    kept = {}
    for rank, dev in ends:
        info = json.loads(run("ip", "-n", sim[rank].netns, "-j", "addr", "show", "dev", dev).stdout or "[]")
        kept[(rank, dev)] = info[0] if info else {}
    for rank, dev in ends:  # a veth goes with its far end: an end already gone is not an error
        run("ip", "-n", sim[rank].netns, "link", "del", dev, check=False)
    for a, b in plan:
        cable(sim, a, b)
    for (rank, dev), info in kept.items():
        ns = sim[rank].netns
        for addr in info.get("addr_info", []):
            if addr.get("family") == "inet":
                run("ip", "-n", ns, "addr", "add", f"{addr['local']}/{addr['prefixlen']}", "dev", dev)
        if info.get("mtu"):
            run("ip", "-n", ns, "link", "set", dev, "mtu", str(info["mtu"]))
        run("ip", "-n", ns, "link", "set", dev, "up")
    for rank, dev in ends:
        wait_link_local(sim[rank], dev)
    for n in sim:
        wait_addresses_settled(n)


def node_state(n: SimNode) -> dict:
    links = {l.netdev: {"rdma_device": l.rdma_device, "speed_mbps": 200000, "bandwidth_gbps": 109.0, "cabled": True} for l in n.links}
    links.update({netdev: {"rdma_device": dev, "speed_mbps": 200000, "bandwidth_gbps": 109.0, "cabled": False}
                  for netdev, dev in topology.UNCABLED if netdev not in links})
    order = ["enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0", "enP2p1s0f1np1"]
    return {"name": n.name, "rank": n.rank, "gpu_name": "NVIDIA GB10", "kernel_module": topology.USER_DRIVER,
            "user_driver": topology.USER_DRIVER, "cuda_version": "13.0", "gpu_uuid": f"GPU-5eb5a1c0-0000-4000-8000-00000000003{n.rank}",
            "fw_ver": "28.45.4028", "board_id": "NVD0000000087", "gid_layout": "standard",
            "bios_version": "5.36_0ACUM018", "bios_date": "05/12/2026",
            "links": {k: links[k] for k in order}}


# ---- up / down / status ---------------------------------------------------------------


def up(n_nodes: int = 2, quiet: bool = False, init: str = "plain", executor: str = "mp", topo: str | None = None) -> Path:
    """init "plain": our own small init starts sshd, ufw and dockerd (fast); "systemd": systemd is PID 1 of each node and
    runs them as units (host.service() and `systemctl` are real; netplan apply goes through systemd-networkd).
    executor "ray": the cluster file says deploy.executor: ray, so the nodes get the Ray playbook's compose file."""
    if init not in ("plain", "systemd"):
        raise SimError(f"unknown init {init!r}: plain or systemd")
    if executor not in topology.EXECUTORS:
        raise SimError(f"unknown executor {executor!r}: {' or '.join(topology.EXECUTORS)}")
    need_root()
    if not provision.ready():
        raise SimError(f"the simulated cluster's vLLM and model are not provisioned in {provision.cache_dir()}: "
                       "run `gb10check sim provision` first (once; a few minutes)")
    tools = ("sshd", "ufw", "dockerd") + (("netplan", "udevadm", "systemctl") if init == "systemd" else ())
    missing = [tool for tool in tools if not shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin")]
    if missing or subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30).returncode != 0:
        raise SimError(f"the simulated nodes need {', '.join(missing) or 'compose v2 (`docker compose`)'} on this machine: "
                       "run `sudo scripts/install-sim-packages` (Debian 12)")
    down(quiet=True)
    d = state_dir()
    (d / "nodes").mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    try:
        nodes, topo = topology.build(n_nodes, topo)
    except ValueError as exc:
        raise SimError(str(exc)) from None
    say = (lambda *_: None) if quiet else (lambda msg: print(msg, file=sys.stderr))
    start = time.monotonic()
    try:
        wire(nodes, addresses=init == "plain", topo=topo)
        _, runner_pub = keygen(d / "runner_ed25519", "gb10check-runner")
        shared_key, shared_pub = keygen(d / "shared_ed25519", "gb10sim-shared-cluster-key")
        host_keys = {n.name: keygen(d / "nodes" / f"{n.name}_host_ed25519", n.name) for n in nodes}
        # The runner knows nodes by management address; nodes know each other by every address.
        (d / "known_hosts").write_text("".join(f"{n.mgmt_ip} {pub_key_only(host_keys[n.name][1])}\n" for n in nodes))
        node_known = "".join(f"{addr} {pub_key_only(host_keys[n.name][1])}\n" for n in nodes
                             for addr in [n.mgmt_ip, n.name] + [l.address.split('/')[0] for l in n.links])
        (d / "cluster.yaml").write_text(topology.cluster_yaml(nodes, str(d), executor=executor, topology=topo))
        cluster = load_cluster(d / "cluster.yaml")
        compose_text = compose.render(cluster)
        workdir = cluster.deploy.workdir
        procs = {}
        image_tar = image.build(d / "image.tar")
        ufw_files = ufw_cache()
        provision.inductor_cache().mkdir(parents=True, exist_ok=True)
        for n in nodes:
            (d / "mnt" / n.name).mkdir(parents=True, exist_ok=True)
            spec = {"name": n.name, "cgroup": topology.prefix() + n.name, "user": topology.USER, "mnt_dir": str(d / "mnt" / n.name), "host_key": host_keys[n.name][0],
                    "host_key_pub": host_keys[n.name][1], "runner_pub": runner_pub, "shared_key": shared_key, "shared_pub": shared_pub,
                    "known_hosts": node_known, "hosts": [(m.name, m.mgmt_ip) for m in nodes], "netplan": netplan_step.render(cluster.node(n.name)),
                    "state": node_state(n), "firewall_sources": FIREWALL_SOURCES,
                    "firewall_ports": FIREWALL_PORTS, "ufw_cache": str(ufw_files),
                    "files": [{"path": f"{cluster.deploy.hf_cache}/hub/{provision.model_entry().name}", "tree": str(provision.model_entry())},
                        {"path": f"{workdir}/{cluster.deploy.compose_file}", "content": compose_text},
                        {"path": f"{cluster.deploy.compile_cache}/vllm/modelinfos/{provision.modelinfo_file().name}",
                         "content": provision.modelinfo_file().read_text()},
                        {"path": f"{workdir}/.env", "content": compose.env_file(cluster, cluster.node(n.name))}],
                    "docker": {"tar": str(image_tar), "name": cluster.deploy.image, "changes": image.changes()}, "init": init,
                    "shared": [str(provision.inductor_cache())]}
            spec_path = d / "nodes" / f"{n.name}.json"
            spec_path.write_text(json.dumps(spec))
            spec_path.chmod(0o600)
            procs[n.name] = subprocess.Popen(
                ["ip", "netns", "exec", n.netns, "unshare", "--mount", "--pid", "--uts", "--fork", "--propagation", "private",
                 "--kill-child", PYTHON, str(BOOT), str(spec_path)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, text=True)
        for n in nodes:
            line = procs[n.name].stdout.readline().strip()
            if line != "READY":
                try:
                    rest = procs[n.name].communicate(timeout=5)[0]
                except subprocess.TimeoutExpired:
                    rest = ""
                raise SimError(f"node {n.name} did not boot: {line} {rest}".strip())
            pid = init_pid(procs[n.name].pid)
            (d / "nodes" / f"{n.name}.pid").write_text(str(pid))
            keep_ufw_files(pid, ufw_files)
        if init == "systemd":
            for n in nodes:
                wait_booted(n.name, [link.address for link in n.links])
                # The stand-ins' files (the RoCE GID table among them) follow the addresses networkd has just given, now:
                # the node's own refresh loop runs every 0.5 s, and a run that reads them at once must see them.
                refresh(n.name)
        for n in nodes:
            wait_addresses_settled(n)
        (d / "sim.json").write_text(json.dumps({"nodes": [n.name for n in nodes], "scenarios": [], "size": n_nodes, "topology": topo, "init": init,
                                                 "executor": executor}))
    except BaseException:
        down(quiet=True)
        raise
    say(f"{len(nodes)} nodes up in {time.monotonic() - start:.1f} s; cluster file: {d / 'cluster.yaml'}")
    return d / "cluster.yaml"


def wait_addresses_settled(n: SimNode, timeout_s: float = 15) -> None:
    """Until the node's IPv6 link-local addresses have passed duplicate address detection: a node is up when its links
    answer (the cabling check's link-local discovery asks every port's peer)."""
    deadline = time.monotonic() + timeout_s
    while run("ip", "-n", n.netns, "-6", "-o", "addr", "show", "tentative", check=False, timeout=10).stdout.strip():
        if time.monotonic() > deadline:
            raise SimError(f"node {n.name}: IPv6 addresses still tentative after {timeout_s:g} s (duplicate address detection)")
        time.sleep(0.2)


def wait_link_local(n: SimNode, dev: str, timeout_s: float = 15) -> None:
    """Until a netdev just cabled has its IPv6 link-local address, past duplicate address detection: the kernel adds it
    only once both ends are up, so a node with no tentative address may not have it yet."""
    deadline = time.monotonic() + timeout_s
    while True:
        shown = run("ip", "-n", n.netns, "-6", "-o", "addr", "show", "dev", dev, "scope", "link", check=False, timeout=10).stdout
        if shown.strip() and "tentative" not in shown:
            return
        if time.monotonic() > deadline:
            raise SimError(f"node {n.name}: {dev} has no settled IPv6 link-local address after {timeout_s:g} s")
        time.sleep(0.2)


def wait_booted(name: str, addresses: list[str], timeout_s: float = 90) -> None:
    """Until systemd in the node has finished starting its units; a failed unit fails the boot, named.

    A unit whose process could not join its new cgroup (exit 219/CGROUP: "Failed to attach to cgroup ...: No such file
    or directory", logged by the unit's child) is started once more: under load the kernel sometimes does not yet show
    the cgroup systemd has just made, in the cgroup-v1 hierarchies the nodes share with this machine. It hit a random
    early unit in about one boot in fifteen while the other xdist worker ran (fresh-clone CI, 2026-12-01), and is the
    sim's, not anything a self-test is about; any other failure fails the boot."""
    deadline = time.monotonic() + timeout_s
    retried: list[str] = []
    while True:
        state = _system_state(name, deadline)
        while state == "running":  # networkd gives the QSFP links their netplan addresses
            have = node_exec(name, "ip -4 -o addr show", check=False).stdout
            missing = [a for a in addresses if f" {a} " not in have]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise SimError(f"node {name}: systemd-networkd did not configure {', '.join(missing)} from netplan")
            time.sleep(0.1)
        failed = node_exec(name, "systemctl --failed --no-legend --plain | cut -d' ' -f1", check=False).stdout.split()
        units = " ".join(failed)
        if state == "degraded" and not retried and failed and \
                node_exec(name, f"systemctl show -p ExecMainStatus --value {units}", check=False).stdout.split() == ["219"] * len(failed):
            retried = failed
            node_exec(name, f"systemctl reset-failed {units}; timeout 60 systemctl start {units}", check=False)
            continue
        # The status names the exit code; the journal has what the unit's process (and systemd, for it) said.
        journal = node_exec(name, f"systemctl status --no-pager -l -n 20 {units}", check=False).stdout
        again = f" (after starting {', '.join(retried)} once more)" if retried else ""
        raise SimError(f"node {name} booted {state or 'not at all'} under systemd{again}; failed units: {', '.join(failed) or 'none'}\n"
                       f"{journal}")


def _system_state(name: str, deadline: float) -> str:
    """systemctl is-system-running, once the boot's jobs are done ("offline": systemd's bus is not up yet)."""
    state = ""
    while time.monotonic() < deadline:
        try:
            state = run("timeout", str(max(1, int(deadline - time.monotonic()))), "nsenter", "-t", str(pid_of(name)), "-m", "-u",
                        "-n", "-p", "-i", "-r", "-w", "systemctl", "is-system-running", "--wait", check=False).stdout.strip()
        except SimError as exc:
            raise SimError(f"node {name} did not boot under systemd: {exc}") from None
        if state not in ("", "offline", "initializing", "starting"):
            break
        time.sleep(0.1)
    return state


def init_pid(unshare_pid: int) -> int:
    """The host PID of a node's init: the child unshare forked (ip netns exec execs unshare in place)."""
    def children() -> list[str]:
        try:
            return Path(f"/proc/{unshare_pid}/task/{unshare_pid}/children").read_text().split()
        except OSError:
            return []

    found = wait_until(children, 1.0, interval_s=0.01)
    if not found:
        raise SimError(f"cannot find the init of unshare {unshare_pid} within 1 s")
    return int(found[0])


def nodes() -> list[str]:
    try:
        return json.loads((state_dir() / "sim.json").read_text())["nodes"]
    except (OSError, ValueError, KeyError):
        return []


def pid_of(name: str) -> int:
    try:
        pid = int((state_dir() / "nodes" / f"{name}.pid").read_text())
    except (OSError, ValueError):
        raise SimError(f"node {name} is not running (no simulated cluster up? run `gb10check sim up`)") from None
    if not is_node_init(pid, name):
        raise SimError(f"node {name} is not running (its init {pid} is gone)")
    return pid


def is_node_init(pid: int, name: str) -> bool:
    """Whether `pid` is still the init of node `name`: in the node's network namespace and a PID namespace of its own.
    A PID read from a file may since have gone to any process of this machine (PIDs wrap), which must not be entered
    or signalled in the node's stead."""
    try:
        return (os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{topology.prefix()}{name}").st_ino
                and os.stat(f"/proc/{pid}/ns/pid").st_ino != os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return False


def node_exec(name: str, command: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run a shell command as root inside a node: its namespaces and its root."""
    pid = pid_of(name)
    return run("nsenter", "-t", str(pid), "-m", "-u", "-n", "-p", "-i", "-r", "-w", "/bin/sh", "-c", command, check=check, input=input)


def make_files(name: str, files: list[dict], user: str = topology.USER) -> None:
    """Create files inside a node (content, sparse size or link), owned by `user`."""
    node_exec(name, f"{PYTHON} -c 'import sys, json, pwd; sys.path.insert(0, \"/usr/local/lib/gb10sim\"); import standins; "
                    f"u = pwd.getpwnam(\"{user}\"); [standins.make_file(\"\", f, (u.pw_uid, u.pw_gid)) for f in json.load(sys.stdin)]'",
              input=json.dumps(files))


def refresh(name: str) -> None:
    """Bring a node's stand-in files in step now (its init does it every 0.5 s anyway)."""
    node_exec(name, f"{PYTHON} -c 'import sys; sys.path.insert(0, \"/usr/local/lib/gb10sim\"); import standins; "
                    "standins.refresh(standins.state())'")


def down(quiet: bool = False) -> None:
    """Remove everything up created. Idempotent; safe after a failed up."""
    need_root()
    d = state_dir()
    for pid_file in (d / "nodes").glob("*.pid") if (d / "nodes").exists() else []:
        try:
            pid = int(pid_file.read_text())
            if is_node_init(pid, pid_file.stem):
                os.kill(pid, 9)  # PID 1 of the node: its whole PID namespace goes with it
        except (OSError, ValueError):
            pass
        pid_file.unlink()
    for ns in run("ip", "netns", "list", check=False).stdout.split("\n"):
        name = ns.split(" ")[0]
        if name.startswith(topology.prefix()):
            _kill_netns_processes(name)
            run("ip", "netns", "del", name, check=False)
    remove_cgroups()
    for link in run("ip", "-o", "link", "show", check=False).stdout.splitlines():
        ifname = link.split(":")[1].strip().split("@")[0] if ":" in link else ""
        if ifname.startswith(topology.prefix()):
            run("ip", "link", "del", ifname, check=False)
    wait_until(lambda: not _leftover_mounts(d), 5, interval_s=0.05)
    for target in _leftover_mounts(d):
        run("umount", "-l", target, check=False)
    if d.exists():
        shutil.rmtree(d, ignore_errors=True)
    if not quiet:
        print("simulated cluster down", file=sys.stderr)


def remove_cgroups() -> None:
    """The cgroups the sim made (the nodes' dockerd parents, the throttled server's): deepest first, once empty."""
    deadline = time.monotonic() + 5
    while True:
        left = sorted((p for p in Path("/sys/fs/cgroup").glob(f"*/{topology.prefix()}*") if p.is_dir()), key=str)
        for top in left:
            for sub in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [top]:
                try:
                    sub.rmdir()
                except OSError:
                    pass  # processes still leaving
        if not any(p.exists() for p in left) or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _kill_netns_processes(ns: str) -> None:
    for pid in run("ip", "netns", "pids", ns, check=False).stdout.split():
        try:
            os.kill(int(pid), 9)
        except (OSError, ValueError):
            pass


def _leftover_mounts(d: Path) -> list[str]:
    # d and below: /run/gb10check-sim is a prefix of the next instance's /run/gb10check-sim-1
    return [at for line in Path("/proc/self/mounts").read_text().splitlines() if (at := line.split()[1]) == str(d) or at.startswith(f"{d}/")]


def status() -> list[dict]:
    out = []
    for name in nodes():
        try:
            pid = pid_of(name)
            host = node_exec(name, "hostname; pgrep -x sshd >/dev/null && echo sshd-up || echo sshd-down", check=False).stdout.split()
            out.append({"node": name, "init_pid": pid, "hostname": host[0] if host else None, "sshd": "up" if "sshd-up" in host else "down"})
        except SimError as exc:
            out.append({"node": name, "error": str(exc)})
    return out
