"""Stand-ins rendered as pure functions (no simulated cluster): a node's stand-in state in, the tool's text out, read
back with the suite's own parser and judged as the check judges it. A scenario's state change (its Step.state merged as
`gb10check.sim.scenarios.apply` merges it) must make the judge fail; the healthy state must pass."""

import pytest

from gb10check.checks import gpu, platform
from gb10check.cluster import Expect
from gb10check.facts import parse
from gb10check.gather import SMI_SAMPLE
from gb10check.remedies import Code
from gb10check.sim import scenarios
from gb10check.sim.control import node_state
from gb10check.sim.standins import lspci, nvidia_smi
from gb10check.sim.topology import pair_or_switch
from gb10check.gather import LSPCI

NODES = pair_or_switch(2)
SIM_NETDEVS = {"0000:01:00.0": "enp1s0f0np0", "0002:01:00.0": "enP2p1s0f0np0"}  # the ethtool stand-in's bus-info


def state(rank: int, scenario: str | None = None) -> dict:
    """Node `rank`'s stand-in state as `gb10check sim up` writes it, with the scenario's state steps merged in."""
    s = node_state(NODES[rank])
    for step in scenarios.SCENARIOS[scenario].steps if scenario else ():
        if step.state and step.rank in (-1, rank):
            s = scenarios.merge(s, step.state)
    return s


def args_of(command: str) -> list[str]:
    return command.split()[1:]


# ---- lspci -------------------------------------------------------------------------------------


def test_lspci_healthy_is_gen5_x4_everywhere():
    text, rc = lspci.render(state(1), args_of(LSPCI), root=True)
    assert rc == 0
    functions = parse("lspci", text)
    assert [(f.address, str(f.sta), f.sta.width_mark) for f in functions] == [
        (a, "32GT/s x4", "ok") for a in ("0000:01:00.0", "0000:01:00.1", "0002:01:00.0", "0002:01:00.1")]
    assert "\tLnkSta:\tSpeed 32GT/s (ok), Width x4 (ok)\n" in text
    assert "\n\n0000:01:00.1 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n" in text
    assert platform.judge_pcie("pgx-32", functions, SIM_NETDEVS, 32.0, 4) == []


def test_lspci_pcie_gen5_x2_scenario_fails_the_second_controller():
    text, _ = lspci.render(state(1, "pcie-gen5-x2"), args_of(LSPCI), root=True)
    assert "\tLnkSta:\tSpeed 32GT/s (ok), Width x2 (downgraded)\n" in text
    found = platform.judge_pcie("thinkstationpgx-32", parse("lspci", text), SIM_NETDEVS, 32.0, 4)
    assert [(f.code, f.where) for f in found] == [(Code.PCIE_DEGRADED, "thinkstationpgx-32:0002:01:00.0"),
                                                  (Code.PCIE_DEGRADED, "thinkstationpgx-32:0002:01:00.1")]
    assert found[0].seen.startswith("0002:01:00.0 (enP2p1s0f0np0) Mellanox Technologies MT2910 Family [ConnectX-7]: "
                                    "LnkSta 32GT/s x2 (downgraded), LnkCap 32GT/s x4 (width below)")
    # Rank 0 is untouched by the scenario.
    text0, _ = lspci.render(state(0, "pcie-gen5-x2"), args_of(LSPCI), root=True)
    assert platform.judge_pcie("thinkstationpgx-30", parse("lspci", text0), SIM_NETDEVS, 32.0, 4) == []


def test_lspci_without_root_and_with_a_filter():
    text, _ = lspci.render(state(0), ["-vv"], root=False)
    assert text.count("\tCapabilities: <access denied>\n") == 4
    assert text.startswith("0000:01:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n")
    [f] = platform.judge_pcie("pgx", parse("lspci", text), {}, 32.0, 4)
    assert f.not_checked
    one, _ = lspci.render(state(0), ["-vv", "-s", "0002:01:00.1"], root=True)
    assert [f.address for f in parse("lspci", one)] == ["0002:01:00.1"]
    assert lspci.render(state(0), ["-d", "10de:"], root=True)[0] == ""
    assert lspci.render(state(0), [], root=True)[0].splitlines()[0] == (
        "0000:01:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]")
