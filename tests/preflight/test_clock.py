"""Clocks: each node within the profile's skew of the runner (and so of each other)."""

import time

import pytest

from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.preflight


def test_clock_skew(node, cluster):
    node.output("true")  # connect first: the skew must not include the SSH handshake
    before = time.time()
    remote = float(node.output("date +%s.%N"))
    after = time.time()
    skew = remote - (before + after) / 2
    allowed = cluster.expect.max_clock_skew_s + (after - before) / 2
    report([] if abs(skew) <= allowed else
           [Finding(Code.CLOCK_SKEW, node.name, f"clock {skew:+.2f} s from the runner's", f"within {cluster.expect.max_clock_skew_s} s")])
