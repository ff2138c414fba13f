"""Decode speed, defined: server-reported completion tokens after the first, over (last token - first token).

The seed's request (count from 1 to 80, temperature 0, thinking off), streamed through the `openai`
client, repeated serving.repetitions times, serving.decode_max_tokens each; the median is compared with serving.min_decode_tok_s.
End-to-end tok/s (completion tokens over the whole request) and the time to first token are reported
beside it.
"""

import pytest

from gb10check.checks import serving
from gb10check.verdict import report

pytestmark = pytest.mark.serving


def test_decode_throughput(served, cluster, measurements):
    from gb10check.serving import measure_decode, medians  # with the openai client: only when a serving check runs

    where, runs = cluster.head.name, []
    for i in range(cluster.serving.repetitions):
        reply, timed = measure_decode(served, cluster.deploy.served_model_name, cluster.serving.decode_max_tokens)
        report(serving.judge_decode_run(where, reply, timed, cluster.deploy.served_model_name))
        runs.append(timed)
        measurements("decode_tok_s", f"{where} run {i + 1}", timed.decode_tok_s, "tok/s")
    m = medians(runs)
    measurements("decode_tok_s median", where, m["decode_tok_s"], "tok/s")
    measurements("e2e_tok_s median", where, m["e2e_tok_s"], "tok/s")
    measurements("ttft median", where, m["ttft_s"], "s")
    report(serving.judge_decode(where, runs, cluster.serving.min_decode_tok_s))
