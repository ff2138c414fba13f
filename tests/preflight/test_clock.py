"""Clocks: each node within the profile's skew of the runner (and so of each other)."""

import time

import pytest

from gb10check.checks import host
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def test_clock_skew(node, cluster):
    node.output("true")  # connect first: the skew must not include the SSH handshake (live: a gathered time is stale)
    before = time.time()
    remote = float(node.output("date +%s.%N"))
    after = time.time()
    report(host.judge_clock(node.name, remote - (before + after) / 2, cluster.expect.max_clock_skew_s, (after - before) / 2))
