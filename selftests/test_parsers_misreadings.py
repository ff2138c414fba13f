"""Text a parser cannot place makes the fact unreadable (ParseError: its checks are "not checked"); it is never dropped
into a different answer that looks valid. Each test pins one misreading a parser made before its rule said so."""

import pytest

from gb10check.facts import ParseError, parse

from . import test_parsers_ray as ray


def _without(text: str, line: str) -> str:
    assert line in text.splitlines()
    return "\n".join(other for other in text.splitlines() if other != line) + "\n"


# ---- ray status ---------------------------------------------------------------------------------------------------------

def test_ray_status_without_its_node_list_is_not_a_cluster_of_no_nodes():
    head = "\n".join(ray.STATUS_PAIR.splitlines()[:3]) + "\n"  # header, "Node status", its rule: the list cut off
    with pytest.raises(ParseError, match="node list"):
        parse("ray_status", head)
    with pytest.raises(ParseError, match="node list"):
        parse("ray_status", _without(_without(ray.STATUS_PAIR, "Active:"), " 1 node_" + ray.HEAD_ID).replace(
            " 1 node_" + ray.WORKER_ID + "\n", ""))


def test_ray_status_cut_before_its_totals_or_demands_is_refused():
    lines = ray.STATUS_PAIR.splitlines()
    with pytest.raises(ParseError, match="resource totals"):
        parse("ray_status", "\n".join(lines[:lines.index("Resources")]) + "\n")
    with pytest.raises(ParseError, match="cut short"):
        parse("ray_status", "\n".join(lines[:lines.index("From request_resources:")]) + "\n")


def test_ray_status_lines_out_of_place_are_refused():
    node = " 1 node_" + ray.WORKER_ID
    swapped = ray.STATUS_PAIR.replace(f"{node}\nPending:\n", f"Pending:\n{node}\n")  # a node under Pending
    with pytest.raises(ParseError, match="under pending"):
        parse("ray_status", swapped)
    with pytest.raises(ParseError, match="listed twice"):
        parse("ray_status", ray.STATUS_PAIR.replace(node, f"{node}\n{node}"))  # one node is not two
    with pytest.raises(ParseError, match="listed twice"):
        parse("ray_status", ray.STATUS_PAIR.replace(" 0.0/2.0 GPU", " 0.0/2.0 GPU\n 0.0/2.0 GPU"))
    with pytest.raises(ParseError, match="no section name"):
        parse("ray_status", ray.STATUS_PAIR.replace("Pending:\n", "Pending nodes and so on\n"))
    with pytest.raises(ParseError, match="demand"):
        parse("ray_status", ray.STATUS_PG_PENDING.replace("pending placement groups", "pending placement"))
    idle_run_on = ray.STATUS_V2_IDLE.replace("Idle:\n", "")  # "(no active nodes)", then nodes: two sections run together
    with pytest.raises(ParseError, match="note that there is none"):
        parse("ray_status", idle_run_on)


def test_ray_status_still_reads_every_layout():
    for text in (ray.STATUS_PAIR, ray.STATUS_PAIR_VERBOSE, ray.STATUS_OLDER, ray.STATUS_PG_PENDING, ray.STATUS_V2_IDLE,
                 ray.STATUS_RAY_2_2, ray.STATUS_NO_NODE_TYPES):
        assert parse("ray_status", text).nodes >= 1


# ---- ibdev2netdev, rdma link, show_gids, sysfs ------------------------------------------------------------------------------

IBDEV = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nrocep1s0f1 port 1 ==> enp1s0f1np1 (Up)\n"


def test_ibdev2netdev_line_it_cannot_read_is_refused_not_skipped():
    with pytest.raises(ParseError, match="only lines like"):
        parse("ibdev2netdev", IBDEV + "roceP2p1s0f0 port 1 ==> enP2p1s0f0n\n")  # cut: was read as two devices
    with pytest.raises(ParseError, match="listed twice"):
        parse("ibdev2netdev", IBDEV + IBDEV.splitlines()[0] + "\n")
    assert len(parse("ibdev2netdev", IBDEV)) == 2


