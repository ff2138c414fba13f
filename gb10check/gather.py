"""Gathering for the checks: every node's facts once per run, concurrently; each test judges its own share.

The facts that a node's checks share (`node_fact_commands`: ip, sysfs, ethtool, ufw, nvidia-smi, meminfo,
docker, the compose files ...) are gathered in two remote commands per node (one as the SSH user, one
under `sudo -n`), every command inside them started at once and bounded by its own timeout; all nodes
are gathered at the same time, the first time any check asks. `result`, `text`, `output` and `parsed`
answer from those facts when the command is one of them and run it live otherwise, so a check reads the
same whichever way its facts came. Text read from a node is data: nothing of it is executed here.

A fact that cannot be had is NOT CHECKED for the checks that need it (unreachable node, timed-out or
failed command, garbled output), never a failure of the cluster.
"""

import base64
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import shlex
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from . import canary, compose, facts
from .checks import container, model
from .checks.gpu import compute_rate
from .cluster import Cluster, Node
from .remedies import Code
from .remote import RemoteError, RemoteNode
from .verdict import Finding, not_checked, report

T = TypeVar("T")

# `path:value` per file from one grep, not a `cat` per file: a GB10's four RDMA devices hold about 3000 GID-table files.
# -s: unused table slots refuse to be read (EINVAL) and are not GIDs anyway.
SYSFS_IB = ("grep -sH '' /sys/class/infiniband/*/ports/*/state /sys/class/infiniband/*/ports/*/phys_state "
            "/sys/class/infiniband/*/ports/*/rate /sys/class/infiniband/*/ports/*/link_layer "
            "/sys/class/infiniband/*/ports/*/gids/* /sys/class/infiniband/*/ports/*/gid_attrs/types/* "
            "/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*")
IP_ADDR = "ip -j addr"
DEFAULT_ROUTE = "ip -j route show default"
IBDEV2NETDEV = "ibdev2netdev"
MEMINFO = "cat /proc/meminfo"
OS_RELEASE = "cat /etc/dgx-release 2>/dev/null || cat /etc/os-release"
KERNEL = "uname -r"
MACHINE = "uname -m"
WHOAMI = "id -un"
PROC_DRIVER = "cat /proc/driver/nvidia/version"
DRIVER_QUERY = "nvidia-smi --query-gpu=driver_version --format=csv,noheader"
GPU_NAME_QUERY = "nvidia-smi --query-gpu=name --format=csv"
GPU_LIST = "nvidia-smi -L"
UFW_STATUS = "ufw status verbose"
UFW_USER_RULES = "cat /etc/ufw/user.rules"
UFW_CONF = "cat /etc/ufw/ufw.conf"
UFW_LIVE = "iptables -S ufw-user-input"
CMDLINE = "cat /proc/cmdline"
BIOS_VERSION = "cat /sys/class/dmi/id/bios_version"
BIOS_DATE = "cat /sys/class/dmi/id/bios_date"
# dpkg's Status says `hold ok installed` for a held package: what `apt-mark showhold` lists, without its second of apt cache.
DRIVER_PACKAGES = "dpkg-query -W -f='${Package} ${Status}\\n' 'nvidia-driver-*' 'libnvidia-compute-*'"
# What apt makes of every file in apt.conf.d (a blacklist in a drop-in counts as one in 50unattended-upgrades does).
UNATTENDED_UPGRADES = "apt-config dump Unattended-Upgrade 2>/dev/null || cat /etc/apt/apt.conf.d/50unattended-upgrades"
REBOOT_REQUIRED = ("if [ -e /var/run/reboot-required ]; then echo present; cat /var/run/reboot-required.pkgs 2>/dev/null; "
                   "else echo absent; fi")
# The kernel log since boot, kept to the lines the checks judge (and a note naming its source): journalctl, else dmesg.
KERNEL_LOG_SIGNS = r"NVRM: Xid|NV_ERR_NO_MEMORY|mlx5_core.*Link down|Out of memory|oom-kill|invoked oom-killer"
KERNEL_LOG = ("k() { grep -aE " + shlex.quote(KERNEL_LOG_SIGNS) + " | tail -n 300; }; "
              "if journalctl -k -b -q --no-pager -n 1 2>/dev/null | grep -q .; then echo '-- source: journalctl -k -b --'; "
              "journalctl -k -b -q --no-pager -o short-monotonic | k; elif dmesg >/dev/null 2>&1; then echo '-- source: dmesg --'; "
              "dmesg | k; else echo '-- source: none --'; fi")
