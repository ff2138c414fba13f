"""The commands behind the facts (gb10check/gather/registry.py names them): each a constant or a function of the
cluster and the node. Test modules hold no command strings; they read facts by name."""

import shlex

from .. import compose, facts
from ..checks import model, platform
from ..cluster import Cluster

# `path:value` per file from one grep, not a `cat` per file: a GB10's four RDMA devices hold about 3000 GID-table files.
# -s: unused table slots refuse to be read (EINVAL) and are not GIDs anyway.
SYSFS_IB = ("grep -sH '' /sys/class/infiniband/*/ports/*/state /sys/class/infiniband/*/ports/*/phys_state "
            "/sys/class/infiniband/*/ports/*/rate /sys/class/infiniband/*/ports/*/link_layer "
            "/sys/class/infiniband/*/ports/*/gids/* /sys/class/infiniband/*/ports/*/gid_attrs/types/* "
            "/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*")
IP_ADDR = "ip -j addr"
DEFAULT_ROUTE = "ip -j route show default"
# Every TCP socket with its owners (-p needs root); the deployment's containers run on the host network, so theirs show here.
TCP_SOCKETS = "ss -tanpH"
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
GPU_INVENTORY = "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv"
# The GPU's compute processes (on the host: nvidia-smi in a container sees none of another's) and, per process, its line in
# the process table with the docker container whose cgroup holds it (facts.nvidia.parse_compute_apps reads both).
GPU_PROCESSES = ("a=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv 2>&1); rc=$?; echo \"$a\"; "
                 "[ $rc -eq 0 ] || exit $rc; echo '-- ps --'; "
                 "for p in $(echo \"$a\" | sed 1d | cut -d, -f1 | grep -xE '[0-9]+'); do "
                 "c=$(grep -oE 'docker[-/][0-9a-f]{12}' /proc/$p/cgroup 2>/dev/null | head -n 1 | cut -c8-); "
                 "ps -o pid=,ppid=,etimes=,args= -p $p | sed \"s|^ *|${c:--} |\"; done; true")
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
# The filter is the judge's own table of signs (checks/platform.py), matched the same way: case-insensitively. The last
# 300 lines of the failing signs and, apart, of the warning ones: a flood of warnings (NV_ERR_NO_MEMORY on every start)
# cannot push a fatal line out of what is kept.
KERNEL_LOG_FAILING = "|".join(f"({sign.pattern})" for sign in platform.KERNEL_SIGNS if not sign.warning)
KERNEL_LOG_WARNING = "|".join(f"({sign.pattern})" for sign in platform.KERNEL_SIGNS if sign.warning)
KERNEL_LOG_SIGNS = f"{KERNEL_LOG_FAILING}|{KERNEL_LOG_WARNING}"
_KMSG_JOURNAL = "journalctl -k -b -q --no-pager -o short-monotonic"
KERNEL_LOG = ("f() { grep -aiE " + shlex.quote(KERNEL_LOG_FAILING) + " | tail -n 300; }; "
              "w() { grep -aiE " + shlex.quote(KERNEL_LOG_WARNING) + " | tail -n 300; }; "
              "if journalctl -k -b -q --no-pager -n 1 2>/dev/null | grep -q .; then echo '-- source: journalctl -k -b --'; "
              f"{_KMSG_JOURNAL} | f; {_KMSG_JOURNAL} | w; elif dmesg >/dev/null 2>&1; then echo '-- source: dmesg --'; "
              "dmesg | f; dmesg | w; else echo '-- source: none --'; fi")
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
# The NVIDIA Container Toolkit: its CLI's version, the CDI specs it generated and the runtime's configuration, each file
# after a `-- PATH --` line (`-- PATH: absent --` for one not there: its absence is a fact).
TOOLKIT_VERSION = "nvidia-ctk --version"


def files_in_sections(*paths: str) -> str:
    return "; ".join(f"if [ -e {p} ]; then echo '-- {p} --'; cat {p}; else echo '-- {p}: absent --'; fi" for p in paths)


CDI_SPECS = files_in_sections(*facts.nvidia_ctk.CDI_SPECS)
TOOLKIT_CONFIG = files_in_sections(facts.nvidia_ctk.CONFIG_TOML, facts.nvidia_ctk.DAEMON_JSON)
DOCKER_PS = f"docker ps --format '{facts.docker.PS_FORMAT}'"
# Only when a container runs: `docker stats --no-stream` samples for half a second even when there is nothing to sample.
DOCKER_STATS = f"ids=$(docker ps -q); [ -z \"$ids\" ] || docker stats --no-stream --format '{facts.docker.STATS_FORMAT}' $ids"


def ethtool(netdev: str) -> str:
    return f"ethtool {shlex.quote(netdev)}"


def ethtool_info(netdev: str) -> str:
    return f"ethtool -i {shlex.quote(netdev)}"


def mtu(netdev: str) -> str:
    return f"cat /sys/class/net/{shlex.quote(netdev)}/mtu"


def port_peers(netdev: str) -> str:
    """Who answers on a port, before any IPv4 is set: an echo to all nodes (ff02::1) from its IPv6 link-local address;
    the port's disable_ipv6 first (1: no link-local address, nothing can answer)."""
    dev = shlex.quote(netdev)
    return (f"printf 'disable_ipv6 %s\\n' \"$(cat /proc/sys/net/ipv6/conf/{dev}/disable_ipv6 2>/dev/null)\"; "
            f"ping -6 -n -c 2 -i 1 -w 2 -I {dev} ff02::1 2>&1")


def route_to(ip: str) -> str:
    return f"ip -j route get {shlex.quote(ip)}"


