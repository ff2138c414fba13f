"""Platform hygiene: versions equal on every node, known-bad versions (gb10check/advisories.py), pending reboots,
driver packages open to unattended upgrades, the kernel log since boot and the RDMA port error counters."""

import re
import shlex
from dataclasses import dataclass, field, replace
from datetime import date

from ..advisories import ADVISORIES, Advisory, by_id
from ..remedies import Code
from ..verdict import Finding


@dataclass
class Platform:
    """What a node runs, as read from it; None where the node did not say (no DMI table, no driver ...)."""

    kernel: str | None = None
    cmdline: str | None = None
    bios_version: str | None = None
    bios_date: str | None = None  # as sysfs prints it: MM/DD/YYYY
    firmware: dict[str, str | None] = field(default_factory=dict)  # QSFP netdev -> ConnectX firmware (ethtool -i)
    driver: str | None = None  # the installed (user-mode) NVIDIA driver
    driver_unheld: list[str] | None = None  # NVIDIA driver packages neither held nor excluded from unattended-upgrades

    def parity(self) -> dict[str, str | None]:
        """What must be equal on every node (kernel and driver have their own checks: test_os_parity, test_driver_same_as_head)."""
        return {"kernel command line": normal_cmdline(self.cmdline), "BIOS version": self.bios_version,
                "BIOS date": self.bios_date, **{f"ConnectX firmware of {n}": fw for n, fw in self.firmware.items()}}


def manifest(facts: Platform) -> dict[str, str | None]:
    """The node's versions manifest lines this check reads (the run history compares them with the last green run)."""
    return {"kernel": facts.kernel, "kernel command line": normal_cmdline(facts.cmdline), "BIOS version": facts.bios_version,
            "BIOS date": facts.bios_date, "driver": facts.driver,
            **{f"ConnectX firmware of {n}": fw for n, fw in sorted(facts.firmware.items())}}


def normal_cmdline(cmdline: str | None) -> str | None:
    """/proc/cmdline without the parameters that differ between identical machines (root=UUID, BOOT_IMAGE path)."""
    if cmdline is None or not cmdline.strip():
        return None
    kept = [p for p in cmdline.split() if not re.match(r"(root|BOOT_IMAGE|resume|cryptdevice)=", p)]
    return " ".join(kept)


def sysfs_value(text: str | None) -> str | None:
    """A one-line sysfs file's value; None for an empty one, or when it could not be read."""
    value = (text or "").strip()
    return value if value and "No such file" not in value and "Permission denied" not in value else None


def bios_day(text: str | None) -> date | None:
    """/sys/class/dmi/id/bios_date (MM/DD/YYYY) as a date, or None."""
    m = re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{4})", (text or "").strip())
    try:
        return date(int(m[3]), int(m[1]), int(m[2])) if m else None
    except ValueError:
        return None


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def judge_versions_same(node: str, head: str, mine: Platform, heads: Platform) -> list[Finding]:
    """Kernel command line, BIOS and ConnectX firmware as on rank 0; what neither node says is not compared."""
    a, b = mine.parity(), heads.parity()
    return [Finding(Code.VERSION_DIFFERS, node, f"{what} {a.get(what)!r}", f"{b[what]!r} as on {head}", head=head, what=what)
            for what in b if b[what] is not None and a.get(what) is not None and a[what] != b[what]]


def affects(advisory: Advisory, facts: Platform) -> str | None:
    """Why the advisory affects the node ('kernel 7.0.0-1019-nvidia without kho=off'), or None when it does not."""
    why = []
    if advisory.kernel is not None:
        if facts.kernel is None or not re.fullmatch(advisory.kernel, facts.kernel.strip()):
            return None
        why.append(f"kernel {facts.kernel.strip()}")
    if advisory.cmdline_lacks is not None:
        if facts.cmdline is None or advisory.cmdline_lacks in facts.cmdline.split():
            return None
        why.append(f"booted without {advisory.cmdline_lacks}")
    if advisory.bios_before is not None:
        day = bios_day(facts.bios_date)
        if day is None or day >= advisory.bios_before:
            return None
        why.append(f"BIOS {facts.bios_version or '?'} dated {facts.bios_date.strip()}")
    if advisory.driver_min is not None or advisory.driver_max is not None:
        if facts.driver is None:
            return None
        v = version_key(facts.driver)
        if (advisory.driver_min and v < version_key(advisory.driver_min)) or (advisory.driver_max and v >= version_key(advisory.driver_max)):
            return None
        why.append(f"driver {facts.driver}")
    if advisory.driver_unheld:
        if not facts.driver_unheld:
            return None
        why.append(f"unheld {', '.join(facts.driver_unheld)}")
    return ", ".join(why) or None


