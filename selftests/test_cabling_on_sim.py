"""The cabling check on the simulated ring of three and switch of four: the healthy ones pass, each cabling fault fails
exactly the links it moved, naming the port, the port it reaches and the one it should (the pair's cabling runs in every
pair scenario of test_checks_on_sim). Only tests/network/test_cabling.py runs: a boot takes seconds, the check a few; the
healthy ones also run nccl-tests per link pair and across every node, and the cabling's NCCL environment check."""

import re

import pytest

from gb10check.sim import control, recordings, scenarios

from .simbed import require_provisioned_sim, run_suite

pytestmark = pytest.mark.sim

A, B, C, D = "thinkstationpgx-30", "thinkstationpgx-32", "thinkstationpgx-34", "thinkstationpgx-36"
P0, P1 = ("enp1s0f0np0", "enP2p1s0f0np0"), ("enp1s0f1np1", "enP2p1s0f1np1")
T = "tests/network/test_cabling.py::test_cabling"


def wrong(node, half, port, reaches, should, same=False):
    """Both logical links (halves) of a moved port: `reaches`/`should` are (node, port) and name the same half."""
    dev = (P0, P1)[port][half]
    names = lambda peer: f"{peer[0]} {(P0, P1)[peer[1]][half]}"
    tail = rf" \(port {port} on both ends of the cable\)" if same else ""
    return (f"{T}[{node}:{dev}]", rf"\[cable-wrong-peer\] {node}:{dev}: saw its cable reaches {names(reaches)}{tail}; "
            rf"expected {names(should)} \(topology: ring\)\n  fix: move the cable at {node} {dev} \(now to {names(reaches)}\) "
            rf"to {names(should)}")


EXPECTED = {
    ("ring", "healthy"): {},
    ("ring", "ring-crossed"): dict(wrong(n, h, *rest, same=True) for h in (0, 1) for n, *rest in [
        (A, 0, (C, 0), (B, 1)), (C, 0, (A, 0), (A, 1)), (A, 1, (B, 1), (C, 0)), (B, 1, (A, 1), (A, 0))]),
    ("ring", "ring-same-port"): dict(wrong(n, h, *rest, same=True) for h in (0, 1) for n, *rest in [
        (A, 0, (B, 0), (B, 1)), (B, 0, (A, 0), (C, 1)), (B, 1, (C, 1), (A, 0)), (C, 1, (B, 1), (B, 0))]),
    ("ring", "ring-link-down"): {
        f"{T}[{B}:enp1s0f1np1]": rf"\[cable-nothing\] {B}:enp1s0f1np1: saw its cable reaches nothing; expected {A} "
                                 rf"enp1s0f0np0 \(topology: ring\)\n  fix: {B} enp1s0f1np1 reaches no port: seat its cable",
        f"{T}[{A}:enp1s0f0np0]": rf"\[cable-nothing\] {A}:enp1s0f0np0: saw its cable reaches nothing; expected {B} enp1s0f1np1",
    },
    ("switch", "healthy"): {},
    ("switch", "switch-direct-link"): {
        f"{T}[{A}:enP2p1s0f0np0]": rf"\[cable-beside-switch\] {A}:enP2p1s0f0np0: saw its cable reaches {B} enP2p1s0f1np1 "
                                   rf"only \(a direct cable\); expected {B} enP2p1s0f0np0, {C} enP2p1s0f0np0, {D} enP2p1s0f0np0 "
                                   rf"\(topology: switch\) through the switch\n  fix: .* move that cable to the switch",
        **{f"{T}[{n}:enP2p1s0f0np0]": rf"\[cable-peer-missing\] {n}:enP2p1s0f0np0: saw its cable reaches .*; expected .*"
                                      rf"\n  fix: {n} enP2p1s0f0np0 reaches the switch but not {A} enP2p1s0f0np0"
           for n in (B, C, D)},
    },
}


@pytest.fixture(scope="module")
def bed():
    require_provisioned_sim()
    yield
    control.down(quiet=True)


def test_every_ring_and_switch_scenario_is_here():
    # the ring's NCCL environment scenarios are judged from their recordings (test_scenarios_replayed.py)
    assert {name for t, name in EXPECTED if name != "healthy"} == \
        {s.name for s in scenarios.SCENARIOS.values() if s.topology != "pair" and not recordings.replayed(s.name)}


@pytest.mark.parametrize("topo,name", list(EXPECTED))
def test_cabling_fails_exactly_the_moved_links(bed, topo, name):
    cluster = control.up(3 if topo == "ring" else 4, quiet=True, topo=topo)
    if name != "healthy":
        scenarios.apply(name)
    nodes = 3 if topo == "ring" else 4
    # The healthy cluster also runs nccl-tests over each of rank 0's link pairs alone (one HCA and interface at each end;
    # the others are alike and cost CI a second each) and across every node, the collectives canary (each rank meeting
    # rank 0 on the cable they share: a ring's third node cannot reach rank 0's first link), and the cabling's NCCL
    # environment check (gb10check's compose file sets what each cabling needs).
    nccl = ["tests/network/test_nccl.py", "tests/preflight/test_nccl_config.py", "-k",
            f"test_cabling or test_nccl_all_gather or test_nccl_collectives or test_nccl_topology_env or "
            f"(test_nccl_link_pair and {A})"
            ] if name == "healthy" else []
    run = run_suite(cluster, "tests/network/test_cabling.py", *nccl)
    cabling = 12 if topo == "ring" else 8
    link_pairs = [k for k in run.results if "::test_nccl_link_pair[" in k]
    assert len(run.results) == (cabling if not nccl else cabling + len(link_pairs) + 2 + nodes)
    if nccl:  # rank 0's: the ring's 2 cables of two logical links; the switch's 3 peers on each of its 2 subnets
        assert len(link_pairs) == (4 if topo == "ring" else 6) and all(f"[{A}:" in k for k in link_pairs)
        assert f"all_gather_perf x{nodes}" in run.stdout and "all_gather_perf x2" in run.stdout
    failed = {k: v.message for k, v in run.results.items() if v.outcome != "passed"}
    assert set(failed) == set(EXPECTED[(topo, name)]), "\n".join(f"{k}: {failed.get(k, '(passed)')[:600]}"
                                                                 for k in sorted(set(failed) ^ set(EXPECTED[(topo, name)])))
    for test_id, pattern in EXPECTED[(topo, name)].items():
        assert re.search(pattern, failed[test_id]), f"{test_id}:\n{failed[test_id]}"

