"""Self-written inputs for the RDMA / ip / ethtool parsers: the output shapes real tools print that the
public captures lack (other versions, -v forms, IB ports, error lines). Names and values are invented;
the shapes follow the tools' sources (mlnx-tools ibdev2netdev and show_gids, iproute2, infiniband-diags
ibstat, rdma-core ibv_devinfo, ethtool). Garbled or foreign input must raise ParseError.
"""

import pytest

from gb10check.facts import KINDS, ParseError, parse, to_jsonable

from .conftest import read_capture
from .expected import EXPECTED

MINE = ["ibdev2netdev", "rdma_link", "show_gids", "ib_sysfs", "ibv_devinfo", "ibstat", "ip_addr", "ip_j_addr", "ethtool"]


def facts(kind, text):
    return to_jsonable(parse(kind, text))


# ---- ibdev2netdev -------------------------------------------------------------------------------

IBDEV_V = (
    "0000:01:00.0 rocep1s0f0 (MT4129 - NVD0000000087) fw 28.45.4028 port 1 (ACTIVE) ==> enp1s0f0np0 (Up)\n"
    "0000:01:00.1 rocep1s0f1 (MT4129 - NVD0000000087) fw 28.45.4028 port 1 (DOWN  ) ==> enp1s0f1np1 (Down)\n"
    "0002:01:00.0 roceP2p1s0f0 (MT4129 - NVD0000000087 - ConnectX-7 HHHL adapter card, 400GbE / NDR IB (default mode), "
    "Single-port OSFP, PCIe 5.0 x16, crypto disabled) fw 28.45.4028 port 1 (ACTIVE ) ==> enP2p1s0f0np0 (Up)\n"
    "000f:01:00.1 roceP2p1s0f1 (MT4129 - MCX75310AAS-NEAT) NVIDIA ConnectX-7 HHHL Adapter Card, 200GbE (default mode) / NDR200 IB "
    "fw 28.44.1036 port 1 (INIT  ) ==> enP2p1s0f1np1 (Down)  # left cage empty\n"
)


def test_ibdev2netdev_verbose_with_board_descriptions_padding_and_domains():
    got = facts("ibdev2netdev", IBDEV_V)
    assert [(g["pci"], g["rdma_device"], g["port_state"], g["netdev"], g["state"], g["firmware"]) for g in got] == [
        ("0000:01:00.0", "rocep1s0f0", "ACTIVE", "enp1s0f0np0", "up", "28.45.4028"),
        ("0000:01:00.1", "rocep1s0f1", "DOWN", "enp1s0f1np1", "down", "28.45.4028"),
        ("0002:01:00.0", "roceP2p1s0f0", "ACTIVE", "enP2p1s0f0np0", "up", "28.45.4028"),
        ("000f:01:00.1", "roceP2p1s0f1", "INIT", "enP2p1s0f1np1", "down", "28.44.1036"),
    ]
    assert got[0]["device_id"] == "MT4129" and got[0]["part_id"] == "NVD0000000087" and got[0]["description"] is None
    assert got[2]["description"].startswith("ConnectX-7 HHHL adapter card, 400GbE / NDR IB (default mode),")
    assert got[3]["part_id"] == "MCX75310AAS-NEAT" and got[3]["description"].endswith("/ NDR200 IB")


def test_ibdev2netdev_verbose_without_pci_or_vpd_and_na_fields():
    got = facts("ibdev2netdev", " mlx5_4 (MT4123 - MT_0000000223) ConnectX-6 VPI fw 20.31.1014 port 1 (ARMED ) ==> ib2 (Up)\n"
                                "0000:c1:00.0 mlx5_5 (NA - NA         )  fw NA port 1 (NA) ==> ib3 (NA)\n")
    assert got[0]["pci"] is None and got[0]["port_state"] == "ARMED" and got[0]["description"] == "ConnectX-6 VPI"
    assert (got[1]["firmware"], got[1]["port_state"], got[1]["part_id"], got[1]["state"]) == (None, None, None, "unknown")