def judge_advisories(node: str, facts: Platform, advisories=ADVISORIES) -> list[Finding]:
    """Each known-bad version the node runs: a failure or a warning, as the advisory says, with its fix and source."""
    return [Finding(Code.KNOWN_BAD_VERSION, node, f"{why} [{a.id}: {a.symptom}]", f"not {a.what}", warning=not a.fail,
                    advisory=a.id, advisory_fix=a.fix, source=a.source)
            for a in advisories if a.check is None and (why := affects(a, facts))]


# Where a libnccl comes from, by the path torch maps it from (gb10check/canary/nccl.py's `path`): a pip wheel's
# (.../site-packages/nvidia/nccl/lib/libnccl.so.2) or a system package's (DGX OS and NGC images: libnccl2 in
# /usr/lib/<triplet>/); anything else is a build of its own.
NCCL_BUILDS = (("pip wheel", re.compile(r"/(site|dist)-packages/nvidia/nccl/lib/libnccl[^/]*$")),
               ("system package", re.compile(r"^/usr/lib/[a-z0-9_]+-linux-gnu/libnccl[^/]*$")))
# The library's own banner (NCCL's VERSION_STRING, kept whole in the binary: "NCCL version 2.28.9+cuda13.0"; newer
# releases end at the version): a suffix after X.Y.Z, or after "+" anything but cudaN.M, is a development build.
NCCL_BANNER = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+)(?P<suffix>[^+\s]*)(?:\+(?P<local>\S+))?")


def nccl_build(path: str | None) -> str | None:
    if not path:
        return None
    return next((name for name, pattern in NCCL_BUILDS if pattern.search(path)), "a build of its own")


def nccl_dev_suffix(banner: str | None) -> str | None:
    """'a0' of 'NCCL version 2.29.0a0+cuda13.0', '+git4f2e1c' of '2.29.0+git4f2e1c'; '' for a release; None unread."""
    m = NCCL_BANNER.search(banner or "")
    if m is None:
        return None
    local = m["local"] or ""
    return m["suffix"] + ("" if not local or re.fullmatch(r"cuda[\d.]+", local) else "+" + local)


def nccl_affects(advisory: Advisory, ident: dict, machine: str | None, environment: dict | None) -> str | None:
    """Why an NCCL advisory affects the library torch loads in the image (the canary's `ident`), or None: every criterion
    the advisory gives must hold, and a fact not given (no banner, no environment) never makes it affected."""
    why = []
    version = ident.get("version")
    if advisory.nccl_min is not None or advisory.nccl_max is not None:
        if not version:
            return None
        v = version_key(version)
        if (advisory.nccl_min and v < version_key(advisory.nccl_min)) or (advisory.nccl_max and v >= version_key(advisory.nccl_max)):
            return None
        why.append(f"NCCL {version}")
    if advisory.nccl_build is not None:
        build = nccl_build(ident.get("path"))
        if build != advisory.nccl_build:
            return None
        why.append(f"from a {build} ({ident.get('path')})")
    if advisory.machine is not None:
        if (machine or "").strip() != advisory.machine:
            return None
        why.append(f"on {advisory.machine}")
    if advisory.nccl_dev:
        suffix = nccl_dev_suffix(ident.get("banner"))
        if not suffix:
            return None
        why.append(f"a development build ({ident.get('banner')}, {ident.get('path')})")
    if advisory.env_lacks is not None:
        if environment is None:
            return None
        name, _, value = advisory.env_lacks.partition("=")
        if str(environment.get(name, "")) == value:
            return None
        why.append(f"{name}={environment[name]}" if name in environment else f"no {name} in the serving environment")
    return ", ".join(why) or None