def test_rdma_link_line_it_cannot_read_is_refused_not_skipped():
    good = "link rocep1s0f0/1 state ACTIVE physical_state LINK_UP netdev enp1s0f0np0\n"
    with pytest.raises(ParseError, match="only lines like"):
        parse("rdma_link", good + "link roceP2p1s0f0/1 sta\n".replace("link ", "lin"))
    with pytest.raises(ParseError, match="key-value pairs"):
        parse("rdma_link", good + "link roceP2p1s0f0/1 state ACTIVE phys\n")  # cut: was read with no physical state
    with pytest.raises(ParseError, match="state on every link line"):
        parse("rdma_link", good + "link roceP2p1s0f0/1 netdev enP2p1s0f0np0\n")
    with pytest.raises(ParseError, match="listed twice"):
        parse("rdma_link", good + good)


def test_ib_sysfs_value_or_line_it_cannot_read_is_refused():
    good = "/sys/class/infiniband/rocep1s0f1/ports/1/state:4: ACTIVE\n/sys/class/infiniband/rocep1s0f1/ports/1/rate:200 Gb/sec (4X HDR)\n"
    assert parse("ib_sysfs", good)[0].port_state == "ACTIVE"
    with pytest.raises(ParseError, match="state value"):
        parse("ib_sysfs", good + "/sys/class/infiniband/roceP2p1s0f1/ports/1/state:4: AC\n")
    with pytest.raises(ParseError, match="PATH:VALUE"):
        parse("ib_sysfs", good + "/sys/class/infiniband/roceP2p1s0f1/ports/1/sta\n")
    loop = "rocep1s0f0:   1: DOWN    rate=40 Gb/sec (4X QDR)   link_layer=Ethernet\n"
    assert parse("ib_sysfs", loop)[0].rate_gbps == 40.0
    with pytest.raises(ParseError, match="rate"):
        parse("ib_sysfs", loop + "rocep1s0f1:   4: ACTIVE  rate=200 G\n")  # cut: was read as a port of unknown rate
    with pytest.raises(ParseError, match="GID"):
        parse("ib_sysfs", good + "/sys/class/infiniband/rocep1s0f1/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:c0a8\n")


# ---- nvidia-smi table ---------------------------------------------------------------------------------------------------

def _smi_table() -> str:
    from .test_parsers_variants import TABLE_R610_KMD_UMD

    return TABLE_R610_KMD_UMD


def test_nvidia_smi_gpu_block_it_cannot_read_is_refused_not_left_out():
    table = _smi_table()
    assert len(parse("nvidia_smi", table).gpus) == 1
    lines = table.splitlines()
    rule = next(n for n, line in enumerate(lines) if line.lstrip().startswith("|=") and "+" in line)
    first_row = lines[rule + 1]
    # The GPU's first row damaged: it was left out, and a closed table with no GPU in it read as "no GPUs".
    damaged = "\n".join(lines[:rule + 1] + [first_row.replace("|", " ", 2)] + lines[rule + 2:])
    with pytest.raises(ParseError, match="nvidia_smi"):
        parse("nvidia_smi", damaged)
    # Its second and third rows swapped: the figures were read from the wrong row (no power, MIG mode '0% Default').
    swapped = "\n".join(lines[:rule + 2] + [lines[rule + 3], lines[rule + 2]] + lines[rule + 4:])
    with pytest.raises(ParseError, match="GPU blocks"):
        parse("nvidia_smi", swapped)


# ---- df -----------------------------------------------------------------------------------------------------------------

DF_TWO_PATHS = "$ df -B1 --output=target,avail / /home\nMounted on       Avail\n/          80579964928\n/home      1000000000\n"


def test_df_row_it_cannot_read_or_a_row_missing_is_refused():
    assert [r.target for r in parse("df", DF_TWO_PATHS)] == ["/", "/home"]
    with pytest.raises(ParseError, match="rows of 2 columns"):
        parse("df", DF_TWO_PATHS.replace("/home      1000000000", "/home"))  # cut: was left out
    with pytest.raises(ParseError, match="for each of the 2 paths"):
        parse("df", DF_TWO_PATHS.replace("/home      1000000000\n", ""))  # lost: one filesystem fewer
    with pytest.raises(ParseError, match="unit"):
        parse("df", DF_TWO_PATHS.split("\n", 1)[1])  # bare Avail without its -B1: was read as 1K blocks (1024x)