def test_ibdev2netdev_verbose_padded_part_id_long_vpd_and_a_note():
    got = facts("ibdev2netdev",
                "0000:3b:00.1 mlx5_7 (MT4121 - 8812034    ) CX556A - ConnectX-5 QSFP28 fw 16.35.2000 port 1 (DOWN  ) ==> ens2f1 (Down)\n"
                "  0000:9a:00.0 mlx5_8 (MT41692 - 900-9D3B6-00CV-AA0) BlueField-3 B3220 P-Series FHHL DPU, 200GbE/NDR200, dual-port "
                "QSFP112, PCIe Gen5.0 x16, 32GB DDR5                          fw 32.41.1000 port 1 (ACTIVE) ==> ibs9f0 (Up) (o2ib1)\n")
    assert (got[0]["part_id"], got[0]["description"], got[0]["port_state"]) == ("8812034", "CX556A - ConnectX-5 QSFP28", "DOWN")
    assert (got[1]["device_id"], got[1]["firmware"], got[1]["netdev"], got[1]["state"]) == ("MT41692", "32.41.1000", "ibs9f0", "up")
    assert got[1]["description"].endswith("32GB DDR5")


def test_ibdev2netdev_verbose_gb10_numeric_domains():
    """Every line starts with a numeric PCI domain ("0000:", "0002:"): not an srun label; the address stays whole."""
    got = facts("ibdev2netdev",
                "0000:01:00.0 rocep1s0f0 (MT4129 - NVD0000000087) fw 28.45.4028 port 1 (ACTIVE) ==> enp1s0f0np0 (Up)\n"
                "0002:01:00.1 roceP2p1s0f1 (MT4129 - NVD0000000087) fw 28.45.4028 port 1 (DOWN  ) ==> enP2p1s0f1np1 (Down)\n")
    assert [(g["rdma_device"], g["netdev"], g["port_state"], g["state"], g["part_id"]) for g in got] == [
        ("rocep1s0f0", "enp1s0f0np0", "ACTIVE", "up", "NVD0000000087"), ("roceP2p1s0f1", "enP2p1s0f1np1", "DOWN", "down", "NVD0000000087")]
    assert got[0]["pci"] == "0000:01:00.0" and got[1]["pci"] == "0002:01:00.1"  # the front end keeps PCI domains


def test_ibdev2netdev_plain_aligned_commented_old_style():
    got = facts("ibdev2netdev", "mlx5_bond_0  port  1  ==>  bond0          (Up)    # LAG of both ports\n"
                                "rxe0 port 1 ==> eth1@if7 (Down) <- soft-RoCE\n"
                                "mlx4_0 port 2 <===> eth5\n")
    assert [(g["rdma_device"], g["port"], g["netdev"], g["state"]) for g in got] == [
        ("mlx5_bond_0", 1, "bond0", "up"), ("rxe0", 1, "eth1@if7", "down"), ("mlx4_0", 2, "eth5", "unknown")]


# ---- rdma link ----------------------------------------------------------------------------------


def test_rdma_link_ib_fields_old_format_no_netdev_and_json():
    got = facts("rdma_link", "link mlx5_2/1 subnet_prefix fe80:0000:0000:0000 lid 17 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP \n"
                             "link mlx5_3/1 state DOWN physical_state POLLING netdev ibp65s0\n"
                             "3/1: mlx5_4/1: state INIT physical_state LINK_UP netdev ens6f0\n"
                             "0/1: i40iw0/1: state DOWN physical_state NOP\n")
    assert [(g["rdma_device"], g["port_state"], g["phys_state"], g["netdev"], g["state"]) for g in got] == [
        ("mlx5_2", "ACTIVE", "LINK_UP", None, "up"), ("mlx5_3", "DOWN", "POLLING", "ibp65s0", "down"),
        ("mlx5_4", "INIT", "LINK_UP", "ens6f0", "down"), ("i40iw0", "DOWN", "NOP", None, "down")]
    assert (got[0]["lid"], got[0]["sm_lid"], got[0]["subnet_prefix"]) == (17, 1, "fe80:0000:0000:0000")
    js = facts("rdma_link", '[{"ifindex":2,"ifname":"rocep1s0f1","port":1,"state":"ACTIVE","physical_state":"LINK_UP",'
                            '"netdev":"enp1s0f1np1","netdev_index":5}]')
    assert js[0]["rdma_device"] == "rocep1s0f1" and js[0]["netdev"] == "enp1s0f1np1" and js[0]["state"] == "up"


# ---- show_gids ----------------------------------------------------------------------------------

