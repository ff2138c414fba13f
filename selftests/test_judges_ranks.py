"""Which rank stopped (gb10check/checks/ranks.py) and what the watch reads (gb10check/facts/procfs.py), judged on real
outputs: the rank_state fact's output on the simulated pair's real docker and /proc (a serving rank, the follower's
container paused by `docker pause`, its processes stopped by SIGSTOP), real `docker inspect` of an exited container
(../shared/captures), `ip -j addr` with a QSFP port down, journalctl's boots and the GPU's temperature query."""

import dataclasses
from pathlib import Path

import pytest

from gb10check.checks import ranks
from gb10check.facts import ParseError, ip, nvidia, procfs
from gb10check.remedies import Code

OURS = Path(__file__).resolve().parent / "captures" / "raw" / "watch"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "captures"
A, B = "thinkstationpgx-30", "thinkstationpgx-32"


def state(name: str) -> procfs.RankState:
    return procfs.parse_rank_state((OURS / name).read_text())


def later(s: procfs.RankState, ticks: int, seconds: float = 3.0) -> procfs.RankState:
    """The same rank a look later: its clock on, its processes `ticks` of CPU time further (split over them)."""
    procs = [dataclasses.replace(p, cpu_ticks=p.cpu_ticks + (ticks if i == 0 else 0)) for i, p in enumerate(s.processes)]
    return dataclasses.replace(s, now=s.now + seconds, processes=procs)


def looks(b_first, b_second, b_links=None, a_moved=300) -> list[ranks.RankLook]:
    a = state("sim-rank-state-running-rank0.txt")
    up = {n: i for i in ip.parse_json((OURS.parent.parent / "ip_ethtool" / "sim-ip-j-addr-rank0.json").read_text())
          for n in ("enp1s0f0np0", "enP2p1s0f0np0") if i.name == n}
    return [ranks.RankLook(A, 0, a, later(a, a_moved), up), ranks.RankLook(B, 1, b_first, b_second, b_links or {})]


def test_the_rank_state_reads_a_serving_rank():
    s = state("sim-rank-state-running-rank0.txt")
    assert s.container.status == "running" and s.container.running
    assert [p.comm for p in s.processes] == ["vllm", "python", "VLLM::EngineCor", "VLLM::Worker_TP"]
    assert {p.state for p in s.processes} == {"S"} and s.cpu_ticks > 0
    assert {p.pgrp for p in s.processes} == {533}  # one group, vllm serve's (its pid on the node)
    assert s.last_log_at is not None and 0 < s.log_age_s < 3600 and "Avg prompt throughput" in s.last_log


def test_a_healthy_pair_names_no_rank():
    b = state("sim-rank-state-running-rank1.txt")
    verdict = ranks.which_rank(looks(b, later(b, 250)))
    assert verdict.named == [] and verdict.text.startswith("no rank shows why (rank 0 on thinkstationpgx-30: container running")
    assert ranks.judge_ranks(looks(b, later(b, 250)), "the watch") == []


def test_a_paused_container_is_named_with_its_frozen_processes():
    b = state("sim-rank-state-paused-rank1.txt")
    assert b.container.status == "paused" and {p.state for p in b.processes} == {"D"}  # the cgroup freezer: D
    found = ranks.judge_ranks(looks(b, later(b, 0)), "the watch's request got no first token")
    assert [(f.code, f.where) for f in found] == [(Code.RANK_STOPPED, B)]
    text = found[0].text
    assert text.startswith(f"[rank-stopped] {B}: saw rank 1 stopped (the watch's request got no first token): its container "
                           "is paused (docker pause: every process in it frozen); its processes 443 (vllm), 755 (python), 756 "
                           "(VLLM::Worker_TP) are in uninterruptible sleep; its CPU time"), text
    assert "its CPU time did not move in 3 s while rank 0's moved 3.00 s" in text, text
    assert "docker unpause gb10-vllm` on thinkstationpgx-32" in text, text


def test_processes_stopped_by_sigstop_are_named_though_the_container_runs():
    b = state("sim-rank-state-sigstop-rank1.txt")
    assert b.container.status == "running"
    verdict = ranks.which_rank(looks(b, later(b, 0)))
    (look, evidence), = verdict.named
    assert look.rank == 1 and evidence == ["its processes 755 (python), 756 (VLLM::Worker_TP) are stopped (SIGSTOP)",
                                           "its CPU time did not move in 3 s while rank 0's moved 3.00 s"], evidence


