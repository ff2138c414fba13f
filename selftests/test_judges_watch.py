"""`gb10check watch`'s tick judged (gb10check/tick.py judge(), pure) on real outputs: the simulated pair's rank states,
/proc/meminfo, the GPU query and boots; a reboot since the last look from the history; the clock-event counts carried
tick to tick; the request's budgets; the soak naming the rank after a stall; the exit statuses and --every's durations.
One tick recorded in a real history file and read back."""

import argparse
import dataclasses
from pathlib import Path

import pytest

from gb10check import history, tick
from gb10check.checks import soak as soak_judge
from gb10check.cli import duration
from gb10check.cluster import load_cluster
from gb10check.facts import meminfo, nvidia, procfs
from gb10check.soak import SoakResult, Stall, Watched

from .test_judges_ranks import A, B, OURS, later, looks, state

REPO = Path(__file__).resolve().parent.parent
CAPTURES = Path(__file__).resolve().parent / "captures"


@pytest.fixture(scope="module")
def cluster():
    return load_cluster(REPO / "cluster.example.yaml")


def hosts(gpu_text: str | None = None, mem_text: str | None = None, boots_text: str | None = None) -> dict:
    mem = meminfo.parse_meminfo(mem_text or (CAPTURES / "meminfo" / "sim-proc-meminfo-rank0.txt").read_text())
    gpu = nvidia.parse_query(gpu_text or (OURS / "sim-gpu-health-rank0.txt").read_text())
    boots = procfs.parse_boots(boots_text or (OURS / "sim-boots-systemd-rank0.txt").read_text())
    return {n: {"meminfo": mem, "gpu_health": gpu, "boots": boots} for n in (A, B)}


def healthy(**change) -> tick.Seen:
    b = state("sim-rank-state-running-rank1.txt")
    return tick.Seen(1796443687.0, hosts(), looks(b, later(b, 250)),
                     change.pop("request", tick.Request(ttft_s=2.3, max_gap_ms=229.8, tokens=16)))


def codes(checks) -> dict[str, list[str]]:
    return {name: [f.code.value for f in found] for name, found in checks.items() if found}


def test_a_healthy_tick_passes_with_its_figures(cluster):
    checks, figures = tick.judge(cluster, healthy(), tick.Last())
    assert codes(checks) == {} and set(checks) == {"watch::request", "watch::ranks", "watch::logs",
                                                   *(f"watch::{w}[{n}]" for n in (A, B)
                                                                                          for w in ("memory", "gpu", "boots"))}
    got = {(w, where): v for w, where, v, _ in figures}
    assert got[("watch ttft", A)] == 2.3 and got[("watch itl max", A)] == 229.8 and got[("watch gpu temperature", B)] == 52
    assert got[("boot id", B)] == "792280408cec43c1ab3c5f2e223a4157" and got[("clock events SW thermal slowdown", A)] == 0
    assert 0 < got[("watch mem available", A)] < 200


def test_the_request_over_its_budgets_and_unanswered(cluster):
    late = tick.Request(ttft_s=11.5, max_gap_ms=1500.0, tokens=16)
    checks, _ = tick.judge(cluster, healthy(request=late), tick.Last())
    assert codes(checks) == {"watch::request": ["watch-ttft", "watch-itl"]}
    text = [f.text for f in checks["watch::request"]]
    assert text[0].startswith(f"[watch-ttft] {A}: saw the first token after 11.50 s; expected within 10 s (watch.ttft_budget_s)")
    assert text[1].startswith(f"[watch-itl] {A}: saw a gap of 1500 ms between two tokens (16 tokens); expected none over 1000 ms")
    paused = state("sim-rank-state-paused-rank1.txt")
    seen = dataclasses.replace(healthy(request=tick.Request(error="no chunk within 15 s after 0 chunks")),
                               rank_looks=looks(paused, later(paused, 0)))
    checks, _ = tick.judge(cluster, seen, tick.Last())
    assert codes(checks) == {"watch::request": ["watch-no-answer"], "watch::ranks": ["rank-stopped"]}
    assert checks["watch::request"][0].text.startswith(f"[watch-no-answer] {A}: saw the watch's request: no chunk within 15 s "
                                                       "after 0 chunks; expected an answer of up to 16 tokens, its first "
                                                       "within 10 s")
    assert checks["watch::ranks"][0].seen.startswith("rank 1 stopped (the watch's request: no chunk within 15 s after 0 "
                                                     "chunks): its container is paused")
    assert tick.exit_status({n: tick.outcome(f) for n, f in checks.items()}) == tick.FAILED


