"""Clocks: each node within the profile's skew of the runner (and so of each other)."""

import pytest

from gb10check.checks import host
from gb10check.gather import clock_offset
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def test_clock_skew(node, cluster):
    skew, uncertainty = clock_offset(node)
    report(host.judge_clock(node.name, skew, cluster.expect.max_clock_skew_s, uncertainty))
