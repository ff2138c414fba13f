"""The path MTU of each link, each way: a don't-fragment ping filling the source's MTU reaches the peer (probed once
per run with the other reachability probes, gb10check/gather/probes.py)."""

import pytest

from gb10check.checks import netpath
from gb10check.remedies import Code
from gb10check.verdict import not_checked, report

pytestmark = pytest.mark.network


def test_path_mtu(path):
    res = path.src.fleet.probes().result(path.src.name, path.src_link.netdev, path.dst.name, path.dst_link.netdev)
    if res.ping is not None and res.ping[0] != 0:
        not_checked(Code.PREREQUISITE, f"{path.src.name}:{path.src_link.netdev}", f"{path.dst_link.ip} answers no ping at all",
                    "a peer that answers a plain ping", check="test_ping")
    report(netpath.judge_path_mtu(path.src.name, path.src_link, path.dst.name, path.dst_link, *res.ping_df))