GIDS_TABS = (
    "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
    "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
    "rocep1s0f1\t1\t0\tfe80:0000:0000:0000:4ebb:47ff:fe2d:1a17\t\t\tv1\tenp1s0f1np1\n"
    "rocep1s0f1\t1\t1\tfe80:0000:0000:0000:4ebb:47ff:fe2d:1a17\t\t\tv2\tenp1s0f1np1\n"
    "rocep1s0f1\t1\t2\t0000:0000:0000:0000:0000:ffff:0a0a:0b02\t10.10.11.2  \tv1\tenp1s0f1np1\n"
    "rocep1s0f1\t1\t3\t0000:0000:0000:0000:0000:ffff:0a0a:0b02\t10.10.11.2  \tv2\tenp1s0f1np1\n"
    "mlx5_6\t1\t0\tfe80:0000:0000:0000:b83f:d203:00a4:51c0\t\t\tv1\n"
    "\n"
    "n_gids_found=5\n"
)


def test_show_gids_tabs_ib_row_without_netdev():
    got = facts("show_gids", GIDS_TABS)
    assert len(got) == 5
    assert (got[3]["index"], got[3]["type"], got[3]["ipv4"], got[3]["netdev"]) == (3, "RoCE v2", "10.10.11.2", "enp1s0f1np1")
    assert (got[4]["rdma_device"], got[4]["type"], got[4]["netdev"], got[4]["ipv4"]) == ("mlx5_6", "RoCE v1", None, None)


def test_show_gids_row_count_must_match_n_gids_found():
    # A damaged row is refused as such (it is no row); a row missing altogether, by the count.
    with pytest.raises(ParseError, match="fe8:0000"):
        parse("show_gids", GIDS_TABS.replace("rocep1s0f1\t1\t1\tfe80", "rocep1s0f1\t1\t1\tfe8"))
    lines = GIDS_TABS.splitlines()
    row = next(n for n, line in enumerate(lines) if line.startswith("rocep1s0f1\t1\t1\t"))
    with pytest.raises(ParseError, match="n_gids_found=5"):
        parse("show_gids", "\n".join(lines[:row] + lines[row + 1:]))


def test_show_gids_header_without_rows_or_count_is_not_zero_gids():
    with pytest.raises(ParseError):
        parse("show_gids", "\n".join(GIDS_TABS.splitlines()[:2]))
    assert parse("show_gids", "\n".join(GIDS_TABS.splitlines()[:2]) + "\nn_gids_found=0\n") == []


# ---- sysfs --------------------------------------------------------------------------------------


def test_sysfs_grep_head_and_cat_forms():
    grep = ("/sys/class/infiniband/rocep1s0f1/ports/1/state:4: ACTIVE\n"
            "/sys/class/infiniband/rocep1s0f1/ports/1/phys_state:5: LinkUp\n"
            "/sys/class/infiniband/rocep1s0f1/ports/1/rate:200 Gb/sec (2X NDR)\n"
            "/sys/class/infiniband/rocep1s0f1/ports/1/link_layer:Ethernet\n"
            "/sys/class/infiniband/rocep1s0f1/ports/1/gids/0:fe80:0000:0000:0000:4ebb:47ff:fe2d:1a17\n"
            "/sys/class/infiniband/rocep1s0f1/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:0a0a:0b02\n"
            "/sys/class/infiniband/rocep1s0f1/ports/1/gids/4:0000:0000:0000:0000:0000:0000:0000:0000\n"
            "/sys/class/infiniband/rocep1s0f1/ports/1/gid_attrs/types/0:IB/RoCE v1\n"
            "/sys/class/infiniband/rocep1s0f1/ports/1/gid_attrs/types/3:RoCE v2\n"
            "/sys/class/infiniband/rocep1s0f1/ports/1/gid_attrs/ndevs/3:enp1s0f1np1\n"
            "/sys/class/infiniband/mlx5_1/ports/1/phys_state:3: Disabled\n"
            "/sys/class/infiniband/mlx5_1/ports/1/state:1: DOWN\n")
    got = facts("ib_sysfs", grep)
    assert [(p["rdma_device"], p["port_state"], p["phys_state"], p["state"]) for p in got] == [
        ("rocep1s0f1", "ACTIVE", "LinkUp", "up"), ("mlx5_1", "DOWN", "Disabled", "down")]
    assert [(g["index"], g["type"], g["ipv4"], g["netdev"]) for g in got[0]["gids"]] == [
        (0, "RoCE v1", None, None), (3, "RoCE v2", "10.10.11.2", "enp1s0f1np1")]
    head = ("==> /sys/class/infiniband/mlx5_3/ports/1/rate <==\n100 Gb/sec (2X HDR)\n\n"
            "==> /sys/class/infiniband/mlx5_3/ports/1/state <==\n4: ACTIVE\n")
    got = facts("ib_sysfs", "$ head /sys/class/infiniband/mlx5_3/ports/1/{rate,state}\n" + head)
    assert (got[0]["rdma_device"], got[0]["rate_gbps"], got[0]["rate_width"], got[0]["port_state"]) == ("mlx5_3", 100.0, "2X HDR", "ACTIVE")
    cat = ("user@spark-a1:~$ cat /sys/class/infiniband/roceP2p1s0f1/ports/1/rate\n200 Gb/sec (2X NDR)\n"
           "user@spark-a1:~$ cat /sys/class/infiniband/roceP2p1s0f1/ports/1/state\n1: DOWN\n")
    got = facts("ib_sysfs", cat)
    assert (got[0]["rdma_device"], got[0]["rate_gbps"], got[0]["port_state"], got[0]["state"]) == ("roceP2p1s0f1", 200.0, "DOWN", "down")