RDMA_COUNTERS = ("grep -sH '' /sys/class/infiniband/*/ports/*/counters/link_downed /sys/class/infiniband/*/ports/*/counters/symbol_error "
                 "/sys/class/infiniband/*/ports/*/counters/port_rcv_errors; true")
NM_PROFILES = ("if ! command -v nmcli >/dev/null 2>&1; then echo '-- nmcli: absent --'; "
               "elif ! nmcli -t -f UUID,DEVICE connection show >/dev/null 2>&1; then echo '-- NetworkManager: not running --'; "
               "else nmcli -t -f UUID,DEVICE connection show | while IFS=: read -r uuid dev; do echo \"-- profile $uuid --\"; "
               "echo \"device:$dev\"; nmcli -t -f connection.id,connection.type,connection.interface-name,connection.autoconnect,"
               "ipv4.method connection show \"$uuid\"; done; fi")
IBV_DEVINFO = "ibv_devinfo"
# Every Mellanox PCI function with its capability blocks (LnkCap / LnkSta need root); -D: the domain always shown.
LSPCI = "lspci -D -nn -vv -d 15b3:"
DOCKER_PS = f"docker ps --format '{facts.docker.PS_FORMAT}'"
# Only when a container runs: `docker stats --no-stream` samples for half a second even when there is nothing to sample.
DOCKER_STATS = f"ids=$(docker ps -q); [ -z \"$ids\" ] || docker stats --no-stream --format '{facts.docker.STATS_FORMAT}' $ids"


def ethtool(netdev: str) -> str:
    return f"ethtool {shlex.quote(netdev)}"


def ethtool_info(netdev: str) -> str:
    return f"ethtool -i {shlex.quote(netdev)}"


def mtu(netdev: str) -> str:
    return f"cat /sys/class/net/{shlex.quote(netdev)}/mtu"


def route_to(ip: str) -> str:
    return f"ip -j route get {shlex.quote(ip)}"


def netplan_mode(path: str) -> str:
    return f"stat -c %a {shlex.quote(path)}"


def cat(path: str) -> str:
    return f"cat {shlex.quote(path)}"


def image_inspect(image: str) -> str:
    return f"docker image inspect {shlex.quote(image)}"


def disk_free(paths: list[str]) -> str:
    """df -B1 of each path, or of its nearest existing parent (a cache not made yet), each after a `-- df -B1 PATH --` note."""
    return "; ".join(f"p={shlex.quote(p)}; while [ ! -e \"$p\" ]; do p=$(dirname \"$p\"); done; echo \"-- df -B1 {p} --\"; "
                     "df -B1 --output=target,avail \"$p\"" for p in paths)


DOCKER_ROOT = "/var/lib/docker"

# The Ray path (deploy.executor: ray). Ray's version in the image: the CLI the Ray service runs, then the module vLLM
# imports (both print their errors when Ray is missing: bash's `ray: command not found`, Python's ModuleNotFoundError).
RAY_VERSION_SCRIPT = "ray --version; python3 -c 'import ray; print(\"ray.__version__=\" + ray.__version__)'"
# On the head, in its Ray container: `ray status` (the playbook's own check) and the node list with each node's address
# (ray.nodes(): a driver of the running cluster; it needs no dashboard, which `ray list nodes` does).
RAY_STATUS = f"docker exec {compose.RAY_CONTAINER_NAME} ray status"
RAY_NODES_SCRIPT = ('import json, ray; ray.init(address="auto", logging_level="ERROR", log_to_driver=False); '
                    'print(json.dumps(ray.nodes()))')
RAY_NODES = f"docker exec {compose.RAY_CONTAINER_NAME} python3 -c {shlex.quote(RAY_NODES_SCRIPT)}"


def ray_version(image: str, extra_volumes: list[str]) -> str:
    """Ray in the deployment image, as the Ray service would find it (its extra volumes; never pulls)."""
    volumes = "".join(f" -v {shlex.quote(v)}" for v in extra_volumes)
    return (f"docker run --rm --pull never --entrypoint /bin/bash{volumes} {shlex.quote(image)} -c "
            f"{shlex.quote(RAY_VERSION_SCRIPT)}")


def compose_files(cluster: Cluster) -> tuple[str, str]:
    d = cluster.deploy
    return f"{d.workdir}/{d.compose_file}", f"{d.workdir}/.env"


def snapshot_file(cluster: Cluster, name: str) -> str:
    d = model.model_dir(cluster.deploy.hf_cache, cluster.deploy.model_id)
    return f"cat {d}/snapshots/*/{name}"


READ_MIB = 1024  # how much of one shard the read-rate probe reads (4 MiB blocks)


