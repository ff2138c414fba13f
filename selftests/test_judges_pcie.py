"""PCIe link of each ConnectX-7 function (facts/lspci.py, checks/platform.judge_pcie) on inputs written here in lspci's own
forms (no GB10 here): pciutils 3.7+ with `(ok)` / `(downgraded)` after LnkSta's speed and width (Ubuntu 24.04's 3.10, the
layout of public GB10 reports: `LnkCap: Speed 32GT/s, Width x4  LnkSta: Speed 32GT/s, Width x2 (downgraded)` on an
ASUS GX10's second controller, a DGX Spark's four functions all Gen5 x4), older pciutils without the marks and with the
status flags on LnkSta's own line, no domain and no -nn, `-s BDF` of one function, and lspci without root."""

from gb10check.checks import platform
from gb10check.facts import parse
from gb10check.remedies import Code

# `sudo lspci -D -nn -vv -d 15b3:` on a GB10 (pciutils 3.10), one function, trimmed to the Express capability.
FUNCTION = """{addr} Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]
\tSubsystem: Mellanox Technologies Device [15b3:0023]
\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tLatency: 0, Cache Line Size: 64 bytes
\tInterrupt: pin A routed to IRQ 255
\tCapabilities: [60] Express (v2) Endpoint, IntMsgNum 0
\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited
\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 0W
\t\tDevCtl:\tCorrErr- NonFatalErr+ FatalErr+ UnsupReq+
\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-
\t\t\tMaxPayload 256 bytes, MaxReadReq 4096 bytes
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x4, ASPM not supported
\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+
\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, LnkDisable- CommClk+
\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-
\t\tLnkSta:\tSpeed {speed}, Width {width}
\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-
\t\tLnkCap2: Supported Link Speeds: 2.5-32GT/s, Crosslink- Retimer+ 2Retimers+ DRS-
\t\tLnkCtl2: Target Link Speed: 32GT/s, EnterCompliance- SpeedDis-
\t\t\t Transmit Margin: Normal Operating Range, EnterModifiedCompliance- ComplianceSOS-
\t\tLnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete+ EqualizationPhase1+
\t\t\t EqualizationPhase2+ EqualizationPhase3+ LinkEqualizationRequest-
\tCapabilities: [48] Vital Product Data
\t\tEnd
\tKernel driver in use: mlx5_core
\tKernel modules: mlx5_core

"""
OK = ("32GT/s (ok)", "x4 (ok)")
GX10 = {"0000:01:00.0": OK, "0000:01:00.1": OK, "0002:01:00.0": ("32GT/s (ok)", "x2 (downgraded)"),
        "0002:01:00.1": ("32GT/s (ok)", "x2 (downgraded)")}
NETDEVS = {"0000:01:00.0": "enp1s0f0np0", "0002:01:00.0": "enP2p1s0f0np0"}  # ethtool -i's bus-info of the cabled links

# pciutils before 3.7 (no comparison marks), flags on LnkSta's own line, no domain, no -nn: `lspci -vv -s 01:00.0`.
OLD = """01:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]
\tSubsystem: Mellanox Technologies Device 0023
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x4, ASPM not supported, Exit Latency L0s unlimited, L1 unlimited
\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+
\t\tLnkSta:\tSpeed 16GT/s, Width x4, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-
\t\tLnkCap2: Supported Link Speeds: 2.5-32GT/s, Crosslink- Retimer+ 2Retimers+ DRS-
"""

# lspci -vv as the SSH user: no capability blocks.
DENIED = """0000:01:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]
\tSubsystem: Mellanox Technologies Device 0023
\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+
\tCapabilities: <access denied>
\tKernel driver in use: mlx5_core
\tKernel modules: mlx5_core
"""


def lspci(links: dict) -> str:
    return "".join(FUNCTION.format(addr=a, speed=s, width=w) for a, (s, w) in links.items())


def codes(findings):
    return [(f.code, f.where, f.warning) for f in findings]