def test_an_engine_error_in_a_ranks_log_since_the_last_look_is_named(cluster):
    """The rank watch's reading of a log (gb10check/watch.read_log) on the lines since the last tick: a real follower's."""
    follower = (CAPTURES.parent.parent.parent / "shared" / "captures" / "vllm_logs" /
                "follower-collective_rpc-assertion-vllm-pr36875.txt").read_text()
    seen = healthy()
    seen.logs = {A: "", B: follower}
    checks, figures = tick.judge(cluster, seen, tick.Last())
    (found,) = checks["watch::logs"]
    assert found.where == B and found.seen.startswith("rank 1's log since the last look: ") and not found.warning
    assert {(w, where) for w, where, _, _ in figures} >= {("node clock", A), ("node clock", B)}


def test_memory_under_the_floor_and_a_node_not_read(cluster):
    seen = healthy()
    seen.hosts[B]["meminfo"] = {"mem_available_gib": 3.2}
    seen.hosts[A] = tick.RemoteError("timed out")
    checks, _ = tick.judge(cluster, seen, tick.Last())
    assert codes(checks)[f"watch::memory[{B}]"] == ["watch-memory"]
    assert checks[f"watch::memory[{B}]"][0].text.startswith(f"[watch-memory] {B}: saw MemAvailable 3.2 GiB; expected >= 5 GiB")
    assert {f.severity for f in checks[f"watch::memory[{A}]"] + checks[f"watch::gpu[{A}]"] + checks[f"watch::boots[{A}]"]} \
        == {"not-checked"}
    assert tick.outcome(checks[f"watch::boots[{A}]"]) == "not checked"
    assert tick.exit_status({"a": "passed", "b": "not checked"}) == tick.NOT_CHECKED
    assert tick.exit_status({"a": "passed"}) == tick.PASSED


def test_heat_and_thermal_slowdown_are_warnings_counted_tick_to_tick(cluster):
    hot = "temperature.gpu, clocks_event_reasons.active\n93, 0x0000000000000020\n"  # the sim's query, SW thermal slowdown on
    seen = dataclasses.replace(healthy(), hosts=hosts(gpu_text=hot))
    last = tick.Last(7, 1.0, counts={("clock events SW thermal slowdown", A): 2.0})
    checks, figures = tick.judge(cluster, seen, last)
    assert codes(checks) == {f"watch::gpu[{n}]": ["watch-temperature", "watch-thermal-slowdown"] for n in (A, B)}
    assert all(f.severity == "warning" for n in (A, B) for f in checks[f"watch::gpu[{n}]"])
    assert checks[f"watch::gpu[{A}]"][0].text.startswith(f"[watch-temperature] {A}: saw GPU at 93 C; expected under 90 C")
    said = checks[f"watch::gpu[{A}]"][1].text
    assert said.startswith(f"[watch-thermal-slowdown] {A}: saw clock-event reasons 0x20 active: SW thermal slowdown: seen in "
                           "3 ticks (+1 since the last)"), said
    got = {(w, where): v for w, where, v, _ in figures}
    assert got[("clock events SW thermal slowdown", A)] == 3 and got[("clock events SW thermal slowdown", B)] == 1
    assert tick.exit_status({n: tick.outcome(f) for n, f in checks.items()}) == tick.PASSED  # warnings pass, said


def test_a_boot_id_changed_since_the_last_look_is_a_reboot(cluster):
    before = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    listed = ("79228040-8cec-43c1-ab3c-5f2e223a4157\nIDX BOOT ID FIRST ENTRY LAST ENTRY\n"
              f" -1 {before} Fri 2026-12-04 10:00:00 UTC Fri 2026-12-04 11:00:00 UTC\n"
              "  0 792280408cec43c1ab3c5f2e223a4157 Sat 2026-12-05 04:02:46 UTC Sat 2026-12-05 04:05:55 UTC\n")
    seen = dataclasses.replace(healthy(), hosts=hosts(boots_text=listed))
    checks, _ = tick.judge(cluster, seen, tick.Last(4, 1796440000.0, boot_ids={B: before, A: "792280408cec43c1ab3c5f2e223a4157"}))
    assert codes(checks) == {f"watch::boots[{B}]": ["watch-rebooted"]}
    said = checks[f"watch::boots[{B}]"][0].text
    assert said.startswith(f"[watch-rebooted] {B}: saw 1 boot since ") and "in the journal's boot list)" in said, said
    assert "read `journalctl -b -1 -e` on it" in said
    forgotten = tick.reboot_text("ffffffffffffffffffffffffffffffff", procfs.parse_boots(listed), None)
    assert forgotten.startswith("booted since the last look") and "no longer lists the old boot" in forgotten


