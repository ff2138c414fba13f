"""Self-written inputs in the layouts other versions, flags and locales of the tools print (found in public bug reports
and manuals; no public text is copied here). Names and values are made up. Each case asserts the facts, or the
ParseError that says what was expected.
"""

import pytest

from gb10check.facts import ParseError, parse

# ---- nvidia-smi ---------------------------------------------------------------------------------------------------

TABLE_R610_KMD_UMD = """\
Tue Jul 14 09:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02     CUDA UMD Version: 13.3     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |
| N/A   44C    P0             12W /  N/A  | Not Supported          |      3%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|    0   N/A  N/A           24680      C   VLLM::EngineCore                      70001MiB |
+-----------------------------------------------------------------------------------------+
"""


def test_table_r610_kmd_and_cuda_umd_version():
    smi = parse("nvidia_smi", TABLE_R610_KMD_UMD)
    assert (smi.smi_version, smi.driver_version, smi.cuda_version) == ("610.43.02", "610.43.02", "13.3")
    assert [(g.name, g.bus_id, g.memory_usage, g.power_draw_w) for g in smi.gpus] == [
        ("NVIDIA GB10", "0000000F:01:00.0", "Not Supported", 12.0)]
    assert [(p.pid, p.name, p.used_gib) for p in smi.processes] == [(24680, "VLLM::EngineCore", round(70001 / 1024, 3))]


# ---- apt: unattended-upgrades configuration, dpkg ---------------------------------------------------------------------


@pytest.mark.parametrize(("text", "blacklist", "origins"), [
    # '#' is a comment in apt's syntax as '//' is: a commented-out entry is no entry
    ('Unattended-Upgrade::Allowed-Origins {\n\t"${distro_id}:${distro_codename}-security";\n'
     '#\t"${distro_id}:${distro_codename}-updates";\n};\n'
     'Unattended-Upgrade::Package-Blacklist {\n#    "nvidia-";\n    "linux-"; # kernels by hand\n    "libc6$";\n};\n',
     ["linux-", "libc6$"], ["${distro_id}:${distro_codename}-security"]),
    # apt-config dump: one `Name:: "v";` line per entry, after the list's own name with ""
    ('$ apt-config dump | grep -i unattended\nAPT::Periodic::Unattended-Upgrade "1";\nUnattended-Upgrade "";\n'
     'Unattended-Upgrade::Origins-Pattern "";\nUnattended-Upgrade::Origins-Pattern:: "origin=Debian,codename=${distro_codename}";\n'
     'Unattended-Upgrade::Package-Blacklist "";\nUnattended-Upgrade::Package-Blacklist:: "nvidia-";\n'
     'Unattended-Upgrade::Package-Blacklist:: "libnvidia-";\n',
     ["nvidia-", "libnvidia-"], ["origin=Debian,codename=${distro_codename}"]),
    # nested scopes, and names in another case (apt compares them without case)
    ('Unattended-Upgrade {\n  Package-Blacklist { "nvidia-"; "cuda-" };\n  Allowed-Origins { "Ubuntu:noble"; };\n};\n'
     'unattended-upgrade::package-blacklist:: "libcudnn";\n',
     ["nvidia-", "cuda-", "libcudnn"], ["Ubuntu:noble"]),
    # '//' inside a quoted value is not a comment; /* */ spans lines
    ('Unattended-Upgrade::Origins-Pattern { "site=https://repo.example//x"; };\n/* Unattended-Upgrade::Package-Blacklist {\n'
     '"nvidia-"; }; */\nUnattended-Upgrade::Package-Blacklist { };\n', [], ["site=https://repo.example//x"]),
])
def test_unattended_upgrades_apt_syntax(text, blacklist, origins):
    conf = parse("unattended_upgrades", text)
    assert (conf.blacklist, conf.origins) == (blacklist, origins)


def test_unattended_upgrades_other_config_is_a_parse_error():
    with pytest.raises(ParseError, match="^unattended_upgrades: expected apt configuration with Unattended-Upgrade"):
        parse("unattended_upgrades", 'APT::Periodic::Unattended-Upgrade "1";\n// Unattended-Upgrade::Mail "root";\n')