# ---- docker compose ps, dpkg-query ----------------------------------------------------------------------------------------

PS = ("NAME        IMAGE                 COMMAND                  SERVICE   CREATED          STATUS                    PORTS\n"
      "gb10-vllm   example/vllm:latest   \"vllm serve /models\u2026\"   vllm      14 minutes ago   Up 13 minutes (healthy)\n")


def test_compose_ps_row_moved_against_its_header_still_reads_its_status():
    # A wide character shifted the row: its cells were cut at the header's positions and the state read "unknown".
    (row,) = parse("compose_ps", PS)
    assert (row.name, row.state, row.health, row.service) == ("gb10-vllm", "running", "healthy", "vllm")


def test_compose_ps_row_without_a_status_or_listed_twice_is_refused():
    header, row = PS.splitlines()
    with pytest.raises(ParseError, match="a status"):
        parse("compose_ps", PS + header + "\n")  # the header again: was a container named NAME in state unknown
    with pytest.raises(ParseError, match="listed twice"):
        parse("compose_ps", PS + row + "\n")


def test_dpkg_query_line_it_cannot_read_or_listed_twice_is_refused():
    good = "openssh-server install ok installed\nlibc6 install ok installed\n"
    assert [p.package for p in parse("dpkg_query", good)] == ["openssh-server", "libc6"]
    with pytest.raises(ParseError, match="only 'PACKAGE WANT ok STATE'"):
        parse("dpkg_query", good + "nvidia-driver-580 hold ok inst\n")  # cut: was skipped (the hold unseen)
    with pytest.raises(ParseError, match="listed twice"):
        parse("dpkg_query", good + "libc6 install ok installed\n")


# ---- ufw status, /proc/meminfo, free -------------------------------------------------------------------------------------

UFW = ("Status: active\n\nTo                         Action      From\n--                         ------      ----\n"
       "22/tcp                     ALLOW IN    Anywhere\n6379/tcp                   ALLOW IN    169.254.0.0/16\n")


def test_ufw_rule_line_it_cannot_read_or_listed_twice_is_refused():
    assert len(parse("ufw_status", UFW).rules) == 2
    with pytest.raises(ParseError, match="rule lines"):
        parse("ufw_status", UFW + "8000/tcp                   ALLO\n")  # cut: was skipped, a rule fewer
    with pytest.raises(ParseError, match="rule lines"):
        parse("ufw_status", UFW + "8000/tcp                   ALLOW IN\n")  # its source cut: was read as source "IN"
    with pytest.raises(ParseError, match="each rule once"):
        parse("ufw_status", UFW + "22/tcp                     ALLOW IN    Anywhere\n")


def test_meminfo_without_memavailable_from_a_kernel_that_prints_it_is_refused():
    modern = "MemTotal:       127601488 kB\nMemFree:         3139532 kB\nMemAvailable:   40174336 kB\nKReclaimable:     477352 kB\n"
    assert parse("meminfo", modern)["mem_available_gib"] == 38.313
    # MemAvailable lost from the paste: it read as a kernel before 3.14, the available memory "unknown".
    with pytest.raises(ParseError, match="MemAvailable"):
        parse("meminfo", modern.replace("MemAvailable:   40174336 kB\n", ""))


def test_free_mem_line_cut_short_is_refused():
    free = ("               total        used        free      shared  buff/cache   available\n"
            "Mem:             121          95          12           0          14          25\n")
    assert parse("free", "$ free -g\n" + free)["mem_available_gib"] == 25.0
    with pytest.raises(ParseError, match="6 figures"):
        parse("free", "$ free -g\n" + free[:free.index("  14")])  # was read with the available memory unknown


# ---- ip addr ------------------------------------------------------------------------------------------------------------

IP = """1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
5: enp1s0f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP group default qlen 1000
    link/ether 3c:6d:66:cc:b3:b7 brd ff:ff:ff:ff:ff:ff
    inet 169.254.94.252/16 scope global enp1s0f0np0
       valid_lft forever preferred_lft forever
"""


