"""Sustained load: soak.concurrency streams (default max_num_seqs) for soak.duration_s (default 30 minutes: the field's
TP=2 hang comes after 20-26), mixed prompt lengths, every stream timed; the deployment's memory watchdog on every node
and a watch on every rank (its container, its log's hang signatures) the whole time. gb10check/soak.py runs it,
gb10check/checks/soak.py judges it."""

import pytest

from gb10check import soak
from gb10check.checks import soak as judge
from gb10check.verdict import report

pytestmark = pytest.mark.soak

UNITS = {"requests_done": "requests", "requests_failed": "requests", "output_tok_s": "tok/s", "itl_p50_ms": "ms",
         "itl_p99_ms": "ms", "ttft_p50_s": "s", "ttft_p99_s": "s"}


def test_sustained_load(served, cluster, launcher, soak_settings, measurements):
    result = soak.run(cluster, launcher, served, soak_settings)
    for name, value in result.figures().items():
        what, _, node = name.partition(" ")
        measurements(f"soak {what}", node or cluster.head.name, value, UNITS.get(what, "GiB"))
    report(judge.judge_sustained(cluster.head.name, result))