def test_dpkg_l_rows_are_read_as_dpkg_query_lines():
    text = ("$ dpkg -l | grep -E 'nvidia|cuda'\n"
            "hi  nvidia-driver-580-open         580.95.05-0ubuntu1   arm64  NVIDIA driver metapackage\n"
            "ii  libnvidia-compute-580:arm64    580.95.05-0ubuntu1   arm64  NVIDIA libcompute package\n"
            "rc  cuda-drivers-575               575.57.08-1          arm64  CUDA Driver meta-package\n"
            "iHR nvidia-dkms-580-open           580.95.05-0ubuntu1   arm64  NVIDIA DKMS package\n")
    assert [(p.package, p.want, p.state, p.held) for p in parse("dpkg_query", text)] == [
        ("nvidia-driver-580-open", "hold", "installed", True),
        ("libnvidia-compute-580", "install", "installed", False),
        ("cuda-drivers-575", "deinstall", "config-files", False),
        ("nvidia-dkms-580-open", "install", "half-installed", False)]


def test_dpkg_l_header_alone_is_a_parse_error():
    text = ("Desired=Unknown/Install/Remove/Purge/Hold\n| Status=Not/Inst/Conf-files/Unpacked/halF-conf/Half-inst/trig-aWait/Trig-pend\n"
            "||/ Name           Version      Architecture Description\n+++-==============-============-============-===========\n")
    with pytest.raises(ParseError, match="^dpkg_query: expected"):
        parse("dpkg_query", text)


# ---- nmcli -------------------------------------------------------------------------------------------------------------


def test_nmcli_without_terse_pads_values_and_prints_dashes_for_none():
    text = ("-- profile 0b7a9c2e-1111-4a2b-9c3d-000000000001 --\ndevice:\n"
            "connection.id:                          Wired connection 1\n"
            "connection.type:                        802-3-ethernet\n"
            "connection.interface-name:              --\n"
            "connection.autoconnect:                 yes\n"
            "ipv4.method:                            auto\n"
            "-- profile 0b7a9c2e-1111-4a2b-9c3d-000000000002 --\ndevice:enP2p1s0f1np1\n"
            "connection.id:qsfp\\:1\nconnection.type:802-3-ethernet\nconnection.interface-name:enP2p1s0f1np1\n"
            "connection.autoconnect:no\nipv4.method:manual\n")
    profiles = parse("nmcli_profiles", text).profiles
    assert [(p.name, p.interface, p.device, p.ipv4_method, p.autoconnect) for p in profiles] == [
        ("Wired connection 1", None, None, "auto", "yes"),
        ("qsfp:1", "enP2p1s0f1np1", "enP2p1s0f1np1", "manual", "no")]
    assert profiles[0].netdevs == set()


# ---- kernel log ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("line", "text", "since_boot", "stamp"), [
    # CONFIG_PRINTK_CALLER: a thread or CPU caller id before the message
    ("[  412.118734] [   T2871] mlx5_core 0000:01:00.0: Link up", "mlx5_core 0000:01:00.0: Link up", 412.118734, None),
    ("[    0.000000] [      C0] Booting Linux on physical CPU 0x0", "Booting Linux on physical CPU 0x0", 0.0, None),
    ("[Mon Nov 30 21:14:51 2026] [  T512] NVRM: Xid (PCI:000f:01:00): 79", "NVRM: Xid (PCI:000f:01:00): 79", None,
     "Mon Nov 30 21:14:51 2026"),
    ("6,1234,781456651,-,caller=T99;NVRM: GPU at PCI:000f:01:00: GPU-1", "NVRM: GPU at PCI:000f:01:00: GPU-1", 781.456651, None),
    # dmesg -r (raw, with the priority) and dmesg -d (with the delta to the previous line)
    ("<4>[  781.456651] mlx5_core 0000:01:00.1: Port module event", "mlx5_core 0000:01:00.1: Port module event", 781.456651,
     None),
    ("[  781.500000 <    0.043349>] NVRM: loading", "NVRM: loading", 781.5, None),
    # /var/log/kern.log and syslog: the kernel's own [seconds] inside the message
    ("Nov 30 21:14:51 spark-1 kernel: [  781.456651] NVRM: Xid 79", "NVRM: Xid 79", 781.456651, "Nov 30 21:14:51"),
    ("2026-11-30T21:14:51.123456+00:00 spark-1 kernel: [  781.456651] oom-kill:constraint=CONSTRAINT_NONE",
     "oom-kill:constraint=CONSTRAINT_NONE", 781.456651, "2026-11-30T21:14:51.123456+00:00"),
    # journalctl -o short-full and -o short-unix; dmesg --time-format iso
    ("Mon 2026-11-30 21:14:51 UTC spark-1 kernel: NVRM: Xid 13", "NVRM: Xid 13", None, "Mon 2026-11-30 21:14:51 UTC"),
    ("1764537291.123456 spark-1 kernel: NVRM: Xid 31", "NVRM: Xid 31", None, "1764537291.123456"),
    ("2026-11-30T21:14:51,123456+00:00 NVRM: Xid 43", "NVRM: Xid 43", None, "2026-11-30T21:14:51,123456+00:00"),
])
def test_kernel_log_forms(line, text, since_boot, stamp):
    entries = parse("kernel_log", line + "\n").entries
    assert [(e.text, e.since_boot_s, e.stamp) for e in entries] == [(text, since_boot, stamp)]


