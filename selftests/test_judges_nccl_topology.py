"""The NCCL environment each cabling needs (checks/nccl_config.judge_topology_env), on the settings published for each
cabling: NVIDIA's launch.sh --topology direct|ring|switch (NVIDIA/dgx-spark-playbooks nvidia/playbook-nccl), a
sparkrun ring's `cluster inspect` (spark-arena/sparkrun#157), a four-node ring's settings (MiaAI-Lab/DeepSeek-v4.1-Flash-
DGX-Sparks#3, alexellis/switchless-nccl); and nccl-tests per link pair and across every node, each rank with its own HCAs
and interface (gather/programs.py), with the floor of the cluster's cabling. The recorded fault scenarios on the simulated
ring are ring-nccl-no-routing and ring-nccl-plugin (test_checks_on_sim.py judges them from their recordings)."""

import pytest
import yaml

from gb10check import compose
from gb10check.checks import nccl, nccl_config
from gb10check.checks.compose import service_environment
from gb10check.cluster import parse_cluster
from gb10check.facts import parse
from gb10check.gather import Output, nccl_all_gather, nccl_link_pair
from gb10check.remedies import Code
from gb10check.sim import topology
from gb10check.verdict import fix

from .conftest import read_capture

# NVIDIA's launch.sh: a ring adds these two `-x` variables; direct and switch add nothing (the test's own are the
# management interface's, kept out here: they name no RDMA setting).
NVIDIA_RING = {"NCCL_IB_SUBNET_AWARE_ROUTING": "1", "NCCL_NET_PLUGIN": "none"}
# sparkrun#157's `sparkrun cluster inspect` of a ring of three (its NCCL variables as printed).
SPARKRUN_RING = {"NCCL_CROSS_NIC": "1", "NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "rocep1s0f0,rocep1s0f1,roceP2p1s0f0,roceP2p1s0f1",
                 "NCCL_IB_MERGE_NICS": "0", "NCCL_IB_SUBNET_AWARE_ROUTING": "1", "NCCL_IGNORE_CPU_AFFINITY": "1",
                 "NCCL_NET": "IB", "NCCL_NET_PLUGIN": "none"}
# A four-node ring's settings (MiaAI-Lab PR #3's switchless_ring_env_lines; switchless-nccl's runtime opt-in).
FOUR_RING = {"NCCL_ALGO": "Ring", "NCCL_SWITCHLESS_RING_ONLY": "1", "NCCL_SKIP_TREE_CONNECT": "1",
             "NCCL_IB_SUBNET_AWARE_ROUTING": "1", "NCCL_IB_MERGE_NICS": "0", "NCCL_NET_PLUGIN": "none", "NCCL_NET": "IB"}
PATCHED = "78cb83871792ec57d763d142e4cae26fc754ae284bcc81dcb2a7d50e17d4fa57"[:40]  # a build id deploy.nccl pins


def cluster(n: int, kind: str):
    nodes, cabling = topology.build(n, kind if kind != "pair" else None)
    return parse_cluster(topology.cluster_yaml(nodes, "/tmp/x", topology=cabling))


def said(f) -> str:
    return fix(f.code, **f.params)


def judge(kind: str, n: int, env: dict, pin: str | None = None):
    return nccl_config.judge_topology_env("a:gb10-vllm", kind, n, env, pin)


# ---- the rules, on the published settings -----------------------------------------------------------------------------

def test_the_published_ring_settings_pass_and_a_pair_or_switch_needs_none_of_them():
    assert judge("ring", 3, NVIDIA_RING) == [] and judge("ring", 3, SPARKRUN_RING) == []
    assert judge("pair", 2, {}) == [] and judge("switch", 4, {}) == []
    assert judge("switch", 4, {"NCCL_IB_SUBNET_AWARE_ROUTING": "1", "NCCL_NET_PLUGIN": "none"}) == []  # harmless there


