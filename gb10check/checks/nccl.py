"""NCCL across the nodes: the transport the data took (from NCCL's channel lines), the channel map, the bus bandwidth and
the small-message latency: of nccl-tests (judge_nccl) and of our collectives canary (judge_collectives)."""

import re
from dataclasses import dataclass

from ..cluster import Expect
from ..facts.collectives import CollectiveRun, error_summary
from ..facts.nccl import NcclTest
from ..remedies import Code
from ..verdict import Finding


def judge_nccl(facts: NcclTest, expect: Expect, where: str, hca: str = "", floor: float | None = None) -> list[Finding]:
    """Findings for one nccl-tests run; floor: its bus bandwidth floor (Gb/s), the profile's all-node pair floor unless
    given (Cluster.nccl_floor_gbps for a ring, min_nccl_link_busbw_gbps for one link pair).

    The transport is judged from the channel lines (`... via NET/IB/0`, `via NET/Socket/0`), never from plug-in
    start-up lines: NCCL prints `NET/Socket : Using [0]eth0` and `Using network Socket` also in runs whose data
    goes over IB or never leaves the node. The bandwidth judged is the largest message size's bus bandwidth.
    """
    findings: list[Finding] = []
    if facts.error:
        # nccl-tests' own line says that it failed; NCCL's first WARN usually says why (a peer that did not answer ...)
        cause = next((w for w in facts.warnings if re.search(r"fail|timed out|refused|unreachable|error", w, re.I)), None)
        findings.append(Finding(Code.NCCL_RUN, where, facts.error + (f" (NCCL WARN {cause})" if cause else ""),
                                "an nccl-tests run that completes"))
    elif not facts.complete:
        got = f"{len(facts.rows)} result row(s)" if facts.rows else "no result rows"
        findings.append(Finding(Code.NCCL_RUN, where, f"the run was cut: {got} and no '# Avg bus bandwidth' line",
                                "an nccl-tests run that completes"))
    nets = [t for t in facts.transports if t.startswith("NET/")]
    if "NET/Socket" in nets:
        findings.append(Finding(Code.NCCL_SOCKET, where, f"channel lines via {', '.join(nets)} (socket fallback)",
                                "channel lines via NET/IB over RoCE", hca=hca))
    elif len(facts.hosts) > 1 and not facts.transports:
        findings.append(Finding(Code.NCCL_SOCKET, where, "no NCCL channel lines: the transport across the nodes is unknown "
                                "(NCCL_DEBUG=INFO not in effect?)", "channel lines via NET/IB over RoCE", warning=True, hca=hca))
    if facts.error or not facts.complete:
        return findings
    if facts.errors_found or facts.out_of_bounds_ok is False:
        # nccl-tests checks every element it received: a wrong one is data corrupted on the way, whatever the bandwidth
        sizes = facts.wrong_sizes
        seen = (f"wrong values in {len(sizes)} row(s) of the result table (#wrong > 0 at {', '.join(map(str, sizes[:3]))} bytes"
                f"{' ...' if len(sizes) > 3 else ''})" if sizes else "'# Out of bounds values' FAILED")
        findings.append(Finding(Code.NCCL_WRONG_VALUES, where, seen, "0 wrong values at every size"))
    busbw = facts.busbw_gbps if facts.busbw_gbps is not None else facts.avg_busbw_gbps
    floor = expect.min_nccl_busbw_gbps if floor is None else floor
    if busbw is None or busbw < floor:
        size = max((r.size_bytes for r in facts.rows), default=0)
        seen = (f"bus bandwidth {busbw:.1f} Gb/s ({busbw / 8:.2f} GB/s) at {size} bytes" if busbw is not None
                else "no bus bandwidth figure")
        findings.append(Finding(Code.NCCL_BANDWIDTH, where, seen, f">= {floor:g} Gb/s"))
    return findings


