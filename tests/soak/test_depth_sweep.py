"""Prompt processing and token generation tok/s at each of soak.depths (capped by max_model_len), one request at a
time, printed as llama-benchy prints its table (gb10check/depth.py says how each figure is measured); floors per
profile from soak.min_pp_tok_s / soak.min_tg_tok_s."""

import pytest

from gb10check import depth
from gb10check.checks import soak as judge
from gb10check.verdict import report

pytestmark = pytest.mark.soak


def test_depth_sweep(served, cluster, soak_settings, measurements, tables):
    cfg = soak_settings
    sweep = depth.sweep(served, cfg.model, cfg.depths, cfg.depth_prompt_tokens, cfg.depth_gen_tokens, cfg.depth_runs,
                        read_timeout_s=cfg.prefill_limit_s, skipped=cfg.depths_skipped)
    for d in sweep.depths:
        for what, n in (("pp", sweep.pp), ("tg", sweep.tg)):
            mean = sweep.mean(d, what)
            if mean is not None:
                measurements(f"depth {what} t/s", f"{cluster.head.name} {depth.test_name(what, n, d)}", mean, "t/s")
    tables(f"depth sweep ({sweep.sized_by})", depth.table(sweep))
    report(judge.judge_depth(cluster.head.name, sweep, cfg))
