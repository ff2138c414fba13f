"""Facts, declared once: each has a name, its command (from the cluster and the node), whether it needs root, the tool
it runs, its reader (the parser and which exits are answers), its timeout, and the facts it depends on.

A check names the facts it reads with `@reads(...)`; the plugin gathers exactly those (and what they depend on) on
every node in one batch, and `read(node, name)` answers from the batch. A fact that could not be read stops every
check that reads it as NOT CHECKED with that one cause, by construction:

- the node could not be reached (the plugin's reachability rule);
- the command timed out;
- the tool is not installed (exit 127 or the shell's "not found"): named with the package that installs it;
- root was refused (`sudo -n` asked for a password, or sudo is not installed and the user is not root);
- the command failed, or printed nothing, or printed what its parser cannot read;
- a fact it depends on is absent (no image to start, docker not usable): named with the check that reports it.

Reading a fact the running check did not declare, or one the batch did not gather, is an error (FactNotDeclared):
there is no live fallback. Text read from a node is data: nothing of it is executed here.
"""

import contextvars
import getpass
import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Callable

from .. import facts
from ..checks import container
from ..cluster import Cluster, Node
from ..remedies import Code
from ..verdict import Finding, report
from . import commands as c
from . import programs
from . import readers as r
from .batch import TIMED_OUT, Output, Unreadable

ANY_EXIT = None  # a reader that takes every exit status: the tool's errors are facts its judge reads


class FactNotDeclared(Exception):
    """A check read a fact it did not declare with @reads, or one the run did not gather: a bug of the suite."""


@dataclass(frozen=True)
class Fact:
    name: str
    what: str  # what it is, for people
    command: Callable[[Cluster, Node, Any], str] | None  # None: derived from the facts in `needs`
    read: Callable[..., Any]  # (Output) -> value, or for a derived fact (values of `needs`...) -> value; may raise Unreadable
    sudo: bool = False
    tool: str | None = None  # the program the command runs: exit 127 names it as not installed
    package: str | None = None  # what installs the tool (Debian/Ubuntu package, or where it comes from)
    ok_exits: tuple[int, ...] | None = (0,)  # exits that answer (ANY_EXIT: every exit; the reader judges the text)
    empty_ok: bool = False  # whether an empty output is an answer
    # The facts it is made from (a derived fact), or that must hold first; or a function of the cluster giving them.
    needs: tuple[str, ...] | Callable[[Cluster], tuple[str, ...]] = ()
    per: str | None = None  # None: one per node; "link": one per link of the node (arg: netdev); "peer": per peer address
    timeout: Callable[[Cluster], float] | None = None  # longer than ssh.command_timeout_s
    parse_kind: str | None = None  # the parser kind (facts.KINDS), for `gb10check parse` and the GARBLED remedy
    shown: Callable[[Cluster], str] | None = None  # the command as people read it (a program travels base64-encoded)
    when: Callable[[Cluster], bool] | None = None  # gathered only for clusters where it applies (Ray's, for the Ray path)

    def needed(self, cluster: Cluster) -> tuple[str, ...]:
        return self.needs(cluster) if callable(self.needs) else self.needs

    def args(self, cluster: Cluster, node: Node) -> list:
        if self.per == "link":
            return [l.netdev for l in node.links]
        if self.per == "peer":
            return [pl.ip for p in cluster.link_pairs() for (n, _), (_, pl) in (((p.a, p.a_link), (p.b, p.b_link)),
                                                                            ((p.b, p.b_link), (p.a, p.a_link))) if n.name == node.name]
        return [None]


def _f(name, what, command, read, **kw) -> Fact:
    return Fact(name, what, command, read, **kw)


def const(command: str) -> Callable[[Cluster, Node, Any], str]:
    return lambda cluster, node, arg: command


def canary_needs(cluster: Cluster) -> tuple[str, ...]:
    """Our programs run in the deployment image (docker usable, the image there), or in deploy.canary_python."""
    return () if cluster.deploy.canary_python else ("docker_usable", "image_present")


NVIDIA_UTILS = "the NVIDIA driver's utilities (nvidia-utils-<version>, installed with the driver)"

