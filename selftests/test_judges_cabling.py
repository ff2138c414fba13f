"""The cabling judge and the topology's rule, on our captures of a simulated ring of three (real ping and ip output)."""

import dataclasses

import pytest
import yaml

from gb10check.checks.cabling import judge_cabling
from gb10check.cluster import ClusterError, parse_cluster
from gb10check.facts import parse
from gb10check.facts.ip import link_local_owners
from gb10check.remedies import Code
from gb10check.sim import topology

from .conftest import read_capture

D = "ours/ip_ethtool/sim-ring3-"
A, B, C = "thinkstationpgx-30", "thinkstationpgx-32", "thinkstationpgx-34"


def ring_file(**change) -> str:
    doc = yaml.safe_load(topology.cluster_yaml(topology.ring(3), "/tmp/x", topology="ring"))
    doc.update(change)
    return yaml.safe_dump(doc)


@pytest.fixture(scope="module")
def owners():
    out = {}
    for rank, name in enumerate((A, B, C)):
        out.update(link_local_owners(name, parse("ip_j_addr", read_capture(D + f"ip-j-addr-rank{rank}.json"))))
    return out


def peers(name):
    return parse("port_peers", read_capture(D + name))


def test_the_ring_rule_is_nvidias_port_0_to_the_next_nodes_port_1():
    c = parse_cluster(ring_file())
    a, b, cc = c.by_rank()
    assert [(n.name, l.netdev) for n, l in c.expected_peers(a, a.links[0])] == [(B, "enp1s0f1np1")]
    assert [(n.name, l.netdev) for n, l in c.expected_peers(a, a.links[3])] == [(C, "enP2p1s0f0np0")]


def test_the_healthy_ring_passes_on_what_its_ports_answered(owners):
    assert judge_cabling((A, "enp1s0f0np0"), "ring", [(B, "enp1s0f1np1")], peers("port-peers-rank0-enp1s0f0np0.txt"), owners) == []
    assert judge_cabling((A, "enp1s0f1np1"), "ring", [(C, "enp1s0f0np0")], peers("port-peers-rank0-enp1s0f1np1.txt"), owners) == []


def test_a_port_reaching_the_wrong_node_names_both_and_the_cable_to_move(owners):
    [f] = judge_cabling((A, "enp1s0f0np0"), "ring", [(C, "enp1s0f1np1")], peers("port-peers-rank0-enp1s0f0np0.txt"), owners)
    assert f.code.value == "cable-wrong-peer"
    assert f"its cable reaches {B} enp1s0f1np1" in f.seen and f"{C} enp1s0f1np1" in f.expected
    assert f"move the cable at {A} enp1s0f0np0 (now to {B} enp1s0f1np1) to {C} enp1s0f1np1" in f.text


def test_the_same_port_index_on_both_ends_is_said(owners):
    p = dataclasses.replace(peers("port-peers-rank0-enp1s0f1np1.txt"))
    [f] = judge_cabling((A, "enp1s0f1np1"), "ring", [(B, "enp1s0f0np0")], p, owners)
    assert "its cable reaches thinkstationpgx-34 enp1s0f0np0" in f.seen
    own = {k: ((B, "enp1s0f1np1") if v == (C, "enp1s0f0np0") else v) for k, v in owners.items()}
    [f] = judge_cabling((A, "enp1s0f1np1"), "ring", [(C, "enp1s0f0np0")], p, own)
    assert "(port 1 on both ends of the cable)" in f.seen


def test_a_link_down_reaches_nothing_and_a_switch_where_a_cable_should_be(owners):
    [f] = judge_cabling((B, "enp1s0f1np1"), "ring", [(A, "enp1s0f0np0")], peers("port-peers-rank1-link-down.txt"), owners)
    assert f.code.value == "cable-nothing" and "its cable reaches nothing" in f.seen
    both = dataclasses.replace(peers("port-peers-rank0-enp1s0f0np0.txt"),
                               responders=("fe80::54c1:52ff:fe9c:479", "fe80::48e5:24ff:fe88:e0b"))
    [f] = judge_cabling((A, "enp1s0f0np0"), "ring", [(B, "enp1s0f1np1")], both, owners)
    assert f.code is Code.CABLE_SWITCHED and "(a switch)" in f.seen
    [f] = judge_cabling((A, "enp1s0f0np0"), "switch", [(B, "enp1s0f1np1"), (C, "enp1s0f1np1")],
                        peers("port-peers-rank0-enp1s0f0np0.txt"), owners)
    assert f.code.value == "cable-beside-switch" and "move that cable to the switch" in f.text


@pytest.mark.parametrize("capture", ["port-peers-rank1-ipv6-off.txt", "port-peers-rank1-short-interval.txt"])
def test_ipv6_off_or_ping_refused_is_not_checked_never_a_pass(owners, capture):
    [f] = judge_cabling((B, "enP2p1s0f1np1"), "ring", [(A, "enP2p1s0f0np0")], peers(capture), owners)
    assert f.not_checked and f.code.value == "cabling-unknown"


def test_more_than_two_nodes_need_a_topology_and_a_typo_is_named():
    with pytest.raises(ClusterError, match=r"topology: a cluster of 3 nodes needs its cabling named: `topology: ring`"):
        parse_cluster(ring_file(topology=None))
    with pytest.raises(ClusterError, match=r"topology: got 'rnig' \(did you mean 'ring'\?\)"):
        parse_cluster(ring_file(topology="rnig"))
    doc = yaml.safe_load(ring_file())
    doc["nodes"][0]["links"][0]["peer"] = {"node": B, "netdev": "enp1s0f1np2"}
    with pytest.raises(ClusterError, match=r"links\[enp1s0f0np0\]\.peer\.netdev: thinkstationpgx-32 has no link 'enp1s0f1np2'"):
        parse_cluster(yaml.safe_dump(doc))
