"""NCCL across the nodes: the transport the data took (from NCCL's channel lines) and the bus bandwidth."""

import re

from ..cluster import Expect
from ..facts.nccl import NcclTest
from ..remedies import Code
from ..verdict import Finding


def judge_nccl(facts: NcclTest, expect: Expect, where: str, hca: str = "") -> list[Finding]:
    """Findings for one nccl-tests run.

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
    if busbw is None or busbw < expect.min_nccl_busbw_gbps:
        size = max((r.size_bytes for r in facts.rows), default=0)
        seen = (f"bus bandwidth {busbw:.1f} Gb/s ({busbw / 8:.2f} GB/s) at {size} bytes" if busbw is not None
                else "no bus bandwidth figure")
        findings.append(Finding(Code.NCCL_BANDWIDTH, where, seen, f">= {expect.min_nccl_busbw_gbps:g} Gb/s"))
    return findings


def judge_run(where: str, rc: int, output: str, facts: NcclTest | None, expect: Expect, hca: str = "") -> list[Finding]:
    """A whole mpirun of nccl-tests: a run that printed no table (facts None) or died is NCCL_RUN with its telling lines."""
    if facts is None or (rc != 0 and not facts.error):
        lines = [l for l in output.splitlines() if "WARN" in l or "failure" in l or "unable" in l] or output.strip().splitlines()[-1:]
        return [Finding(Code.NCCL_RUN, where, f"exit {rc}: {' | '.join(lines)[:300]}", "an nccl-tests result table")]
    return judge_nccl(facts, expect, where, hca=hca)