FACTS: dict[str, Fact] = {f.name: f for f in [
    _f("whoami", "the SSH user's name", const(c.WHOAMI), r.stripped),
    _f("os_release", "the OS image", const(c.OS_RELEASE), r.os_image),
    _f("kernel", "the running kernel", const(c.KERNEL), r.matching("uname -r", r"\d+\.\d+[\w.+~-]*", "a kernel release (6.11.0-1016-nvidia)")),
    _f("machine", "the architecture", const(c.MACHINE), r.matching("uname -m", r"[a-z0-9_]+", "an architecture (aarch64)")),
    _f("driver_module", "/proc/driver/nvidia/version", const(c.PROC_DRIVER), r.both, ok_exits=ANY_EXIT, empty_ok=True),
    _f("driver_query", "nvidia-smi's driver version", const(c.DRIVER_QUERY), r.both, tool="nvidia-smi", package=NVIDIA_UTILS,
       ok_exits=ANY_EXIT, empty_ok=True),
    _f("gpu_names", "nvidia-smi's GPU names", const(c.GPU_NAME_QUERY), r.gpu_names, tool="nvidia-smi", package=NVIDIA_UTILS,
       ok_exits=ANY_EXIT, parse_kind="nvidia_smi_query"),
    _f("gpu_inventory", "each GPU's name, driver and memory", const(c.GPU_INVENTORY), r.parser("nvidia_smi_query"),
       tool="nvidia-smi", package=NVIDIA_UTILS, parse_kind="nvidia_smi_query"),
    _f("gpu_processes", "the GPU's compute processes (nvidia-smi) with their process-table lines",
       const(c.GPU_PROCESSES), r.parser("nvidia_compute_apps"), tool="nvidia-smi", package=NVIDIA_UTILS,
       parse_kind="nvidia_compute_apps"),
    _f("gpu_list", "nvidia-smi -L", const(c.GPU_LIST), r.gpu_list, tool="nvidia-smi", package=NVIDIA_UTILS, ok_exits=ANY_EXIT),
    _f("installed_driver", "the installed user-mode driver's version", None, r.installed_driver, needs=("driver_query",)),
    _f("ip_addr", "the node's interfaces and addresses", const(c.IP_ADDR), r.parser("ip_j_addr"), tool="ip", package="iproute2",
       parse_kind="ip_j_addr"),
    _f("default_routes", "the default routes", const(c.DEFAULT_ROUTE), r.json_list, tool="ip", package="iproute2"),
    _f("tcp_sockets", "the node's TCP sockets and their processes", const(c.TCP_SOCKETS), r.parser("ss"), sudo=True, tool="ss",
       package="iproute2", parse_kind="ss"),
    _f("ibdev2netdev", "ibdev2netdev", const(c.IBDEV2NETDEV), r.parser("ibdev2netdev"), tool="ibdev2netdev",
       package="mlnx-tools (DOCA-OFED; DGX OS ships it)", parse_kind="ibdev2netdev"),
    _f("ib_sysfs", "the RDMA ports in sysfs", const(c.SYSFS_IB), r.ib_sysfs, ok_exits=ANY_EXIT, parse_kind="ib_sysfs"),
    _f("meminfo", "/proc/meminfo", const(c.MEMINFO), r.parser("meminfo"), parse_kind="meminfo"),
    _f("docker_server", "docker's server version", const(container.DOCKER_SERVER), r.docker_version, ok_exits=ANY_EXIT,
       empty_ok=True),
    _f("compose_version", "docker compose version", const(container.COMPOSE_VERSION), r.both, ok_exits=ANY_EXIT, empty_ok=True),
    _f("docker_usable", "docker usable by the SSH user", None, r.docker_usable, needs=("docker_server",)),
    _f("image", "the deployment image", lambda cl, n, a: c.image_inspect(cl.deploy.image), r.image, tool="docker",
       package="docker.io", ok_exits=ANY_EXIT, needs=("docker_usable",), parse_kind="docker_image_inspect"),
    _f("image_present", "the deployment image, present", None, lambda docker_usable, image: r.image_present(image),
       needs=("docker_usable", "image")),
    _f("gpu_probe", "nvidia-smi -L in a container of the image",
       lambda cl, n, a: container.gpu_probe(cl.deploy.image, cl.deploy.extra_volumes), r.runtime, ok_exits=ANY_EXIT,
       needs=("gpu_list", "image_present")),
    # The NVIDIA Container Toolkit (test_container_toolkit, test_cdi_spec, test_toolkit_same_as_head).
    _f("toolkit_version", "nvidia-ctk --version", const(c.TOOLKIT_VERSION), r.parser("nvidia_ctk_version"), tool="nvidia-ctk",
       package="nvidia-container-toolkit (NVIDIA's apt repository; DGX OS ships it)", parse_kind="nvidia_ctk_version"),
    _f("cdi_specs", "the NVIDIA CDI specs", const(c.CDI_SPECS), r.parser("cdi_spec"), parse_kind="cdi_spec"),
    _f("toolkit_config", "the NVIDIA container runtime's config.toml and docker's daemon.json", const(c.TOOLKIT_CONFIG),
       r.parser("nvidia_runtime_config"), parse_kind="nvidia_runtime_config"),
    _f("loaded_driver", "the loaded NVIDIA kernel module's version, the installed driver's", None, r.loaded_driver,
       needs=("driver_module", "driver_query")),
    # Nothing running prints nothing: an empty list is an answer.
    _f("docker_ps", "docker ps", const(c.DOCKER_PS), r.docker_ps, empty_ok=True, needs=("docker_usable",)),
    _f("docker_stats", "docker stats", const(c.DOCKER_STATS), r.docker_stats, empty_ok=True, needs=("docker_usable",)),
    _f("compose_file", "the compose file", lambda cl, n, a: c.cat(c.compose_files(cl)[0]), r.file_or_absent, ok_exits=ANY_EXIT,
       empty_ok=True),
    _f("env_file", "the .env file", lambda cl, n, a: c.cat(c.compose_files(cl)[1]), r.file_or_absent, ok_exits=ANY_EXIT,
       empty_ok=True),
    _f("compose_config", "the compose file, as YAML", None, r.compose_config, needs=("compose_file",), parse_kind="compose_config"),
    _f("env_vars", "the .env's variables", None, r.env_vars, needs=("env_file",)),
    _f("vllm_service", "the compose file's vllm service, interpolated with the .env", None, r.vllm_service,
       needs=("compose_config", "env_vars")),
    # An empty folder lists nothing, and a folder not made yet fails its cd (sh: exit 2): r.both mean nothing downloaded.
    _f("model_listing", "the model's Hugging Face cache listing", lambda cl, n, a: c.model_listing(cl), r.listing,
       ok_exits=(0, 1, 2), empty_ok=True),
    _f("model_config", "the model's config.json", lambda cl, n, a: c.snapshot_file(cl, "config.json"), r.json_file_or_absent,
       ok_exits=ANY_EXIT),
    _f("model_index", "the model's safetensors index", lambda cl, n, a: c.snapshot_file(cl, "model.safetensors.index.json"),
       r.json_file_or_absent, ok_exits=ANY_EXIT),
    _f("model_sizing_files", "the model's config.json and safetensors index, both present", None, r.sizing_files,
       needs=("model_config", "model_index")),
    _f("mtu", "a netdev's MTU", lambda cl, n, netdev: c.mtu(netdev), r.integer, per="link"),
    # ping exits 1 when nothing answers and 2 when it cannot send: both are answers its reader keeps.
    _f("port_peers", "the IPv6 link-local addresses answering on a port", lambda cl, n, netdev: c.port_peers(netdev),
       r.parser("port_peers"), tool="ping", package="iputils-ping", ok_exits=ANY_EXIT, per="link", parse_kind="port_peers"),
    _f("route_to", "the route to a peer's link address", lambda cl, n, ip: c.route_to(ip), r.route_dev, tool="ip",
       package="iproute2", ok_exits=ANY_EXIT, empty_ok=True, per="peer"),
    _f("cmdline", "the kernel command line", const(c.CMDLINE), r.cmdline),
    _f("bios_version", "the BIOS version", const(c.BIOS_VERSION), r.matching("bios_version", r"\S+", "one word (5.36_0ACUM018)")),
    _f("bios_date", "the BIOS date", const(c.BIOS_DATE), r.matching("bios_date", r"\d\d/\d\d/\d{4}", "MM/DD/YYYY")),
    _f("driver_packages", "the NVIDIA driver packages (dpkg)", const(c.DRIVER_PACKAGES), r.driver_packages, tool="dpkg-query",
       package="dpkg (a Debian-based OS)", ok_exits=ANY_EXIT, empty_ok=True),
    # No settings (apt-config prints none) is an answer: nothing is excluded from upgrades.
    _f("unattended_upgrades", "apt's Unattended-Upgrade settings", const(c.UNATTENDED_UPGRADES), r.unattended,
       ok_exits=(0, 1), empty_ok=True),
    _f("reboot_required", "/var/run/reboot-required", const(c.REBOOT_REQUIRED), r.reboot_flag),
    _f("rdma_counters", "the RDMA ports' error counters", const(c.RDMA_COUNTERS), r.rdma_counters, empty_ok=True),
    _f("nm_profiles", "NetworkManager's profiles", const(c.NM_PROFILES), r.parser("nmcli_profiles"), parse_kind="nmcli_profiles"),
    _f("ibv_devinfo", "ibv_devinfo", const(c.IBV_DEVINFO), r.parser("ibv_devinfo"), tool="ibv_devinfo", package="ibverbs-utils",
       parse_kind="ibv_devinfo"),
    _f("disk_free", "free space of the HF cache and docker's data",
       lambda cl, n, a: c.disk_free([cl.deploy.hf_cache, c.DOCKER_ROOT]), r.parser("df"), tool="df", package="coreutils",
       parse_kind="df"),
    _f("ufw_status", "ufw status verbose", const(c.UFW_STATUS), r.parser("ufw_status"), sudo=True, tool="ufw", package="ufw",
       parse_kind="ufw_status"),
    _f("ufw_user_rules", "/etc/ufw/user.rules", const(c.UFW_USER_RULES), r.parser("ufw_user_rules"), sudo=True,
       parse_kind="ufw_user_rules"),
    _f("ufw_conf", "/etc/ufw/ufw.conf", const(c.UFW_CONF), lambda out: out.stdout, sudo=True),
    # The chain exists only while ufw is active: its absence (exit 1) is an answer, read with ufw's status.
    _f("ufw_live", "the live ufw-user-input chain", const(c.UFW_LIVE), r.live_chain, sudo=True, tool="iptables",
       package="iptables", ok_exits=ANY_EXIT),
    _f("netplan_mode", "the netplan file's mode", lambda cl, n, a: c.netplan_mode(cl.expect.netplan_file), r.file_or_absent,
       sudo=True, ok_exits=ANY_EXIT),
    _f("netplan_content", "the netplan file", lambda cl, n, a: c.cat(cl.expect.netplan_file), r.file_or_absent, sudo=True,
       ok_exits=ANY_EXIT, empty_ok=True),
    _f("ethtool", "ethtool NETDEV", lambda cl, n, netdev: c.ethtool(netdev), r.parser("ethtool"), sudo=True, tool="ethtool",
       package="ethtool", per="link", parse_kind="ethtool"),
    _f("ethtool_info", "ethtool -i NETDEV", lambda cl, n, netdev: c.ethtool_info(netdev), r.parser("ethtool"), sudo=True,
       tool="ethtool", package="ethtool", per="link", parse_kind="ethtool"),
    _f("kernel_log", "the kernel log since boot", const(c.KERNEL_LOG), r.kernel_log, sudo=True, parse_kind="kernel_log"),
    _f("lspci", "the Mellanox PCI functions", const(c.LSPCI), r.lspci, sudo=True, tool="lspci", package="pciutils",
       empty_ok=True, parse_kind="lspci"),
    _f("canary_runner", "somewhere to run our programs: the image (docker, the image present) or deploy.canary_python", None,
       lambda *needed: True, needs=canary_needs),
    _f("canary_nccl", "the NCCL library torch in the image loads", lambda cl, n, a: programs.program(cl, "nccl", gpus=False)[0],
       programs.program_json, ok_exits=ANY_EXIT, empty_ok=True, needs=canary_needs,
       timeout=lambda cl: programs.canary_timeout(cl, "nccl"), shown=lambda cl: programs.program(cl, "nccl", gpus=False)[1]),
    _f("canary_kernels", "a torch op and a Triton kernel on the GPU in the image",
       lambda cl, n, a: programs.program(cl, "kernels")[0], programs.program_json, ok_exits=ANY_EXIT, empty_ok=True,
       needs=canary_needs, timeout=lambda cl: programs.canary_timeout(cl, "kernels"),
       shown=lambda cl: programs.program(cl, "kernels")[1]),
    # NCCL's configuration files (and, in the image, its NCCL_* variables and net plugin libraries): checks/nccl_config.py
    _f("nccl_conf_host", "NCCL's configuration files on the host (/etc/nccl.conf, root's ~/.nccl.conf)", const(c.NCCL_CONF_HOST),
       r.parser("nccl_conf_probe"), sudo=True, parse_kind="nccl_conf_probe"),
    _f("nccl_conf_image", "NCCL's configuration files, variables and net plugin libraries in the deployment image",
       lambda cl, n, a: c.nccl_conf_image(cl.deploy.image, cl.deploy.extra_volumes), r.parser("nccl_conf_probe"), tool="docker",
       package="docker.io", needs=("image_present",), parse_kind="nccl_conf_probe"),
    _f("canary_memory", "the free memory CUDA reports in the image, per device",
       lambda cl, n, a: programs.program(cl, "memory")[0], programs.program_json, ok_exits=ANY_EXIT, empty_ok=True,
       needs=canary_needs, timeout=lambda cl: programs.canary_timeout(cl, "memory"),
       shown=lambda cl: programs.program(cl, "memory")[1]),
    # Rank 0's server log (read on the head): the engine as it resolved (test_engine_config).
    _f("server_log", "rank 0's vLLM server log", lambda cl, n, a: c.server_log(cl), r.parser("vllm_log"), parse_kind="vllm_log"),
    _f("ray_version", "Ray in the deployment image",
       lambda cl, n, a: c.ray_version(cl.deploy.image, cl.deploy.extra_volumes), lambda out: facts.parse("ray_version", out.stdout + (out.stderr if out.rc else "")), ok_exits=ANY_EXIT,
       needs=("image_present",), parse_kind="ray_version", when=lambda cl: cl.uses_ray),
    # What `gb10check watch` and a stall's evidence read each time they look (gb10check/watch_tick.py, which_rank.py).
    _f("boots", "the boot id and the journal's boots", const(c.BOOTS), r.procfs("boots")),
    _f("gpu_health", "the GPU's temperature and active clock-event reasons", const(c.GPU_HEALTH), r.parser("nvidia_smi_query"),
       tool="nvidia-smi", package=NVIDIA_UTILS, parse_kind="nvidia_smi_query"),
    _f("rank_state", "the rank's container, its processes' state and CPU time, its last log line",
       lambda cl, n, a: c.rank_state(cl), r.procfs("rank_state"), tool="docker", package="docker.io"),
]}