def nccl_needs_environment(ident: dict, machine: str | None, advisories=ADVISORIES) -> bool:
    """Whether an NCCL advisory that turns on the serving container's environment matches the library otherwise: only
    then is the compose service read (a broken compose file is test_compose_lint's to report)."""
    libraries = [ident] + ([ident["pynccl"]] if isinstance(ident.get("pynccl"), dict) else [])
    return any(a.check == "test_image_nccl" and a.env_lacks and nccl_affects(replace(a, env_lacks=None), lib, machine, None)
               for a in advisories for lib in libraries)


def judge_nccl_advisories(node: str, ident: dict, machine: str | None, environment: dict | None,
                          advisories=ADVISORIES) -> list[Finding]:
    """Each known-bad NCCL the serving image loads (the advisories judged by test_image_nccl): the library torch's calls
    reach and, when it is another build, the one vLLM's own communicator (pynccl: its tensor-parallel all-reduce) loads."""
    libraries = [("", ident)]
    py = ident.get("pynccl")
    if isinstance(py, dict) and py.get("path") and py.get("build_id") != ident.get("build_id"):
        libraries.append(("vLLM's pynccl loads ", py))
    return [Finding(Code.KNOWN_BAD_VERSION, node, f"{said}{why} [{a.id}: {a.symptom}]", f"not {a.what}", warning=not a.fail,
                    advisory=a.id, advisory_fix=a.fix, source=a.source)
            for said, lib in libraries
            for a in advisories if a.check == "test_image_nccl" and (why := nccl_affects(a, lib, machine, environment))]


def judge_reboot_required(node: str, flag: str) -> list[Finding]:
    """/var/run/reboot-required present: upgrades wait for a reboot (the packages that asked for it are named)."""
    lines = [line.strip() for line in flag.splitlines() if line.strip()]
    if not lines or lines[0] != "present":
        return []
    packages = sorted(set(lines[1:]))
    shown = f" (for {', '.join(packages[:8])}{' ...' if len(packages) > 8 else ''})" if packages else ""
    return [Finding(Code.REBOOT_REQUIRED, node, f"/var/run/reboot-required{shown}", "no reboot pending", warning=True)]


def unheld_driver_packages(packages: list, holds: list[str], blacklist: list[str]) -> list[str]:
    """Installed NVIDIA driver packages (dpkg_query facts) that apt may upgrade unasked: not held, not blacklisted."""
    def blacklisted(name: str) -> bool:
        for pattern in blacklist:
            try:
                if re.match(pattern, name):
                    return True
            except re.error:
                if name.startswith(pattern):
                    return True
        return False

    return sorted(p.package for p in packages if p.installed and not p.held and p.package not in holds and not blacklisted(p.package))


def hold_command(packages: list[str]) -> str:
    """The command that holds the packages (run as root): what the check prints and scripts/hold-driver runs."""
    return "apt-mark hold " + " ".join(shlex.quote(p) for p in packages)


def judge_driver_hold(node: str, unheld: list[str]) -> list[Finding]:
    """NVIDIA driver packages open to unattended upgrades: a warning with the exact command that holds them."""
    if not unheld:
        return []
    a = by_id("unattended-driver-upgrade")
    command = "sudo " + hold_command(unheld)
    return [Finding(Code.DRIVER_NOT_HELD, node, f"{', '.join(unheld)} neither held nor in unattended-upgrades' Package-Blacklist "
                    f"[{a.id}: {a.symptom}]", "the NVIDIA driver packages held", warning=True, hold_command=command,
                    source=a.source)]


@dataclass(frozen=True)
class KernelSign:
    """A kind of kernel-log line: what it means, its pattern, the code it reports and whether that is only a warning.

    `pattern` is matched case-insensitively, here and by the gather's `grep -aiE` (gather/commands.py joins every
    sign's pattern into its filter), so it must read the same as a Python and a POSIX extended regular expression:
    no `\\d`, no `(?:...)`."""

    what: str
    pattern: str
    code: Code
    warning: bool

    @property
    def regex(self) -> re.Pattern:
        return re.compile(self.pattern, re.I)