def test_sysfs_values_without_device_names_are_refused():
    with pytest.raises(ParseError):
        parse("ib_sysfs", "$ cat /sys/class/infiniband/*/ports/1/rate\n200 Gb/sec (2X NDR)\n40 Gb/sec (4X QDR)\n")


# ---- ibv_devinfo --------------------------------------------------------------------------------

DEVINFO_V = """hca_id:	mlx5_2
	transport:			InfiniBand (0)
	fw_ver:				28.39.1002
	node_guid:			a088:c203:0057:11e0
	sys_image_guid:			a088:c203:0057:11e0
	vendor_id:			0x02c9
	vendor_part_id:			4129
	hw_ver:				0x0
	board_id:			MT_0000000838
	phys_port_cnt:			1
	max_mr_size:			0xffffffffffffffff
	device_cap_flags:		0x21361c36
					BAD_PKEY_CNTR
					AUTO_PATH_MIG
	Device ports:
		port:	1
			state:			PORT_ACTIVE (4)
			max_mtu:		4096 (5)
			active_mtu:		4096 (5)
			sm_lid:			1
			port_lid:		23
			port_lmc:		0x00
			link_layer:		InfiniBand
			max_msg_sz:		0x40000000
			active_width:		4X (2)
			active_speed:		100.0 Gbps (128)
			phys_state:		LINK_UP (5)
			GID[  0]:		fe80:0000:0000:0000:a088:c203:0057:11e0
"""


def test_ibv_devinfo_verbose_ib_port_with_device_ports_wrapper():
    got = facts("ibv_devinfo", DEVINFO_V)
    assert (got[0]["rdma_device"], got[0]["firmware"], got[0]["board_id"], got[0]["vendor_part_id"]) == ("mlx5_2", "28.39.1002", "MT_0000000838", 4129)
    port = got[0]["ports"][0]
    assert (port["port_state"], port["state"], port["phys_state"], port["active_width"], port["rate_gbps"], port["port_lid"]) == (
        "ACTIVE", "up", "LINK_UP", "4X", 400.0, 23)
    assert port["gids"][0]["gid"] == "fe80:0000:0000:0000:a088:c203:0057:11e0"


def test_ibv_devinfo_tabs_expanded_two_ports():
    text = ("hca_id: mlx4_0\n        transport:                      InfiniBand (0)\n        fw_ver:                         2.42.5000\n"
            "        phys_port_cnt:                  2\n                port:   1\n                        state:                  PORT_DOWN (1)\n"
            "                        link_layer:             Ethernet\n\n                port:   2\n"
            "                        state:                  PORT_INIT (2)\n                        active_mtu:             2048 (4)\n")
    got = facts("ibv_devinfo", text)
    assert [(p["port"], p["port_state"], p["state"]) for p in got[0]["ports"]] == [(1, "DOWN", "down"), (2, "INIT", "down")]
    assert got[0]["ports"][1]["active_mtu"] == 2048


# ---- ibstat -------------------------------------------------------------------------------------