def test_lspci_forms():
    got = parse("lspci", lspci(GX10))
    assert [f.address for f in got] == list(GX10)
    second = got[2]
    assert (second.vendor_id, second.device_id, second.is_connectx7) == ("15b3", "1021", True)
    assert second.description == "Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert (second.cap.speed_gts, second.cap.width) == (32.0, 4)
    assert (second.sta.speed_gts, second.sta.width, second.sta.speed_mark, second.sta.width_mark) == (32.0, 2, "ok", "downgraded")
    [old] = parse("lspci", OLD)
    assert (old.address, old.vendor_id, old.is_connectx7) == ("0000:01:00.0", None, True)
    assert (old.sta.speed_gts, old.sta.width, old.sta.speed_mark) == (16.0, 4, None)
    [denied] = parse("lspci", DENIED)
    assert denied.access_denied and denied.sta is None
    # Pasted with its prompt and command line: the same facts.
    assert parse("lspci", "user@spark:~$ sudo lspci -D -nn -vv -d 15b3:\n" + lspci(GX10)) == got


def test_second_controller_at_gen5_x2_fails():
    found = platform.judge_pcie("gx10", parse("lspci", lspci(GX10)), NETDEVS, 32.0, 4)
    assert codes(found) == [(Code.PCIE_DEGRADED, "gx10:0002:01:00.0", False), (Code.PCIE_DEGRADED, "gx10:0002:01:00.1", False)]
    assert found[0].text.startswith(
        "[pcie-degraded] gx10:0002:01:00.0: saw 0002:01:00.0 (enP2p1s0f0np0) Mellanox Technologies MT2910 Family [ConnectX-7]: "
        "LnkSta 32GT/s x2 (downgraded), LnkCap 32GT/s x4 (width below); expected LnkSta Speed 32GT/s, Width x4 "
        "(expect.pcie_speed_gts / expect.pcie_width)\n  fix: update the BIOS of gx10 (sudo fwupdmgr refresh && sudo fwupdmgr "
        "update")
    assert "read `sudo lspci -vv -s 0002:01:00.0` again (LnkSta should say Speed 32GT/s, Width x4)" in found[0].text
    assert found[0].text.endswith("(source: https://github.com/NVIDIA/dgx-spark-playbooks/pull/108)")
    assert found[1].seen.startswith("0002:01:00.1 Mellanox")  # no netdev of the cluster's on it: the address alone


def test_healthy_gen5_x4_passes():
    spark = {a: OK for a in GX10}  # a DGX Spark: all four functions Gen5 x4
    assert platform.judge_pcie("spark", parse("lspci", lspci(spark)), NETDEVS, 32.0, 4) == []
    # Without the profile's keys the function's own LnkCap is the bar.
    assert platform.judge_pcie("spark", parse("lspci", lspci(spark)), NETDEVS, None, None) == []
    [f] = platform.judge_pcie("spark", parse("lspci", lspci(GX10))[2:3], NETDEVS, None, None)
    assert f.expected == "LnkSta Speed 32GT/s, Width x4 (LnkCap)"


def test_old_lspci_speed_below_is_named():
    [f] = platform.judge_pcie("pgx", parse("lspci", OLD), {"0000:01:00.0": "enp1s0f0np0"}, 32.0, 4)
    assert f.seen == ("0000:01:00.0 (enp1s0f0np0) Mellanox Technologies MT2910 Family [ConnectX-7]: LnkSta 16GT/s x4, "
                      "LnkCap 32GT/s x4 (speed below)")


def test_lspci_without_root_is_not_checked():
    [f] = platform.judge_pcie("pgx", parse("lspci", DENIED), {}, 32.0, 4)
    assert f.code is Code.COMMAND_FAILED and f.not_checked
    assert "Capabilities: <access denied>" in f.seen


def test_other_mellanox_functions_are_not_judged():
    bluefield = FUNCTION.format(addr="0003:01:00.0", speed="16GT/s (downgraded)", width="x8 (downgraded)").replace(
        "MT2910 Family [ConnectX-7] [15b3:1021]", "MT42822 BlueField-2 integrated ConnectX-6 Dx network controller [15b3:a2d6]")
    assert platform.judge_pcie("pgx", parse("lspci", bluefield), {}, 32.0, 4) == []
