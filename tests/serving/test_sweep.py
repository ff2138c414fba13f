"""A concurrency sweep: 1, 2, 4 ... streams at once up to serving.sweep_max_concurrency (default deploy.max_num_seqs),
short streamed requests through the one client. Each level: every stream answered (no 5xx, none cut short) and the
engine alive after it (/health); output tok/s per level measured, tabled and charted in the report. A failing level
names itself, what failed, and the cause rank 0's log gives; the levels above it are not run (the engine is down or
unreliable there).

Part of the serving stage, not opt-in: engines that crash only at some batch sizes (quantized kernels with small-M
tiles at decode) pass one request and max_num_seqs requests of one shape, and die in production; the sweep's short
requests cost seconds.
"""

import pytest

from gb10check.checks import serving
from gb10check.gather import read, reads
from gb10check.report import SWEEP_MEASURE
from gb10check.verdict import NotChecked, report

pytestmark = pytest.mark.serving


def log_cause(head) -> str | None:
    """What rank 0's log says killed the engine, if it says; why it could not be read, if it could not."""
    try:
        return serving.log_cause(read(head, "server_log"))
    except NotChecked as exc:
        return f"(could not read it: {'; '.join(f.seen for f in exc.findings)})"


@reads("server_log")
def test_concurrency_sweep(served, head, cluster, measurements, tables):
    from gb10check.serving import run_level, sweep_levels, sweep_table  # with the openai client: only when it runs

    where, model = cluster.head.name, cluster.deploy.served_model_name
    top = cluster.serving.sweep_max_concurrency or cluster.deploy.max_num_seqs
    done, findings = [], []
    for n in sweep_levels(top):
        level = run_level(served, model, n, cluster.serving.sweep_max_tokens)
        done.append(level)
        measurements(SWEEP_MEASURE, f"{where} {n} stream{'s' if n != 1 else ''}", level.output_tok_s if level.output_tok_s is not None else "none (failed)", "tok/s")
        if serving.level_problems(level):
            findings = serving.judge_sweep_level(where, level, model, log_cause(head))
            break
    tables(f"concurrency sweep (1 to {top} streams, {cluster.serving.sweep_max_tokens} tokens each)", sweep_table(done, top))
    report(findings)