def shard_read(cluster: Cluster) -> str:
    """dd of the first MiB of the model's first shard (its blob, links followed) to /dev/null with direct I/O, bounded;
    `-- direct --` or, where the filesystem refuses O_DIRECT, `-- cached --` and a plain read, before dd's summary."""
    d = model.model_dir(cluster.deploy.hf_cache, cluster.deploy.model_id)
    count = READ_MIB // 4
    return (f"f=$(ls {d}/snapshots/*/*.safetensors 2>/dev/null | head -n 1); [ -n \"$f\" ] || {{ echo '-- no shard --'; exit 0; }}; "
            "f=$(readlink -f \"$f\"); echo \"-- shard $f --\"; "
            f"if timeout 60 dd if=\"$f\" of=/dev/null bs=4M count={count} iflag=direct 2>/tmp/gb10check-dd.$$; then echo '-- direct --'; "
            f"else echo '-- cached --'; timeout 60 dd if=\"$f\" of=/dev/null bs=4M count={count} 2>/tmp/gb10check-dd.$$; fi; "
            "cat /tmp/gb10check-dd.$$; rm -f /tmp/gb10check-dd.$$")


def model_listing(cluster: Cluster) -> str:
    return model.LISTING.format(dir=model.model_dir(cluster.deploy.hf_cache, cluster.deploy.model_id))


def node_fact_commands(cluster: Cluster, node: Node) -> dict[bool, list[str]]:
    """The read-only commands whose outputs a node's checks share, by whether they need sudo."""
    peers = [pl.ip for p in cluster.link_pairs() for (n, _), (_, pl) in (((p.a, p.a_link), (p.b, p.b_link)),
                                                                         ((p.b, p.b_link), (p.a, p.a_link))) if n.name == node.name]
    compose_path, env_path = compose_files(cluster)
    user = [WHOAMI, OS_RELEASE, KERNEL, MACHINE, PROC_DRIVER, DRIVER_QUERY, GPU_NAME_QUERY, GPU_LIST, IP_ADDR, DEFAULT_ROUTE,
            IBDEV2NETDEV, SYSFS_IB, MEMINFO, container.DOCKER_SERVER, container.COMPOSE_VERSION, image_inspect(cluster.deploy.image),
            container.gpu_probe(cluster.deploy.image, cluster.deploy.extra_volumes), DOCKER_PS, DOCKER_STATS,
            cat(compose_path), cat(env_path), model_listing(cluster), snapshot_file(cluster, "config.json"),
            snapshot_file(cluster, "model.safetensors.index.json"),
            *(mtu(l.netdev) for l in node.links), *(route_to(ip) for ip in peers),
            CMDLINE, BIOS_VERSION, BIOS_DATE, DRIVER_PACKAGES,
            UNATTENDED_UPGRADES, REBOOT_REQUIRED, RDMA_COUNTERS, NM_PROFILES, IBV_DEVINFO,
            disk_free([cluster.deploy.hf_cache, DOCKER_ROOT]),
            *([ray_version(cluster.deploy.image, cluster.deploy.extra_volumes)] if cluster.uses_ray else [])]
    sudo = [UFW_STATUS, UFW_USER_RULES, UFW_CONF, UFW_LIVE, netplan_mode(cluster.expect.netplan_file), cat(cluster.expect.netplan_file),
            *(ethtool(l.netdev) for l in node.links), *(ethtool_info(l.netdev) for l in node.links), KERNEL_LOG, LSPCI]
    return {False: user, True: sudo}


def optional_facts(cluster: Cluster, wanted: set[str]) -> dict[str, float]:
    """Longer commands gathered with the facts only when a selected test needs them (command -> its timeout): a container
    started on every node at once while the rest is gathered, instead of one node after another when the test runs."""
    return {program(cluster, name, gpus=gpus)[0]: canary_timeout(cluster, name)
            for test, (name, gpus) in CONTAINER_CANARIES.items() if test in wanted}


# test -> (canary program, with the GPU?): each a container started once per node per run.
CONTAINER_CANARIES = {"test_image_nccl": ("nccl", False), "test_image_kernels": ("kernels", True)}


def canary_timeout(cluster: Cluster, name: str) -> float:
    return max(cluster.ssh.command_timeout_s, {"nccl": 120, "kernels": 180}[name])


def canary_json(node: RemoteNode, test: str) -> dict:
    """The JSON line of `test`'s canary program on this node: gathered with the facts when the run selected the test
    (every node at once), else run now, once per run."""
    cluster = node.fleet.cluster
    name, gpus = CONTAINER_CANARIES[test]
    command, shown = program(cluster, name, gpus=gpus)
    cached = node.fleet.facts(node.name).get((command, False))
    return _program_json(node, cached or node.fleet.once(node.name, command, canary_timeout(cluster, name)), shown)