def test_ibstat_two_ports_fdr10_sdr_and_single_port_form():
    text = ("CA 'mlx4_1'\n\tCA type: MT4099\n\tNumber of ports: 2\n\tFirmware version: 2.42.5000\n\tHardware version: 1\n"
            "\tNode GUID: 0x0002c90300a1b2c0\n\tSystem image GUID: 0x0002c90300a1b2c3\n"
            "\tPort 1:\n\t\tState: Initializing\n\t\tPhysical state: LinkUp\n\t\tRate: 40 (FDR10)\n\t\tBase lid: 0\n"
            "\t\tLMC: 0\n\t\tSM lid: 0\n\t\tCapability mask: 0x02514868\n\t\tPort GUID: 0x0002c90300a1b2c1\n"
            "\tPort 2:\n\t\tState: Down\n\t\tPhysical state: Polling\n\t\tRate: 2.5\n\t\tBase lid: 0\n")
    got = facts("ibstat", text)
    assert [(p["port"], p["port_state"], p["state"], p["phys_state"], p["rate_gbps"], p["link_layer"]) for p in got] == [
        (1, "INIT", "down", "LinkUp", 40.0, None), (2, "DOWN", "down", "Polling", 2.5, None)]
    single = facts("ibstat", "CA: 'mlx5_0'\nPort 1:\nState: Active\nPhysical state: LinkUp\nRate: 400\nLink layer: InfiniBand\n")
    assert (single[0]["rdma_device"], single[0]["port_state"], single[0]["rate_gbps"], single[0]["firmware"]) == ("mlx5_0", "ACTIVE", 400.0, None)


# ---- ip addr ------------------------------------------------------------------------------------

IP_ADDR = """2: enp1s0f0np0: <BROADCAST,MULTICAST,SLAVE,UP,LOWER_UP> mtu 9000 qdisc mq master bond1 state UP group default qlen 1000
    link/ether 4c:bb:47:2d:1a:16 brd ff:ff:ff:ff:ff:ff
    altname enP1p1s0f0np0
3: bond1: <BROADCAST,MULTICAST,MASTER,UP,LOWER_UP> mtu 9000 qdisc noqueue state UP group default qlen 1000
    link/ether 4c:bb:47:2d:1a:16 brd ff:ff:ff:ff:ff:ff
    inet 10.20.0.7/24 brd 10.20.0.255 scope global bond1
       valid_lft forever preferred_lft forever
    inet 10.20.0.70/24 scope global secondary bond1
       valid_lft forever preferred_lft forever
7: ibp65s0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 2044 qdisc mq state UP group default qlen 256
    link/infiniband 00:00:10:49:fe:80:00:00:00:00:00:00:a0:88:c2:03:00:57:11:e0 brd 00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff
    inet 172.16.4.7/16 brd 172.16.255.255 scope global ibp65s0
       valid_lft forever preferred_lft forever
12: eth0@if13: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state LOWERLAYERDOWN group default
    link/ether 02:42:ac:11:00:02 brd ff:ff:ff:ff:ff:ff link-netnsid 0
14: ppp0: <POINTOPOINT,MULTICAST,NOARP,UP,LOWER_UP> mtu 1400 qdisc fq_codel state UNKNOWN group default qlen 3
    link/ppp
    inet 10.64.1.9 peer 10.64.1.1/32 scope global ppp0
       valid_lft forever preferred_lft forever
"""


def test_ip_addr_bond_slave_infiniband_veth_ppp():
    got = facts("ip_addr", IP_ADDR)
    assert [(i["name"], i["state"], i["mtu"], i["master"]) for i in got] == [
        ("enp1s0f0np0", "up", 9000, "bond1"), ("bond1", "up", 9000, None), ("ibp65s0", "up", 2044, None),
        ("eth0", "down", 1500, None), ("ppp0", "unknown", 1400, None)]
    assert got[0]["altnames"] == ["enP1p1s0f0np0"] and got[0]["addresses"] == []
    assert [(a["address"], a["flags"]) for a in got[1]["addresses"]] == [("10.20.0.7", []), ("10.20.0.70", ["secondary"])]
    assert got[2]["link_type"] == "infiniband" and got[2]["mac"].startswith("00:00:10:49:fe:80") and len(got[2]["mac"]) == 59
    assert got[3]["operstate"] == "LOWERLAYERDOWN"
    assert (got[4]["addresses"][0]["address"], got[4]["addresses"][0]["prefixlen"], got[4]["addresses"][0]["peer"]) == ("10.64.1.9", 32, "10.64.1.1/32")


