"""The fabric-only judge (gb10check/checks/fabric.py) and the ss parser (gb10check/facts/ss.py), pure, on real `ss -tanp`
outputs from the simulated pair (selftests/captures/ss: a rank-like process connected to its peer over the link
192.168.101.0/24, and over the management network 198.18.5.0/24 to sshd and, refused by the firewall, to a Gloo-like port;
no public ss capture is kept under ../shared/captures)."""

import pytest

from gb10check.checks.fabric import judge_fabric
from gb10check.facts.ss import Socket, parse
from gb10check.facts._text import ParseError
from gb10check.remedies import Code

from .conftest import REPO

A, B = "thinkstationpgx-30", "thinkstationpgx-32"
MGMT = {"198.18.5.10": A, "198.18.5.11": B}
LINKS = {"192.168.101.10": A, "192.168.101.11": B}
API = 20001
CAPTURES = REPO / "selftests" / "captures" / "ss"


def capture(name):
    return (CAPTURES / name).read_text()


def test_ss_reads_every_socket_of_the_real_outputs_with_and_without_header():
    a = parse(capture(f"sim-a-{A}-ss-tanpH-link-and-mgmt.txt"))
    assert a == parse(capture(f"sim-a-{A}-ss-tanp-with-header.txt"))
    assert [(s.state, str(s), s.process) for s in a] == [
        ("LISTEN", "0.0.0.0:22 -> 0.0.0.0:*", "sshd (pid 71)"),
        ("ESTAB", "192.168.101.10:58396 -> 192.168.101.11:29500", "python3 (pid 615)"),
        ("ESTAB", "192.168.101.10:59662 -> 192.168.101.11:5557", "python3 (pid 615)"),
        ("ESTAB", "198.18.5.10:50036 -> 198.18.5.11:22", "python3 (pid 615)"),
        ("SYN-SENT", "198.18.5.10:59936 -> 198.18.5.11:29500", "python3 (pid 615)"),
        ("LISTEN", "[::]:22 -> [::]:*", "sshd (pid 71)")]
    b = parse(capture(f"sim-b-{B}-ss-tanpH-link-and-mgmt.txt"))
    mapped = [s for s in b if s.local_port == 5557 and s.state == "ESTAB"]
    assert [str(s) for s in mapped] == ["192.168.101.11:5557 -> 192.168.101.10:59662"]  # [::ffff:a.b.c.d] read as IPv4
    assert [s for s in b if s.local_port == 5557 and s.state == "LISTEN"][0].local == "*"


def test_ss_without_process_column_says_nothing_of_the_process():
    [s] = parse("ESTAB 0 0 192.168.101.10:58396 192.168.101.11:29500\n")
    assert s.processes == () and s.process is None


@pytest.mark.parametrize("text", ["ESTAB 0 0 thinkstationpgx-32:ssh 198.18.5.10:50036",  # ss without -n
                                  "Netid State Recv-Q\nudp UNCONN 0 0 0.0.0.0:68 0.0.0.0:*",
                                  "ESTAB 0 0 192.168.101.10:58396", "garbage line"])
def test_ss_refuses_what_it_cannot_read(text):
    with pytest.raises(ParseError):
        parse(text)


def test_connections_over_the_links_pass_and_ssh_over_management_is_management_traffic():
    for tag, node in (("a", A), ("b", B)):
        assert judge_fabric(node, parse(capture(f"sim-{tag}-{node}-ss-tanpH-link-and-mgmt.txt")), MGMT, LINKS, ["enP2p1s0f0np0"], API) == []