@dataclass(frozen=True)
class Output:
    command: str
    rc: int
    stdout: str
    stderr: str


TIMED_OUT = 124  # timeout(1)'s exit status


# Looked at before the run's own containers (the GPU probe, Ray's version, the canaries) start: the stale-container
# check took this run's probe, with the deployment's image, for a serving container left behind; the memory checks
# would count what a canary's torch holds as used.
LOOK_FIRST = (DOCKER_PS, DOCKER_STATS, MEMINFO)


def starts_container(command: str) -> bool:
    return "docker run " in command


def batch_script(commands: list[str], timeout_s: float, longer: dict[str, float] | None = None,
                 first: tuple[str, ...] = ()) -> str:
    """One shell script that starts every command at once, each bounded (by `timeout_s`, or its own in `longer`), and prints
    `index rc base64(stdout) base64(stderr)`. The commands that start a container wait until those in `first` are done."""
    longer = longer or {}
    t = {c: max(1, round(longer.get(c, timeout_s))) for c in commands}
    gate = [i for i, c in enumerate(commands) if c in first]
    held = [i for i, c in enumerate(commands) if gate and c not in first and starts_container(c)]

    def start(i: int) -> str:
        c = commands[i]
        return f'( timeout -k 2 {t[c]} sh -c {shlex.quote(c)} >"$d/{i}.o" 2>"$d/{i}.e" </dev/null; echo $? >"$d/{i}.rc" ) &'

    lines = ['d=$(mktemp -d) || exit 1', 'first=""']
    for i in range(len(commands)):
        if i not in held:
            lines += [start(i)] + (['first="$first $!"'] if i in gate else [])
    if held:
        lines += ['wait $first'] + [start(i) for i in held]
    lines += ["wait", f'for i in $(seq 0 {len(commands) - 1}); do printf \'%s %s %s %s\\n\' "$i" "$(cat "$d/$i.rc")" '
                      '"$(base64 -w0 <"$d/$i.o")" "$(base64 -w0 <"$d/$i.e")"; done', 'rm -rf "$d"']
    return "\n".join(lines)


def read_batch(commands: list[str], text: str) -> dict[str, Output]:
    """The outputs of `batch_script`, by command (a line that does not decode is left out: that command runs live)."""
    found = {}
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) != 4 or not parts[0].isdigit() or int(parts[0]) >= len(commands):
            continue
        try:
            rc = int(parts[1])
            out, err = (base64.b64decode(p).decode(errors="replace") for p in parts[2:])
        except ValueError:
            continue
        found[commands[int(parts[0])]] = Output(commands[int(parts[0])], rc, out, err)
    return found