# ---- lspci ---------------------------------------------------------------------------------------------------------------

LSPCI_PROG_IF_OLD_SPEEDS = """\
0000:00:00.0 PCI bridge [0604]: NVIDIA Corporation Device [10de:22ce] (rev 01) (prog-if 00 [Normal decode])
\tCapabilities: [40] Express (v2) Root Port (Slot-), MSI 00
\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x4, ASPM L1, Exit Latency L1 <4us
\t\tLnkSta:\tSpeed 16GT/s, Width x4
0004:01:00.0 Non-Volatile memory controller [0108]: Example Storage Co NVMe SSD [1e0f:0009] (prog-if 02 [NVM Express])
\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x4, ASPM L1, Exit Latency L1 <64us
\t\tLnkSta:\tSpeed 8GT/s (downgraded), Width x4 (ok)
000f:01:00.0 VGA compatible controller: NVIDIA Corporation GB20B [GB10] (rev a1) (prog-if 00 [VGA controller])
\t\tLnkCap:\tPort #0, Speed 2.5Gb/s, Width x1, ASPM L0s, Latency L0 <64ns, L1 <1us
\t\tLnkSta:\tSpeed 2.5Gb/s, Width x1, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-
"""


def test_lspci_prog_if_keeps_ids_and_old_gbs_speeds_are_read():
    fns = parse("lspci", LSPCI_PROG_IF_OLD_SPEEDS)
    assert [(f.address, f.description, f.vendor_id, f.device_id) for f in fns] == [
        ("0000:00:00.0", "PCI bridge: NVIDIA Corporation Device", "10de", "22ce"),
        ("0004:01:00.0", "Non-Volatile memory controller: Example Storage Co NVMe SSD", "1e0f", "0009"),
        ("000f:01:00.0", "VGA compatible controller: NVIDIA Corporation GB20B [GB10]", None, None)]
    assert (fns[1].sta.speed_gts, fns[1].sta.speed_mark, fns[1].cap.speed_gts) == (8.0, "downgraded", 16.0)
    assert (fns[2].cap.speed_gts, fns[2].sta.speed_gts, fns[2].sta.width) == (2.5, 2.5, 1)


# ---- df -------------------------------------------------------------------------------------------------------------------


def test_df_wrapped_filesystem_name_and_mount_point_with_spaces():
    text = ("$ df -h\nFilesystem                         Size  Used Avail Use% Mounted on\n"
            "/dev/mapper/ubuntu--vg-ubuntu--lv\n                                   98G   12G   82G  13% /\n"
            "/dev/nvme0n1p2                    3.7T  1.2T  2.5T  33% /home\n"
            "/dev/sdb1                         1.8T  100G  1.7T   6% /media/lab/Model Store\n"
            "tmpfs                              13G     0   512   1% /run/x\n")
    rows = parse("df", text)
    assert [(r.target, r.filesystem, r.avail_bytes) for r in rows] == [
        ("/", "/dev/mapper/ubuntu--vg-ubuntu--lv", 82 * 2**30),
        ("/home", "/dev/nvme0n1p2", int(2.5 * 2**40)),
        ("/media/lab/Model Store", "/dev/sdb1", int(1.7 * 2**40)),
        ("/run/x", "tmpfs", 512)]  # -h prints a size under 1K in bytes, without a suffix


