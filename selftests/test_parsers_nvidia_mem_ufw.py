"""Self-written inputs in the formats of nvidia-smi, /proc/driver/nvidia/version, free, /proc/meminfo and ufw.

Names and values are made up; the layouts follow the tools' own formats (the captures under
../shared/captures show each of them for real). Each case asserts values, or a ParseError that says what
was expected.
"""

import pytest

from gb10check.facts import ParseError, parse
from gb10check.facts.ufw import parse_user_rules

# ---- nvidia-smi table ----------------------------------------------------------------------------

TABLE_470_TWO_GPUS_OLD_PROCS = """\
Tue Mar  5 09:10:11 2024
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  Tesla V100-SXM2...  On   | 00000000:1A:00.0 Off |                    0 |
| N/A   41C    P0    57W / 300W |  12345MiB / 32510MiB |     87%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
|   1  Tesla V100-SXM2...  On   | 00000000:1B:00.0 Off |                    0 |
| N/A   39C    P0    43W / 300W |      4MiB / 32510MiB |      0%   E. Process |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|        ID   ID                                                   Usage      |
|=============================================================================|
|    0   N/A  N/A     41234      C   python train.py                 12341MiB |
+-----------------------------------------------------------------------------+
"""

TABLE_2016_NO_GI_CI = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 375.66                 Driver Version: 375.66                    |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce GTX 1080    Off  | 0000:01:00.0      On |                  N/A |
| 27%   38C    P8    10W / 180W |    312MiB /  8112MiB |      1%      Default |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                       GPU Memory |
|  GPU       PID  Type  Process name                               Usage      |
|=============================================================================|
|    0      1187    G   /usr/lib/xorg/Xorg                             190MiB |
|    0      2290    G   compiz                                         120MiB |
+-----------------------------------------------------------------------------+
"""

TABLE_WINDOWS_CG_NA = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 552.22                 Driver Version: 552.22         CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                     TCC/WDDM  | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4070      WDDM  |   00000000:01:00.0  On |                  N/A |
|  0%   44C    P8              9W /  200W |    1022MiB / 12282MiB  |      3%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A      5120    C+G   C:\\Windows\\explorer.exe                      N/A      |
+-----------------------------------------------------------------------------------------+
"""