class Fleet:
    """The run's nodes: one RemoteNode each, their shared facts gathered once, concurrently, on first use."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.nodes: dict[str, RemoteNode] = {}
        self._facts: dict[str, dict[tuple[str, bool], Output] | RemoteError] | None = None
        self._lock = threading.Lock()
        self._probes = None
        self._once: dict[tuple[str, str], Output | RemoteError] = {}
        self._together = threading.Lock()  # long programs (the compute canary): every node at once, once per run
        self.timing: dict[str, float] = {}  # phase -> wall seconds (gather, probes), for the run's summary and the bench
        self.wanted: set[str] = set()  # the run's selected tests (function names): which optional facts to gather too
        self.run_id: str | None = None  # pytest-xdist's testrunuid on a worker: its fleets share what they gather

    def probes(self):
        """The run's reachability probes (ping, SSH mesh, ports), measured once when first asked."""
        from .probes import Probes

        with self._lock:
            if self._probes is None:
                self._probes = Probes(self.cluster, self.node, self.timing, self.run_id)
        return self._probes

    def node(self, name: str) -> RemoteNode:
        if name not in self.nodes:
            self.nodes[name] = RemoteNode(self.cluster.node(name), self.cluster.ssh)
            self.nodes[name].fleet = self
        return self.nodes[name]

    def _gather_node(self, node: RemoteNode) -> dict[tuple[str, bool], Output] | RemoteError:
        longer = optional_facts(self.cluster, self.wanted)

        def batch(sudo: bool, commands: list[str]) -> dict[tuple[str, bool], Output]:
            if not sudo:
                commands = commands + list(longer)
            # Each command is bounded by its timeout (then killed 2 s later); the batch gets room for the longest, after
            # the looks that hold the containers back (LOOK_FIRST).
            timeout = self.cluster.ssh.command_timeout_s
            longest = timeout + 2 + max([timeout, *longer.values()]) if not sudo else timeout
            out = node.run(batch_script(commands, timeout, longer, first=LOOK_FIRST), timeout=longest + 10, sudo=sudo)
            got = read_batch(commands, out.stdout)
            # sudo refused, or the batch died: every command answers as the batch did
            return {(c, sudo): got.get(c) or Output(c, out.rc or 1, "", out.stderr) for c in commands}

        try:  # the user's batch, then the sudo batch (at once on two channels was slower: the nodes' work is CPU)
            return {key: out for sudo, commands in node_fact_commands(self.cluster, node.spec).items()
                    for key, out in batch(sudo, commands).items()}
        except RemoteError as exc:
            return exc

    def _gather_all(self) -> dict[str, dict[tuple[str, bool], Output] | RemoteError]:
        nodes = [self.node(n.name) for n in self.cluster.by_rank()]
        with ThreadPoolExecutor(max_workers=min(32, len(nodes))) as pool:
            return dict(zip([n.name for n in nodes], pool.map(self._gather_node, nodes)))

    @staticmethod
    def _dump_facts(facts: dict) -> dict:
        return {name: dump_output(got) if isinstance(got, RemoteError)
                else [{"command": c, "sudo": sudo, **dump_output(out)} for (c, sudo), out in got.items()]
                for name, got in facts.items()}

    def _load_facts(self, dumped: dict) -> dict:
        return {name: load_output(self.node(name), "<the facts' batch>", got) if isinstance(got, dict)
                else {(o["command"], o["sudo"]): load_output(self.node(name), o["command"], o) for o in got}
                for name, got in dumped.items()}

    def facts(self, name: str) -> dict[tuple[str, bool], Output]:
        with self._lock:
            if self._facts is None:
                started = time.monotonic()
                self._facts = run_shared(self.run_id, "facts", self._gather_all, self._dump_facts, self._load_facts)
                self.timing["gather"] = time.monotonic() - started
        got = self._facts[name]
        if isinstance(got, RemoteError):
            raise got
        return got


    def once(self, name: str, command: str, timeout: float) -> Output:
        """`command` run live on the node once per run (not one of the shared facts: too long, or run on every node at once)."""
        key = (name, command)
        if key not in self._once:
            try:
                out = self.node(name).run(command, timeout=timeout)
                self._once[key] = Output(command, out.rc, out.stdout, out.stderr)
            except RemoteError as exc:
                self._once[key] = exc
        got = self._once[key]
        if isinstance(got, RemoteError):
            raise got
        return got

    def at_once(self, command: str, timeout: float) -> dict[str, Output | RemoteError]:
        """`command` on every node at the same time, once per run (under pytest-xdist, once for every worker); each
        node's Output or its RemoteError. At once: every node's figure is taken in the same seconds, so where nodes share
        a machine (the simulation) they share it evenly and see the same neighbours; GB10s are machines of their own,
        and eight of them take one run's time, not eight."""
        with self._together:
            if not all((n.name, command) in self._once for n in self.cluster.by_rank()):
                key = hashlib.sha256(command.encode()).hexdigest()[:12]
                got = run_shared(self.run_id, f"together-{key}", lambda: self._run_at_once(command, timeout),
                                 lambda outs: {name: dump_output(out) for name, out in outs.items()},
                                 lambda dumped: {name: load_output(self.node(name), command, out) for name, out in dumped.items()})
                for name, out in got.items():
                    self._once[(name, command)] = out
            return {n.name: self._once[(n.name, command)] for n in self.cluster.by_rank()}

    def _run_at_once(self, command: str, timeout: float) -> dict[str, Output | RemoteError]:
        def run(name: str) -> None:
            with contextlib.suppress(RemoteError):
                self.once(name, command, timeout)

        names = [self.node(n.name).name for n in self.cluster.by_rank()]  # made here, not in the threads
        with ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(run, names))
        return {name: self._once[(name, command)] for name in names}


def result(node: RemoteNode, command: str, sudo: bool = False) -> Output:
    """The command's output on the node: from the run's gathered facts when it is one of them, else run now."""
    fleet = getattr(node, "fleet", None)
    if fleet is not None:
        cached = fleet.facts(node.name).get((command, sudo))
        if cached is not None:
            return cached
    out = node.run(command, sudo=sudo)
    return Output(command, out.rc, out.stdout, out.stderr)