@pytest.mark.parametrize("command", ["df -H /", "df --si /", "df -hH /"])
def test_df_si_sizes_are_powers_of_1000(command):
    text = f"$ {command}\nFilesystem      Size  Used Avail Use% Mounted on\n/dev/nvme0n1p2  4.0T  1.3T  2.5T  35% /\n"
    assert parse("df", text)[0].avail_bytes == 2_500_000_000_000


def test_df_without_si_on_the_command_line_keeps_powers_of_1024():
    text = "Filesystem      Size  Used Avail Use% Mounted on\n/dev/nvme0n1p2  3.7T  1.2T  2.5T  33% /\n"
    assert parse("df", text)[0].avail_bytes == int(2.5 * 2**40)


# ---- dd --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "nbytes", "seconds"), [
    ("1024+0 records in\n1024+0 records out\n1073741824 bytes transferred in 0.842000 secs (1275227316 bytes/sec)\n",
     1073741824, 0.842),
    ("记录了1024+0 的读入\n记录了1024+0 的写出\n1073741824字节（1.1 GB，1.0 GiB）已复制，0.84 s，1.3 GB/s\n", 1073741824, 0.84),
    ("1024+0 Datensätze ein\n1024+0 Datensätze aus\n1073741824 Bytes (1,1 GB, 1,0 GiB) kopiert, 0,84 s, 1,3 GB/s\n",
     1073741824, 0.84),
])
def test_dd_bsd_and_translated_summaries(text, nbytes, seconds):
    run = parse("dd", text)
    assert (run.bytes, run.seconds) == (nbytes, seconds)


# ---- /proc/meminfo ----------------------------------------------------------------------------------------------------


def test_meminfo_of_the_only_numa_node():
    text = ("$ cat /sys/devices/system/node/node0/meminfo\nNode 0 MemTotal:       127600816 kB\n"
            "Node 0 MemFree:         3139656 kB\nNode 0 MemUsed:        124461160 kB\nNode 0 Active(file):    1048576 kB\n"
            "Node 0 HugePages_Total:     0\n")
    facts = parse("meminfo", text)
    assert (facts["mem_total_gib"], facts["mem_free_gib"], facts["active_file_gib"], facts["huge_pages_total"]) == (
        121.69, 2.994, 1.0, 0)
    assert facts["mem_available_gib"] is None


def test_meminfo_of_several_numa_nodes_is_a_parse_error():
    text = "Node 0 MemTotal:  65536000 kB\nNode 0 MemFree:  1000 kB\nNode 1 MemTotal:  65536000 kB\nNode 1 MemFree:  2000 kB\n"
    with pytest.raises(ParseError, match="^meminfo: expected one /proc/meminfo"):
        parse("meminfo", text)


# ---- docker ps / compose ps -------------------------------------------------------------------------------------------


def test_docker_ps_table_format_starting_with_names():
    text = ("$ docker ps -a --format 'table {{.Names}}\\t{{.Status}}\\t{{.Ports}}'\n"
            "NAMES        STATUS                        PORTS\n"
            "gb10-vllm    Up 12 minutes (healthy)       0.0.0.0:8000->8000/tcp, [::]:8000->8000/tcp\n"
            "gb10-proxy   Exited (137) 3 minutes ago\n")
    rows = parse("compose_ps", text)
    assert [(r.name, r.state, r.health, r.exit_code, [p.host_port for p in r.published]) for r in rows] == [
        ("gb10-vllm", "running", "healthy", None, ["8000", "8000"]), ("gb10-proxy", "exited", None, 137, [])]


# ---- the front end: prompts --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prompt", [
    "➜  ~ ", "➜  vllm git:(main) ✗ ", "bash-5.2$ ", "sh-5.1# ", "~$ ", "~/vllm $ ", "lab@spark ~> ",
    "lab@spark-5c2d:~/vllm (main)$ ", "PS C:\\Users\\lab> ",
])
def test_prompt_forms_give_the_command_line(prompt):
    text = (f"{prompt}nvidia-smi --query-gpu=name,memory.total --format=csv,noheader\n"
            "NVIDIA GB10, [N/A]\n")
    assert parse("nvidia_smi_query", text) == [{"name": "NVIDIA GB10", "memory_total_gib": None}]