def test_ticks_are_recorded_and_read_back_as_the_last_look(cluster, tmp_path):
    store = history.History.open(tmp_path / "h.sqlite")
    try:
        checks, figures = tick.judge(cluster, healthy(), tick.Last())
        outcomes = {n: tick.outcome(f) for n, f in checks.items()}
        run = store.record(started=1.0, cluster=cluster.name, cluster_file="c.yaml", cluster_sha256="0" * 64,
                           outcomes=outcomes, stages={t: tick.STAGE for t in outcomes}, complete_stages=[tick.STAGE],
                           findings={}, measured=figures, versions={})
        last = tick.last_tick(store, cluster.name)
        assert last.run == run and last.boot_ids == {A: "792280408cec43c1ab3c5f2e223a4157", B: "792280408cec43c1ab3c5f2e223a4157"}
        assert last.counts[("clock events HW slowdown", A)] == 0.0
        assert store.show(run).green and store.last_green_versions(cluster.name) is None  # a tick is no manifest's green
    finally:
        store.close()
    assert tick.last_tick(None, cluster.name) == tick.Last()


def test_the_soak_names_the_rank_before_its_stall(cluster):
    paused = state("sim-rank-state-paused-rank1.txt")
    result = SoakResult(60, 4, 30, Watched(5.0), elapsed_s=40, stopped_by="stall",
                        stalls=[Stall(3, 64, 31.0, 40.0, 5, "its next token", 30)], rank_looks=looks(paused, later(paused, 0)))
    found = soak_judge.judge_sustained(A, result)
    assert [f.code.value for f in found][:2] == ["rank-stopped", "soak-stall"]
    assert found[0].text.startswith(f"[rank-stopped] {B}: saw rank 1 stopped (soak stream #3 stalled): its container is paused")


@pytest.mark.parametrize("text,seconds", [("90", 90), ("90s", 90), ("10m", 600), ("1h", 3600), ("2.5m", 150)])
def test_every_reads_durations(text, seconds):
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "10 minutes", "-5m", "m"])
def test_every_refuses_what_is_not_a_duration(text):
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_a_ticks_figures_parse_as_prometheus_text(cluster):
    from prometheus_client.parser import text_string_to_metric_families

    from gb10check import metrics

    checks, figures = tick.judge(cluster, healthy(), tick.Last())
    outcomes = {n: tick.outcome(f) for n, f in checks.items()}
    families = {f.name: f for f in text_string_to_metric_families(metrics.text(cluster.name, figures, outcomes, 2.0, True))}
    assert {"gb10check_watch_ttft_seconds", "gb10check_watch_itl_max_milliseconds", "gb10check_watch_gpu_temperature_celsius",
            "gb10check_watch_mem_available_gibibytes", "gb10check_clock_events_sw_thermal_slowdown_ticks"} <= set(families)
    (sample,) = families["gb10check_watch_ttft_seconds"].samples
    assert sample.value == 2.3 and sample.labels["node"] == A and sample.labels["cluster"] == cluster.name


def test_a_meminfo_without_memavailable_uses_the_estimate_else_is_not_checked(cluster):
    old = (REPO.parent / "shared" / "captures" / "meminfo" /
           "openwrt-arm-128M-proc-meminfo-no-MemAvailable-old-kernel-sysinfo-issue164.txt").read_text()
    checks, figures = tick.judge(cluster, dataclasses.replace(healthy(), hosts=hosts(mem_text=old)), tick.Last())
    assert ("watch mem available", A, 0.1, "GiB") in figures  # procps' estimate from MemFree, the caches and the slab
    assert codes(checks)[f"watch::memory[{A}]"] == ["watch-memory"]
    seen = healthy()
    seen.hosts[A]["meminfo"] = {"mem_total_gib": 0.119, "mem_available_gib": None, "mem_available_estimate_gib": None}
    (found,) = tick.judge(cluster, seen, tick.Last())[0][f"watch::memory[{A}]"]
    assert found.severity == "not-checked" and "neither MemAvailable nor the fields to estimate it" in found.seen
