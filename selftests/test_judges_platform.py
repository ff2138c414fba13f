"""Judges of platform hygiene (checks/platform.py) on real-format inputs written here (this machine has no GB10:
no ConnectX firmware, no DMI table, no Xid): versions as on rank 0, the advisory table (gb10check/advisories.py),
a pending reboot, driver packages open to unattended upgrades, the kernel log, RDMA error counters; and the
advisory table's own self-test (a source URL each, and a judge test here naming each by id)."""

import re
import shlex
from pathlib import Path

import pytest

from gb10check.advisories import ADVISORIES, by_id
from gb10check.checks import platform
from gb10check.checks.platform import Platform
from gb10check.facts import parse
from gb10check.remedies import Code

# `ethtool -i enp1s0f0np0` on a ConnectX-7 port (mlx5_core's key order; firmware with its PSID in parentheses).
ETHTOOL_I = """driver: mlx5_core
version: 6.17.0-1014-nvidia
firmware-version: {fw} (NVD0000000087)
expansion-rom-version: 
bus-info: 0000:01:00.0
supports-statistics: yes
supports-test: yes
supports-eeprom-access: no
supports-register-dump: no
supports-priv-flags: yes
"""
CMDLINE = "BOOT_IMAGE=/boot/vmlinuz-{k} root=UUID={uuid} ro quiet splash{extra}"


def node_facts(kernel="6.17.0-1014-nvidia", extra="", uuid="1b2c", bios_date="05/12/2026", fw="28.45.4028", **more) -> Platform:
    info = parse("ethtool", ETHTOOL_I.format(fw=fw))
    return Platform(kernel=kernel, cmdline=CMDLINE.format(k=kernel, uuid=uuid, extra=extra), bios_version="5.36_0ACUM012",
                    bios_date=bios_date, firmware={"enp1s0f0np0": info[0].firmware}, driver="580.173.02", **more)


def codes(findings):
    return [(f.code, f.where, f.warning) for f in findings]


# ---- versions as on rank 0 ---------------------------------------------------------------------

def test_firmware_and_cmdline_differ_from_head():
    head, mine = node_facts(), node_facts(extra=" kho=off", fw="28.44.1036", uuid="9f00")
    found = platform.judge_versions_same("pgx-32", "pgx-30", mine, head)
    assert codes(found) == [(Code.VERSION_DIFFERS, "pgx-32", False)] * 2
    assert found[0].text.startswith("[version-differs] pgx-32: saw kernel command line 'ro quiet splash kho=off'; "
                                    "expected 'ro quiet splash' as on pgx-30\n  fix: make the kernel command line of pgx-32")
    assert "saw ConnectX firmware of enp1s0f0np0 '28.44.1036'; expected '28.45.4028' as on pgx-30" in found[1].text
    # root=UUID differs between identical machines and is not compared; nor is what one node does not report.
    assert platform.judge_versions_same("pgx-32", "pgx-30", node_facts(uuid="9f00"), head) == []
    assert platform.judge_versions_same("pgx-32", "pgx-30", Platform(), head) == []


def test_bios_differs_from_head():
    found = platform.judge_versions_same("pgx-32", "pgx-30", node_facts(bios_date="02/03/2026"), node_facts())
    assert [f.seen for f in found] == ["BIOS date '02/03/2026'"]


# ---- advisories ---------------------------------------------------------------------------------

def test_kernel_7_without_kho_off_fails():
    a = by_id("kernel-7.0-kho")
    [f] = platform.judge_advisories("pgx-30", node_facts(kernel="7.0.0-1019-nvidia"))
    assert codes([f]) == [(Code.KNOWN_BAD_VERSION, "pgx-30", False)]
    assert f.text.startswith("[known-bad-version] pgx-30: saw kernel 7.0.0-1019-nvidia, booted without kho=off "
                             "[kernel-7.0-kho: NCCL init fails with 'Call to ibv_reg_mr_iova2 failed")
    assert f.text.endswith(f"fix: {a.fix} (source: {a.source})")
    assert platform.judge_advisories("pgx-30", node_facts(kernel="7.0.0-1019-nvidia", extra=" kho=off")) == []
    assert platform.judge_advisories("pgx-30", node_facts(kernel="6.17.0-1014-nvidia")) == []