def test_bare_root_prompt_before_df_gives_its_flags():
    text = "# df -H /\nFilesystem      Size  Used Avail Use% Mounted on\n/dev/nvme0n1p2  4.0T  1.3T  2.5T  35% /\n"
    assert parse("df", text)[0].avail_bytes == 2_500_000_000_000


def test_markdown_code_fences_around_a_paste_are_not_rows():
    text = ("```console\nlab@spark-1:~$ docker compose ps\n"
            "NAME        IMAGE                 COMMAND                  SERVICE   CREATED          STATUS                    PORTS\n"
            "gb10-vllm   example/vllm:latest   \"vllm serve /models…\"   vllm      14 minutes ago   Up 13 minutes (healthy)\n"
            "```\n")
    assert [(r.name, r.health) for r in parse("compose_ps", text)] == [("gb10-vllm", "healthy")]


def test_dmesg_T_in_another_locale():
    entries = parse("kernel_log", "[Di Dez  1 09:00:00 2026] NVRM: Xid 79\n[mar. déc.  1 09:00:01 2026] NVRM: Xid 31\n").entries
    assert [(e.stamp, e.text) for e in entries] == [("Di Dez  1 09:00:00 2026", "NVRM: Xid 79"),
                                                    ("mar. déc.  1 09:00:01 2026", "NVRM: Xid 31")]


def test_query_compute_apps_used_memory_alias_matches_the_printed_header():
    header = "$ nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv\n" \
             "pid, process_name, used_gpu_memory [MiB]\n4242, VLLM::EngineCore, 81234 MiB\n"
    noheader = "$ nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader\n" \
               "4242, VLLM::EngineCore, 81234 MiB\n"
    expected = [{"pid": 4242, "process_name": "VLLM::EngineCore", "used_gpu_memory_gib": round(81234 / 1024, 3)}]
    assert parse("nvidia_smi_query", header) == parse("nvidia_smi_query", noheader) == expected


def test_dmesg_human_relative_times():
    entries = parse("kernel_log", "[Nov30 21:14] mlx5_core 0000:01:00.0: Link down\n[  +0.000123] NVRM: Xid 79\n").entries
    assert [(e.stamp, e.since_boot_s, e.text) for e in entries] == [
        ("Nov30 21:14", None, "mlx5_core 0000:01:00.0: Link down"), ("+0.000123", None, "NVRM: Xid 79")]


# ---- partial pastes: grep/head/tail subsets, cut or wrapped outputs, several nodes in one block --------------------
# What the subset shows is read; what it does not show is None / absent, never a default; nothing readable: ParseError.


def _fold(text: str, width: int) -> str:
    """`fold -w WIDTH`, as a narrow terminal or a mail client wraps the 89-column table (trailing spaces then lost)."""
    return "\n".join(line[i:i + width].rstrip() for line in text.splitlines() for i in range(0, max(len(line), 1), width))


@pytest.mark.parametrize("width", [80, 76, 60])
def test_nvidia_smi_rows_wrapped_by_a_narrow_terminal_are_joined(width):
    smi = parse("nvidia_smi", _fold(TABLE_R610_KMD_UMD, width))
    assert (smi.driver_version, smi.cuda_version, smi.truncated) == ("610.43.02", "13.3", False)
    assert [(g.name, g.bus_id, g.temperature_c, g.power_draw_w, g.compute_mode) for g in smi.gpus] == [
        ("NVIDIA GB10", "0000000F:01:00.0", 44.0, 12.0, "Default")]
    # Before: the wrapped process rows were lost and the table read "processes listed: none".
    assert smi.processes_listed and [(p.pid, p.name, p.used_gib) for p in smi.processes] == [(24680, "VLLM::EngineCore", 68.36)]


def test_nvidia_smi_word_wrapped_by_a_mail_client():
    wrapped = TABLE_R610_KMD_UMD.replace("Off |                  N/A |", "Off |\n                  N/A |")
    smi = parse("nvidia_smi", wrapped)
    assert [(g.display_active, g.ecc) for g in smi.gpus] == [("Off", "N/A")] and len(smi.processes) == 1


def test_nvidia_smi_grep_driver_line_alone_names_versions_not_gpus():
    # nvidia-smi | grep -i driver
    smi = parse("nvidia_smi", "$ nvidia-smi | grep -i driver\n" + TABLE_R610_KMD_UMD.splitlines()[2] + "\n")
    assert (smi.driver_version, smi.cuda_version) == ("610.43.02", "13.3")
    assert smi.gpus == [] and smi.truncated and not smi.processes_listed