TABLE_GH200_AND_MIG = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 560.35.03              Driver Version: 560.35.03      CUDA Version: 12.6     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GH200 480GB             On  |   00000009:01:00.0 Off |                    0 |
| N/A   31C    P0             88W /  900W |      19MiB /  97871MiB |      0%      Default |
|                                         |                        |              Enabled |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| MIG devices:                                                                            |
+------------------+----------------------------------+-----------+-----------------------+
| GPU  GI  CI  MIG |                     Memory-Usage |        Vol|        Shared         |
|      ID  ID  Dev |                       BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |
|==================+==================================+===========+=======================|
|  0    1   0   0  |              19MiB / 48384MiB    | 66      0 |  3   0    3    0    3 |
+------------------+----------------------------------+-----------+-----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|  No running processes found                                                             |
+-----------------------------------------------------------------------------------------+
"""


def test_table_two_gpus_470():
    smi = parse("nvidia_smi", TABLE_470_TWO_GPUS_OLD_PROCS)
    assert (smi.driver_version, smi.cuda_version, len(smi.gpus)) == ("470.82.01", "11.4", 2)
    assert smi.gpus[0].name == "Tesla V100-SXM2..." and smi.gpus[0].bus_id == "00000000:1A:00.0"
    assert smi.gpus[0].memory_used_gib == round(12345 / 1024, 3) and smi.gpus[0].gpu_util_pct == 87.0
    assert smi.gpus[1].compute_mode == "E. Process" and smi.gpus[1].power_cap_w == 300.0
    assert [(p.pid, p.type, p.name, p.used_gib) for p in smi.processes] == [(41234, "C", "python train.py", round(12341 / 1024, 3))]
    assert not smi.truncated


def test_table_2016_processes_without_gi_ci():
    smi = parse("nvidia_smi", TABLE_2016_NO_GI_CI)
    assert smi.cuda_version is None and smi.gpus[0].display_active == "On" and smi.gpus[0].fan == "27%"
    assert [(p.gpu, p.pid, p.type, p.name) for p in smi.processes] == [(0, 1187, "G", "/usr/lib/xorg/Xorg"), (0, 2290, "G", "compiz")]


def test_table_windows_wddm_c_plus_g_na_usage():
    smi = parse("nvidia_smi", TABLE_WINDOWS_CG_NA)
    assert smi.gpus[0].persistence_mode == "WDDM" and smi.gpus[0].memory_total_gib == round(12282 / 1024, 3)
    assert [(p.type, p.used_gib) for p in smi.processes] == [("C+G", None)]


def test_table_mig_devices_are_not_gpus():
    smi = parse("nvidia_smi", TABLE_GH200_AND_MIG)
    assert [g.name for g in smi.gpus] == ["NVIDIA GH200 480GB"]
    assert smi.gpus[0].bus_id == "00000009:01:00.0" and smi.gpus[0].mig_mode == "Enabled"
    assert smi.processes_listed and smi.processes == []


def test_table_cut_inside_a_gpu_keeps_the_complete_ones():
    cut = TABLE_470_TWO_GPUS_OLD_PROCS[: TABLE_470_TWO_GPUS_OLD_PROCS.index("| N/A   39C")]
    smi = parse("nvidia_smi", cut)
    assert [g.index for g in smi.gpus] == [0] and smi.truncated


def test_table_forward_compat_keeps_the_kernel_driver():
    banner = ("NOTE: CUDA Forward Compatibility mode ENABLED.\n  Using CUDA 12.9 driver version 575.51.03 with kernel driver "
              "version 550.163.01.\n\n")
    table = TABLE_GH200_AND_MIG.replace("560.35.03   ", "575.51.03   ", 1).replace("CUDA Version: 12.6", "CUDA Version: 12.9")
    smi = parse("nvidia_smi", banner + table)
    assert smi.driver_version == "550.163.01" and smi.cuda_version == "12.9"
    assert smi.forward_compat.compat_driver_version == "575.51.03"


@pytest.mark.parametrize("text", [
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver "
    "is installed and running.\n",
    "No devices were found\n",
    "bash: nvidia-smi: command not found\n",
    "| GPU  Name  | garbage |\n+----+\n",
])
def test_table_not_a_table_is_a_parse_error(text):
    with pytest.raises(ParseError, match="^nvidia_smi: expected the nvidia-smi table header"):
        parse("nvidia_smi", text)


# ---- --query-gpu CSV -----------------------------------------------------------------------------


def test_query_noheader_fields_from_command_with_aliases():
    text = ("$ nvidia-smi --query-gpu=gpu_name,driver_version,memory.total,power.draw,clocks.sm --format=csv,noheader\n"
            "NVIDIA GeForce GTX TITAN X, 535.54, 12288 MiB, 71.79 W, 1980 MHz\n")
    row = parse("nvidia_smi_query", text)[0]
    assert row == {"name": "NVIDIA GeForce GTX TITAN X", "driver_version": "535.54", "memory_total_gib": 12.0,
                   "power_draw_w": 71.79, "clocks_current_sm_mhz": 1980.0}


def test_query_noheader_nounits_uses_the_field_units():
    text = "$ nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader,nounits -l 1\n0, 2048, 45\n0, 1024, 40\n"
    assert parse("nvidia_smi_query", text) == [{"index": 0, "memory_used_gib": 2.0, "utilization_gpu_pct": 45.0},
                                               {"index": 0, "memory_used_gib": 1.0, "utilization_gpu_pct": 40.0}]


def test_query_placeholders_and_hex_and_pstate():
    text = ("index, name, memory.total [MiB], clocks_throttle_reasons.active, pstate, ecc.mode.current, compute_cap\n"
            "0, NVIDIA GB10, [N/A], 0x0000000000000004, P0, [Not Supported], 12.1\n"
            "1, NVIDIA GB10, [N/A], 0x0000000000000000, P8, [Unknown Error], 12.1\n")
    rows = parse("nvidia_smi_query", text)
    assert rows[0] == {"index": 0, "name": "NVIDIA GB10", "memory_total_gib": None,
                       "clocks_event_reasons_active": "0x0000000000000004", "pstate": "P0", "ecc_mode_current": None,
                       "compute_cap": "12.1"}
    assert rows[1]["pstate"] == "P8"


def test_query_header_printed_although_fields_given():
    assert parse("nvidia_smi_query", "driver_version\n580.82.07\n") == [{"driver_version": "580.82.07"}]
    from gb10check.facts.nvidia import parse_query
    assert parse_query("driver_version\n580.82.07\n", ["driver_version"]) == [{"driver_version": "580.82.07"}]
    assert parse_query("580.82.07\n", ["driver_version"]) == [{"driver_version": "580.82.07"}]


def test_query_loop_cut_in_the_last_sample_keeps_the_others():
    text = "index, power.draw [W]\n0, 71.00 W\n0, 72.50 W\n0\n"
    assert [r["power_draw_w"] for r in parse("nvidia_smi_query", text)] == [71.0, 72.5]


@pytest.mark.parametrize("text", ["NVIDIA GB10, 580.173.02\n", "No devices were found\n", "a, b\n1, 2, 3\n4, 5\n"])
def test_query_without_fields_or_garbled_is_a_parse_error(text):
    with pytest.raises(ParseError, match="^nvidia_smi_query: expected "):
        parse("nvidia_smi_query", text)


def test_query_mismatch_is_a_parse_error_naming_it():
    with pytest.raises(ParseError, match="version mismatch"):
        parse("nvidia_smi_query", "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n")


# ---- NVML mismatch ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "library", "kernel"), [
    ("Failed to initialize NVML: Driver/library version mismatch\n", None, None),
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 575.57\n", "575.57", None),
    ("docker: Error response from daemon: failed to create task: OCI runtime create failed: runc create failed: "
     "error running hook #0: exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: nvml error: "
     "driver/library version mismatch: unknown.\nERRO[0000] error waiting for container: context canceled\n", None, None),
    ("[ 1234.5678] NVRM: API mismatch: the client has the version 550.127.05, but\n"
     "               NVRM: this kernel module has the version 550.120.  Please\n", "550.127.05", "550.120"),
    ("pynvml.nvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.\n", None, None),
])
def test_mismatch_forms(text, library, kernel):
    mm = parse("nvml_mismatch", text)
    assert (mm.nvml_mismatch, mm.library_version, mm.kernel_module_version) == (True, library, kernel)


def test_mismatch_absent_is_a_parse_error():
    with pytest.raises(ParseError, match="^nvml_mismatch: expected 'Failed to initialize NVML"):
        parse("nvml_mismatch", "NVIDIA GB10, 580.173.02\n")


def test_table_with_mismatch_is_a_parse_error():
    with pytest.raises(ParseError, match="version mismatch"):
        parse("nvidia_smi", "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch\n")


# ---- /proc/driver/nvidia/version ---------------------------------------------------------------------


@pytest.mark.parametrize(("line", "version", "flavor", "arch", "builder"), [
    ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.54.15  Tue Mar  5 22:10:30 UTC 2024", "550.54.15", "proprietary",
     "aarch64", None),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  340.108  Wed Dec 11 15:00:45 PST 2019", "340.108", "proprietary", "x86_64",
     None),
    ("NVRM version: NVIDIA UNIX ppc64le Kernel Module  418.67  Sat Apr  6 03:08:53 CDT 2019", "418.67", "proprietary", "ppc64le",
     None),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build  (root@build-7)  Di 14 Okt 2025 "
     "08:00:00 CEST", "580.95.05", "open", "aarch64", "root@build-7"),
])
def test_proc_version_forms(line, version, flavor, arch, builder):
    km = parse("proc_driver_nvidia_version", f"some preamble\n{line}   \nGCC version:  gcc version 12.3.0 (GCC)   \n")
    assert (km.version, km.flavor, km.arch, km.builder, km.gcc) == (version, flavor, arch, builder, "gcc version 12.3.0 (GCC)")


def test_proc_version_missing_is_a_parse_error():
    with pytest.raises(ParseError, match="^proc_driver_nvidia_version: expected 'NVRM version"):
        parse("proc_driver_nvidia_version", "cat: /proc/driver/nvidia/version: No such file or directory\n")


# ---- /proc/meminfo -------------------------------------------------------------------------------------


def test_meminfo_without_memavailable_says_so():
    text = "MemTotal: 2048000 kB\nMemFree: 1024000 kB\nActive(file): 100000 kB\nInactive(file): 200000 kB\nSReclaimable: 50000 kB\n"
    facts = parse("meminfo", text)
    assert facts["mem_available_gib"] is None
    assert facts["mem_available_estimate_gib"] == round(1374000 / 1024**2, 3)


def test_meminfo_huge_pages_counts_and_sizes():
    text = "MemTotal: 127600816 kB\nHugePages_Total:      64\nHugePages_Free:       60\nHugepagesize:    1048576 kB\n"
    facts = parse("meminfo", text)
    assert facts["huge_pages_total"] == 64 and facts["hugepagesize_gib"] == 1.0 and facts["hugepagesize_kb"] == 1048576
    assert facts["huge_pages_total_gib"] == 64.0 and facts["huge_pages_free_gib"] == 60.0
    assert facts["mem_available_estimate_gib"] is None  # too few lines to estimate


@pytest.mark.parametrize("text", ["Mem: 1 2 3\n", "MemTotal: lots\n", "cat: /proc/meminfo: Permission denied\n"])
def test_meminfo_garbled_is_a_parse_error(text):
    with pytest.raises(ParseError, match="^meminfo: expected 'MemTotal"):
        parse("meminfo", text)


# ---- free -----------------------------------------------------------------------------------------------

FREE_NEW = """\
               total        used        free      shared  buff/cache   available
