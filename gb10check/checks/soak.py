"""Soak stage judges, pure: a recorded run (gb10check.soak's SoakResult / LongContext, gb10check.depth's Sweep) and
the resolved settings in, findings out. Each names what was seen, what was expected, where (the node, the stream, the
depth) and the fix; the first cause of an early end comes first, and requests that failed after it are its
consequences (counted in the figures, not blamed separately).
"""

from ..depth import Sweep, test_name
from ..remedies import Code
from ..soak import HANG_SIGNATURES, MEMORY_SIGNATURES, LongContext, Settings, SoakResult
from ..verdict import Finding
from . import ranks


def _watched(result: SoakResult) -> list[Finding]:
    """What the watch saw: the memory floor, ranks that exited, signatures in rank logs, what it could not read."""
    w, findings = result.watched, []
    if w.crossing is not None:
        c = w.crossing
        findings.append(Finding(Code.SOAK_MEMORY_FLOOR, c.node,
                                f"MemAvailable {c.gib:.1f} GiB at {w.crossing_at_s:.0f} s into the run; the watchdog stopped "
                                f"every rank in {c.reaction_s:.1f} s ({c.stopped})",
                                f">= {c.floor:g} GiB on every node the whole time (soak.min_mem_available)", floor=f"{c.floor:g}"))
    for e in w.exits:
        tail = "\n".join(e.last_lines[-12:])
        findings.append(Finding(Code.SOAK_RANK_EXITED, e.node,
                                f"rank {e.rank}'s container exited with code {e.code} at {e.at_s:.0f} s into the run"
                                + (f"; cause: {e.cause}" if e.cause else "") + f"\nlast log lines:\n{tail}",
                                "every rank running until the end", rank=e.rank, cause=e.cause or f"exit code {e.code}"))
    for s in w.signatures:
        code = (Code.SOAK_HANG_SIGNATURE if s.name in HANG_SIGNATURES else Code.SOAK_NO_MEMORY if s.name in MEMORY_SIGNATURES
                else Code.SOAK_ENGINE_ERROR)
        findings.append(Finding(code, s.node, f"rank {s.rank}'s log at {s.at_s:.0f} s into the run: {s.line!r} ({s.name})",
                                "no hang or engine error in any rank's log", hint=s.hint))
    for u in w.unreadable:
        node, _, what = u.partition(": ")
        findings.append(Finding(Code.COMMAND_FAILED, node, f"the watch could not read {what}",
                                "MemAvailable, the container state and the log of every rank through the run",
                                command="cat /proc/meminfo; docker inspect gb10-vllm; docker logs gb10-vllm"))
    return findings


def _stalls(result: SoakResult, what: str) -> list[Finding]:
    """The first stall, then which rank stopped (with every rank's evidence) when the run looked."""
    named = ranks.judge_ranks(result.rank_looks, f"{what} stream #{result.stalls[0].stream} stalled") \
        if result.stalls and result.rank_looks else []
    return named + [Finding(Code.SOAK_STALL, f"{what} stream #{s.stream}",
                    f"no answer for {s.silent_s:.1f} s while waiting for {s.waiting_for} (after {s.tokens} tokens; prompt "
                    f"~{s.prompt_tokens} tokens), {s.at_s:.0f} s into the run",
                    f"{s.waiting_for} within {s.limit_s:g} s (soak.stall_limit_s"
                    + (", soak.prefill_limit_s for the first)" if s.waiting_for == "its first token" and what == "long-context"
                       else ")"))
            for s in result.stalls[:1]]


def judge_sustained(where: str, result: SoakResult) -> list[Finding]:
    """The sustained load: no stall, no failed request, no rank lost, no signature, the memory floor held."""
    findings = _watched(result) + _stalls(result, "soak")
    failed = result.failed()
    if failed:
        text = "; ".join(f"#{s.index} at {s.started_s:.0f} s: {s.error}" for s in failed[:5])
        findings.append(Finding(Code.SOAK_REQUEST_ERROR, where, f"{len(failed)} of {len(result.streams)} requests failed: {text[:600]}",
                                "every request answered", first=(failed[0].error or "")[:160]))
    done = int(result.figures()["requests_done"])
    if not findings and done == 0:
        findings.append(Finding(Code.SOAK_NO_REQUESTS, where, f"0 requests completed in {result.elapsed_s:.0f} s",
                                "requests completed under load"))
    return findings


def judge_long_context(where: str, lc: LongContext) -> list[Finding]:
    """The long-context request: answered (the server's error text named when not), the nonce in the answer, no stall,
    the watch quiet."""
    findings = _watched(lc.soak) + _stalls(lc.soak, "long-context")
    s = lc.stream
    cause = lc.soak.cause_at()
    if s is not None and s.error and not s.aborted and (cause is None or s.ended_s is None or s.ended_s < cause - 2.5):
        findings.append(Finding(Code.LONG_CONTEXT_REFUSED, where,
                                f"a {lc.target_tokens}-token prompt (sized by {lc.sized_by}) -> {s.error[:400]}",
                                f"an answer to a prompt of {lc.target_tokens} tokens (soak.long_context_fraction of "
                                f"max_model_len {lc.max_model_len})", tokens=lc.target_tokens, max_model_len=lc.max_model_len))
    elif s is not None and not findings and not lc.found:
        answer = (s.content or s.reasoning or "")[:200]
        findings.append(Finding(Code.LONG_CONTEXT_NONCE, where,
                                f"answer {answer!r} to a {lc.prompt_tokens or lc.target_tokens}-token prompt with the nonce "
                                f"{lc.nonce} at its {lc.placement}",
                                f"the nonce {lc.nonce} in the answer"))
    return findings


def judge_depth(where: str, sweep: Sweep, cfg: Settings) -> list[Finding]:
    """Every depth's runs answered and timed; each depth's mean pp and tg t/s at or above its floor (when set)."""
    findings = []
    for r in sweep.runs:
        if r.error or r.pp_tok_s is None or r.tg_tok_s is None:
            seen = r.error or f"could not time it: prompt_tokens {r.prompt_tokens}, completion_tokens {r.completion_tokens}"
            findings.append(Finding(Code.DEPTH_RUN, f"{where} d{r.depth}", seen[:400],
                                    f"{test_name('pp', sweep.pp, r.depth)} and {test_name('tg', sweep.tg, r.depth)} answered "
                                    "and timed (usage chunk, streamed tokens)"))
            break
    for depth in sweep.depths:
        for what, floors, code in (("pp", cfg.min_pp_tok_s, Code.DEPTH_PP_SLOW), ("tg", cfg.min_tg_tok_s, Code.DEPTH_TG_SLOW)):
            mean = sweep.mean(depth, what)
            if depth in floors and mean is not None and mean < floors[depth]:
                n = sweep.pp if what == "pp" else sweep.tg
                findings.append(Finding(code, f"{where} {test_name(what, n, depth)}",
                                        f"{mean:.1f} t/s (mean of {len(sweep.values(depth, what))})",
                                        f">= {floors[depth]:g} t/s (soak.min_{what}_tok_s)", depth=depth))
    return findings
