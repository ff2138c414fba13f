"""Long context: one request at soak.long_context_fraction (0.9) of max_model_len, fresh filler text with a fresh nonce
at soak.nonce_placement, asking for the nonce; the watch armed. Prefill time (time to first token) and prompt tok/s
reported."""

import pytest

from gb10check import soak
from gb10check.checks import soak as judge
from gb10check.verdict import report

pytestmark = pytest.mark.soak


def test_long_context(served, cluster, launcher, soak_settings, measurements):
    lc = soak.long_context(cluster, launcher, served, soak_settings)
    where = cluster.head.name
    if lc.stream is not None and lc.stream.ttft_s is not None:
        measurements("long-context prefill", where, lc.stream.ttft_s, "s")
        measurements("long-context prompt", where, lc.prompt_tok_s or 0.0, "tok/s")
    measurements("long-context prompt tokens", where, float(lc.prompt_tokens or lc.target_tokens), "tokens")
    report(judge.judge_long_context(where, lc))