def test_ip_oneline():
    got = facts("ip_addr", "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
                           "5: enP2p1s0f1np1    inet 192.168.210.12/24 brd 192.168.210.255 scope global enP2p1s0f1np1\\       "
                           "valid_lft forever preferred_lft forever\n"
                           "5: enP2p1s0f1np1    inet6 fe80::4ebb:47ff:fe2d:1a1b/64 scope link \\       valid_lft forever preferred_lft forever\n")
    assert [(i["name"], [f"{a['address']}/{a['prefixlen']}" for a in i["addresses"]]) for i in got] == [
        ("lo", ["127.0.0.1/8"]), ("enP2p1s0f1np1", ["192.168.210.12/24", "fe80::4ebb:47ff:fe2d:1a1b/64"])]


def test_ip_brief():
    got = facts("ip_addr", "lo               UNKNOWN        127.0.0.1/8 ::1/128\n"
                           "enp1s0f1np1      UP             192.168.200.12/24 fe80::4ebb:47ff:fe2d:1a17/64\n"
                           "enP2p1s0f1np1    DOWN           \n")
    assert [(i["name"], i["state"], [a["address"] for a in i["addresses"]]) for i in got] == [
        ("lo", "unknown", ["127.0.0.1", "::1"]), ("enp1s0f1np1", "up", ["192.168.200.12", "fe80::4ebb:47ff:fe2d:1a17"]),
        ("enP2p1s0f1np1", "down", [])]


def test_ip_json_filtered_family_and_runs_back_to_back():
    got = facts("ip_j_addr", '[{},{"ifindex":4,"ifname":"enp1s0f1np1","flags":["BROADCAST","UP"],"mtu":9000,"operstate":"UP",'
                             '"link_type":"ether","address":"4c:bb:47:2d:1a:17","addr_info":[{"family":"inet","local":"192.168.200.12",'
                             '"prefixlen":24,"scope":"global","valid_life_time":4294967295}]}]\n'
                             '[{"ifindex":6,"ifname":"enP2p1s0f1np1","mtu":9000,"operstate":"DOWN","addr_info":[]}]\n')
    assert [(i["name"], i["state"], i["mtu"]) for i in got] == [("enp1s0f1np1", "up", 9000), ("enP2p1s0f1np1", "down", 9000)]
    assert got[0]["addresses"][0]["address"] == "192.168.200.12" and got[0]["addresses"][0]["valid_lft_s"] is None


# ---- ethtool ------------------------------------------------------------------------------------


def test_ethtool_no_link_then_ethtool_i_joins_the_same_link():
    text = ("$ sudo ethtool enp1s0f0np0\nSettings for enp1s0f0np0:\n\tSupported ports: [ FIBRE ]\n\tSpeed: Unknown!\n"
            "\tDuplex: Unknown! (255)\n\tAuto-negotiation: on\n\tPort: Direct Attach Copper\n\tLink detected: no\n"
            "$ ethtool -i enp1s0f0np0\ndriver: mlx5_core\nversion: 6.11.0-1016-nvidia\nfirmware-version: 28.45.4028 (NVD0000000087)\n"
            "expansion-rom-version: \nbus-info: 0000:01:00.0\nsupports-statistics: yes\n")
    got = facts("ethtool", text)
    assert len(got) == 1
    link = got[0]
    assert (link["interface"], link["speed_mbps"], link["speed"], link["duplex"], link["link_detected"]) == (
        "enp1s0f0np0", None, "Unknown!", None, False)
    assert (link["driver"], link["firmware"], link["psid"], link["bus_info"]) == ("mlx5_core", "28.45.4028", "NVD0000000087", "0000:01:00.0")


def test_ethtool_i_alone_and_loop_of_greps():
    got = facts("ethtool", "driver: mlx5_core\nversion: 24.10-1.1.4\nfirmware-version: 28.42.1000 (MT_0000000838)\nbus-info: 0002:01:00.1\n")
    assert (got[0]["interface"], got[0]["driver"], got[0]["firmware"], got[0]["speed_mbps"]) == (None, "mlx5_core", "28.42.1000", None)
    loop = facts("ethtool", "$ for i in enp1s0f1np1 enP2p1s0f1np1; do ethtool $i | grep Speed; done\n\tSpeed: 200000Mb/s\n\tSpeed: 100000Mb/s\n")
    assert [link["speed_mbps"] for link in loop] == [200000, 100000]


