"""NCCL across the nodes: nccl-tests where it is installed (across every node, and over each link pair alone), and our
collectives canary in the serving image, each rank with its own node's environment and its own HCAs: the transport
(NET/IB over RoCE, not the socket fallback), the channel map, the bus bandwidth and the small-message latency."""

import pytest

from gb10check.checks import nccl, nccl_config
from gb10check.checks.compose import service_environment
from gb10check.gather import nccl_all_gather, nccl_collectives, nccl_link_pair, parse_or_error, read, reads
from gb10check.remedies import Code
from gb10check.verdict import not_checked, report

pytestmark = [pytest.mark.network, pytest.mark.slow]


def rank_environments(cluster, head) -> dict[str, dict[str, str]]:
    """Each node's own service environment (interpolated with its .env): what its rank runs with."""
    return {n.name: service_environment(read(head.fleet.node(n.name), "vllm_service")[1]) for n in cluster.by_rank()}


def _nccl_tests_missing(missing: list[str], where: str) -> None:
    not_checked(Code.TOOL_MISSING, where, f"{' and '.join(f'`{m}`' for m in missing)} not on PATH",
                "MPI and NVIDIA's nccl-tests, to measure NCCL bus bandwidth", tool=" and ".join(missing),
                package="MPI (openmpi-bin) and NVIDIA's nccl-tests built with MPI=1")


def _judge_all_gather(where: str, out, hca: str, expect, floor: float, measurements, what: str) -> None:
    text = out.stdout + out.stderr
    result, _ = parse_or_error("nccl_tests", text)
    if result is not None and result.busbw_gbps is not None:
        measurements(what, where, result.busbw_gbps, "Gb/s")
    report(nccl.judge_run(where, out.rc, text, result, expect, hca=hca, floor=floor))


@reads("vllm_service")
def test_nccl_all_gather(cluster, head, measurements):
    """Every node at once, each rank with its own HCAs; the floor of the cluster's cabling (a ring's is lower)."""
    missing, hca, _, out = nccl_all_gather(cluster, head, rank_environments(cluster, head))
    if missing:
        _nccl_tests_missing(missing, head.name)
    where = f"{head.name}: all_gather_perf x{len(cluster.nodes)}"
    _judge_all_gather(where, out, hca, cluster.expect, cluster.nccl_floor_gbps, measurements, "nccl all_gather busbw")


@reads("vllm_service")
def test_nccl_link_pair(link_pair, cluster, head, measurements):
    """One link pair alone, one HCA and interface at each end: a weak link that the all-node average hides."""
    lp = link_pair
    missing, hca, _, out = nccl_link_pair(cluster, lp, rank_environments(cluster, head))
    if missing:
        _nccl_tests_missing(missing, lp.a.name)
    where = f"{lp.a.name}:{lp.a_link.rdma_device}<->{lp.b.name}:{lp.b_link.rdma_device}: all_gather_perf x2"
    _judge_all_gather(where, out, hca, cluster.expect, cluster.expect.min_nccl_link_busbw_gbps, measurements,
                      "nccl all_gather busbw (one link pair)")


CPU_BUILD = "has no CUDA NCCL backend"  # the canary's words for a CPU torch (the simulation's image)


@reads("vllm_service", "canary_runner")
def test_nccl_collectives(cluster, head, measurements):
    if len(cluster.nodes) < 2:
        pytest.skip("one node: no collective across nodes")
    fleet = head.fleet
    for n in cluster.by_rank():
        read(fleet.node(n.name), "canary_runner")  # docker usable and the image there (or deploy.canary_python)
    envs = rank_environments(cluster, head)
    got = nccl_collectives(head, envs)
    ranks = []
    for rank, node in enumerate(cluster.by_rank()):
        shown, out = got[node.name]
        if isinstance(out, Exception):
            raise out
        text = out.stdout + out.stderr
        if CPU_BUILD in text:
            pytest.skip(f"{node.name}: {cluster.deploy.canary_python or cluster.deploy.image}: torch {CPU_BUILD} "
                        "(a CPU build): no collective to time")
        run, _ = parse_or_error("nccl_collectives", text)
        subnets = {l.rdma_device: str(l.address.network) for l in node.links if l.rdma_device}
        ranks.append(nccl.RankRun(node.name, rank, subnets, out.rc, text, run))
    done = next((r.run for r in ranks if r.run is not None and r.run.done), None)
    where = " + ".join(r.node for r in ranks)
    build = cluster.deploy.nccl.build_id if cluster.deploy.nccl else None
    topology = [f for r in ranks if r.run is not None for f in nccl_config.judge_canary_topology_env(
        f"{r.node} (rank {r.rank})", cluster.cabling, len(cluster.nodes), r.run.env, envs[r.node], build)]
    if done is not None:
        for op in ("all_reduce", "all_gather"):
            if (row := done.largest(op)) is not None:
                measurements(f"nccl {op} busbw ({row.size >> 20} MB)", where, row.busbw_gbs * 8, "Gb/s")
        if (small := done.at("all_reduce", nccl.SMALL)) is not None:
            measurements("nccl all_reduce 8 KB", where, small.time_us, "us")
    report(nccl.judge_collectives(ranks, cluster.expect) + topology)