def test_ip_addr_lines_it_cannot_place_are_refused():
    assert [(i.name, i.ipv4) for i in parse("ip_addr", IP)] == [("lo", ["127.0.0.1/8"]), ("enp1s0f0np0", ["169.254.94.252/16"])]
    head = IP.splitlines()[4]
    # The QSFP interface's head lost: its address was read as the loopback's, the interface absent.
    with pytest.raises(ParseError, match="one link/ line per interface"):
        parse("ip_addr", IP.replace(head + "\n", ""))
    # The head cut short: read as an interface in state "unknown" without its MTU.
    with pytest.raises(ParseError, match="with its state"):
        parse("ip_addr", IP.replace(head, head.split(" qdisc")[0]))
    # An address line cut inside its prefix: read as 169.254.94.252/1.
    with pytest.raises(ParseError, match="with its scope"):
        parse("ip_addr", IP.split("    inet 169.254.94.252/16")[0] + "    inet 169.254.94.252/1")
    with pytest.raises(ParseError, match="MAC address of 6 bytes"):
        parse("ip_addr", IP.replace("link/ether 3c:6d:66:cc:b3:b7 brd ff:ff:ff:ff:ff:ff", "link/ether 3c:6d:66:cc:b3"))
    with pytest.raises(ParseError, match="each address once"):
        parse("ip_addr", IP + "    inet 169.254.94.252/16 scope global enp1s0f0np0\n")
    with pytest.raises(ParseError, match="'ip addr' lines"):
        parse("ip_addr", IP + "    inet 169.254.94\n")  # was skipped: an address fewer


# ---- ethtool ------------------------------------------------------------------------------------------------------------

ETHTOOL = ("Settings for enp1s0f1np1:\n\tSupported ports: [ FIBRE ]\n\tSpeed: 200000Mb/s\n\tLanes: 4\n\tDuplex: Full\n"
           "\tAuto-negotiation: on\n\tPort: Direct Attach Copper\n\tLink detected: yes\n")


def test_ethtool_value_it_cannot_read_or_a_cut_block_is_refused():
    (link,) = parse("ethtool", ETHTOOL)
    assert (link.speed_mbps, link.link_detected) == (200000, True)
    with pytest.raises(ParseError, match="a Speed value"):
        parse("ethtool", ETHTOOL.replace("200000Mb/s", "2000"))  # cut: was a link of unknown speed
    with pytest.raises(ParseError, match="a Link detected value"):
        parse("ethtool", ETHTOOL.replace("Link detected: yes", "Link detected: y"))  # was "not known"
    with pytest.raises(ParseError, match="'Link detected:' at the end"):
        parse("ethtool", ETHTOOL.replace("\tLink detected: yes\n", ""))  # cut before its last line


def test_proc_driver_version_cut_at_its_version_is_refused():
    line = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.126.09  Release Build  (dvs-builder@U22)  Wed Jan  7 2026\n"
    assert parse("proc_driver_nvidia_version", line).version == "580.126.09"
    with pytest.raises(ParseError, match="build after the version"):
        parse("proc_driver_nvidia_version", line[:line.index("580.12") + 6])  # was read as driver 580.12


# ---- ibstat, ibv_devinfo ------------------------------------------------------------------------------------------------

IBSTAT = ("CA 'rocep1s0f0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.45.4028\n\tPort 1:\n"
          "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 200\n\t\tPort GUID: 0xfe4ceafffef94234\n"
          "\t\tLink layer: Ethernet\n")
IBSTAT_2 = IBSTAT.replace("rocep1s0f0", "rocep1s0f1").replace("Active", "Down").replace("LinkUp", "Disabled")


def test_ibstat_values_it_cannot_read_or_a_lost_ca_line_are_refused():
    assert [(p.rdma_device, p.state) for p in parse("ibstat", IBSTAT + IBSTAT_2)] == [("rocep1s0f0", "up"),
                                                                                      ("rocep1s0f1", "down")]
    with pytest.raises(ParseError, match="port State"):
        parse("ibstat", IBSTAT.replace("State: Active", "State: Act"))  # was a port of no state
    with pytest.raises(ParseError, match="each port of CA 'rocep1s0f0' once"):
        parse("ibstat", IBSTAT + IBSTAT_2.replace("CA 'rocep1s0f1'\n", ""))  # the down port read as rocep1s0f0's
    with pytest.raises(ParseError, match="Port GUID"):
        parse("ibstat", IBSTAT.replace("0xfe4ceafffef94234", "0xfe4c"))