def closure(names, cluster: Cluster) -> set[str]:
    """The facts and every fact they depend on."""
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += FACTS[name].needed(cluster)
    return seen


def batch_commands(cluster: Cluster, node: Node, names) -> dict[tuple[str, Any], tuple[str, bool]]:
    """(fact, arg) -> (command, sudo) for the facts named and those they depend on, on this node."""
    out = {}
    for name in sorted(closure(names, cluster)):
        fact = FACTS[name]
        if fact.command is not None and (fact.when is None or fact.when(cluster)):
            out.update({(name, arg): (fact.command(cluster, node, arg), fact.sudo) for arg in fact.args(cluster, node)})
    return out


# ---- reading ------------------------------------------------------------------------------------------------------------

_declared: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar("gb10check_declared", default=None)

NOT_FOUND = re.compile(r"(?:^|\n)(?:\S+: )?(?:\d+: )?(?:\S+: )?(?:line \d+: )?(\S+): (?:command )?not found\s*$")
SUDO_PASSWORD = ("sudo: a password is required", "sudo: a terminal is required", "sudo: no tty present")
SUDO_MISSING = re.compile(r"sudo: (?:command )?not found")


def reads(*names: str):
    """Declare the facts a check reads (a decorator for a test function): the plugin gathers them for the run."""
    unknown = [n for n in names if n not in FACTS]
    if unknown:
        raise KeyError(f"unknown facts {unknown}: known {sorted(FACTS)}")
    import pytest

    return pytest.mark.gb10check_reads(*names)