def _unfinished(node: RemoteNode, out: Output) -> None:
    """A command that timed out or failed to run: NOT CHECKED, with the command."""
    if out.rc == TIMED_OUT:
        not_checked(Code.COMMAND_TIMEOUT, node.name, f"`{out.command}` did not finish in time", "the command to complete",
                    command=out.command)
    detail = (out.stderr or out.stdout).strip().splitlines()
    not_checked(Code.COMMAND_FAILED, node.name, f"`{out.command}` exited {out.rc}: {detail[-1] if detail else 'no output'}",
                "the command to succeed", command=out.command)


def output(node: RemoteNode, command: str, sudo: bool = False) -> str:
    """stdout of a command that must succeed; otherwise NOT CHECKED (we could not look)."""
    out = result(node, command, sudo)
    if out.rc != 0:
        _unfinished(node, out)
    return out.stdout


def text(node: RemoteNode, command: str, sudo: bool = False) -> str:
    """stdout and stderr together: for outputs whose errors are facts too (nvidia-smi's NVML mismatch)."""
    out = result(node, command, sudo)
    if out.rc == TIMED_OUT:
        _unfinished(node, out)
    return out.stdout + out.stderr


def parsed(node: RemoteNode, kind: str, command: str, sudo: bool = False, ok_codes: tuple[int, ...] = (0,)) -> Any:
    return parsed_output(node, kind, result(node, command, sudo), ok_codes)


def parsed_output(node: RemoteNode, kind: str, out: Output, ok_codes: tuple[int, ...] = (0,)) -> Any:
    """An output already had (a command run once per run) read as `parsed` reads one: NOT CHECKED when unreadable."""
    command = out.command
    if out.rc == TIMED_OUT:
        _unfinished(node, out)
    body = out.stdout + (out.stderr if out.rc not in ok_codes else "")
    try:
        return facts.parse(kind, body)
    except facts.ParseError as exc:
        if out.rc not in ok_codes:  # the command itself failed (missing tool, sudo refused): say that, not "garbled"
            _unfinished(node, out)
        report([Finding(Code.GARBLED, node.name, f"{exc} (exit {out.rc})", f"{facts.KINDS[kind].what} output",
                        command=command, kind=kind)])


def parse_or_error(kind: str, text: str) -> tuple[Any, str | None]:
    """(facts, None), or (None, why) when the text is not that tool's output: for runs whose unreadable output is a finding."""
    try:
        return facts.parse(kind, text), None
    except facts.ParseError as exc:
        return None, str(exc)


@contextlib.contextmanager
def exclusive(name: str):
    """One holder at a time across pytest-xdist workers (they share the runner's /tmp): for tests that bind a port on a node."""
    path = os.path.join(tempfile.gettempdir(), f"gb10check-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.lock")
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def port_lock(node: str, port: int):
    """Held while something of ours listens on `port` of `node` (ib_write_bw's server, the reachability probes'
    listeners), across threads, pytest-xdist workers and runs on this runner."""
    return exclusive(f"port-{node}-{port}")


def run_shared(run_id: str | None, name: str, compute: Callable[[], T], dump: Callable[[T], Any], load: Callable[[Any], T]) -> T:
    """`compute()` once per pytest run: under pytest-xdist (`run_id`: the run's testrunuid, given to workers only) the
    first worker computes and writes its result (JSON, mode 600: outputs can hold a node's .env) beside the run's other
    files; the others read it. Without xdist, compute. (Not read from the environment: a pytest started by a test
    inherits PYTEST_XDIST_TESTRUNUID and would read another run's facts.)"""
    if run_id is None:
        return compute()
    path = shared_path(run_id, name)
    with exclusive(f"{run_id}-{name}"):
        if os.path.exists(path):
            with open(path) as f:
                return load(json.load(f))
        got = compute()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(dump(got), f)
        return got


def shared_path(run_id: str, name: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"gb10check-{run_id}-{name}.json")


def remove_shared(run_id: str) -> None:
    """The run's shared files and locks, at its end (the controller's): they hold node outputs."""
    prefix = os.path.join(tempfile.gettempdir(), f"gb10check-{run_id}-")
    for path in glob.glob(prefix + "*.json") + glob.glob(os.path.join(tempfile.gettempdir(), f"gb10check-{run_id}-*.lock")):
        with contextlib.suppress(OSError):
            os.unlink(path)


def dump_output(got: "Output | RemoteError") -> dict:
    return ({"error": type(got).__name__, "message": str(got)} if isinstance(got, RemoteError)
            else {"rc": got.rc, "stdout": got.stdout, "stderr": got.stderr})