def shell_path(path: str) -> str:
    """A path quoted for sh, a leading ~ left for the shell to expand to the user's home (a quoted ~ is a folder named ~)."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def netplan_mode(path: str) -> str:
    return f"stat -c %a {shell_path(path)}"


def cat(path: str) -> str:
    return f"cat {shell_path(path)}"


def image_inspect(image: str) -> str:
    return f"docker image inspect {shlex.quote(image)}"


def disk_free(paths: list[str]) -> str:
    """df -B1 of each path, or of its nearest existing parent (a cache not made yet), each after a `-- df -B1 PATH --` note."""
    return "; ".join(f"p={shell_path(p)}; while [ ! -e \"$p\" ]; do p=$(dirname \"$p\"); done; echo \"-- df -B1 {p} --\"; "
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


# NCCL's configuration files as NCCL reads them (facts/nccl_conf.py): each file between marks, in NCCL's order (the
# first one read wins), `cat; echo` so that a last line without its newline still ends before the end mark.
def _nccl_conf_files(first: str) -> str:
    return (f"for f in {first} /etc/nccl.conf; do if [ ! -e \"$f\" ]; then echo \"-- gb10check: absent $f --\"; "
            "elif [ ! -r \"$f\" ]; then echo \"-- gb10check: unreadable $f --\"; else echo \"-- gb10check: file $f --\"; "
            "cat \"$f\"; echo; echo '-- gb10check: end --'; fi; done; ")


# On the host: root's home and /etc (sudo: root's home is not the SSH user's to read).
NCCL_CONF_HOST = "echo '-- gb10check: home /root --'; " + _nccl_conf_files("/root/.nccl.conf") + "echo '-- gb10check: done --'"
# In the image: the home NCCL reads there ($NCCL_CONF_FILE in its place when the image sets it), the image's own NCCL_*
# variables and library path, and every libnccl-net*.so where dlopen looks for NCCL's net plugin: LD_LIBRARY_PATH, the
# loader's cache (ldconfig -p: `NAME (flags) => PATH`), the default folders.
NCCL_CONF_IMAGE = (
    "echo \"-- gb10check: home $HOME --\"; c=\"$HOME/.nccl.conf\"; [ -n \"$NCCL_CONF_FILE\" ] && c=\"$NCCL_CONF_FILE\"; "
    + _nccl_conf_files('"$c"')
    + "echo '-- gb10check: env --'; env | grep -E '^(NCCL_[A-Za-z0-9_]*|LD_LIBRARY_PATH)='; echo '-- gb10check: end --'; "
    "echo '-- gb10check: libraries --'; for d in $(echo \"$LD_LIBRARY_PATH\" | tr ':' ' '); do for l in \"$d\"/libnccl-net*.so*; "
    "do [ -e \"$l\" ] && echo \"ld_library_path ${l##*/} $l\"; done; done; "
    "ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*\\(libnccl-net[^ ]*\\) .*=> \\(.*\\)$/cache \\1 \\2/p'; "
    "for d in /lib /usr/lib /lib64 /usr/lib64 /usr/lib/*-linux-gnu; do for l in \"$d\"/libnccl-net*.so*; "
    "do [ -e \"$l\" ] && echo \"default ${l##*/} $l\"; done; done; echo '-- gb10check: end --'; echo '-- gb10check: done --'")


def nccl_conf_image(image: str, extra_volumes: list[str]) -> str:
    """The NCCL configuration probe in the deployment image, as a rank's container sees it (its extra volumes; never pulls)."""
    volumes = "".join(f" -v {shlex.quote(v)}" for v in extra_volumes)
    return (f"docker run --rm --pull never --entrypoint /bin/sh{volumes} {shlex.quote(image)} -c "
            f"{shlex.quote(NCCL_CONF_IMAGE)}")


SERVER_LOG_BYTES = 4_000_000  # the start comes first: a long-running server's request lines are cut off, not read


def server_log(cluster: Cluster) -> str:
    """Rank 0's vLLM log as the serving stage reads it: serving.log_command, or `docker logs` of the deployment's
    container (the Ray head's with deploy.executor: ray), its first SERVER_LOG_BYTES."""
    command = cluster.serving.log_command or \
        f"docker logs {compose.RAY_CONTAINER_NAME if cluster.uses_ray else compose.CONTAINER_NAME} 2>&1"
    return f"{{ {command}; }} | head -c {SERVER_LOG_BYTES}"


# ---- what `gb10check watch` and a stall's evidence read (gb10check/watch_tick.py, gb10check/which_rank.py) ----

BOOTS = "cat /proc/sys/kernel/random/boot_id; journalctl --list-boots --no-pager -q 2>/dev/null | tail -n 50"
# The GPU's temperature and the clock-event reasons active now (a bit mask: 0x20 SW thermal, 0x40 HW thermal slowdown).
GPU_HEALTH = "nvidia-smi --query-gpu=temperature.gpu,clocks_throttle_reasons.active --format=csv"


def rank_container(cluster: Cluster) -> str:
    return compose.RAY_CONTAINER_NAME if cluster.uses_ray else compose.CONTAINER_NAME


def rank_state(cluster: Cluster) -> str:
    """One look at the node's rank: the node's clock, its container (docker inspect), /proc/PID/stat of each of its
    processes (docker top lists them, a paused container's too), and its last log line with docker's timestamp."""
    c = shlex.quote(rank_container(cluster))
    return (f"date +%s.%N; echo '-- inspect'; docker inspect {c} 2>&1; echo '-- stat'; "
            f"for p in $(docker top {c} -eo pid 2>/dev/null | tail -n +2); do cat /proc/$p/stat 2>/dev/null; done; "
            f"echo '-- log'; docker logs -t --tail 1 {c} 2>&1 | tail -n 1")