def test_nvidia_smi_cut_inside_the_processes_section_does_not_claim_the_full_list():
    cut = "\n".join(TABLE_R610_KMD_UMD.splitlines()[:19]) + "\n"  # head -n 19: a process row, no closing line
    smi = parse("nvidia_smi", cut)
    assert len(smi.gpus) == 1 and [p.pid for p in smi.processes] == [24680] and smi.processes_listed is False
    smi = parse("nvidia_smi", "\n".join(TABLE_R610_KMD_UMD.splitlines()[:18]) + "\n")  # cut at the rule
    assert smi.processes == [] and smi.processes_listed is False


def test_nvidia_smi_cut_at_the_top_is_refused():
    with pytest.raises(ParseError):
        parse("nvidia_smi", "\n".join(TABLE_R610_KMD_UMD.splitlines()[8:]) + "\n")  # tail: no header line


def test_nvidia_smi_two_machines_processes_are_not_taken_from_the_second():
    first = "\n".join(TABLE_R610_KMD_UMD.splitlines()[:12]) + "\n"  # the GPU table only (| head -12)
    text = "lab@gpu-a:~$ nvidia-smi | head -12\n" + first + "lab@gpu-b:~$ nvidia-smi\n" + TABLE_R610_KMD_UMD
    smi = parse("nvidia_smi", text)
    assert len(smi.gpus) == 1 and smi.processes == [] and smi.processes_listed is False


IBV_DEVINFO_GREP = """\
$ ibv_devinfo | grep -E 'hca_id|state|active_mtu|link_layer'
hca_id:\tmlx5_7
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tactive_mtu:\t\t4096 (5)
\t\t\tlink_layer:\t\tEthernet
hca_id:\tmlx5_9
\t\t\tstate:\t\t\tPORT_DOWN (1)
\t\t\tactive_mtu:\t\t1024 (3)
\t\t\tlink_layer:\t\tEthernet
\t\t\tstate:\t\t\tPORT_INIT (2)
\t\t\tactive_mtu:\t\t2048 (4)
\t\t\tlink_layer:\t\tInfiniBand
"""


def test_ibv_devinfo_grep_without_port_lines_keeps_each_ports_state():
    # ibv_devinfo prints a device's ports in order from 1; the grep dropped the "port:" lines.
    hcas = parse("ibv_devinfo", IBV_DEVINFO_GREP)
    assert [(h.rdma_device, [(p.port, p.port_state, p.state, p.active_mtu, p.link_layer, p.max_mtu) for p in h.ports])
            for h in hcas] == [
        ("mlx5_7", [(1, "ACTIVE", "up", 4096, "Ethernet", None)]),
        ("mlx5_9", [(1, "DOWN", "down", 1024, "Ethernet", None), (2, "INIT", "down", 2048, "InfiniBand", None)])]
    assert hcas[0].firmware is None and hcas[0].board_id is None


def test_ibv_devinfo_grep_of_one_port_takes_its_number_from_the_command():
    text = "$ ibv_devinfo -d mlx5_9 -i 2 | grep -E 'hca_id|state'\nhca_id:\tmlx5_9\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    assert [(p.port, p.state) for p in parse("ibv_devinfo", text)[0].ports] == [(2, "up")]


def test_ibv_devinfo_state_lines_without_hca_id_are_refused():
    with pytest.raises(ParseError):
        parse("ibv_devinfo", "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tstate:\t\t\tPORT_DOWN (1)\n")


IBSTAT_GREP = """\
# ibstat | grep -E "CA '|State|Rate|Link layer"
CA 'mlx5_3'
                State: Active
                Physical state: LinkUp
                Rate: 200
                Link layer: Ethernet
CA 'mlx5_4'
                State: Down
                Physical state: Disabled
                Rate: 40
                Link layer: Ethernet
"""


def test_ibstat_grep_without_port_lines_keeps_each_ports_state():
    ports = parse("ibstat", IBSTAT_GREP)
    assert [(p.rdma_device, p.port, p.port_state, p.state, p.phys_state, p.rate_gbps, p.link_layer, p.firmware)
            for p in ports] == [("mlx5_3", 1, "ACTIVE", "up", "LinkUp", 200.0, "Ethernet", None),
                                ("mlx5_4", 1, "DOWN", "down", "Disabled", 40.0, "Ethernet", None)]