def test_bios_before_april_2026_warns():
    [f] = platform.judge_advisories("pgx-30", node_facts(bios_date="01/20/2026"))
    assert codes([f]) == [(Code.KNOWN_BAD_VERSION, "pgx-30", True)]
    assert "saw BIOS 5.36_0ACUM012 dated 01/20/2026 [bios-cx7-gen5-x2: the second ConnectX-7 PCIe controller runs at Gen5 x2" in f.text
    assert by_id("bios-cx7-gen5-x2").source in f.text
    assert platform.judge_advisories("pgx-30", node_facts(bios_date="04/01/2026")) == []
    assert platform.judge_advisories("pgx-30", node_facts(bios_date=None)) == []  # no DMI table: not affected, not guessed


def test_driver_range_advisory_is_judged():
    # No entry of the table uses a driver range yet; the matcher is proven on one made here.
    from gb10check.advisories import Advisory

    made = Advisory(id="t", what="drivers 580.0 to 580.126", symptom="s", fix="f", source="https://example.invalid",
                    driver_min="580", driver_max="580.126.09")
    assert platform.affects(made, Platform(driver="580.95.05")) == "driver 580.95.05"
    assert platform.affects(made, Platform(driver="580.126.09")) is None
    assert platform.affects(made, Platform(driver=None)) is None


# ---- upgrades -----------------------------------------------------------------------------------

DPKG = """nvidia-driver-580-open install ok installed
nvidia-driver-570-open deinstall ok config-files
libnvidia-compute-580 install ok installed
nvidia-driver-535 unknown ok not-installed
"""
UNATTENDED = """// Automatically upgrade packages from these (origin:archive) pairs
Unattended-Upgrade::Allowed-Origins {
        "${distro_id}:${distro_codename}";
        "${distro_id}:${distro_codename}-security";
};

// Python regular expressions, matching packages to exclude from upgrading
Unattended-Upgrade::Package-Blacklist {
    // "vim";
%s
};
"""


def unattended(*entries):
    return parse("unattended_upgrades", UNATTENDED % "\n".join(f'    "{e}";' for e in entries))


def test_driver_packages_not_held_warn_with_the_hold_command():
    a = by_id("unattended-driver-upgrade")
    unheld = platform.unheld_driver_packages(parse("dpkg_query", DPKG), [], unattended().blacklist)
    assert unheld == ["libnvidia-compute-580", "nvidia-driver-580-open"]
    [f] = platform.judge_driver_hold("pgx-32", unheld)
    assert codes([f]) == [(Code.DRIVER_NOT_HELD, "pgx-32", True)]
    assert f.text.startswith("[driver-not-held] pgx-32: saw libnvidia-compute-580, nvidia-driver-580-open neither held nor in "
                             "unattended-upgrades' Package-Blacklist [unattended-driver-upgrade: ")
    assert ("fix: scripts/hold-driver --node pgx-32 (shows, then holds them; --blacklist also keeps them out of "
            "unattended-upgrades through /etc/apt/apt.conf.d/51gb10check-hold-nvidia), or by hand on pgx-32: sudo apt-mark "
            "hold libnvidia-compute-580 nvidia-driver-580-open; upgrade the driver") in f.text
    assert a.source in f.text and a.check == "test_driver_packages_held"


def test_held_or_blacklisted_driver_packages_pass():
    packages = parse("dpkg_query", DPKG.replace("libnvidia-compute-580 install", "libnvidia-compute-580 hold"))
    assert platform.unheld_driver_packages(packages, ["nvidia-driver-580-open"], []) == []
    assert platform.unheld_driver_packages(parse("dpkg_query", DPKG), [], unattended("nvidia-", "libnvidia-").blacklist) == []
    assert unattended("nvidia-").blacklist == ["nvidia-"]  # the commented "vim" is not an entry
    assert platform.judge_driver_hold("pgx-32", []) == []