def judge_run(where: str, rc: int, output: str, facts: NcclTest | None, expect: Expect, hca: str = "",
              floor: float | None = None) -> list[Finding]:
    """A whole mpirun of nccl-tests: a run that printed no table (facts None) or died is NCCL_RUN with its telling lines."""
    if facts is None or (rc != 0 and not facts.error):
        lines = [l for l in output.splitlines() if "WARN" in l or "failure" in l or "unable" in l] or output.strip().splitlines()[-1:]
        return [Finding(Code.NCCL_RUN, where, f"exit {rc}: {' | '.join(lines)[:300]}", "an nccl-tests result table")]
    return judge_nccl(facts, expect, where, hca=hca, floor=floor)


# ---- the collectives canary: one process per node, each with its own node's environment ------------------------------

@dataclass
class RankRun:
    """One rank of the collectives canary: where it ran, that node's HCAs by subnet, and what it printed."""

    node: str
    rank: int
    hca_subnets: dict[str, str]  # the node's RDMA devices (its links in the cluster file) -> their subnet
    rc: int
    output: str
    run: CollectiveRun | None  # None: the output is not the canary's


SMALL = 8 << 10  # the small message a decode step's all_reduce is like


def _gbps(gbs: float) -> str:
    return f"{gbs * 8:.1f} Gb/s ({gbs:.2f} GB/s)"


def _failed_rank(r: RankRun) -> str | None:
    """Why this rank's canary did not finish, in its own words and NCCL's first WARN; None when it did."""
    run = r.run
    if run is not None and run.done and run.error is None and r.rc == 0:
        return None
    if run is None:
        lines = [l for l in r.output.splitlines() if l.strip()]
        return f"exit {r.rc}: {' | '.join(lines[-2:])[:300] or 'no output'}"
    why = error_summary(run.error) if run.error else (f"exit {r.rc}" if r.rc != 0 else "the run stopped before its last line")
    warn = next(iter(run.warnings), None)
    said = f" (NCCL WARN {warn[:200]})" if warn and warn not in why else ""
    return f"{why}{said} after {len(run.rows)} result line(s)"


def _subnet(r: RankRun, hca: str | None) -> str | None:
    return r.hca_subnets.get(hca) if hca else None


