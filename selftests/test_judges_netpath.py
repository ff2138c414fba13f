"""Judges of the network path (checks/netpath.py): NetworkManager DHCP profiles on QSFP ports, on nmcli output written
here in its terse format (no NetworkManager on this machine), and the RoCE active MTU against the netdev's MTU, on a
real DGX Spark's ibv_devinfo (public capture)."""

from gb10check.checks import netpath
from gb10check.cluster import Link
from gb10check.facts import parse
from gb10check.remedies import Code

from .conftest import read_capture

# What gather.NM_PROFILES prints on a GB10 whose QSFP ports kept the profiles NetworkManager made for them: one active on
# a QSFP port, one bound to another with autoconnect on (it starts DHCP when the port comes up), one made inert (autoconnect
# off, not active: what scripts/nm-release-qsfp leaves), DHCP on the management port, link-local from netplan.
NM = """-- profile 7d1f2c58-4a3e-3b6a-9c59-0d4b1e6f8a21 --
device:enP7s7
connection.id:Wired connection 1
connection.type:802-3-ethernet
connection.interface-name:
connection.autoconnect:yes
ipv4.method:auto
-- profile 2a8e6c14-91b7-3f0d-8e55-6f2a9c3d7b10 --
device:enp1s0f0np0
connection.id:Wired connection 2
connection.type:802-3-ethernet
connection.interface-name:enp1s0f0np0
connection.autoconnect:yes
ipv4.method:auto
-- profile c0ffee00-1111-4222-8333-944445555666 --
device:
connection.id:netplan-enP2p1s0f0np0
connection.type:802-3-ethernet
connection.interface-name:enP2p1s0f0np0
connection.autoconnect:yes
ipv4.method:link-local
-- profile 0b5d7e11-2c3a-4f40-9a1b-7e8f9d0c1b2a --
device:
connection.id:cx7 port\\:2
connection.type:802-3-ethernet
connection.interface-name:enp1s0f1np1
connection.autoconnect:yes
ipv4.method:auto
-- profile 5e7a0c3d-6b1f-4d2e-8f90-a1b2c3d4e5f6 --
device:
connection.id:Wired connection 4
connection.type:802-3-ethernet
connection.interface-name:enP2p1s0f1np1
connection.autoconnect:no
ipv4.method:auto
"""
QSFP = {"enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"}
LINK = Link(netdev="enp1s0f1np1", rdma_device="rocep1s0f1", address="169.254.94.252/16")


def codes(findings):
    return [(f.code, f.where, f.warning) for f in findings]


def test_nmcli_profiles_parse():
    got = parse("nmcli_profiles", NM)
    assert got.networkmanager == "running" and len(got.profiles) == 5
    assert [p.autoconnect for p in got.profiles] == ["yes", "yes", "yes", "yes", "no"]
    assert (got.profiles[0].interface, got.profiles[0].device, got.profiles[0].ipv4_method) == (None, "enP7s7", "auto")
    assert got.profiles[3].name == "cx7 port:2" and got.profiles[3].device is None
    assert parse("nmcli_profiles", "-- nmcli: absent --\n").networkmanager == "absent"
    assert parse("nmcli_profiles", "-- NetworkManager: not running --\n").networkmanager == "not running"


def test_dhcp_profile_on_a_qsfp_port_fails():
    found = netpath.judge_nm_dhcp("pgx-30", parse("nmcli_profiles", NM), QSFP)
    assert codes(found) == [(Code.NM_DHCP_QSFP, "pgx-30:enp1s0f0np0", False), (Code.NM_DHCP_QSFP, "pgx-30:enp1s0f1np1", False)]
    assert found[0].text == (
        "[nm-dhcp-qsfp] pgx-30:enp1s0f0np0: saw NetworkManager profile 'Wired connection 2' "
        "(2a8e6c14-91b7-3f0d-8e55-6f2a9c3d7b10) with ipv4.method auto (DHCP) on enp1s0f0np0 (active); expected no DHCP on "
        "the QSFP ports (netplan's static or link-local addresses only)\n  fix: scripts/nm-release-qsfp --node pgx-30 (shows, "
        "then turns its autoconnect off and takes it down; --delete deletes it), or by hand on pgx-30: sudo nmcli connection "
        "delete 2a8e6c14-91b7-3f0d-8e55-6f2a9c3d7b10; the QSFP addresses come from netplan (dgx-spark-playbooks issue 56: "
        "DHCP profiles left on the QSFP ports)")
    assert "on enp1s0f1np1 (autoconnect on)" in found[1].text
    # DHCP on the management port, link-local on a QSFP port and an inert DHCP profile (autoconnect off, not active) are fine.
    assert netpath.judge_nm_dhcp("pgx-30", parse("nmcli_profiles", NM), {"enP2p1s0f0np0", "enP2p1s0f1np1"}) == []


def test_a_profile_without_its_autoconnect_printed_counts_as_autoconnect_on():
    older = parse("nmcli_profiles", NM.replace("connection.autoconnect:no\n", ""))  # gb10check before it asked for it
    assert [f.where for f in netpath.judge_nm_dhcp("pgx-30", older, {"enP2p1s0f1np1"})] == ["pgx-30:enP2p1s0f1np1"]


def test_qsfp_netdevs_are_the_links_and_every_connectx_netdev():
    mapped = parse("ibdev2netdev", "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nrocep1s0f1 port 1 ==> enp1s0f1np1 (Down)\n")
    assert netpath.qsfp_netdevs([LINK], mapped) == {"enp1s0f0np0", "enp1s0f1np1"}
    assert netpath.qsfp_netdevs([LINK], None) == {"enp1s0f1np1"}  # ibdev2netdev unreadable: the cluster file's links