def declared(names, cluster: Cluster) -> contextvars.Token:
    """Set the facts the running check may read (the plugin, around each test call)."""
    return _declared.set(None if names is None else frozenset(closure(names, cluster)))


def undeclare(token: contextvars.Token) -> None:
    _declared.reset(token)


def cause(fact: Fact, out: Output, node_name: str) -> Unreadable | None:
    """What stopped the fact from being read before its reader looks: a timeout, a missing tool, root refused."""
    if out.rc == TIMED_OUT:
        return Unreadable(f"`{out.command}` did not finish in time", Code.COMMAND_TIMEOUT, "the command to complete")
    said = out.stderr.strip()
    if fact.sudo and (any(s in said for s in SUDO_PASSWORD)):
        return Unreadable(f"sudo -n asked for a password to run `{out.command}`", Code.SUDO_REFUSED, "root without a password")
    if fact.sudo and SUDO_MISSING.search(said):
        return Unreadable(f"sudo is not installed and the SSH user is not root (`{out.command}` needs root)", Code.SUDO_MISSING,
                          "root")
    # A missing tool stops the fact, unless the fact reads every exit (its judge names the missing tool itself).
    if (fact.tool or fact.ok_exits is not ANY_EXIT) and (out.rc == 127 or (fact.tool and NOT_FOUND.search(said))):
        missing = NOT_FOUND.search(said)
        tool = missing.group(1) if missing else fact.tool or out.command.split()[0]
        package = fact.package if fact.tool and tool == fact.tool else None
        return Unreadable(f"`{tool}` is not installed", Code.TOOL_MISSING, f"`{tool}` on the node", tool=tool,
                          package=package or f"the package that provides {tool}")
    if fact.ok_exits is not ANY_EXIT and out.rc not in fact.ok_exits:
        return Unreadable(f"`{out.command}` exited {out.rc}: {r.last_line(out)}", Code.COMMAND_FAILED, "the command to succeed")
    # Nothing printed is an answer only where the registry says so; a failing command's words are its reader's to judge.
    if not fact.empty_ok and not out.stdout.strip() and (out.rc == 0 or fact.ok_exits is not ANY_EXIT):
        return Unreadable(f"`{out.command}` printed nothing (exit {out.rc})", Code.GARBLED, f"{fact.what}")
    return None