# The kernel log's signs of trouble since boot, each from the kernel's or the driver's own printk format.
# A failure: the node is not fit to serve until it is power-cycled or rebooted (the fault is in the hardware path or the
# kernel, and the log says it happened on this boot). A warning: the node may serve; the line says what to look at.
KERNEL_SIGNS = (
    KernelSign("GPU Xid error", r"NVRM: Xid", Code.KERNEL_LOG, warning=True),
    # Printed on healthy starts too (vLLM issue 56824): counted, never a failure by itself.
    KernelSign("NV_ERR_NO_MEMORY", r"NV_ERR_NO_MEMORY", Code.KERNEL_LOG, warning=True),
    KernelSign("mlx5 link down", r"mlx5_core.*Link down", Code.KERNEL_LOG, warning=True),
    KernelSign("OOM kill", r"Out of memory: Kill|invoked oom-killer|oom-kill:|Memory cgroup out of memory", Code.KERNEL_LOG,
               warning=True),
    # drivers/pci/pcie/aer.c: "PCIe Bus Error: severity=Uncorrected (Fatal), ..." (6.x: "%s Bus Error"), and the root
    # port's "AER: Uncorrected (Fatal) error message received from 0000:01:00.0" ("error received:" in older kernels).
    KernelSign("PCIe AER fatal error", r"Uncorrected \(Fatal\)", Code.KERNEL_PCIE_FATAL, warning=False),
    # drivers/net/ethernet/mellanox/mlx5/core/main.c: "mlx5_pci_err_detected Device state = 1 pci_status: 1. Enter,
    # pci channel state = 2", "mlx5_pci_slot_reset Device state = 1 pci_status: 0. Enter" (mlx5_core_info).
    KernelSign("mlx5 PCI error recovery", r"mlx5_pci_err_detected|mlx5_pci_slot_reset", Code.KERNEL_NIC_RESET, warning=False),
    # kernel/watchdog.c: "watchdog: BUG: soft lockup - CPU#3 stuck for 26s! [python3:20417]"; kernel/watchdog_perf.c and
    # watchdog_buddy.c: "Watchdog detected hard LOCKUP on cpu 5".
    KernelSign("CPU lockup", r"BUG: soft lockup|detected hard LOCKUP", Code.KERNEL_LOCKUP, warning=False),
    # kernel/hung_task.c: "INFO: task python3:20417 blocked for more than 122 seconds."
    KernelSign("hung task", r"INFO: task .*:[0-9]+ blocked for more than [0-9]+ seconds", Code.KERNEL_HUNG_TASK, warning=True),
    # drivers/thermal/thermal_core.c: "thermal thermal_zone0: acpitz: critical temperature reached" (older kernels
    # add ", shutting down"); drivers/acpi/thermal.c: "Critical temperature reached (105 C), shutting down.";
    # kernel/reboot.c: "HARDWARE PROTECTION shutdown (Temperature too high)".
    KernelSign("critical temperature", r"critical temperature reached|HARDWARE PROTECTION (shutdown|reboot)",
               Code.KERNEL_THERMAL, warning=False),
    # A part running hot but not yet at its trip point. drivers/net/ethernet/mellanox/mlx5/core/events.c: "mlx5_core
    # 0000:01:00.0: temp_warn:170:(pid 0): High temperature on sensors with bit set 0 1" (mlx5_core_warn adds the
    # function, line and pid); arch/x86/kernel/cpu/mce/therm_throt.c: "CPU2: Package temperature is above threshold,
    # cpu clock is throttled (total events = 1)" (an x86 kernel only: on a GB10 the GPU's throttling is read under load
    # by test_gpu_compute, through its clock-event reasons).
    KernelSign("high temperature", r"High temperature on sensors|temperature (is )?above threshold, cpu clock (is )?throttled",
               Code.KERNEL_HOT, warning=True),
)


def judge_kernel_log(node: str, log, shown: int = 3) -> list[Finding]:
    """Every kind of KERNEL_SIGNS line seen since boot: its count and first lines, a failure or a warning as the table says."""
    found = []
    for sign in KERNEL_SIGNS:
        lines = [e.line for e in log.entries if sign.regex.search(e.text)]
        if lines:
            more = f" (and {len(lines) - shown} more)" if len(lines) > shown else ""
            found.append(Finding(sign.code, node, f"{len(lines)} {sign.what} line(s) in the kernel log since boot ({log.source}): "
                                 + " | ".join(lines[:shown]) + more, f"no {sign.what} since boot", warning=sign.warning,
                                 what=sign.what))
    return found


RDMA_ERROR_COUNTERS = ("link_downed", "symbol_error", "port_rcv_errors")