Mem:       127600816    89234560     3139656        3028    35226600    38366256
Swap:       16777212           0    16777212
"""


@pytest.mark.parametrize(("text", "mem_total", "available", "unit_from"), [
    (FREE_NEW, 121.69, 36.589, "magnitude"),
    ("$ free\n" + FREE_NEW, 121.69, 36.589, "command"),
    ("$ free -k\n" + FREE_NEW, 121.69, 36.589, "command"),
    ("$ free -b\n" + FREE_NEW.replace("127600816", "130663235584"), 121.69, 0.036, "command"),
    ("              total        used        free      shared  buff/cache   available\n"
     "Mem:          121Gi        85Gi       3.0Gi       3.0Mi        33Gi        36Gi\nSwap:          15Gi          0B        15Gi\n",
     121.0, 36.0, "suffix"),
    ("              gesamt       benutzt     frei      gemns.  Puffer/Cache verfügbar\n"
     "Speicher:      121Gi        85Gi       3,0Gi       3,0Mi        33Gi        36,5Gi\nAuslager:        0B          0B          0B\n",
     121.0, 36.5, "suffix"),
])
def test_free_units(text, mem_total, available, unit_from):
    facts = parse("free", text)
    assert (facts["mem_total_gib"], facts["mem_available_gib"], facts["unit_from"]) == (mem_total, available, unit_from)


def test_free_wide_columns_and_total_line():
    text = ("$ free -m -w -t\n"
            "               total        used        free      shared     buffers       cache   available\n"
            "Mem:          124610       87143        3066           2          12       34401       37467\n"
            "Swap:          16383           0       16383\nTotal:        140993       87143       19449\n")
    facts = parse("free", text)
    assert facts["mem_buffers_gib"] == 0.012 and facts["mem_cache_gib"] == 33.595 and facts["mem_buff_cache_gib"] == 33.607
    assert facts["total_total_gib"] == 137.688 and facts["swap_total_gib"] == 15.999


def test_free_old_procps_with_command():
    text = ("$ free -g\n             total       used       free     shared    buffers     cached\n"
            "Mem:            31         30          1          0          0         21\n"
            "-/+ buffers/cache:          8         23\nSwap:            1          0          1\n")
    facts = parse("free", text)
    assert (facts["mem_total_gib"], facts["mem_available_gib"], facts["mem_available_estimated"]) == (31.0, 23.0, True)


@pytest.mark.parametrize("text", [
    "total used free\nMem: 0 0 0\n",  # a unit no rule can tell
    "Mem: lots of it\n",
    "free: command not found\n",
])
def test_free_without_a_readable_unit_or_garbled_is_a_parse_error(text):
    with pytest.raises(ParseError, match="^free: expected "):
        parse("free", text)


# ---- ufw status ------------------------------------------------------------------------------------------

UFW_PLAIN_APPS = """\
Status: active