def test_a_ring_without_subnet_aware_routing_or_with_a_net_plugin_fails_naming_the_variable():
    [f] = judge("ring", 3, {"NCCL_NET_PLUGIN": "none"})
    assert (f.code, f.seen, f.params["var"]) == (Code.NCCL_RING_ENV, "NCCL_IB_SUBNET_AWARE_ROUTING unset on a ring of 3",
                                                 "NCCL_IB_SUBNET_AWARE_ROUTING")
    assert "NCCL_IB_SUBNET_AWARE_ROUTING=1" in said(f) and "ibv_modify_qp" in said(f) and "sparkrun#174" in said(f)
    [f] = judge("ring", 3, {**NVIDIA_RING, "NCCL_NET_PLUGIN": "libnccl-net.so"})
    assert f.seen == "NCCL_NET_PLUGIN=libnccl-net.so on a ring of 3" and f.expected.startswith("NCCL_NET_PLUGIN=none")
    # no plugin named: NCCL would load an image's libnccl-net.so; the socket transport or IB off are as wrong
    assert {f.params["var"] for f in judge("ring", 3, {**NVIDIA_RING, "NCCL_NET_PLUGIN": "", "NCCL_NET": "Socket",
                                                       "NCCL_IB_DISABLE": "1"})} == {"NCCL_NET_PLUGIN", "NCCL_NET", "NCCL_IB_DISABLE"}
    assert judge("ring", 3, {**NVIDIA_RING, "NCCL_IB_SUBNET_AWARE_ROUTING": "0"})[0].seen.startswith("NCCL_IB_SUBNET_AWARE_ROUTING=0")


def test_a_ring_of_four_refuses_stock_nccl_with_the_fix():
    # the three-node settings on four nodes: no Ring algorithm, no patched NCCL's opt-in, no pinned build
    [f] = judge("ring", 4, NVIDIA_RING)
    assert f.code == Code.NCCL_RING_STOCK and not f.warning
    assert f.seen == ("a ring of 4: NCCL_ALGO unset; NCCL_SWITCHLESS_RING_ONLY unset and NCCL_SKIP_TREE_CONNECT unset; "
                      "deploy.nccl pins no build id (stock NCCL)")
    assert "ncclTransportTreeConnect" in said(f) and "deploy.nccl" in said(f) and "NCCL_ALGO=Ring" in said(f)
    # the published four-node settings, but the library is not pinned: still stock as far as anyone can show
    [f] = judge("ring", 4, FOUR_RING)
    assert f.seen == "a ring of 4: deploy.nccl pins no build id (stock NCCL)"
    assert judge("ring", 4, FOUR_RING, PATCHED) == []
    assert judge("ring", 4, {**FOUR_RING, "NCCL_SWITCHLESS_RING_ONLY": "0"}, PATCHED) == []  # the alias still opts in
    [f] = judge("ring", 4, {**FOUR_RING, "NCCL_ALGO": "Tree,Ring"}, PATCHED)
    assert f.seen == "a ring of 4: NCCL_ALGO=Tree,Ring"


def test_ring_only_settings_on_a_pair_or_switch_warn():
    found = judge("switch", 4, FOUR_RING)
    assert {(f.code, f.params["var"], f.warning) for f in found} == {
        (Code.NCCL_RING_ONLY, v, True) for v in ("NCCL_SWITCHLESS_RING_ONLY", "NCCL_SKIP_TREE_CONNECT", "NCCL_ALGO")}
    [f] = judge("pair", 2, {"NCCL_ALGO": "ring"})
    assert f.seen == "NCCL_ALGO=ring on a pair" and "tree" in said(f)


def test_the_canary_environment_says_only_what_the_compose_environment_does_not():
    # the image's ENV brings a plugin the compose environment does not override: said of the canary's rank only
    image_env = {**NVIDIA_RING, "NCCL_NET_PLUGIN": "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"}
    [f] = nccl_config.judge_canary_topology_env("b (rank 1)", "ring", 3, image_env, {"NCCL_IB_SUBNET_AWARE_ROUTING": "1"}, None)
    assert f.where == "b (rank 1): the canary's environment" and f.params["var"] == "NCCL_NET_PLUGIN"
    # the compose environment's own mistake is test_nccl_topology_env's: not told twice
    assert nccl_config.judge_canary_topology_env("b (rank 1)", "ring", 3, {}, {}, None) == []


