"""ethtool on the QSFP ports: the mlx5 driver's settings block (layout of ip_ethtool/ethtool-cx4lx-mlx5-*:
tab-indented, link modes continued under their column, Speed/Lanes/Duplex/Auto-negotiation/Port, PHYAD,
Transceiver, Wake-on, Link detected) for the port's speed in the node's state and its veth's real state.
`ethtool -i` on a QSFP port: mlx5_core with the state's firmware and PSID. Any other interface (the management veth)
goes to the real ethtool."""

import os
import sys

from .common import NET, link_up, state

REAL = ("/usr/sbin/ethtool", "/sbin/ethtool")
MODE_INDENT = "\t" + " " * len("Supported link modes:   ")


def link_modes(speed_mbps: int) -> list[str]:
    """What a ConnectX-7 QSFP112 port reports up to the port's speed (100G PAM4 lanes: 200G on 2 lanes)."""
    modes = ["25000baseCR/Full", "50000baseCR2/Full", "100000baseCR4/Full", "100000baseCR/Full", "200000baseCR2/Full"]
    return [m for m in modes if int(m.split("base")[0]) <= max(speed_mbps, 25000)]


def mode_lines(label: str, modes: list[str]) -> str:
    head = f"\t{label} link modes:" + " " * (len("Supported link modes:   ") - len(f"{label} link modes:"))
    return head + ("\n" + MODE_INDENT).join(modes)


def driver_info(s: dict, link: dict) -> str:
    """`ethtool -i` of a ConnectX-7 port as mlx5_core answers it: the firmware with the board's PSID in parentheses."""
    from .ibdev2netdev import PCI

    return "\n".join([
        "driver: mlx5_core", f"version: {os.uname().release}", f"firmware-version: {s['fw_ver']} ({s['board_id']})",
        "expansion-rom-version: ", f"bus-info: {PCI.get(link['rdma_device'], '0000:01:00.0')}", "supports-statistics: yes",
        "supports-test: yes", "supports-eeprom-access: no", "supports-register-dump: no", "supports-priv-flags: yes"])


def ethtool(args: list[str]) -> int:
    names = [a for a in args if not a.startswith("-")]
    if not names:
        print("ethtool: bad command line argument(s)\nFor more information run ethtool -h", file=sys.stderr)
        return 1
    netdev = names[0]
    if not os.path.exists(f"{NET}/{netdev}"):
        print("netlink error: no device matches name (offset 24)\nnetlink error: No such device", file=sys.stderr)
        return 1
    s = state()
    link = s["links"].get(netdev)
    if link is not None and args == ["-i", netdev]:
        print(driver_info(s, link), flush=True)
        return 0
    if link is None or len(args) != 1:  # not a QSFP port, or an option the stand-in does not play: the real tool
        real = next((p for p in REAL if os.path.exists(p)), None)
        if real:
            os.execv(real, [real, *args])
        print(f"Settings for {netdev}:\n\tLink detected: {'yes' if link_up(netdev) else 'no'}")
        return 0
    up = link_up(netdev)
    modes = link_modes(link["speed_mbps"])
    lines = [f"Settings for {netdev}:", "\tSupported ports: [ Backplane ]", mode_lines("Supported", modes),
             "\tSupported pause frame use: Symmetric", "\tSupports auto-negotiation: Yes",
             "\tSupported FEC modes: None\t RS\t BASER", mode_lines("Advertised", modes),
             "\tAdvertised pause frame use: Symmetric", "\tAdvertised auto-negotiation: Yes", "\tAdvertised FEC modes: RS"]
    if up:
        lines += [f"\tSpeed: {link['speed_mbps']}Mb/s", f"\tLanes: {max(1, link['speed_mbps'] // 100000)}", "\tDuplex: Full"]
    else:
        lines += ["\tSpeed: Unknown!", "\tDuplex: Unknown! (255)"]
    lines += ["\tAuto-negotiation: on", f"\tPort: {'Direct Attach Copper' if link.get('cabled', True) else 'Other'}", "\tPHYAD: 0",
              "\tTransceiver: internal"]
    if os.geteuid() == 0:
        lines += ["\tSupports Wake-on: d", "\tWake-on: d"]
    print("\n".join(lines), flush=True)
    if os.geteuid() != 0:
        print("Cannot get wake-on-lan settings: Operation not permitted", file=sys.stderr)
    print(f"\tLink detected: {'yes' if up else 'no'}")
    return 0