To                         Action      From
--                         ------      ----
OpenSSH                    ALLOW       Anywhere
Apache Full                ALLOW       10.20.0.0/16
29500:29510/tcp            ALLOW       169.254.0.0/16             # gb10check nccl
Anywhere on enp1s0f0np0    ALLOW       Anywhere
8000/tcp on enP2p1s0f1np1  ALLOW       192.168.100.0/24
Anywhere/udp               DENY        10.9.9.9
OpenSSH (v6)               ALLOW       Anywhere (v6)
Apache Full (v6)           ALLOW       Anywhere (v6)
8000/tcp (v6) on enP2p1s0f1np1 ALLOW       Anywhere (v6)

53                         ALLOW OUT   Anywhere
Anywhere on eth1           ALLOW FWD   Anywhere on eth0
"""


def test_ufw_plain_apps_interfaces_comments_ranges():
    rules = parse("ufw_status", UFW_PLAIN_APPS).rules
    assert len(rules) == 11
    assert (rules[0].to.app, rules[0].to.address, rules[0].to.port) == ("OpenSSH", "any", None)
    assert (rules[1].to.app, rules[1].source.address) == ("Apache Full", "10.20.0.0/16")
    assert (rules[2].to.port, rules[2].to.proto, rules[2].comment) == ("29500:29510", "tcp", "gb10check nccl")
    assert (rules[3].to.address, rules[3].to.interface, rules[3].to.app) == ("any", "enp1s0f0np0", None)
    assert (rules[4].to.port, rules[4].to.interface) == ("8000", "enP2p1s0f1np1")
    assert (rules[5].to.address, rules[5].to.proto, rules[5].action) == ("any", "udp", "DENY")
    assert (rules[6].to.app, rules[6].to.v6, rules[7].to.app, rules[7].to.v6) == ("OpenSSH", True, "Apache Full", True)
    assert (rules[8].to.v6, rules[8].to.interface, rules[8].to.port) == (True, "enP2p1s0f1np1", "8000")
    assert (rules[9].direction, rules[10].direction, rules[10].source.interface) == ("OUT", "FWD", "eth0")


def test_ufw_allows_reads_ranges_and_not_app_names_as_everything():
    text = UFW_PLAIN_APPS.replace("Status: active", "Status: active\nDefault: deny (incoming), allow (outgoing), disabled (routed)")
    status = parse("ufw_status", text)
    assert status.allows("169.254.10.0/24", 29505, "tcp")
    assert status.allows("169.254.10.0/24", 29511, "tcp")  # by "Anywhere on enp1s0f0np0", with no netdevs told
    assert status.allows("169.254.10.0/24", 29511, "tcp", netdevs={"enp1s0f0np0"})  # a QSFP netdev's rule
    assert not status.allows("169.254.10.0/24", 29511, "tcp", netdevs={"enP2p1s0f0np0"})  # another interface's rule
    status = parse("ufw_status", text.replace("Anywhere on enp1s0f0np0    ALLOW       Anywhere\n", ""))
    assert not status.allows("169.254.10.0/24", 29511, "tcp")
    assert not status.allows("10.20.1.0/24")  # "Apache Full" allows its ports only, not everything from there


def test_ufw_numbered_out_and_log_all():
    text = ("Status: active\n\n     To                         Action      From\n     --                         ------      ----\n"
            "[ 1] 22/tcp                     ALLOW IN    Anywhere                   (log-all)\n"
            "[ 2] 10.0.0.5 443/tcp           ALLOW OUT   Anywhere                   (log, out)\n"
            "[10] 5000:5010/udp              REJECT IN   192.168.1.0/24\n")
    rules = parse("ufw_status", text).rules
    assert [(r.number, r.direction, r.log) for r in rules] == [(1, "IN", "log-all"), (2, "OUT", "log"), (10, "IN", None)]
    assert (rules[1].to.address, rules[1].to.port, rules[2].action) == ("10.0.0.5", "443", "REJECT")


def test_ufw_inactive():
    status = parse("ufw_status", "Status: inactive\n")
    assert not status.active and status.rules == [] and status.allows("10.0.0.0/8", 22)


@pytest.mark.parametrize("text", ["ERROR: You need to be root to run this script\n", "ufw: command not found\n", ""])
def test_ufw_not_status_is_a_parse_error(text):
    with pytest.raises(ParseError, match="^ufw_status: expected 'Status: active'"):
        parse("ufw_status", text)


# ---- /etc/ufw/user.rules ------------------------------------------------------------------------------------

USER_RULES = """\
*filter
:ufw-user-input - [0:0]
### RULES ###

### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 OpenSSH - in
-A ufw-user-input -p tcp --dport 22 -j ACCEPT -m comment --comment 'dapp_OpenSSH'

### tuple ### allow tcp 80,443 0.0.0.0/0 any 0.0.0.0/0 Apache%20Full - in
-A ufw-user-input -p tcp -m multiport --dports 80,443 -j ACCEPT

### tuple ### allow_log any any 0.0.0.0/0 any 169.254.0.0/16 in_enp1s0f0np0 comment=67623130636865636b
-A ufw-user-input -i enp1s0f0np0 -s 169.254.0.0/16 -j ACCEPT

### tuple ### route:allow any any 0.0.0.0/0 any 0.0.0.0/0 in_eth1!out_eth0
-A ufw-user-forward -i eth1 -o eth0 -j ACCEPT

### tuple ### deny udp 5353 0.0.0.0/0 any 0.0.0.0/0
-A ufw-user-input -p udp --dport 5353 -j DROP

### END RULES ###
COMMIT
"""


def test_user_rules_apps_interfaces_routes_comments_old_tuples():
    rules = parse_user_rules(USER_RULES)
    t = rules.tuples
    assert len(t) == 5 and rules.iptables_rules == 5 and rules.complete
    assert (t[0].app, t[0].direction, t[0].dport) == ("OpenSSH", "in", "22")
    assert t[1].app == "Apache Full"
    assert (t[2].action, t[2].log, t[2].src, t[2].interface_in, t[2].comment) == ("allow", "log", "169.254.0.0/16",
                                                                                  "enp1s0f0np0", "gb10check")
    assert (t[3].route, t[3].interface_in, t[3].interface_out) == (True, "eth1", "eth0")
    assert (t[4].action, t[4].direction) == ("deny", "in")  # the old 6-field form: direction in
    assert rules.allows("169.254.3.0/24") and not rules.allows("10.0.0.0/8")


def test_ufw_limit_accepts_and_a_rule_on_another_interface_does_not_carry_the_qsfp_subnet():
    """`ufw limit ssh` (LIMIT: accepted unless one source opens more than 6 connections in 30 s) allows; a subnet allowed
    only `on docker0` is not allowed on the QSFP netdevs (the firewall judge is told them)."""
    from gb10check.checks import firewall

    text = ("Status: active\nDefault: deny (incoming), allow (outgoing), disabled (routed)\n\n"
            "To                         Action      From\n--                         ------      ----\n"
            "22/tcp                     LIMIT IN    Anywhere\n"
            "Anywhere on docker0        ALLOW IN    169.254.0.0/16\n")
    status = parse("ufw_status", text)
    assert status.allows("169.254.0.0/16", 22, "tcp")
    assert status.allows("169.254.0.0/16") and not status.allows("169.254.0.0/16", netdevs={"enp1s0f0np0"})
    found = firewall.judge("pgx-30", status, None, "ENABLED=yes\n", "", ["169.254.0.0/16"], ["22/tcp"], {"enp1s0f0np0"})
    assert [(f.code.value, f.seen) for f in found] == [
        ("ufw-source", "ufw active, default deny incoming, no rule allowing 169.254.0.0/16")]
    user = parse("ufw_user_rules", "*filter\n### RULES ###\n\n### tuple ### limit tcp 22 0.0.0.0/0 any 0.0.0.0/0 in\n"
                                   "### tuple ### allow any any 0.0.0.0/0 any 169.254.0.0/16 in_docker0\n\n### END RULES ###\n")
    assert user.allows("169.254.0.0/16", 22) and not user.allows("169.254.0.0/16", netdevs={"enp1s0f0np0"})


# ---- more layouts of nvidia-smi, free and /proc/meminfo (names and values made up) --------------------------------

# Drivers 304-310: no Persistence-M in the name cell, MB (not MiB) after the memory utilization, `Compute processes:`.
TABLE_304_NO_PERSISTENCE_MB = """\
Mon Jan  7 10:00:00 2013
+------------------------------------------------------+
| NVIDIA-SMI 4.304.64   Driver Version: 304.64         |
|-------------------------------+----------------------+----------------------+
| GPU  Name                     | Bus-Id        Disp.  | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap| Memory-Usage         | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla K10.G1.8GB         | 0000:05:00.0     Off |                    0 |
| N/A   52C    P0   110W / 117W |   3%  129MB / 3583MB |     91%      Default |
+-------------------------------+----------------------+----------------------+
|   1  Tesla K10.G1.8GB         | 0000:06:00.0     Off |                    0 |
| N/A   40C    P8    18W / 117W |   0%    9MB / 3583MB |      0%      Default |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Compute processes:                                               GPU Memory |
|  GPU       PID  Process name                                     Usage      |
|=============================================================================|
|    0     20417  ./lattice_qcd                                        118MB  |
+-----------------------------------------------------------------------------+
"""

# Driver 319 on a GeForce: Persistence-M is there, memory in MB, and the process list is Not Supported.
TABLE_319_GEFORCE_PROCS_NOT_SUPPORTED = """\
+------------------------------------------------------+
| NVIDIA-SMI 5.319.49   Driver Version: 319.49         |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce GTX 660     Off  | 0000:01:00.0     N/A |                  N/A |
| 33%   38C  N/A     N/A /  N/A |      250MB /  2047MB |     N/A      Default |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Compute processes:                                               GPU Memory |
|  GPU       PID  Process name                                     Usage      |
|=============================================================================|
|    0            Not Supported                                               |
+-----------------------------------------------------------------------------+
"""


def test_table_304_without_persistence_column_and_mb_units():
    smi = parse("nvidia_smi", TABLE_304_NO_PERSISTENCE_MB)
    assert (smi.driver_version, smi.cuda_version, len(smi.gpus), smi.truncated) == ("304.64", None, 2, False)
    g = smi.gpus[0]
    assert (g.index, g.name, g.bus_id, g.persistence_mode, g.ecc) == (0, "Tesla K10.G1.8GB", "0000:05:00.0", "N/A", "0")
    assert (g.memory_used_gib, g.memory_total_gib, g.gpu_util_pct, g.power_draw_w) == (round(129 / 1024, 3),
                                                                                      round(3583 / 1024, 3), 91.0, 110.0)
    assert smi.gpus[1].perf == "P8"
    assert smi.processes_listed
    assert [(p.gpu, p.pid, p.name, p.used_gib) for p in smi.processes] == [(0, 20417, "./lattice_qcd", round(118 / 1024, 3))]


def test_table_319_mb_and_process_list_not_supported():
    smi = parse("nvidia_smi", TABLE_319_GEFORCE_PROCS_NOT_SUPPORTED)
    g = smi.gpus[0]
    assert (g.name, g.persistence_mode, g.memory_used_gib, g.memory_total_gib) == ("GeForce GTX 660", "Off",
                                                                                    round(250 / 1024, 3), round(2047 / 1024, 3))
    assert smi.processes == [] and not smi.processes_listed  # the tool could not list them: not "none running"


def test_table_after_a_lost_gpu_keeps_the_error_line():
    # R5xx: nvidia-smi names the GPU it cannot reach, then prints the table of the others
    text = "Unable to determine the device handle for GPU0000:0F:00.0: Unknown Error\n" + TABLE_GH200_AND_MIG
    smi = parse("nvidia_smi", text)
    assert [g.index for g in smi.gpus] == [0]
    assert smi.errors == ["Unable to determine the device handle for GPU0000:0F:00.0: Unknown Error"]
    assert parse("nvidia_smi", TABLE_GH200_AND_MIG).errors == []


def test_table_lost_gpu_alone_is_a_parse_error_naming_it():
    with pytest.raises(ParseError, match="Unable to determine the device handle"):
        parse("nvidia_smi", "$ nvidia-smi\nUnable to determine the device handle for GPU 0000:0B:00.0: GPU is lost.  "
                            "Reboot the system to recover this GPU\n")


def test_table_cuda_version_err_is_none():
    # WSL / GPU-P guests with a broken libcuda print `CUDA Version: ERR!`
    smi = parse("nvidia_smi", TABLE_GH200_AND_MIG.replace("CUDA Version: 12.6    ", "CUDA Version: ERR!    "))
    assert (smi.driver_version, smi.cuda_version, len(smi.gpus)) == ("560.35.03", None, 1)


def test_query_compute_apps_with_no_process_is_no_rows():
    assert parse("nvidia_smi_query", "$ nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv\n"
                                     "pid, process_name, used_gpu_memory [MiB]\n") == []
    assert parse("nvidia_smi_query", "$ nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader\n") == []
    with pytest.raises(ParseError, match="at least one CSV row"):  # a GPU query always has a row per GPU
        parse("nvidia_smi_query", "$ nvidia-smi --query-gpu=name --format=csv\nname\n")


def test_query_compute_apps_noheader_name_is_the_process_name():
    # --query-compute-apps: `name` is process_name's alias (the header prints process_name), gpu_name the GPU's
    text = "$ nvidia-smi --query-compute-apps=gpu_name,pid,name --format=csv,noheader\nNVIDIA GB10, 4242, VLLM::EngineCore\n"
    assert parse("nvidia_smi_query", text) == [{"name": "NVIDIA GB10", "pid": 4242, "process_name": "VLLM::EngineCore"}]


FREE_M_BODY = ("               total        used        free      shared  buff/cache   available\n"
               "Mem:          124610       87143        3066           2       34401       37467\n"
               "Swap:          16383           0       16383\n")


@pytest.mark.parametrize("command", ["free -mt", "free -tm", "free -t -m", "free -wm", "free -lm", "free --mebi -t",
                                     "ssh -t node-2 free -m", "docker exec -it box free -m", "watch -n1 free -m"])
def test_free_unit_from_free_own_flags_only(command):
    # short options cluster (-mt is -m -t); -t is --total, not tera; flags of ssh/docker before `free` are not free's
    facts = parse("free", f"$ {command}\n{FREE_M_BODY}")
    assert (facts["unit_from"], facts["mem_total_gib"], facts["mem_available_gib"]) == ("command", 121.689, 36.589)


def test_free_prose_before_the_output_is_no_header():
    facts = parse("free", f"memory looks low here\n$ free -m\n{FREE_M_BODY}")
    assert (facts["mem_total_gib"], facts["swap_total_gib"]) == (121.689, 15.999)


def test_free_chinese_full_width_colon():
    text = ("               总计         已用        空闲      共享    缓冲/缓存    可用\n"
            "内存：      16254280     4066212     8637876      513392     3550192    11362648\n"
            "交换：       2097148           0     2097148\n")
    facts = parse("free", text)
    assert (facts["mem_total_gib"], facts["mem_available_gib"], facts["swap_total_gib"]) == (15.501, 10.836, 2.0)


def test_meminfo_grep_with_file_names():
    text = ("$ grep -H Mem /proc/meminfo\n/proc/meminfo:MemTotal:       127600816 kB\n"
            "/proc/meminfo:MemFree:         3139656 kB\n/proc/meminfo:MemAvailable:   38366256 kB\n")
    facts = parse("meminfo", text)
    assert (facts["mem_total_gib"], facts["mem_available_gib"]) == (121.69, 36.589)


@pytest.mark.parametrize("text", [
    # dmesg: each line of the kernel's message has its own timestamp
    "[   14.200001] NVRM: API mismatch: the client has the version 550.127.05, but\n"
    "[   14.200003] NVRM: this kernel module has the version 550.120.  Please\n"
    "[   14.200004] NVRM: make sure that this kernel module and all NVIDIA driver\n",
    # journalctl -k / syslog: host and kernel: before every line
    "Mar 03 10:00:01 node-2 kernel: NVRM: API mismatch: the client has the version 550.127.05, but\n"
    "Mar 03 10:00:01 node-2 kernel: NVRM: this kernel module has the version 550.120.  Please\n",
    # one line, as some logs fold it
    "NVRM: API mismatch: the client has the version 550.127.05, but this kernel module has the version 550.120. Please\n",
])
def test_mismatch_kernel_lines_with_log_prefixes_give_both_versions(text):
    mm = parse("nvml_mismatch", text)
    assert (mm.library_version, mm.kernel_module_version) == ("550.127.05", "550.120")


@pytest.mark.parametrize("prompt", ["root# ", "/ # ", "/workspace # "])
def test_free_after_busybox_or_bare_root_prompt_gives_its_flags(prompt):
    # busybox ash in containers prints `/ # `; a snap shell prints `root# `: the command line still says -m
    facts = parse("free", f"{prompt}free -m\n{FREE_M_BODY}")
    assert (facts["unit_from"], facts["mem_total_gib"]) == ("command", 121.689)


# Jetson (JetPack 6): the integrated GPU has no PCI address, and early releases print no driver version.
TABLE_JETSON_NO_BUS_ID = """\
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 540.3.0                Driver Version: N/A          CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  Orin (nvgpu)                  N/A  | N/A              N/A |                  N/A |
| N/A   N/A  N/A               N/A /  N/A | Not Supported        |     N/A          N/A |
|                                         |                      |                  N/A |
+-----------------------------------------+----------------------+----------------------+
"""


def test_table_jetson_without_bus_id_and_driver_version():
    smi = parse("nvidia_smi", TABLE_JETSON_NO_BUS_ID)
    assert (smi.smi_version, smi.driver_version, smi.cuda_version) == ("540.3.0", None, "12.2")
    assert [(g.index, g.name, g.bus_id, g.memory_usage, g.memory_total_gib, g.gpu_util_pct) for g in smi.gpus] == [
        (0, "Orin (nvgpu)", "N/A", "Not Supported", None, None)]
    smi = parse("nvidia_smi", TABLE_JETSON_NO_BUS_ID.replace("Driver Version: N/A    ", "Driver Version: 540.3.0"))
    assert smi.driver_version == "540.3.0"


@pytest.mark.parametrize(("text", "expected"), [
    # drivers that print MB in the header and the values (1024 steps, as everywhere in nvidia-smi)
    ("name, memory.total [MB], memory.used [MB]\nTesla K80, 11439 MB, 22 MB\n",
     [{"name": "Tesla K80", "memory_total_gib": round(11439 / 1024, 3), "memory_used_gib": round(22 / 1024, 3)}]),
    # nvidia-smi's infoROM warning merged into the CSV (2>&1)
    ("$ nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader 2>&1\n"
     "WARNING: infoROM is corrupted at gpu 0000:17:00.0\n0, Tesla V100-SXM2-16GB, 16160 MiB\n",
     [{"index": 0, "name": "Tesla V100-SXM2-16GB", "memory_total_gib": round(16160 / 1024, 3)}]),
])
def test_query_mb_units_and_warning_lines(text, expected):
    assert parse("nvidia_smi_query", text) == expected