# ---- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", MINE)
@pytest.mark.parametrize("text", ["Permission denied", "command not found: ibdev2netdev", "{}", "[]", "driver : 580.173.02\n",
                                  "Failed to get IB devices list: Function not implemented\n", "No IB devices found\n",
                                  "netlink error: no device matches name (offset 24)\n"])
def test_errors_and_foreign_text_are_refused(kind, text):
    if (kind, text) == ("ibv_devinfo", "No IB devices found\n"):
        assert parse(kind, text) == []  # its own answer where the machine has none: no devices, not a misreading
        return
    with pytest.raises(ParseError, match=rf"^{kind}: expected "):
        parse(kind, text)


FOREIGN = sorted((name, other) for name, (kind, _) in EXPECTED.items() for other in MINE if other != kind
                 and not (kind, other) in {("ip_addr", "ip_j_addr"), ("ip_j_addr", "ip_addr")})


@pytest.mark.parametrize(("name", "kind"), FOREIGN, ids=[f"{k}<-{n}" for n, k in FOREIGN])
def test_other_tools_output_is_refused(name, kind):
    """No capture of another tool (or another kind of mine) reads as facts of these parsers."""
    with pytest.raises(ParseError):
        parse(kind, read_capture(name))


def test_all_my_kinds_are_registered():
    assert set(MINE) <= set(KINDS)


# ---- newer tool releases ------------------------------------------------------------------------


def test_ibdev2netdev_empty_state_parentheses_read_as_unknown():
    # the script prints "()" when the netdev has no dev_id file (its get_link_state then echoes nothing)
    got = facts("ibdev2netdev", "mlx5_0 port 1 ==> ib0 ()\nrocep1s0f1 port 1 ==> enp1s0f1np1 (Up)\n"
                " mlx5_2 (NA - NA)  fw NA port 1 (DOWN  ) ==> eth5 ()\n")
    assert [(d["rdma_device"], d["netdev"], d["state"], d["link_state"], d["port_state"]) for d in got] == [
        ("mlx5_0", "ib0", "unknown", None, None), ("rocep1s0f1", "enp1s0f1np1", "up", "Up", None),
        ("mlx5_2", "eth5", "unknown", None, "DOWN")]


def test_ibv_devinfo_roce_v2_gids_printed_by_inet_ntop_and_effective_speed():
    text = ("hca_id:\trocep1s0f1\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.45.4028\n\tphys_port_cnt:\t\t\t1\n"
            "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\t\tEthernet\n"
            "\t\t\tactive_width:\t\t4X (2)\n\t\t\tactive_speed:\t\tinvalid speed (0)\n\t\t\teffective_speed:\t200.0 Gbps\n"
            "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:4ebb:47ff:fea1:b2c3, RoCE v1\n"
            "\t\t\tGID[  1]:\t\tfe80::4ebb:47ff:fea1:b2c3, RoCE v2\n"
            "\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:0a2a:0007, RoCE v1\n"
            "\t\t\tGID[  3]:\t\t::ffff:10.42.0.7, RoCE v2\n\n")
    port = facts("ibv_devinfo", text)[0]["ports"][0]
    assert [(g["index"], g["gid"], g["type"], g["ipv4"]) for g in port["gids"]] == [
        (0, "fe80:0000:0000:0000:4ebb:47ff:fea1:b2c3", "RoCE v1", None),
        (1, "fe80:0000:0000:0000:4ebb:47ff:fea1:b2c3", "RoCE v2", None),
        (2, "0000:0000:0000:0000:0000:ffff:0a2a:0007", "RoCE v1", "10.42.0.7"),
        (3, "0000:0000:0000:0000:0000:ffff:0a2a:0007", "RoCE v2", "10.42.0.7")]
    assert port["rate_gbps"] == 200.0


# ---- audit: layouts read wrong before ------------------------------------------------------------


def test_ethtool_link_detected_with_the_drivers_reason():
    # ethtool >= 5.10 over netlink: the extended link state (and sub-state) after "no", as mlx5 reports it
    text = ("Settings for enP2p1s0f0np0:\n\tSupported ports: [ Backplane ]\n\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n"
            "\tAuto-negotiation: on\n\tPort: Direct Attach Copper\n\tLink detected: no (Autoneg, No partner detected)\n"
            "Settings for enP2p1s0f1np1:\n\tSpeed: Unknown!\n\tLink detected: no (No cable)\n"
            "Settings for enp1s0f1np1:\n\tSpeed: 200000Mb/s\n\tLanes: 4\n\tLink detected: yes\n")
    got = facts("ethtool", text)
    assert [(g["interface"], g["speed_mbps"], g["link_detected"]) for g in got] == [
        ("enP2p1s0f0np0", None, False), ("enP2p1s0f1np1", None, False), ("enp1s0f1np1", 200000, True)]