DEVINFO = ("hca_id:\trocep1s0f0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.45.4028\n"
           "\tnode_guid:\t\t\t4cbb:4703:002d:1a16\n\tsys_image_guid:\t\t\t4cbb:4703:002d:1a16\n\tphys_port_cnt:\t\t\t1\n"
           "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t1024 (3)\n"
           "\t\t\tlink_layer:\t\tEthernet\n\n")


def test_ibv_devinfo_lines_it_cannot_place_are_refused():
    second = DEVINFO.replace("rocep1s0f0", "rocep1s0f1").replace("PORT_ACTIVE (4)", "PORT_DOWN (1)")
    assert [(h.rdma_device, h.ports[0].state) for h in parse("ibv_devinfo", DEVINFO + second)] == [
        ("rocep1s0f0", "up"), ("rocep1s0f1", "down")]
    with pytest.raises(ParseError, match="each port of rocep1s0f0 once"):
        parse("ibv_devinfo", DEVINFO + second.replace("hca_id:\trocep1s0f1\n", ""))  # its port read as rocep1s0f0's
    with pytest.raises(ParseError, match="port state"):
        parse("ibv_devinfo", DEVINFO.replace("PORT_ACTIVE (4)", "PORT_ACT"))  # was "down"
    with pytest.raises(ParseError, match="the port blocks of rocep1s0f1"):
        parse("ibv_devinfo", DEVINFO + "hca_id:\trocep1s0f1\n")  # cut after its hca_id: was an HCA with no port
    with pytest.raises(ParseError, match="a port number"):
        parse("ibv_devinfo", DEVINFO.replace("\t\tport:\t1\n", "\t\tport:\n"))  # the port was left out


# ---- perftest -----------------------------------------------------------------------------------------------------------

def test_perftest_lost_address_line_or_misplaced_row_is_refused():
    from .test_parsers_perftest_nccl import DASH, HEADER_MB

    text = HEADER_MB.replace("Number of qps   : 2", "Number of qps   : 1") + f""" local address: LID 0000 QPN 0x0a11 PSN 0x1b2c3d
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:172:16:9:1
 remote address: LID 0000 QPN 0x0b07 PSN 0x3c4d5e
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:172:16:9:2
{DASH}
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 4096       5000             90.10              90.00              2.74
 65536      5000             98.10              97.95              0.186830
{DASH}
"""
    assert parse("perftest", text).bw_average_gbps == 97.95
    # A QP's remote address line lost: the local GID's address read as the only one, the remote as the next QP's.
    with pytest.raises(ParseError, match="remote address lines"):
        parse("perftest", text.replace(" remote address: LID 0000 QPN 0x0b07 PSN 0x3c4d5e\n", ""))
    # The largest size's row repeated after the smaller one: it was averaged in twice.
    row = " 4096       5000             90.10              90.00              2.74\n"
    with pytest.raises(ParseError, match="each message size once"):
        parse("perftest", text.replace(f"0.186830\n{DASH}", f"0.186830\n{row}{DASH}"))


# ---- nccl-tests ---------------------------------------------------------------------------------------------------------

def test_nccl_rows_or_ranks_that_do_not_add_up_are_refused():
    from .test_parsers_perftest_nccl import SWEEP, _two_node

    text = _two_node("", SWEEP)
    plain = parse("nccl_tests", text)
    rows = [line for line in SWEEP.splitlines() if line.strip()]
    # A row lost from the middle of the sweep: the rest read as the run, their mean no longer the printed average.
    with pytest.raises(ParseError, match="average to the printed"):
        parse("nccl_tests", text.replace(rows[1] + "\n", ""))
    with pytest.raises(ParseError, match="each size once"):
        parse("nccl_tests", text.replace(rows[-1] + "\n", rows[-1] + "\n" + rows[0] + "\n"))
    rank_1 = next(line for line in text.splitlines() if "Rank  1" in line)
    with pytest.raises(ParseError, match="each rank line once"):
        parse("nccl_tests", text.replace(rank_1, rank_1 + "\n" + rank_1))
    assert plain.hosts == ["gx-left", "gx-right"]