def test_roce_mtu_against_the_netdev_mtu():
    hcas = parse("ibv_devinfo", read_capture("rdma_gids_devinfo/dgxspark-ibv_devinfo-4hca-port1-up-idx53062434312.txt"))
    active = next(p.active_mtu for h in hcas if h.rdma_device == "rocep1s0f1" for p in h.ports)
    assert active == 4096
    assert netpath.judge_roce_mtu("spark", LINK, 9000, active) == []
    assert netpath.judge_roce_mtu("spark", LINK, 4200, active) == []
    # The same port with its netdev at 1500: RoCE cannot carry 4096-byte frames there.
    [f] = netpath.judge_roce_mtu("spark", LINK, 1500, active)
    assert codes([f]) == [(Code.ROCE_MTU, "spark:rocep1s0f1", True)]
    assert f.text.startswith("[roce-mtu] spark:rocep1s0f1: saw RoCE active_mtu 4096 with enp1s0f1np1 MTU 1500; expected "
                             "active_mtu 1024 (the largest IB MTU that fits in MTU 1500 beside 96 bytes of RoCE headers)")
    # RoCE stuck at 1024 beside a 9000 MTU (the netdev's MTU raised, the RDMA port not following).
    [f] = netpath.judge_roce_mtu("spark", LINK, 9000, 1024)
    assert "saw RoCE active_mtu 1024 with enp1s0f1np1 MTU 9000; expected active_mtu 4096" in f.text
    assert netpath.judge_roce_mtu("spark", LINK, 1500, 1024) == []
    assert [netpath.roce_mtu_for(m) for m in (1500, 2200, 4191, 4192, 9000)] == [1024, 2048, 2048, 4096, 4096]


# ping -M do -s 8972 -c 1 -W 1 -I enp1s0f0np0 PEER, from a 9000-MTU end to a 1500-MTU one: the frame is dropped.
DF_LOST = """PING 169.254.94.252 (169.254.94.252) from 169.254.159.206 enp1s0f0np0: 8972(9000) bytes of data.

--- 169.254.94.252 ping statistics ---
1 packets transmitted, 0 received, 100% packet loss, time 0ms

"""
DF_OK = """PING 169.254.159.206 (169.254.159.206) from 169.254.94.252 enp1s0f0np0: 1472(1500) bytes of data.
1480 bytes from 169.254.159.206: icmp_seq=1 ttl=64 time=0.061 ms

--- 169.254.159.206 ping statistics ---
1 packets transmitted, 1 received, 0% packet loss, time 0ms
rtt min/avg/max/mdev = 0.061/0.061/0.061/0.000 ms
"""


def test_path_mtu_larger_on_one_end_fails():
    a = Link(netdev="enp1s0f0np0", rdma_device="rocep1s0f0", address="169.254.94.252/16")
    b = Link(netdev="enp1s0f0np0", rdma_device="rocep1s0f0", address="169.254.159.206/16")
    [f] = netpath.judge_path_mtu("pgx-32", b, "pgx-30", a, 1, DF_LOST, "", 8972)
    assert codes([f]) == [(Code.PATH_MTU, "pgx-32:enp1s0f0np0->pgx-30:enp1s0f0np0", False)]
    assert f.text == (
        "[path-mtu] pgx-32:enp1s0f0np0->pgx-30:enp1s0f0np0: saw no reply to a 8972-byte don't-fragment ping to 169.254.94.252 "
        "(MTU 9000 less 28 bytes of headers; 1 packets transmitted, 0 received, 100% packet loss, time 0ms); expected replies "
        "at enp1s0f0np0's MTU, as to a small ping\n  fix: set one MTU on both ends of the link (pgx-32 enp1s0f0np0 and "
        "pgx-30 enp1s0f0np0) and on any switch port between them, in netplan (9000 or 4200 everywhere, or 1500 everywhere): "
        "a jumbo MTU on one end only drops every full-sized frame while pings pass (dgx-spark-playbooks PR 103)")
    assert netpath.judge_path_mtu("pgx-30", a, "pgx-32", b, 0, DF_OK, "", 1472) == []


def test_a_profile_nmcli_could_not_show_is_not_checked_never_a_pass():
    """Our real capture of the gather on the sim's NetworkManager with a second profile nmcli listed but could not show
    (deleted between the list and the show): that profile is "could not check", the DHCP one still fails."""
    from gb10check.remedies import NOT_CHECKED

    from .conftest import read_capture

    text = read_capture("ours/nmcli/sim-nm-1.42.4-gather-profiles-dhcp-rank1.txt") + (
        "-- profile 0d8c2f4e-1111-4a2b-9c3d-5e6f7a8b9c0d --\ndevice:\n"
        "Error: 0d8c2f4e-1111-4a2b-9c3d-5e6f7a8b9c0d - no such connection profile.\n")
    found = netpath.judge_nm_dhcp("pgx-32", parse("nmcli_profiles", text), QSFP)
    assert [(f.code in NOT_CHECKED, f.code.value) for f in found] == [(True, "garbled-output"), (False, "nm-dhcp-qsfp")]
    assert "nmcli listed profile 0d8c2f4e-1111-4a2b-9c3d-5e6f7a8b9c0d but could not show it: Error:" in found[0].text