def test_ibstat_grep_of_one_port_takes_its_number_from_the_command():
    text = "$ ibstat mlx5_3 2 | grep State\nCA 'mlx5_3'\nState: Active\n"
    assert [(p.port, p.state) for p in parse("ibstat", text)] == [(2, "up")]


UFW_RULES = """\
Status: active

To                         Action      From
--                         ------      ----
22/tcp                     ALLOW       Anywhere
Anywhere on enp1s0f1np1    ALLOW       169.254.0.0/16
8000/tcp                   DENY        10.9.0.0/16
"""


def test_ufw_status_grep_keeps_the_matching_rule():
    # sudo ufw status | grep 169.254: ufw lists rules only while active
    status = parse("ufw_status", "$ sudo ufw status | grep 169.254\nAnywhere on enp1s0f1np1    ALLOW       169.254.0.0/16\n")
    assert status.active is True and status.logging is None and status.default_incoming is None
    assert [(r.to.interface, r.action, r.source.address) for r in status.rules] == [("enp1s0f1np1", "ALLOW", "169.254.0.0/16")]
    assert status.allows("169.254.3.4", 8000, netdevs={"enp1s0f1np1"})


def test_ufw_status_pasted_from_the_table_on():
    status = parse("ufw_status", "\n".join(UFW_RULES.splitlines()[2:]) + "\n")
    assert status.active and [r.action for r in status.rules] == ["ALLOW", "ALLOW", "DENY"]


def test_ufw_status_text_that_is_not_rules_is_refused():
    with pytest.raises(ParseError):
        parse("ufw_status", "Anywhere on enp1s0f1np1    ALLOW       169.254.0.0/16\nsome other line\n")


IP_ADDR_GREP_INET = """\
$ ip a | grep inet
    inet 127.0.0.1/8 scope host lo
    inet6 ::1/128 scope host noprefixroute
    inet 169.254.77.2/16 brd 169.254.255.255 scope link noprefixroute enp1s0f1np1
    inet6 fe80::5a1:2ff:fe03:405/64 scope link proto kernel_ll
    inet 192.168.50.9/24 metric 100 brd 192.168.50.255 scope global dynamic wlP9s9
    inet 192.168.60.9/24 brd 192.168.60.255 scope global secondary wlP9s9:1
"""


def test_ip_addr_grep_inet_reads_the_ipv4_lines_by_their_label():
    ifaces = parse("ip_addr", IP_ADDR_GREP_INET)
    assert [(i.name, i.ipv4, i.state, i.operstate, i.mtu, i.index) for i in ifaces] == [
        ("lo", ["127.0.0.1/8"], "unknown", None, None, None),
        ("enp1s0f1np1", ["169.254.77.2/16"], "unknown", None, None, None),
        ("wlP9s9", ["192.168.50.9/24", "192.168.60.9/24"], "unknown", None, None, None)]


def test_ip_addr_grep_inet6_alone_names_no_interface_and_is_refused():
    with pytest.raises(ParseError):
        parse("ip_addr", "    inet6 fe80::5a1:2ff:fe03:405/64 scope link\n")


def test_ip_o_addr_keeps_the_interface_index():
    text = ("$ ip -o -4 addr\n1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
            "4: enp1s0f1np1    inet 169.254.77.2/16 brd 169.254.255.255 scope link enp1s0f1np1\\       valid_lft forever "
            "preferred_lft forever\n")
    assert [(i.index, i.name, i.ipv4) for i in parse("ip_addr", text)] == [(1, "lo", ["127.0.0.1/8"]),
                                                                           (4, "enp1s0f1np1", ["169.254.77.2/16"])]


def test_meminfo_grep_of_one_line_is_read():
    facts = parse("meminfo", "$ grep MemAvailable /proc/meminfo\nMemAvailable:   98765432 kB\n")
    assert facts["mem_available_gib"] == 94.19 and "mem_total_gib" not in facts


def test_meminfo_head_without_mem_available_says_none():
    facts = parse("meminfo", "MemTotal:       125000000 kB\nMemFree:        100000000 kB\n")
    assert facts["mem_total_gib"] == 119.209 and facts["mem_available_gib"] is None