def test_a_rank_connection_on_the_management_network_fails_naming_it_its_process_and_the_variables():
    # a Gloo-like port the firewall let through on the management network: both ends, each from its own node
    a = parse(capture(f"sim-a-{A}-ss-tanpH-gloo-like-port-over-mgmt.txt"))
    [f] = judge_fabric(A, a, MGMT, LINKS, ["enP2p1s0f0np0"], API)
    assert f.code == Code.TRAFFIC_ON_MGMT and not f.warning and not f.not_checked
    assert f.text.startswith(f"[traffic-on-mgmt] {A}: saw 198.18.5.10:39976 -> 198.18.5.11:29500 ({B}'s management address), "
                             "process python3 (pid 2670); expected connections between nodes on the links' addresses"), f.text
    for fix in ("GLOO_SOCKET_IFNAME=enP2p1s0f0np0", "NCCL_SOCKET_IFNAME=enP2p1s0f0np0", "VLLM_HOST_IP=", "--node-ip-address"):
        assert fix in f.text, f.text
    b = parse(capture(f"sim-b-{B}-ss-tanpH-gloo-like-port-over-mgmt.txt"))
    [f] = judge_fabric(B, b, {"198.18.5.10": A}, {"192.168.101.10": A}, ["enP2p1s0f0np0"], API)
    assert f.seen == f"198.18.5.11:29500 -> 198.18.5.10:39976 ({A}'s management address), process python3 (pid 2612)"
    assert any(s.state == "TIME-WAIT" and s.process is None for s in b)  # a closed socket has no owner: not guessed


def test_a_client_of_the_served_api_on_another_node_is_management_traffic():
    b = parse(capture(f"sim-b-{B}-ss-tanpH-follower-to-head-api-over-mgmt.txt"))
    assert [str(s) for s in b if s.state == "ESTAB" and s.peer == "198.18.5.10"] == ["198.18.5.11:35300 -> 198.18.5.10:20001"]
    assert judge_fabric(B, b, {"198.18.5.10": A}, {"192.168.101.10": A}, [], API) == []
    [f] = judge_fabric(B, b, {"198.18.5.10": A}, {"192.168.101.10": A}, [], 8000)  # on any other port: a rank's traffic
    assert f.code == Code.TRAFFIC_ON_MGMT and "process python3 (pid 2496)" in f.seen


def test_no_connection_between_nodes_is_not_checked_never_a_pass():
    listening = [s for s in parse(capture(f"sim-a-{A}-ss-tanpH-link-and-mgmt.txt")) if s.state != "ESTAB"]
    [f] = judge_fabric(A, listening, MGMT, LINKS, ["enP2p1s0f0np0"], API)
    assert f.code == Code.FABRIC_UNSEEN and f.not_checked
    # a connection to the runner (not a cluster node) is not one between nodes
    runner = [Socket("ESTAB", "198.18.5.10", 20001, "198.18.5.1", 40000, (("vllm", 9),))]
    assert judge_fabric(A, runner, MGMT, LINKS, [], API)[0].code == Code.FABRIC_UNSEEN


def test_the_peers_addresses_sort_into_links_and_management_from_its_real_ip_addr():
    from gb10check.cluster import Link
    from gb10check.facts import parse as parse_kind
    from gb10check.checks.fabric import addresses_of

    ifaces = parse_kind("ip_j_addr", (CAPTURES / f"sim-b-{B}-ip-j-addr.json").read_text())
    links = [Link(netdev="enp1s0f0np0", address="169.254.159.206/16"), Link(netdev="enP2p1s0f0np0", address="192.168.101.11/24")]
    mgmt, fabric = addresses_of(B, ifaces, links)
    assert mgmt == {"198.18.5.11": B, "fe80::b8cf:9eff:fe92:4462": B}  # the management port's, its link-local too
    assert set(fabric) == {"169.254.159.206", "fe80::10e8:1eff:fe6c:a83b", "192.168.101.11", "fe80::885a:f8ff:feb9:ba83"}
    sockets = parse(capture(f"sim-a-{A}-ss-tanpH-link-and-mgmt.txt"))
    assert judge_fabric(f"{A}->{B}", sockets, mgmt, fabric, ["enP2p1s0f0np0"], API) == []