def load_output(node: RemoteNode, command: str, got: dict) -> "Output | RemoteError":
    from . import remote

    if "error" in got:
        return getattr(remote, got["error"], RemoteError)(got["message"]).at(node, command)
    return Output(command, got["rc"], got["stdout"], got["stderr"])


@dataclass
class DryRun:
    """The service's command run on the node with a stub `vllm`: the arguments vllm would get, or None."""

    command: str
    rc: int
    args: list[str] | None
    output: str

    @property
    def could_not_run(self) -> bool:
        return self.args is None and self.rc in compose.DRY_RUN_CANNOT_RUN


def compose_dry_run(node: RemoteNode, service: dict, program: str = "vllm") -> DryRun | None:
    """Run the (interpolated) service's command on the node itself, never on the runner; None if it has no command."""
    command = compose.dry_run_command(service, program=program)
    if command is None:
        return None
    out = node.run(command, timeout=compose.DRY_RUN_TIMEOUT_S + 10)
    return DryRun(command, out.rc, compose.parse_dry_run(out.stdout), (out.stdout + out.stderr).strip())


def vllm_args(node: RemoteNode, service: dict, program: str = "vllm") -> list[str] | None:
    """The arguments the service's command gives `vllm` (or `ray`) on this node; NOT CHECKED if the dry run could not run."""
    dry = compose_dry_run(node, service, program)
    if dry is not None and dry.could_not_run:
        shown = " ".join(str(a) for a in [*(service.get("entrypoint") or []), *(service.get("command") or [])])[:200]
        not_checked(Code.DRY_RUN_FAILED, node.name, f"the dry run exited {dry.rc}: {dry.output[-200:] or 'no output'}",
                    f"the service's command to reach `{program}` within the dry run's time", command=shown)
    return dry.args if dry else None


def ray_head_output(head: RemoteNode, command: str) -> Output | None:
    """`command` (RAY_STATUS, RAY_NODES) in rank 0's Ray container, once per run (read it with `parsed_output`); None when
    no Ray container runs there (Ray not started yet: these checks are for after `ray start`)."""
    fleet = getattr(head, "fleet", None)
    out = fleet.once(head.name, command, max(fleet.cluster.ssh.command_timeout_s, 60)) if fleet is not None \
        else result(head, command)
    said = out.stdout + out.stderr
    if out.rc != 0 and ("No such container" in said or "is not running" in said):
        return None
    return out


def service_args(node: RemoteNode, cluster: Cluster, service: dict | None) -> tuple[list[str] | None, list[str] | None]:
    """(what `vllm` gets, what `ray` gets) from the (interpolated) service, each by a dry run on the node: for mp the
    command's vllm and no ray; for Ray the serve script's vllm (x-gb10check-serve) and the command's `ray start`."""
    if service is None:
        return None, None
    if not cluster.uses_ray:
        return vllm_args(node, service), None
    serve = compose.serve_service(service)
    return (vllm_args(node, serve) if serve else None), vllm_args(node, service, program="ray")


# ---- canary programs: ours, shipped in gb10check/canary/, fed to the image's python3 (or deploy.canary_python) -------

SMI_SAMPLE = ("nvidia-smi -i 0 --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active "
              "--format=csv,noheader,nounits -lms 500")
SAMPLES_MARK = "--- gb10check: nvidia-smi samples ---"


def program(cluster: Cluster, name: str, *args: str, gpus: bool = True) -> tuple[str, str]:
    """(command, what to show for it): the program's text travels base64-encoded inside the command and is fed to the
    image's python3 on stdin (`docker run -i`), or to deploy.canary_python on the node."""
    d = cluster.deploy
    encoded = base64.b64encode(canary.source(name).encode()).decode()
    tail = " ".join(shlex.quote(a) for a in ("-", *args))
    if d.canary_python:
        runner = f"{shlex.quote(d.canary_python)} {tail}"
    else:
        volumes = "".join(f" -v {shlex.quote(v)}" for v in d.extra_volumes)
        runner = f"docker run --rm -i --pull never{' --gpus all' if gpus else ''}{volumes} {shlex.quote(d.image)} python3 {tail}"
    return f"echo {encoded} | base64 -d | {runner}", f"{runner} < gb10check/canary/{name}.py"


def compute_command(cluster: Cluster) -> tuple[str, str]:
    """The matmul timing program with nvidia-smi sampling GPU 0 every 500 ms in the background while it runs."""
    run, shown = program(cluster, "matmul", "--seconds", f"{cluster.expect.compute_seconds:g}")
    command = (f'd=$(mktemp -d) || exit 1; {SMI_SAMPLE} >"$d/smi" 2>&1 & s=$!; {run}; rc=$?; kill $s 2>/dev/null; '
               f"wait $s 2>/dev/null; echo '{SAMPLES_MARK}'; echo '$ {SMI_SAMPLE}'; cat \"$d/smi\"; rm -rf \"$d\"; exit $rc")
    return command, f"{shown} (with `{SMI_SAMPLE}` in the background)"