def test_nccl_older_than_2_30_on_a_ring_fails():
    [f] = nccl_config.judge_ring_nccl_version("a", "img", "2.29.7", "ring")
    assert (f.code, f.seen) == (Code.NCCL_RING_VERSION, "NCCL 2.29.7 on a ring") and "v2.30.7-1" in said(f)
    assert nccl_config.judge_ring_nccl_version("a", "img", "2.30.7", "ring") == []
    assert nccl_config.judge_ring_nccl_version("a", "img", "2.28.9", "pair") == []


def test_gb10check_renders_what_each_cabling_needs():
    for n, kind in ((2, "pair"), (3, "ring"), (4, "switch")):
        c = cluster(n, kind)
        env = service_environment(compose.vllm_service(yaml.safe_load(compose.render(c)))[1])
        assert judge(c.cabling, n, env) == [], kind
    env = service_environment(compose.vllm_service(yaml.safe_load(compose.render(cluster(4, "ring"))))[1])
    assert (env["NCCL_ALGO"], env["NCCL_SWITCHLESS_RING_ONLY"]) == ("Ring", "1")
    assert [f.code for f in judge("ring", 4, env)] == [Code.NCCL_RING_STOCK]  # the patched library is the owner's to pin


# ---- nccl-tests: each rank its own HCAs and interface; one run per link pair ---------------------------------------------

class Ran:
    """A node handle that keeps the commands given to fleet.once (the programs' one way to run them) and answers rc 0."""

    def __init__(self, name: str):
        self.name, self.fleet, self.commands = name, self, []

    def once(self, name: str, command: str, timeout: float) -> Output:
        self.commands.append((name, command))
        return Output(command, 0, "", "")


def contexts(command: str) -> list[list[str]]:
    return [part.split() for part in command.removeprefix("mpirun ").split(" : ")]


def test_the_all_node_run_on_a_ring_gives_each_rank_its_own_hcas_and_the_link_rank_0_reaches_it_by():
    c = cluster(3, "ring")
    head = Ran(c.head.name)
    missing, hca, command, out = nccl_all_gather(c, head, {n.name: {"NCCL_IB_GID_INDEX": "3"} for n in c.nodes})
    a, b, cc = contexts(command)
    ring = c.by_rank()
    # rank 1 over its port 1 (rank 0's port 0 subnet), rank 2 over its port 0 (rank 0's port 1 subnet): never links[0]
    assert b[3] == f"{ring[1].links[2].ip}:1" and cc[3] == f"{ring[2].links[0].ip}:1"
    assert "NCCL_SOCKET_IFNAME=enp1s0f1np1" in b and "NCCL_SOCKET_IFNAME=enp1s0f0np0" in cc
    assert "NCCL_SOCKET_IFNAME=enp1s0f0np0,enp1s0f1np1" in a  # rank 0 listens where ranks 1 and 2 reach it
    assert all("NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1" in ctx for ctx in (a, b, cc))  # its links'
    # where its service names HCAs, the rank runs with those: what it serves with (a wrong one shows as the socket fallback)
    _, _, command, _ = nccl_all_gather(c, Ran(c.head.name), {ring[1].name: {"NCCL_IB_HCA": "=rocep1s0f1"}})
    assert "NCCL_IB_HCA==rocep1s0f1" in contexts(command)[1] and "NCCL_IB_HCA==rocep1s0f1" not in contexts(command)[2]
    assert all("NCCL_IB_GID_INDEX=3" in ctx and "NCCL_DEBUG=INFO" in ctx for ctx in (a, b, cc))
    assert hca.startswith(f"{ring[0].name}: =rocep1s0f0") and out is not None and not missing


def test_a_ring_of_four_reaches_its_far_node_by_its_management_address():
    c = cluster(4, "ring")
    _, _, command, _ = nccl_all_gather(c, Ran(c.head.name), {n.name: {"NCCL_SOCKET_IFNAME": "enP7s7"} for n in c.nodes})
    far = contexts(command)[2]
    assert far[3] == f"{c.by_rank()[2].address}:1" and "NCCL_SOCKET_IFNAME=enP7s7" in far  # its service's interface