def test_reboot_required_warns_with_the_packages():
    [f] = platform.judge_reboot_required("pgx-30", "present\nlinux-image-6.17.0-1014-nvidia\nnvidia-dkms-580-open\n")
    assert codes([f]) == [(Code.REBOOT_REQUIRED, "pgx-30", True)]
    assert f.text.startswith("[reboot-required] pgx-30: saw /var/run/reboot-required (for linux-image-6.17.0-1014-nvidia, "
                             "nvidia-dkms-580-open); expected no reboot pending\n  fix: reboot pgx-30 before deploying")
    assert platform.judge_reboot_required("pgx-30", "absent\n") == []


# ---- kernel log ---------------------------------------------------------------------------------

# journalctl -k -b -o short-monotonic, as the gather filters it (our note first), in the kernel's own message formats.
KERNEL_LOG = """-- source: journalctl -k -b --
[ 4021.118204] spark-1 kernel: NVRM: Xid (PCI:000f:01:00): 31, pid=20417, name=python3, channel 0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_3a400000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ
[ 4021.119730] spark-1 kernel: NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) returned from _memdescAllocInternal
[ 5210.402117] spark-1 kernel: mlx5_core 0000:01:00.0 enp1s0f0np0: Link down
[ 5213.990451] spark-1 kernel: mlx5_core 0000:01:00.0 enp1s0f0np0: Link up
[ 7310.007313] spark-1 kernel: python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0
[ 7310.008544] spark-1 kernel: Out of memory: Killed process 20417 (python3) total-vm:131843200kB, anon-rss:118112320kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:231244kB oom_score_adj:0
"""


def test_kernel_log_signs_warn_with_their_lines():
    log = parse("kernel_log", KERNEL_LOG)
    assert log.source == "journalctl -k -b" and len(log.entries) == 6 and log.entries[2].since_boot_s == 5210.402117
    found = platform.judge_kernel_log("pgx-30", log)
    assert codes(found) == [(Code.KERNEL_LOG, "pgx-30", True)] * 4
    assert [f.params["what"] for f in found] == ["GPU Xid error", "NV_ERR_NO_MEMORY", "mlx5 link down", "OOM kill"]
    assert found[0].text.startswith("[kernel-log] pgx-30: saw 1 GPU Xid error line(s) in the kernel log since boot "
                                    "(journalctl -k -b): [ 4021.118204] spark-1 kernel: NVRM: Xid (PCI:000f:01:00): 31,")
    assert "2 OOM kill line(s)" in found[3].text and "fix: read the lines (OOM kill) in sudo journalctl -k -b on pgx-30" in found[3].text


@pytest.mark.parametrize("line", [
    "[ 5210.402117] mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",  # dmesg
    "[Mon Nov 30 21:02:11 2026] mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",  # dmesg -T
    "kern  :info  : [ 5210.402117] mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",  # dmesg -x
    "Nov 30 21:02:11 spark-1 kernel: mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",  # journalctl -k
    "2026-11-30T21:02:11+0000 spark-1 kernel: mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",  # journalctl -o short-iso
    "6,1501,5210402117,-;mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",  # /dev/kmsg
])
def test_kernel_log_forms(line):
    log = parse("kernel_log", f"-- source: dmesg --\n{line}\n")
    assert [e.text for e in log.entries] == ["mlx5_core 0000:01:00.0 enp1s0f0np0: Link down"]
    assert codes(platform.judge_kernel_log("pgx-30", log)) == [(Code.KERNEL_LOG, "pgx-30", True)]


def test_clean_kernel_log_passes():
    log = parse("kernel_log", "-- source: dmesg --\n")
    assert log.entries == [] and platform.judge_kernel_log("pgx-30", log) == []