def read_counters(text: str) -> dict[tuple[str, str, str], int]:
    """`path:value` lines of /sys/class/infiniband/DEV/ports/N/counters/NAME -> {(device, port, name): value}."""
    found = {}
    for line in text.splitlines():
        m = re.match(r"^/sys/class/infiniband/([^/]+)/ports/(\d+)/counters/(\w+):\s*(\d+)\s*$", line.strip())
        if m:
            found[(m[1], m[2], m[3])] = int(m[4])
    return found


def judge_rdma_counters(node: str, counters: dict[tuple[str, str, str], int], devices: list[str | None]) -> list[Finding]:
    """Non-zero link_downed, symbol_error or port_rcv_errors on the node's RDMA devices: a warning per port. A link whose
    device the cluster file does not name, or a device without counters, is not checked."""
    found = []
    if None in devices:
        found.append(Finding(Code.UNKNOWN_NEED, node, "a link of the cluster file names no rdma_device",
                             "each link's RDMA device, to read its counters", what="each link's rdma_device",
                             how="add rdma_device to every link in the cluster file (ibdev2netdev lists them)"))
    for device in (d for d in devices if d is not None):
        ports = sorted({p for (d, p, _) in counters if d == device})
        if not ports:
            found.append(Finding(Code.NO_RDMA, f"{node}:{device}", f"no error counters under /sys/class/infiniband/{device}"
                                 "/ports/*/counters", f"{device}'s port counters"))
        for port in ports:
            bad = {n: v for n in RDMA_ERROR_COUNTERS if (v := counters.get((device, port, n), 0))}
            if bad:
                found.append(Finding(Code.RDMA_ERROR_COUNTERS, f"{node}:{device}", f"port {port}: "
                                     + ", ".join(f"{n} {v}" for n, v in bad.items()), "0 link_downed, symbol_error and "
                                     "port_rcv_errors since boot", warning=True, device=device, port=port))
    return found


PCIE_SOURCE = "https://github.com/NVIDIA/dgx-spark-playbooks/pull/108"


def judge_pcie(node: str, functions: list, netdevs: dict[str, str], speed_gts: float | None, width: int | None) -> list[Finding]:
    """Each ConnectX-7 function's negotiated PCIe link (lspci LnkSta) against the profile (expect.pcie_speed_gts /
    pcie_width), or against what the function can do (LnkCap) where the profile sets none. netdevs: PCI address ->
    netdev (ethtool -i's bus-info), to name the port. A function whose capabilities lspci could not read is skipped
    (the test says NOT CHECKED when none could be read)."""
    found = []
    cx7 = [f for f in functions if f.is_connectx7]
    if cx7 and all(f.access_denied for f in cx7):
        return [Finding(Code.COMMAND_FAILED, node, "lspci printed `Capabilities: <access denied>`: it did not run as root",
                        "the LnkCap / LnkSta lines of each ConnectX-7 function", command="sudo lspci -vv -d 15b3:")]
    for f in cx7:
        if f.sta is None:
            continue
        want_speed = speed_gts if speed_gts is not None else (f.cap.speed_gts if f.cap else None)
        want_width = width if width is not None else (f.cap.width if f.cap else None)
        low = []
        if want_speed is not None and (f.sta.speed_gts is None or f.sta.speed_gts < want_speed):
            low.append("speed")
        if want_width is not None and (f.sta.width is None or f.sta.width < want_width):
            low.append("width")
        if not low:
            continue
        expected = (f"Speed {want_speed:g}GT/s, Width x{want_width}" if want_speed is not None and want_width is not None
                    else f"Speed {want_speed:g}GT/s" if want_speed is not None else f"Width x{want_width}")
        basis = "expect.pcie_speed_gts / expect.pcie_width" if (speed_gts, width) != (None, None) else "LnkCap"
        marks = [m for m in (f.sta.speed_mark, f.sta.width_mark) if m and m != "ok"]
        cap = f", LnkCap {f.cap}" if f.cap else ""
        port = f" ({netdevs[f.address]})" if f.address in netdevs else ""
        found.append(Finding(Code.PCIE_DEGRADED, f"{node}:{f.address}",
                             f"{f.address}{port} {f.description.split(': ', 1)[-1]}: LnkSta {f.sta}"
                             f"{' (' + ', '.join(marks) + ')' if marks else ''}{cap} ({' and '.join(low)} below)",
                             f"LnkSta {expected} ({basis})", function=f.address, want=expected, source=PCIE_SOURCE))
    return found