def value_of(fact: Fact, out: Output, node_name: str) -> Any:
    """The fact's value from its output, or Unreadable."""
    stop = cause(fact, out, node_name)
    if stop is not None:
        raise stop
    try:
        return fact.read(out)
    except facts.ParseError as exc:
        raise Unreadable(f"{exc} (exit {out.rc})", Code.GARBLED, f"{fact.what} as gb10check reads it") from None


def unreadable_finding(fact: Fact, exc: Unreadable, node_name: str, command: str, user: str = "USER") -> Finding:
    """user: the account the node's commands run as (the fix of sudo-refused names it)."""
    return Finding(exc.code, node_name, exc.why, exc.expected or f"{fact.what} to be readable", command=command,
                   kind=fact.parse_kind or fact.name, fact=fact.name, **{"user": user, **exc.params})


def read(node, name: str, arg: Any = None) -> Any:
    """The named fact's value on the node (arg: the netdev or peer address of a per-link or per-peer fact); NOT CHECKED,
    with its cause, when it or a fact it depends on could not be read."""
    allowed = _declared.get()
    if allowed is not None and name not in allowed:
        raise FactNotDeclared(f"the check read fact {name!r} without declaring it: add it to its @reads(...)")
    return _value(node, FACTS[name], arg)


def text(node, name: str, arg: Any = None) -> str:
    """The named fact's output as the node printed it, once its reader accepts it; Unreadable otherwise. For tools that
    keep a fact's text (a profile snapshot), outside a check."""
    fact = FACTS[name]
    out = node.fleet.fact_output(node.name, name, arg)
    value_of(fact, out, node.name)
    return out.stdout


def _value(node, fact: Fact, arg: Any) -> Any:
    cluster = node.fleet.cluster
    needed = [_value(node, FACTS[n], None) for n in fact.needed(cluster)]  # what it is made from, or must hold first
    out = None if fact.command is None else node.fleet.fact_output(node.name, fact.name, arg)
    if out is not None and fact.shown is not None:
        out = dataclasses.replace(out, command=fact.shown(cluster))
    try:
        if out is None:
            try:
                return fact.read(*needed)
            except facts.ParseError as exc:
                raise Unreadable(str(exc), Code.GARBLED, f"{fact.what} as gb10check reads it") from None
        return value_of(fact, out, node.name)
    except Unreadable as exc:
        local = getattr(getattr(node, "spec", None), "connection", "ssh") == "local"
        report([unreadable_finding(fact, exc, node.name, out.command if out else fact.what,
                                   user=getpass.getuser() if local else cluster.ssh.user)])


def parse_or_error(kind: str, text: str) -> tuple[Any, str | None]:
    """(facts, None), or (None, why) when the text is not that tool's output: for runs whose unreadable output is a finding."""
    try:
        return facts.parse(kind, text), None
    except facts.ParseError as exc:
        return None, str(exc)