@pytest.mark.parametrize("n", [3, 4])
def test_every_rank_of_a_ring_meets_rank_0_at_the_address_it_reaches_it_by(n):
    """A ring neighbour meets rank 0 on its own cable's subnet, a far node (a ring of four's) at rank 0's management
    address; the same address reaches the canary's store, the compose file's MASTER_ADDR and --master-addr (each
    node's .env), and Ray's GCS."""
    from gb10check.gather import collectives_command

    c = cluster(n, "ring")
    head = c.head
    for node in c.by_rank():
        shared = {l.address.network for l in node.links}
        want = next((l.ip for l in head.links if l.address.network in shared), head.address) if node is not head \
            else head.links[0].ip
        assert c.rendezvous_addr(node) == want
        _, shown = collectives_command(c, node, {})
        assert f"--rank {node.rank} --world {n} --master {want} " in shown
        assert f"MASTER_ADDR={want}\n" in compose.env_file(c, node)
    ring = c.by_rank()
    assert c.rendezvous_addr(ring[1]) != c.rendezvous_addr(ring[-1])  # the two neighbours meet rank 0 on two cables
    if n == 4:
        assert c.rendezvous_addr(ring[2]) == head.address
    text = compose.render(c)
    for node in ring:
        env = compose.parse_env(compose.env_file(c, node))
        svc = compose.interpolate(compose.vllm_service(yaml.safe_load(text))[1], env)
        assert svc["environment"]["MASTER_ADDR"] == c.rendezvous_addr(node)
        assert f'--master-addr "{c.rendezvous_addr(node)}" ' in svc["command"][0]


def test_one_link_pair_runs_from_its_first_end_with_one_hca_and_interface_each():
    c = cluster(3, "ring")
    lp = c.link_pairs()[1]
    a = Ran(lp.a.name)
    handle = type("LP", (), {"a": a, "a_link": lp.a_link, "b": Ran(lp.b.name), "b_link": lp.b_link})
    missing, hca, command, _ = nccl_link_pair(c, handle, {lp.a.name: {"NCCL_IB_HCA": "=everything"}})
    x, y = contexts(command)
    assert x[3] == f"{lp.a_link.ip}:1" and y[3] == f"{lp.b_link.ip}:1"
    assert f"NCCL_IB_HCA=={lp.a_link.rdma_device}" in x and f"NCCL_IB_HCA=={lp.b_link.rdma_device}" in y
    assert f"NCCL_SOCKET_IFNAME={lp.a_link.netdev}" in x and f"NCCL_SOCKET_IFNAME={lp.b_link.netdev}" in y
    assert hca == f"{lp.a.name}: ={lp.a_link.rdma_device}; {lp.b.name}: ={lp.b_link.rdma_device}"
    assert [name for name, _ in a.commands] == [lp.a.name] * 3 and not missing  # two `command -v`, then the run


@pytest.mark.parametrize("kind,n,floor", [("pair", 2, 160.0), ("switch", 4, 160.0), ("ring", 3, 73.0)])
def test_the_all_node_floor_is_the_cablings(kind, n, floor):
    assert cluster(n, kind).nccl_floor_gbps == floor


def test_a_ring_run_between_its_floor_and_the_pairs_passes_and_one_link_pair_has_its_own_floor():
    # the Dell pair's real all_gather_perf (183.7 Gb/s) judged against floors around it
    text = read_capture("nccl_tests/dell-promax-gb10-2node-all_gather_perf-16G.txt")
    got = parse("nccl_tests", text)
    c = cluster(3, "ring")
    # (its log has no NCCL_DEBUG=INFO channel lines: a warning of its own, not the floor's)
    assert [f.code for f in nccl.judge_run("a", 0, text, got, c.expect, floor=c.nccl_floor_gbps)] == [Code.NCCL_SOCKET]
    [_, f] = nccl.judge_run("a<->b", 0, text, got, c.expect, floor=190.0)
    assert f.code == Code.NCCL_BANDWIDTH and f.expected == ">= 190 Gb/s" and "10 GB/s on a ring of three" in said(f)