def _program_json(node: RemoteNode, out: Output, shown: str) -> dict:
    """The program's JSON line; NOT CHECKED (with the command as shown and its last lines) if it printed none."""
    lines = out.stdout.split(SAMPLES_MARK)[0].splitlines()
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except ValueError:
                break
            if isinstance(found, dict) and found.get("error"):
                not_checked(Code.COMMAND_FAILED, node.name, f"`{shown}` exited {out.rc}: {found['error'][:300]}",
                            "the program to run", command=shown)
            return found
    if out.rc == TIMED_OUT:
        not_checked(Code.COMMAND_TIMEOUT, node.name, f"`{shown}` did not finish in time", "the command to complete", command=shown)
    detail = (out.stderr or out.stdout.split(SAMPLES_MARK)[0]).strip().splitlines()
    not_checked(Code.COMMAND_FAILED, node.name, f"`{shown}` exited {out.rc} without its JSON line: "
                f"{detail[-1][:300] if detail else 'no output'}", "the program's JSON line", command=shown)
    raise AssertionError("unreachable")


@dataclass
class ComputeRun:
    result: dict  # the matmul program's JSON line
    samples: list[dict] | None  # nvidia_smi_query rows of GPU 0 while it ran; None: sampling gave none
    samples_error: str | None  # why there are none (nvidia-smi's own words)


def _compute_of(node: RemoteNode, out: Output, shown: str) -> ComputeRun:
    result = _program_json(node, out, shown)
    samples_text = out.stdout.split(SAMPLES_MARK, 1)[1] if SAMPLES_MARK in out.stdout else ""
    rows, why = parse_or_error("nvidia_smi_query", samples_text)
    if rows is None:
        body = [l for l in samples_text.splitlines() if l.strip() and not l.startswith("$ ")]
        why = body[0][:200] if body else "no samples"
    return ComputeRun(result, rows, why)


def compute_timeout(cluster: Cluster) -> float:
    return max(cluster.ssh.command_timeout_s, cluster.expect.compute_seconds + 180)


def compute(node: RemoteNode) -> ComputeRun:
    """This node's run of the timing program (every node runs it once per run, all nodes at the same time)."""
    cluster = node.fleet.cluster
    command, shown = compute_command(cluster)
    got = node.fleet.at_once(command, compute_timeout(cluster))[node.name]
    if isinstance(got, RemoteError):
        raise got
    return _compute_of(node, got, shown)


def fastest_compute(node: RemoteNode) -> tuple[str, float] | None:
    """(node, TFLOP/s) of the fastest node whose timing program gave a figure; None if none did."""
    cluster = node.fleet.cluster
    command, shown = compute_command(cluster)
    figures = []
    for name, out in node.fleet.at_once(command, compute_timeout(cluster)).items():
        if isinstance(out, Output):
            with contextlib.suppress(BaseException):
                figures.append((name, compute_rate(_compute_of(node.fleet.node(name), out, shown).result)))
    return max(figures, key=lambda f: f[1]) if figures else None


def image_kernels(node: RemoteNode) -> dict:
    """A torch op on the GPU and a Triton kernel compiled and run in the image on this node (gb10check/canary/kernels.py)."""
    return canary_json(node, "test_image_kernels")


def shard_read_rate(node: RemoteNode) -> tuple[str | None, bool, float | None, str]:
    """(shard, direct I/O?, bytes/s, what dd said) of this node's bounded read of one model shard, once per run."""
    cluster = node.fleet.cluster
    out = node.fleet.once(node.name, shard_read(cluster), 150)
    shard = next((line[len("-- shard "):-3] for line in out.stdout.splitlines() if line.startswith("-- shard ")), None)
    run, why = parse_or_error("dd", out.stdout)
    return shard, "-- direct --" in out.stdout, run.bytes_per_s if run else None, why or ""


def peer_shard_read_rate(node: RemoteNode, name: str) -> tuple[str | None, bool, float | None, str] | None:
    """Another node's shard_read_rate for a comparison; None when that node could not be reached or read."""
    try:
        return shard_read_rate(node.fleet.node(name))
    except RemoteError:
        return None


def nccl_identity(node: RemoteNode) -> dict:
    """The NCCL torch in the image loads on this node (gb10check/canary/nccl.py)."""
    return canary_json(node, "test_image_nccl")