def test_proc_pid_status_is_not_meminfo():
    with pytest.raises(ParseError):
        parse("meminfo", "VmPeak:   123456 kB\nVmRSS:     65432 kB\n")


PERFTEST_TAIL = """\
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             185.10             185.02             0.352900
---------------------------------------------------------------------------------------
"""


def test_perftest_tail_without_banner_leaves_bidirectional_unknown():
    r = parse("perftest", PERFTEST_TAIL)
    assert r.bw_average_gbps == 185.02 and r.complete and r.test is None and r.bidirectional is None


@pytest.mark.parametrize("command, bidirectional", [("ib_write_bw -d mlx5_3 -b 10.0.0.2 --report_gbits", True),
                                                    ("ib_write_bw -d mlx5_3 10.0.0.2 --report_gbits", False),
                                                    ("ib_send_bw --bidirectional 10.0.0.2 -F --report_gbits", True)])
def test_perftest_tail_reads_bidirectional_from_its_command_line(command, bidirectional):
    assert parse("perftest", f"$ {command} | tail -3\n" + PERFTEST_TAIL).bidirectional is bidirectional


def test_ibdev2netdev_two_nodes_keep_their_hosts():
    text = ("lab@gpu-a:~$ ibdev2netdev\nmlx5_3 port 1 ==> enp1s0f1np1 (Up)\nmlx5_4 port 1 ==> enp2s0f1np1 (Down)\n"
            "lab@gpu-b:~$ ibdev2netdev\nmlx5_3 port 1 ==> enp1s0f1np1 (Down)\nmlx5_4 port 1 ==> enp2s0f1np1 (Down)\n")
    assert [(e.host, e.rdma_device, e.state) for e in parse("ibdev2netdev", text)] == [
        ("gpu-a", "mlx5_3", "up"), ("gpu-a", "mlx5_4", "down"), ("gpu-b", "mlx5_3", "down"), ("gpu-b", "mlx5_4", "down")]


def test_ibdev2netdev_one_node_names_no_host_and_grep_up_keeps_the_up_lines():
    text = "lab@gpu-a:~$ ibdev2netdev | grep Up\nmlx5_3 port 1 ==> enp1s0f1np1 (Up)\n"
    assert [(e.host, e.rdma_device, e.state) for e in parse("ibdev2netdev", text)] == [(None, "mlx5_3", "up")]


ETHTOOL_BLOCK = """\
Settings for enp1s0f1np1:
\tSupported ports: [ Backplane ]
\tSpeed: {speed}
\tDuplex: {duplex}
\tAuto-negotiation: on
\tPort: Direct Attach Copper
\tLink detected: {link}
"""


def test_ethtool_two_nodes_same_interface_are_two_links_not_an_overwrite():
    text = ("lab@gpu-a:~$ sudo ethtool enp1s0f1np1\n" + ETHTOOL_BLOCK.format(speed="200000Mb/s", duplex="Full", link="yes")
            + "lab@gpu-b:~$ sudo ethtool enp1s0f1np1\n" + ETHTOOL_BLOCK.format(speed="Unknown!", duplex="Unknown! (255)",
                                                                               link="no"))
    assert [(link.host, link.interface, link.speed_mbps, link.link_detected) for link in parse("ethtool", text)] == [
        ("gpu-a", "enp1s0f1np1", 200000, True), ("gpu-b", "enp1s0f1np1", None, False)]


def test_ethtool_same_interface_twice_behind_bare_prompts_is_two_links():
    text = ("$ ethtool enp1s0f1np1\n" + ETHTOOL_BLOCK.format(speed="200000Mb/s", duplex="Full", link="yes")
            + "$ ethtool enp1s0f1np1\n" + ETHTOOL_BLOCK.format(speed="Unknown!", duplex="Unknown! (255)", link="no"))
    assert [(link.speed_mbps, link.link_detected) for link in parse("ethtool", text)] == [(200000, True), (None, False)]


def test_ethtool_grep_speed_and_link_leaves_the_rest_unknown():
    text = "$ ethtool enp1s0f1np1 | grep -E 'Speed|Link'\n\tSpeed: 200000Mb/s\n\tLink detected: yes\n"
    [link] = parse("ethtool", text)
    assert (link.interface, link.speed_mbps, link.link_detected, link.duplex, link.port, link.auto_negotiation) == (
        "enp1s0f1np1", 200000, True, None, None, None)