def judge_collectives(ranks: list[RankRun], expect: Expect) -> list[Finding]:
    """Findings for one run of the collectives canary across the ranks (rank order).

    - every rank finished (its done line; else its error and NCCL's first WARN);
    - the transport, from the channel lines of every rank: NET/Socket is the socket fallback and fails; ranks on
      different nodes joined by no NET channel at all mean NCCL_DEBUG=INFO was not in effect (a warning: unknown);
    - the channel map: each NET/IB channel's sending HCA and receiving HCA on one subnet (two subnets: the channel
      crosses between links, or a rank uses HCAs that are not its own); an HCA not among the node's links warns;
    - wrong values at any size fail; the bus bandwidth of the largest size of each collective against the profile's
      floor; the 8 KB all_reduce's time against the profile's latency bound (a warning: decode is slower, not broken).
    """
    findings: list[Finding] = []
    by_rank = {r.rank: r for r in ranks}
    across = len({r.node for r in ranks}) > 1
    where_all = " + ".join(f"{r.node} (rank {r.rank})" for r in ranks)
    failed = [(r, why) for r in ranks if (why := _failed_rank(r))]
    for r, why in failed:
        findings.append(Finding(Code.COLLECTIVES_RUN, f"{r.node} (rank {r.rank})", why,
                                "the canary's all_reduce and all_gather to run to the last size on every rank"))
    for r in ranks:
        run = r.run
        if run is None:
            continue
        sockets = [c for c in run.channels if c.transport == "NET/Socket"]
        if sockets:
            hca = run.env.get("NCCL_IB_HCA", "unset")
            found = ("NCCL found no IB device (NET/IB : No device found)" if run.net_ib_devices == [] else
                     f"NCCL's IB devices: {', '.join(run.net_ib_devices)}" if run.net_ib_devices else "no NET/IB line")
            findings.append(Finding(Code.NCCL_SOCKET, f"{r.node} (rank {r.rank})",
                                    f"{len(sockets)} channel line(s) via NET/Socket (socket fallback); {found}; its "
                                    f"NCCL_IB_HCA={hca}, NCCL_SOCKET_IFNAME={run.env.get('NCCL_SOCKET_IFNAME', 'unset')}",
                                    f"channel lines via NET/IB on this node's own HCAs ({', '.join(r.hca_subnets) or 'none known'})",
                                    hca=hca))
    if across and not any(c.transport.startswith("NET/") for r in ranks if r.run for c in r.run.channels) and not failed:
        findings.append(Finding(Code.NCCL_SOCKET, where_all, "no NCCL channel line across the nodes: the transport is unknown "
                                "(NCCL_DEBUG=INFO not in effect?)", "channel lines via NET/IB", warning=True, hca="unknown"))
    # The channel map: a channel's two ends, each from its own rank's line, on one subnet.
    for r in ranks:
        if r.run is None:
            continue
        for c in r.run.channels:
            if c.transport != "NET/IB" or c.side != "send" or c.src != r.rank:
                continue
            peer = by_rank.get(c.dst)
            back = next((p for p in (peer.run.channels if peer and peer.run else [])
                         if p.channel == c.channel and p.src == c.src and p.dst == c.dst and p.side == "receive"), None)
            ends = [(r, r.run.hca_of(c))] + ([(peer, peer.run.hca_of(back))] if back is not None else [])
            for node_run, hca in ends:
                if hca is not None and _subnet(node_run, hca) is None:
                    findings.append(Finding(Code.NCCL_CHANNEL_MAP, f"{node_run.node} (rank {node_run.rank})",
                                            f"channel {c.channel:02d} {c.src}->{c.dst} on {hca}, not an HCA of this node's links "
                                            f"({', '.join(node_run.hca_subnets) or 'none'})",
                                            "every channel on an HCA of the node's own links", warning=True))
            subnets = {_subnet(n, h) for n, h in ends if _subnet(n, h)}
            if len(subnets) > 1:
                (a, ha), (b, hb) = ends
                findings.append(Finding(Code.NCCL_CHANNEL_MAP, f"{a.node} (rank {a.rank}) -> {b.node} (rank {b.rank})",
                                        f"channel {c.channel:02d} sends on {a.node}'s {ha} ({_subnet(a, ha)}) and is received "
                                        f"on {b.node}'s {hb} ({_subnet(b, hb)})", "both ends of every channel on one subnet"))
    # The figures: every rank prints the same (each size's slowest rank); the first rank that finished is read.
    done = next((r for r in ranks if r.run is not None and r.run.done), None)
    if done is None or failed:
        return findings
    rows = done.run.rows
    if (bad := [row for row in rows if row.wrong]):
        findings.append(Finding(Code.NCCL_WRONG_VALUES, where_all, "wrong values in " + ", ".join(
            f"{row.op} at {row.size} bytes ({row.wrong})" for row in bad[:3]) + (" ..." if len(bad) > 3 else ""),
            "0 wrong values at every size"))
    for op in ("all_reduce", "all_gather"):
        row = done.run.largest(op)
        if row is None:
            findings.append(Finding(Code.COLLECTIVES_BANDWIDTH, where_all, f"no {op} result line", f"{op} up to 256 MB"))
        elif row.busbw_gbs * 8 < expect.min_collective_busbw_gbps:
            findings.append(Finding(Code.COLLECTIVES_BANDWIDTH, where_all,
                                    f"{op} bus bandwidth {_gbps(row.busbw_gbs)} at {row.size} bytes",
                                    f">= {expect.min_collective_busbw_gbps:g} Gb/s"))
    small = done.run.at("all_reduce", SMALL)
    if small is None:
        findings.append(Finding(Code.NCCL_LATENCY, where_all, f"no all_reduce line at {SMALL} bytes",
                                f"an all_reduce at {SMALL} bytes within {expect.max_collective_8k_latency_us:g} us", warning=True))
    elif small.time_us > expect.max_collective_8k_latency_us:
        findings.append(Finding(Code.NCCL_LATENCY, where_all, f"all_reduce of {SMALL} bytes takes {small.time_us:.1f} us",
                                f"<= {expect.max_collective_8k_latency_us:g} us", warning=True))
    return findings