# Lines written from the kernel's and drivers' printk formats (the source of each beside its sign in checks/platform.py),
# as dmesg prints them on a GB10 (ConnectX-7 at 0000:01:00 and 0002:01:00 behind root ports 0000:00:00.0, 0002:00:00.0).
SIGN_LINES = [
    ("[ 8812.402661] pcieport 0002:00:00.0: AER: Uncorrected (Fatal) error message received from 0002:01:00.0",
     Code.KERNEL_PCIE_FATAL, False),
    ("[ 8812.402702] mlx5_core 0002:01:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)",
     Code.KERNEL_PCIE_FATAL, False),
    ("[ 8812.403190] mlx5_core 0002:01:00.0: mlx5_pci_err_detected Device state = 1 pci_status: 1. Enter, pci channel state = 2",
     Code.KERNEL_NIC_RESET, False),
    ("[ 8813.517734] mlx5_core 0002:01:00.0: mlx5_pci_slot_reset Device state = 2 pci_status: 0. Enter", Code.KERNEL_NIC_RESET, False),
    ("[ 6120.884512] watchdog: BUG: soft lockup - CPU#7 stuck for 26s! [python3:20417]", Code.KERNEL_LOCKUP, False),
    ("[ 6188.002140] Watchdog detected hard LOCKUP on cpu 5", Code.KERNEL_LOCKUP, False),
    ("[ 6242.771080] INFO: task nvidia-smi:21877 blocked for more than 122 seconds.", Code.KERNEL_HUNG_TASK, True),
    ("[ 9301.118007] thermal thermal_zone0: acpitz: critical temperature reached", Code.KERNEL_THERMAL, False),
    ("[ 9301.118050] reboot: HARDWARE PROTECTION shutdown (Temperature too high)", Code.KERNEL_THERMAL, False),
    ("[ 9240.530211] mlx5_core 0000:01:00.0: temp_warn:170:(pid 0): High temperature on sensors with bit set 0 1",
     Code.KERNEL_HOT, True),
    ("[ 9240.600001] CPU2: Package temperature is above threshold, cpu clock is throttled (total events = 1)", Code.KERNEL_HOT, True),
    ("[ 4021.119730] NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) returned from "
     "_memdescAllocInternal", Code.KERNEL_LOG, True),
]


@pytest.mark.parametrize("line,code,warning", SIGN_LINES, ids=[f"{c.value}-{i}" for i, (_, c, _) in enumerate(SIGN_LINES)])
def test_kernel_sign_fails_or_warns_with_its_fix(line, code, warning):
    log = parse("kernel_log", f"-- source: dmesg --\n{line}\n")
    [f] = platform.judge_kernel_log("pgx-32", log)
    assert (f.code, f.where, f.warning) == (code, "pgx-32", warning)
    assert f.text.startswith(f"[{code.value}] pgx-32: saw 1 {f.params['what']} line(s) in the kernel log since boot (dmesg): {line}")
    kind = "A warning, not a failure" if warning else "A failure, not a warning"
    assert code is Code.KERNEL_LOG or kind in f.text  # each new remedy says which it is, and why


# Lines the signs must not take: corrected and non-fatal AER, a link coming back, the hung-task footer, a thermal
# zone's trip points as probed at boot, a recovered mlx5 health poll.
NEAR_MISSES = [
    "[  412.000131] mlx5_core 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
    "[  412.000190] pcieport 0000:00:00.0: AER: Uncorrected (Non-Fatal) error message received from 0000:01:00.0",
    "[ 5213.990451] mlx5_core 0000:01:00.0 enp1s0f0np0: Link up",
    '[ 6242.771140] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
    "[    3.120004] thermal LNXTHERM:00: registered as thermal_zone0",
    "[   14.212001] mlx5_core 0002:01:00.0: mlx5_pcie_event:301:(pid 1234): PCIe slot advertised sufficient power (27W).",
]


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_kernel_signs_leave_near_misses(line):
    assert platform.judge_kernel_log("pgx-32", parse("kernel_log", f"-- source: dmesg --\n{line}\n")) == []


