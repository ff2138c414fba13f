"""Decode speed, defined: server-reported completion tokens after the first, over (last token - first token).

The seed's request (count from 1 to 80, temperature 0, thinking off), streamed through the `openai`
client, repeated serving.repetitions times, serving.decode_max_tokens each; the median is compared with
serving.min_decode_tok_s, or where that is not given with the floor derived from the profile's memory bandwidth over the
weight bytes each node reads per token (gb10check/sizing.py decode_floor), times the profile's decode efficiency. The
derived floor and the measured figure's ratio to it are reported either way. End-to-end tok/s (completion tokens over
the whole request) and the time to first token are reported beside it.
"""

import pytest

from gb10check.checks import serving
from gb10check.gather import read, reads
from gb10check.verdict import NotChecked, report

pytestmark = pytest.mark.serving


def sizing_files(head):
    """rank 0's config.json and safetensors index, or None and why they cannot be read."""
    try:
        return read(head, "model_sizing_files"), None
    except NotChecked as exc:
        return None, "; ".join(f.seen for f in exc.findings)


@reads("model_sizing_files")
def test_decode_throughput(served, head, cluster, measurements):
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
    derived = serving.derive_floor(*sizing_files(head), cluster.deploy.tensor_parallel_size, cluster.expect.memory_bandwidth_gbs,
                                   cluster.expect.decode_efficiency, cluster.expect.profile)
    if derived.tok_s is None:
        measurements("decode floor (derived)", where, f"not derived: {derived.how}", "")
    else:
        measurements("decode floor (derived)", where, derived.tok_s, "tok/s")
        if m["decode_tok_s"] is not None:
            measurements("decode / derived floor", where, m["decode_tok_s"] / derived.tok_s, "x")
    report(serving.judge_decode(where, runs, cluster.serving.min_decode_tok_s, derived))
