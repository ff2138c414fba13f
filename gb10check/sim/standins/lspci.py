"""lspci -vv on a GB10's ConnectX-7: four PCI functions (two controllers, domains 0000 and 0002, two functions each),
MT2910 Family [ConnectX-7] (15b3:1021), in the layout of pciutils 3.10 (Ubuntu 24.04, DGX OS 7): the device line
(`-D` and `-nn` add the domain and the [class] / [vendor:device] ids), tab-indented fields, the Express capability
with LnkCap / LnkSta (pciutils' `(ok)` / `(downgraded)` against LnkCap) and the LnkCap2 / LnkCtl2 / LnkSta2 lines.
The negotiated link comes from the node's state (`links.<netdev>.pcie`: speed_gts, width; default Gen5 x4); without
root the capabilities are `<access denied>` as the real lspci prints them. `-s BDF` and `-d VENDOR:[DEVICE]` filter."""

import os
import sys

from .common import state
from .ibdev2netdev import PCI

CAP_SPEED, CAP_WIDTH = 32.0, 4  # what a GB10's ConnectX-7 function can do: PCIe Gen5 x4
VENDOR, DEVICE = "15b3", "1021"


def _mark(sta: float, cap: float) -> str:
    return " (downgraded)" if sta < cap else " (strange)" if sta > cap else " (ok)"


def _speed(gts: float) -> str:
    return f"{gts:g}GT/s"