IBSTATUS = """Infiniband device 'rocep1s0f1' port 1 status:
	default gid:	 fe80:0000:0000:0000:4ebb:47ff:fe2d:1a17
	base lid:	 0x0
	sm lid:		 0x0
	state:		 4: ACTIVE
	phys state:	 5: LinkUp
	rate:		 200 Gb/sec (2X NDR)
	link_layer:	 Ethernet

Infiniband device 'roceP2p1s0f1' port 1 status:
	default gid:	 unknown
	base lid:	 0x0
	sm lid:		 0x0
	state:		 1: DOWN
	phys state:	 3: Disabled
	rate:		 40 Gb/sec (4X QDR)
	link_layer:	 Ethernet

"""


def test_sysfs_ibstatus_blocks_name_their_device():
    # infiniband-diags' ibstatus script: one block per port, the values read from the same sysfs files
    got = facts("ib_sysfs", "$ ibstatus\n" + IBSTATUS)
    assert [(p["rdma_device"], p["port"], p["port_state"], p["phys_state"], p["rate_gbps"], p["link_layer"], p["state"]) for p in got] == [
        ("rocep1s0f1", 1, "ACTIVE", "LinkUp", 200.0, "Ethernet", "up"), ("roceP2p1s0f1", 1, "DOWN", "Disabled", 40.0, "Ethernet", "down")]
    assert [g["gid"] for g in got[0]["gids"]] == ["fe80:0000:0000:0000:4ebb:47ff:fe2d:1a17"] and got[1]["gids"] == []


def test_sysfs_rows_of_file_names_are_not_devices():
    # a loop that prints "state: 4: ACTIVE" without the device: no device named "state"
    with pytest.raises(ParseError):
        parse("ib_sysfs", "state: 4: ACTIVE\nphys state: 5: LinkUp\nrate: 200 Gb/sec (2X NDR)\n")


def test_ip_brief_with_metric_and_peer():
    # ip -br addr prints "metric N" after an address with a route priority (systemd-networkd DHCP) and "LOCAL peer P/N"
    got = facts("ip_addr", "lo               UNKNOWN        127.0.0.1/8 ::1/128 \n"
                           "enP7s7           UP             192.168.40.17/24 metric 100 fe80::3e6d:66ff:fe41:5a2b/64 \n"
                           "ppp0             UNKNOWN        10.64.1.9 peer 10.64.1.1/32 \n"
                           "enp1s0f1np1      UP             10.77.0.2/30 \n")
    assert [(i["name"], i["state"], [(a["address"], a["prefixlen"], a["peer"]) for a in i["addresses"]]) for i in got] == [
        ("lo", "unknown", [("127.0.0.1", 8, None), ("::1", 128, None)]),
        ("enP7s7", "up", [("192.168.40.17", 24, None), ("fe80::3e6d:66ff:fe41:5a2b", 64, None)]),
        ("ppp0", "unknown", [("10.64.1.9", 32, "10.64.1.1/32")]),
        ("enp1s0f1np1", "up", [("10.77.0.2", 30, None)])]


def test_show_gids_redrawn_as_a_markdown_table():
    text = ("|DEV |PORT |INDEX |GID |IPv4 |VER |DEV |\n|---|---|---|---|---|---|---|\n"
            "|rocep1s0f1 |1 |0 |fe80:0000:0000:0000:4ebb:47ff:fe2d:1a17 | |v1 |enp1s0f1np1|\n"
            "|rocep1s0f1 |1 |3 |0000:0000:0000:0000:0000:ffff:0a0a:0b02 |10.10.11.2 |v2 |enp1s0f1np1|\n"
            "n_gids_found=2\n")
    got = facts("show_gids", text)
    assert [(g["index"], g["type"], g["ipv4"], g["netdev"]) for g in got] == [
        (0, "RoCE v1", None, "enp1s0f1np1"), (3, "RoCE v2", "10.10.11.2", "enp1s0f1np1")]
