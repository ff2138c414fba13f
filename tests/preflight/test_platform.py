"""Platform hygiene: the kernel command line, BIOS and ConnectX firmware as on rank 0; each ConnectX-7 function's PCIe link
(lspci LnkSta) at the profile's speed and width; no known-bad version
(gb10check/advisories.py); no reboot pending; the NVIDIA driver packages held; a clean kernel log since boot."""

import pytest

from gb10check.checks import platform
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.preflight

PLATFORM = ("kernel", "cmdline", "bios_version", "bios_date", "ethtool_info", "installed_driver", "driver_packages",
            "unattended_upgrades")


def driver_unheld(node) -> list[str]:
    """Installed NVIDIA driver packages neither held nor blacklisted for unattended-upgrades."""
    settings = read(node, "unattended_upgrades")
    return platform.unheld_driver_packages(read(node, "driver_packages"), [], settings.blacklist if settings else [])


def firmware(node) -> dict[str, str | None]:
    """ConnectX firmware per QSFP netdev (ethtool -i); None where the driver reports none."""
    return {link.netdev: next((i.firmware for i in read(node, "ethtool_info", link.netdev)), None) for link in node.spec.links}


def facts_of(node) -> platform.Platform:
    return platform.Platform(kernel=read(node, "kernel"), cmdline=read(node, "cmdline"), bios_version=read(node, "bios_version"),
                             bios_date=read(node, "bios_date"), firmware=firmware(node),
                             driver=read(node, "installed_driver"), driver_unheld=driver_unheld(node))


@reads(*PLATFORM)
def test_versions_same_as_head(follower, head):
    report(platform.judge_versions_same(follower.name, head.name, facts_of(follower), facts_of(head)))


@reads(*PLATFORM)
def test_advisories(node, versions):
    facts = facts_of(node)
    for what, value in platform.manifest(facts).items():
        versions(node.name, what, value)
    report(platform.judge_advisories(node.name, facts))


@reads("reboot_required")
def test_reboot_required(node):
    report(platform.judge_reboot_required(node.name, read(node, "reboot_required")))


@reads("driver_packages", "unattended_upgrades")
def test_driver_packages_held(node):
    report(platform.judge_driver_hold(node.name, driver_unheld(node)))


@reads("kernel_log")
def test_kernel_log(node):
    report(platform.judge_kernel_log(node.name, read(node, "kernel_log")))


def pci_netdevs(node) -> dict[str, str]:
    """PCI address -> QSFP netdev, from ethtool -i's bus-info (lspci does not name netdevs)."""
    return {i.bus_info.lower(): link.netdev for link in node.spec.links for i in read(node, "ethtool_info", link.netdev)
            if i.bus_info}


@reads("lspci", "ethtool_info")
def test_pcie_link(node, cluster):
    report(platform.judge_pcie(node.name, read(node, "lspci"), pci_netdevs(node), cluster.expect.pcie_speed_gts,
                               cluster.expect.pcie_width))
