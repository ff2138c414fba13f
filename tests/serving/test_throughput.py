"""Decode speed, defined: server-reported completion tokens after the first, over (last token - first token).

The seed's request (count from 1 to 80, temperature 0, thinking off), streamed, repeated
serving.repetitions times; the median is compared with serving.min_decode_tok_s. End-to-end tok/s
(completion tokens over the whole request) and the time to first token are reported beside it.
"""

import statistics

import pytest

from gb10check.remedies import Code
from gb10check.serving import measure_decode
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.serving


def test_decode_throughput(served, cluster, measurements):
    s = cluster.serving
    runs = []
    for i in range(s.repetitions):
        try:
            run = measure_decode(served, cluster.deploy.served_model_name, cluster.head.name)
        except AssertionError as exc:
            pytest.fail(str(exc), pytrace=False)
        runs.append(run)
        measurements("decode_tok_s", f"{cluster.head.name} run {i + 1}", run["decode_tok_s"], "tok/s")
    decode = statistics.median(r["decode_tok_s"] for r in runs)
    e2e = statistics.median(r["e2e_tok_s"] for r in runs)
    measurements("decode_tok_s median", cluster.head.name, decode, "tok/s")
    measurements("e2e_tok_s median", cluster.head.name, e2e, "tok/s")
    measurements("ttft median", cluster.head.name, statistics.median(r["ttft_s"] for r in runs) * 1000, "ms")
    if decode < s.min_decode_tok_s:
        report([Finding(Code.DECODE_SLOW, cluster.head.name,
                        f"decode {decode:.1f} tok/s (median of {len(runs)}; end-to-end {e2e:.1f} tok/s)",
                        f">= {s.min_decode_tok_s:g} tok/s (serving.min_decode_tok_s)")])