def function(address: str, netdev: str, link: dict, ids: bool, root: bool) -> str:
    """One function's block, as `lspci -vv [-nn]` prints it (lspci -D: the address with its domain)."""
    pcie = link.get("pcie") or {}
    speed, width = float(pcie.get("speed_gts", CAP_SPEED)), int(pcie.get("width", CAP_WIDTH))
    fn = int(address[-1])
    head = (f"{address} Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [{VENDOR}:{DEVICE}]"
            if ids else f"{address} Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]")
    lines = [head, f"\tSubsystem: Mellanox Technologies Device {'[15b3:0023]' if ids else '0023'}",
             "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+",
             "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-",
             "\tLatency: 0, Cache Line Size: 64 bytes", f"\tInterrupt: pin {'AB'[fn]} routed to IRQ 255",
             "\tNUMA node: 0", f"\tRegion 0: Memory at {'1f' if address.startswith('0000') else '2f'}{fn * 2:x}000000 "
             "(64-bit, prefetchable) [size=32M]"]
    if not root:
        lines.append("\tCapabilities: <access denied>")
    else:
        lines += [
            "\tCapabilities: [60] Express (v2) Endpoint, IntMsgNum 0",
            "\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited",
            "\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 0W TEE-IO-",
            "\t\tDevCtl:\tCorrErr- NonFatalErr+ FatalErr+ UnsupReq+",
            "\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-",
            "\t\t\tMaxPayload 256 bytes, MaxReadReq 4096 bytes",
            "\t\tDevSta:\tCorrErr- NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-",
            f"\t\tLnkCap:\tPort #0, Speed {_speed(CAP_SPEED)}, Width x{CAP_WIDTH}, ASPM not supported",
            "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+",
            "\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, LnkDisable- CommClk+",
            "\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-",
            f"\t\tLnkSta:\tSpeed {_speed(speed)}{_mark(speed, CAP_SPEED)}, Width x{width}{_mark(width, CAP_WIDTH)}",
            "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
            "\t\tDevCap2: Completion Timeout: Range ABC, TimeoutDis+ NROPrPrP- LTR-",
            "\t\t\t 10BitTagComp+ 10BitTagReq+ OBFF Not Supported, ExtFmt- EETLPPrefix-",
            "\t\t\t EmergencyPowerReduction Not Supported, EmergencyPowerReductionInit-",
            "\t\t\t FRS- TPHComp- ExtTPHComp-",
            "\t\t\t AtomicOpsCap: 32bit+ 64bit+ 128bitCAS+",
            "\t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis- LTR- 10BitTagReq- OBFF Disabled,",
            "\t\t\t AtomicOpsCtl: ReqEn+",
            f"\t\tLnkCap2: Supported Link Speeds: 2.5-{_speed(CAP_SPEED)}, Crosslink- Retimer+ 2Retimers+ DRS-",
            f"\t\tLnkCtl2: Target Link Speed: {_speed(CAP_SPEED)}, EnterCompliance- SpeedDis-",
            "\t\t\t Transmit Margin: Normal Operating Range, EnterModifiedCompliance- ComplianceSOS-",
            "\t\t\t Compliance Preset/De-emphasis: -6dB de-emphasis, 0dB preshoot",
            "\t\tLnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete+ EqualizationPhase1+",
            "\t\t\t EqualizationPhase2+ EqualizationPhase3+ LinkEqualizationRequest-",
            "\t\t\t Retimer- 2Retimers- CrosslinkRes: unsupported",
            "\tCapabilities: [48] Vital Product Data",
            "\t\tProduct Name: NVIDIA ConnectX-7 GB10 Adapter",
            "\t\tEnd",
            "\tCapabilities: [9c] MSI-X: Enable+ Count=64 Masked-",
            "\t\tVector table: BAR=0 offset=00002000",
            "\t\tPBA: BAR=0 offset=00003000",
            "\tCapabilities: [c0] Vendor Specific Information: Len=18 <?>",
            "\tCapabilities: [40] Power Management version 3",
            "\t\tFlags: PMEClk- DSI- D1- D2- AuxCurrent=375mA PME(D0-,D1-,D2-,D3hot-,D3cold+)",
            "\t\tStatus: D0 NoSoftRst+ PME-Enable- DSel=0 DScale=0 PME-",
            "\tCapabilities: [100 v1] Advanced Error Reporting",
            "\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP-",
            "\t\t\tECRC- UnsupReq- ACSViol- UncorrIntErr- BlockedTLP- AtomicOpBlocked- TLPBlockedErr-",
            "\t\t\tPoisonTLPBlocked- DMWrReqBlocked- IDECheck- MisIDETLP- PCRC_CHECK- TLPXlatBlocked-",
            "\t\tCESta:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr- CorrIntErr- HeaderOF-",
            "\tCapabilities: [1c0 v1] Secondary PCI Express",
            "\t\tLnkCtl3: LnkEquIntrruptEn- PerformEqu-",
            "\t\tLaneErrStat: 0"]
    lines += ["\tKernel driver in use: mlx5_core", "\tKernel modules: mlx5_core", "", ""]  # a blank line after each function
    del netdev  # the function's netdev is not printed by lspci; ethtool -i (bus-info) maps one to the other
    return "\n".join(lines)


def render(s: dict, args: list[str], root: bool) -> tuple[str, int]:
    """(stdout, exit status) of `lspci ARGS` for the node state s."""
    ids = "-nn" in args
    domain = True  # two PCI domains (0000, 0002): lspci shows every address with its domain, -D or not
    select = args[args.index("-s") + 1] if "-s" in args and args.index("-s") + 1 < len(args) else None
    vendor = args[args.index("-d") + 1] if "-d" in args and args.index("-d") + 1 < len(args) else None
    functions = sorted((PCI[link["rdma_device"]], netdev, link) for netdev, link in s["links"].items() if link["rdma_device"] in PCI)
    out = []
    for address, netdev, link in functions:
        if select and not (address == select or address.endswith(select) or address[5:] == select):
            continue
        if vendor:
            v, _, d = vendor.partition(":")
            if (v and v.lower() != VENDOR) or (d and d.lower() != DEVICE):
                continue
        out.append(function(address if domain else address[5:], netdev, link, ids, root))
    if "-vv" not in args and "-vvv" not in args:
        out = [block.split("\n", 1)[0] + "\n" for block in out]
    return "".join(out), 0


def lspci(args: list[str]) -> int:
    text, rc = render(state(), args, os.geteuid() == 0)
    sys.stdout.write(text)
    sys.stdout.flush()
    return rc
