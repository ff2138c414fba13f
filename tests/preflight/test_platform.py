"""Platform hygiene: the kernel command line, BIOS and ConnectX firmware as on rank 0; each ConnectX-7 function's PCIe link
(lspci LnkSta) at the profile's speed and width; no known-bad version
(gb10check/advisories.py); no reboot pending; the NVIDIA driver packages held; a clean kernel log since boot."""

import pytest

from gb10check import facts, gather
from gb10check.checks import host, platform
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def firmware(node) -> dict[str, str | None]:
    """ConnectX firmware per QSFP netdev (ethtool -i); None where the driver reports none."""
    found = {}
    for link in node.spec.links:
        out = gather.result(node, gather.ethtool_info(link.netdev), sudo=True)  # ethtool is in sbin: not on every user's PATH
        try:
            info = facts.parse("ethtool", out.stdout) if out.rc == 0 else []
        except facts.ParseError:
            info = []
        found[link.netdev] = next((i.firmware for i in info), None)
    return found


def driver_unheld(node) -> list[str] | None:
    """Installed NVIDIA driver packages neither held nor blacklisted for unattended-upgrades; None if dpkg is not there."""
    out = gather.result(node, gather.DRIVER_PACKAGES)
    if out.rc not in (0, 1) or (out.rc == 1 and "no packages found" not in out.stderr):
        return None  # no dpkg (not a Debian-based image), or dpkg-query failed
    packages = gather.parse_or_error("dpkg_query", out.stdout)[0] or []
    conf = gather.result(node, gather.UNATTENDED_UPGRADES)
    blacklist = (gather.parse_or_error("unattended_upgrades", conf.stdout)[0] if conf.rc == 0 else None)
    return platform.unheld_driver_packages(packages, [], blacklist.blacklist if blacklist else [])


def facts_of(node) -> platform.Platform:
    def value(command):
        out = gather.result(node, command)
        return platform.sysfs_value(out.stdout) if out.rc == 0 else None

    return platform.Platform(kernel=value(gather.KERNEL), cmdline=value(gather.CMDLINE), bios_version=value(gather.BIOS_VERSION),
                             bios_date=value(gather.BIOS_DATE), firmware=firmware(node),
                             driver=host.installed_driver(gather.text(node, gather.DRIVER_QUERY)), driver_unheld=driver_unheld(node))


def test_versions_same_as_head(follower, head):
    report(platform.judge_versions_same(follower.name, head.name, facts_of(follower), facts_of(head)))


def test_advisories(node):
    report(platform.judge_advisories(node.name, facts_of(node)))


def test_reboot_required(node):
    report(platform.judge_reboot_required(node.name, gather.output(node, gather.REBOOT_REQUIRED)))


def test_driver_packages_held(node):
    unheld = driver_unheld(node)
    if unheld is None:
        pytest.skip(f"{node.name}: dpkg-query could not list the NVIDIA driver packages (not a Debian-based image?)")
    report(platform.judge_driver_hold(node.name, unheld))


def test_kernel_log(node):
    log = gather.parsed(node, "kernel_log", gather.KERNEL_LOG, sudo=True)
    if log.source == "none":
        pytest.skip(f"{node.name}: neither journalctl -k -b nor dmesg could be read (sudo -n dmesg by hand)")
    report(platform.judge_kernel_log(node.name, log))


def pci_netdevs(node) -> dict[str, str]:
    """PCI address -> QSFP netdev, from ethtool -i's bus-info (lspci does not name netdevs)."""
    found = {}
    for link in node.spec.links:
        out = gather.result(node, gather.ethtool_info(link.netdev), sudo=True)
        info = gather.parse_or_error("ethtool", out.stdout)[0] if out.rc == 0 else None
        found.update({i.bus_info.lower(): link.netdev for i in info or [] if i.bus_info})
    return found


def test_pcie_link(node, cluster):
    out = gather.result(node, gather.LSPCI, sudo=True)
    if out.rc == 127 or "lspci: not found" in out.stderr or "lspci: command not found" in out.stderr:
        pytest.skip(f"{node.name}: lspci is not installed (sudo apt install pciutils)")
    if out.rc == 0 and not out.stdout.strip():
        pytest.skip(f"{node.name}: lspci lists no Mellanox PCI function (see test_rdma_link_up)")
    functions = gather.parsed(node, "lspci", gather.LSPCI, sudo=True)
    if not any(f.is_connectx7 for f in functions):
        pytest.skip(f"{node.name}: no ConnectX-7 (MT2910, 15b3:1021) among the Mellanox PCI functions")
    report(platform.judge_pcie(node.name, functions, pci_netdevs(node), cluster.expect.pcie_speed_gts, cluster.expect.pcie_width))