def test_a_d_state_that_passes_is_io_not_a_hang():
    paused, running = state("sim-rank-state-paused-rank1.txt"), state("sim-rank-state-running-rank1.txt")
    running = dataclasses.replace(running, now=paused.now + 3)
    assert ranks.process_evidence(paused, running) == []
    assert ranks.process_evidence(running, paused) == []  # D in one look only


def test_cpu_time_alone_names_a_rank_only_while_another_works():
    b = state("sim-rank-state-running-rank1.txt")
    assert ranks.which_rank(looks(b, later(b, 0), a_moved=0)).named == []  # an idle pair: neither moves
    (look, evidence), = ranks.which_rank(looks(b, later(b, 0), a_moved=120)).named
    assert look.node == B and evidence == ["its CPU time did not move in 3 s while rank 0's moved 1.20 s"]


def test_a_qsfp_link_down_is_named_on_its_node():
    b = state("sim-rank-state-running-rank1.txt")
    ifaces = {i.name: i for i in ip.parse_json((OURS / "sim-ip-j-addr-qsfp-down-rank1.json").read_text())}
    links = {n: ifaces.get(n) for n in ("enp1s0f0np0", "enP2p1s0f0np0")}
    (look, evidence), = ranks.which_rank(looks(b, later(b, 250), links)).named
    assert look.node == B and evidence == ["its QSFP link enP2p1s0f0np0 is down (DOWN)"]
    assert ranks.link_evidence({"enp1s0f1np1": None}) == ["its QSFP link enp1s0f1np1 is missing"]


def test_an_exited_or_missing_container_is_named():
    text = (OURS / "sim-rank-state-running-rank1.txt").read_text()
    head, _, rest = text.partition("-- inspect")
    exited = (SHARED / "docker" / "docker-inspect-ngc-sglang-26.05-container-exited-code0-before-healthy-no-Health-key-gb10-jethac.json")
    s = procfs.parse_rank_state(f"{head}-- inspect\n{exited.read_text()}\n-- stat\n-- log\n")
    assert ranks.container_evidence(s) == "its container is exited (exit code 0)" and s.processes == [] and s.log_age_s is None
    gone = procfs.parse_rank_state(f"{head}-- inspect\n[]\nError: No such object: gb10-vllm\n-- stat\n-- log\n"
                                   "Error response from daemon: No such container: gb10-vllm\n")
    assert gone.container is None and ranks.container_evidence(gone).startswith("its container is gone")


def test_a_rank_not_looked_at_is_not_checked_never_running():
    b = state("sim-rank-state-running-rank1.txt")
    found = ranks.judge_ranks(looks(b, later(b, 250))[:1] + [ranks.RankLook(B, 1, unreadable="not reached: timed out")], "x")
    assert [(f.code, f.severity) for f in found] == [(Code.COMMAND_FAILED, "not-checked")]


@pytest.mark.parametrize("text", ["", "garbage\n", "1796443565.98\n-- inspect\n[]\n-- stat\nnot a stat line\n-- log\n",
                                  "not a clock\n-- inspect\n[]\n-- stat\n-- log\n", "1.0\n-- inspect\n[]\n-- log\n"])
def test_a_garbled_rank_state_is_refused(text):
    with pytest.raises(ParseError):
        procfs.parse_rank_state(text)


def test_boots_and_gpu_health_read_real_outputs():
    boots = procfs.parse_boots((OURS / "sim-boots-systemd-rank0.txt").read_text())
    assert boots.boot_id == "792280408cec43c1ab3c5f2e223a4157" and boots.journal == [boots.boot_id]
    older = procfs.parse_boots("79228040-8cec-43c1-ab3c-5f2e223a4157\n"  # systemd before 251: no header, oldest first
                               " -1 0a1b2c3d4e5f60718293a4b5c6d7e8f9 Fri 2026-12-04 10:00:00 UTC—Fri 2026-12-04 11:00:00 UTC\n"
                               "  0 792280408cec43c1ab3c5f2e223a4157 Sat 2026-12-05 04:02:46 UTC—Sat 2026-12-05 04:05:55 UTC\n")
    assert older.journal == ["0a1b2c3d4e5f60718293a4b5c6d7e8f9", "792280408cec43c1ab3c5f2e223a4157"]
    with pytest.raises(ParseError):
        procfs.parse_boots("-- No entries --\n")
    rows = nvidia.parse_query((OURS / "sim-gpu-health-rank0.txt").read_text())
    assert rows == [{"temperature_gpu": 52.0, "clocks_event_reasons_active": "0x0000000000000000"}]