def test_gather_filter_keeps_every_sign_line_and_drops_the_rest():
    """The gather's real `grep -aiE` (gather/commands.py, built from the judge's table) passes each sign's line and none
    of the near misses: a sign the filter drops would never reach the judge."""
    import subprocess

    from gb10check.gather import commands

    text = "\n".join([line for line, _, _ in SIGN_LINES] + NEAR_MISSES) + "\n"
    out = subprocess.run(["grep", "-aiE", commands.KERNEL_LOG_SIGNS], input=text, capture_output=True, text=True, timeout=10)
    assert out.stderr == "" and out.stdout.splitlines() == [line for line, _, _ in SIGN_LINES]
    for part in (commands.KERNEL_LOG_FAILING, commands.KERNEL_LOG_WARNING):
        assert f"grep -aiE {shlex.quote(part)} | tail -n 300" in commands.KERNEL_LOG


def test_gather_keeps_a_fatal_line_under_a_flood_of_warnings(tmp_path):
    """The gather's own command, run by a real sh on a dmesg that prints one fatal AER line and then 5000
    NV_ERR_NO_MEMORY lines: the fatal line is kept (and judged a failure), the warnings cut to their last 300."""
    import subprocess

    from gb10check.gather import commands

    fatal = SIGN_LINES[1][0]
    flood = "".join(f"[ {5000 + i}.000000] NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory [NV_ERR_NO_MEMORY] "
                    "(0x00000051) returned from _memdescAllocInternal\n" for i in range(5000))
    dmesg = f"#!/bin/sh\ncat <<'LOG'\n{fatal}\n{flood}LOG\n"
    bin_dir = tmp_path
    bin_dir.joinpath("dmesg").write_text(dmesg)
    bin_dir.joinpath("dmesg").chmod(0o755)
    bin_dir.joinpath("journalctl").write_text("#!/bin/sh\nexit 1\n")
    bin_dir.joinpath("journalctl").chmod(0o755)
    out = subprocess.run(["sh", "-c", commands.KERNEL_LOG], capture_output=True, text=True, timeout=30,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    log = parse("kernel_log", out.stdout)
    assert log.source == "dmesg" and len(log.entries) == 301
    found = platform.judge_kernel_log("pgx-32", log)
    assert [(f.code, f.warning) for f in found] == [(Code.KERNEL_LOG, True), (Code.KERNEL_PCIE_FATAL, False)]
    assert "saw 300 NV_ERR_NO_MEMORY line(s)" in found[0].text and fatal in found[1].text


def test_nv_err_no_memory_stays_a_counted_warning():
    """NV_ERR_NO_MEMORY is printed on healthy starts too (vLLM issue 56824): however many, a warning that counts them."""
    lines = [f"[ {4021.119730 + i:.6f}] NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory [NV_ERR_NO_MEMORY] "
             "(0x00000051) returned from _memdescAllocInternal" for i in range(7)]
    [f] = platform.judge_kernel_log("pgx-32", parse("kernel_log", "-- source: dmesg --\n" + "\n".join(lines) + "\n"))
    assert (f.code, f.warning, f.params["what"]) == (Code.KERNEL_LOG, True, "NV_ERR_NO_MEMORY")
    assert "saw 7 NV_ERR_NO_MEMORY line(s)" in f.text and f.text.count("NV_ERR_NO_MEMORY] (0x00000051)") == 3
    assert "(and 4 more)" in f.text


def test_kernel_signs_patterns_read_the_same_in_grep():
    """Every sign's pattern is also a POSIX extended regular expression (the gather greps with it): no Perl-only syntax."""
    for sign in platform.KERNEL_SIGNS:
        assert not re.search(r"\\[dDsSwWbB]|\(\?", sign.pattern), sign


# ---- RDMA error counters ------------------------------------------------------------------------

COUNTERS = """/sys/class/infiniband/rocep1s0f0/ports/1/counters/link_downed:2
/sys/class/infiniband/rocep1s0f0/ports/1/counters/symbol_error:0
/sys/class/infiniband/rocep1s0f0/ports/1/counters/port_rcv_errors:17
/sys/class/infiniband/roceP2p1s0f0/ports/1/counters/link_downed:0
/sys/class/infiniband/roceP2p1s0f0/ports/1/counters/symbol_error:0
/sys/class/infiniband/roceP2p1s0f0/ports/1/counters/port_rcv_errors:0
"""


def test_rdma_error_counters_warn():
    counters = platform.read_counters(COUNTERS)
    [f] = platform.judge_rdma_counters("pgx-30", counters, ["rocep1s0f0", "roceP2p1s0f0"])
    assert codes([f]) == [(Code.RDMA_ERROR_COUNTERS, "pgx-30:rocep1s0f0", True)]
    assert f.text.startswith("[rdma-error-counters] pgx-30:rocep1s0f0: saw port 1: link_downed 2, port_rcv_errors 17; expected 0")
    assert platform.judge_rdma_counters("pgx-30", platform.read_counters(COUNTERS.replace(":2\n", ":0\n").replace(":17", ":0")),
                                        ["rocep1s0f0"]) == []


# ---- NCCL advisories, on the library the serving image's torch loads ------------------------------

def h200_nccl(run: str) -> dict:
    """Our H200's canary JSON for a run of selftests/captures/raw/gpu_canary/nccl-swap/, with the banner that run's own
    NCCL_DEBUG=INFO all_reduce printed (the library's VERSION_STRING; canaries of that day did not read it yet)."""
    import json

    from .conftest import read_capture

    ident = json.loads(read_capture(f"ours/raw/gpu_canary/nccl-swap/h200-nccl-{run}.json"))
    banner = re.search(r"NCCL version \S+", read_capture(f"ours/raw/gpu_canary/nccl-swap/h200-nccl-{run}-allreduce.txt"))[0]
    return {**ident, "banner": banner}


PIP, SYSTEM = "pip", "ld-preload-system"  # the wheel's 2.28.9; the system's libnccl.so.2.28.3 in /usr/lib/x86_64-linux-gnu


def test_real_banners_and_paths_name_the_build():
    pip, system = h200_nccl(PIP), h200_nccl(SYSTEM)
    assert (pip["banner"], platform.nccl_build(pip["path"])) == ("NCCL version 2.28.9+cuda13.0", "pip wheel")
    assert (system["banner"], platform.nccl_build(system["path"])) == ("NCCL version 2.28.3+cuda13.0", "system package")
    assert platform.nccl_dev_suffix(pip["banner"]) == "" and platform.nccl_dev_suffix(system["banner"]) == ""
    assert platform.nccl_build("/opt/nccl/build/lib/libnccl.so.2") == "a build of its own" and platform.nccl_build(None) is None


def test_nccl_wedge_advisory_fails_the_aarch64_pip_wheel_only():
    a = by_id("nccl-aarch64-proxy-wedge")
    pip = h200_nccl(PIP)
    [f] = platform.judge_nccl_advisories("pgx-32", pip, "aarch64", None)
    assert (f.code, f.warning, f.params["advisory"]) == (Code.KNOWN_BAD_VERSION, False, a.id)
    assert f.text.startswith("[known-bad-version] pgx-32: saw NCCL 2.28.9, from a pip wheel (/opt/torch/.venv/lib/python3.12/"
                             "site-packages/nvidia/nccl/lib/libnccl.so.2), on aarch64 [nccl-aarch64-proxy-wedge: a TP=2 pair "
                             "wedges after 20-26 minutes")
    assert "fix: make torch in the image load NCCL 2.29.3 or later" in f.text and a.source in f.text
    assert platform.judge_nccl_advisories("h200", pip, "x86_64", None) == []  # the H200 itself: not aarch64
    # the DGX OS build of the same release did not wedge: a system package is not the wheel
    assert platform.judge_nccl_advisories("pgx-32", {**h200_nccl(SYSTEM), "version": "2.28.9"}, "aarch64", None) == []
    assert platform.judge_nccl_advisories("pgx-32", {**pip, "version": "2.29.3"}, "aarch64", None) == []  # the fix
    assert platform.judge_nccl_advisories("pgx-32", {**pip, "version": "2.29.2"}, "aarch64", None)[0].params["advisory"] == a.id
    # a fact not given never makes it affected, nor passes as looked at by this row: no version, no path, no machine
    assert platform.judge_nccl_advisories("pgx-32", {**pip, "version": None}, "aarch64", None) == []
    assert platform.judge_nccl_advisories("pgx-32", {**pip, "path": None}, "aarch64", None) == []
    assert platform.judge_nccl_advisories("pgx-32", pip, None, None) == []


def test_nccl_advisories_judge_the_library_vllms_pynccl_loads_too():
    """Our H200 run with VLLM_NCCL_SO_PATH at the system library: torch on the wheel's 2.28.9, pynccl on 2.28.3. On an
    aarch64 node with the paths swapped (pynccl on a wheel), the wedge row names pynccl's library."""
    import json

    from .conftest import read_capture

    split = json.loads(read_capture("ours/raw/gpu_canary/nccl-swap/h200-nccl-vllm-so-path-system.json"))
    assert (split["version"], split["pynccl"]["version"]) == ("2.28.9", "2.28.3")
    [f] = platform.judge_nccl_advisories("pgx-32", split, "aarch64", None)  # torch's wheel; pynccl's system library is fine
    assert f.params["advisory"] == "nccl-aarch64-proxy-wedge" and f.text.startswith("[known-bad-version] pgx-32: saw NCCL 2.28.9")
    swapped = {**split["pynccl"], "pynccl": {**split, "pynccl": None}}  # torch on the system library, pynccl on the wheel
    [f] = platform.judge_nccl_advisories("pgx-32", swapped, "aarch64", None)
    assert f.text.startswith("[known-bad-version] pgx-32: saw vLLM's pynccl loads NCCL 2.28.9, from a pip wheel")


def wheel_nccl(version: str) -> dict:
    """The canary's JSON in a CUDA build of torch (2.14.1+cu130, on a machine without a GPU) over the real pip wheel
    nvidia-nccl-cu13 of that version: selftests/captures/raw/gpu_canary/nccl-wheels/."""
    import json

    from .conftest import read_capture

    return json.loads(read_capture(f"ours/raw/gpu_canary/nccl-wheels/cpu-host-torch-2.14.1-nccl-{version}.json"))


def test_real_wheels_2304_and_2307_are_read_as_loaded():
    """torch 2.14.1 was built against 2.30.7 and says so; with the 2.30.4 wheel installed over its own, the library it
    loads, its banner and vLLM's pynccl all say 2.30.4."""
    old, new = wheel_nccl("2.30.4"), wheel_nccl("2.30.7")
    assert (old["torch_nccl"], old["version"], old["banner"]) == ("2.30.7", "2.30.4", "NCCL version 2.30.4+cuda13.2")
    assert old["pynccl"]["version"] == "2.30.4" and old["pynccl"]["build_id"] == old["build_id"]
    assert (new["version"], new["banner"]) == ("2.30.7", "NCCL version 2.30.7+cuda13.3")
    assert platform.nccl_build(old["path"]) == "pip wheel" and platform.nccl_dev_suffix(old["banner"]) == ""
    for machine in ("x86_64", "aarch64"):  # 2.30.7 matches no row, with or without the variable
        assert platform.judge_nccl_advisories("pgx-32", new, machine, {}) == []
        assert not platform.nccl_needs_environment(new, machine)


def test_nccl_2304_needs_nvls_off_in_the_serving_environment():
    a = by_id("nccl-2.30.4-nvls")
    ident = wheel_nccl("2.30.4")
    assert platform.nccl_needs_environment(ident, "aarch64") and not platform.nccl_needs_environment(h200_nccl(PIP), "aarch64")
    [f] = platform.judge_nccl_advisories("pgx-32", ident, "aarch64", {"NCCL_DEBUG": "WARN"})
    assert (f.warning, f.params["advisory"]) == (False, a.id)
    assert "saw NCCL 2.30.4, no NCCL_NVLS_ENABLE in the serving environment [nccl-2.30.4-nvls:" in f.text
    assert "NCCL_NVLS_ENABLE=1" in platform.judge_nccl_advisories("pgx-32", ident, "aarch64", {"NCCL_NVLS_ENABLE": "1"})[0].text
    assert platform.judge_nccl_advisories("pgx-32", ident, "aarch64", {"NCCL_NVLS_ENABLE": "0"}) == []
    assert platform.judge_nccl_advisories("pgx-32", {**ident, "version": "2.30.5"}, "aarch64", {}) == []


def test_nccl_development_build_warns_from_its_banner():
    a = by_id("nccl-dev-build")
    pip = h200_nccl(PIP)
    for banner, suffix in (("NCCL version 2.29.0a0+cuda13.0", "a0"), ("NCCL version 2.29.0+git4f2e1c0", "+git4f2e1c0"),
                           ("NCCL version 2.29.0-dev+cuda13.0", "-dev")):
        assert platform.nccl_dev_suffix(banner) == suffix
        [f] = platform.judge_nccl_advisories("h200", {**pip, "version": "2.29.0", "banner": banner}, "x86_64", None)
        assert (f.warning, f.params["advisory"]) == (True, a.id) and f"a development build ({banner}, " in f.text
    assert platform.nccl_dev_suffix("NCCL version 2.30.4") == ""  # newer releases end at the version
    for banner in (None, "", "garbled"):  # no banner read: not judged a development build
        assert platform.nccl_dev_suffix(banner) is None
        assert platform.judge_nccl_advisories("h200", {**pip, "banner": banner}, "x86_64", None) == []


def test_canary_reads_the_banner_from_the_library_file(tmp_path):
    """The canary's reader on files holding, NUL-separated and in their order, the `NCCL version` strings `strings`
    found in our H200's two real libraries (the system's first string is another, '... compiled with CUDA 13.0')."""
    import json

    from gb10check.canary.nccl import version_banner

    from .conftest import read_capture

    found = {}
    for line in read_capture("ours/raw/gpu_canary/nccl-banner/h200-strings-nccl-version.txt").splitlines():
        if line.startswith("== "):
            path = line[3:]
        else:
            found.setdefault(path, []).append(line)
    on_h200 = [json.loads(line) for line in read_capture("ours/raw/gpu_canary/nccl-banner/h200-version-banner.jsonl").splitlines()]
    assert [r["banner"] for r in on_h200] == ["NCCL version 2.28.3+cuda13.0", "NCCL version 2.28.9+cuda13.0"]
    for i, record in enumerate(on_h200):
        lib = tmp_path / f"libnccl-{i}.so.2"
        lib.write_bytes(b"\x7fELF" + b"\0" * 60 + b"\0".join(s.encode() for s in found[record["path"]]) + b"\0tail")
        assert version_banner(str(lib)) == record["banner"]
        assert platform.nccl_dev_suffix(record["banner"]) == ""
    assert found[on_h200[0]["path"]][0] == "NCCL version 2.28.3 compiled with CUDA 13.0"  # what a first-match reader took
    lib.write_bytes(b"\x7fELF" + b"\0" * 60 + b"NCCL version mismatch with remote peer %s\0")
    assert version_banner(str(lib)) is None


# ---- the advisory table itself -------------------------------------------------------------------

def test_every_advisory_has_a_source_and_a_judge_test():
    text = "".join(p.read_text() for p in sorted(Path(__file__).parent.glob("test_judges*.py")))
    assert len({a.id for a in ADVISORIES}) == len(ADVISORIES), "advisory ids repeat"
    for a in ADVISORIES:
        assert re.fullmatch(r"https://\S+", a.source), f"{a.id}: source is not a URL: {a.source!r}"
        assert a.what and a.symptom and a.fix, a.id
        assert f'by_id("{a.id}")' in text, f"{a.id}: no judge test names it (by_id(\"{a.id}\"))"
        criteria = [a.kernel, a.cmdline_lacks, a.bios_before, a.driver_min, a.driver_max, a.driver_unheld or None,
                    a.nccl_min, a.nccl_max, a.nccl_build, a.nccl_dev or None, a.env_lacks, a.toolkit_min, a.toolkit_max]
        assert any(c is not None for c in criteria), f"{a.id}: affects no version"
