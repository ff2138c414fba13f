"""The soak stage: its driver (gb10check/soak.py, gb10check/depth.py) run for real against a stand-in OpenAI server
and a scripted launcher (selftests/fake_openai.py), and its judges (gb10check/checks/soak.py) on what the driver
recorded: every code with its message (seen, expected, where, fix), and nothing said of a healthy run. Seconds each,
no vLLM, no root. The same faults on the real two-node vLLM of the simulated pair are the sim's scenarios."""

import re
import threading
from pathlib import Path

import pytest

from gb10check import depth, soak
from gb10check.checks import soak as judge
from gb10check.cluster import load_cluster
from gb10check.watch import Crossing
from gb10check.remedies import Code
from gb10check.serving import Api

from .fake_openai import FakeLauncher, FakeServer, echo_digits

REPO = Path(__file__).resolve().parent.parent
BASE = load_cluster(REPO / "cluster.example.yaml")
CLUSTER = BASE.model_copy(update={"deploy": BASE.deploy.model_copy(update={"served_model_name": "smollm2-135m",
                                                                           "max_model_len": 4096})})
A, B = "thinkstationpgx-30", "thinkstationpgx-32"
COLLECTIVE = ("[rank1]:[E1103 04:05:06.000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: "
              "WorkNCCL(SeqNum=12590, OpType=_ALLGATHER_BASE, NumelIn=1404928, NumelOut=2809856, Timeout(ms)=600000) ran "
              "for 600060 milliseconds before timing out.\n")
SHM = ("(EngineCore_DP0 pid=210) WARNING 11-02 10:03:30 [shm_broadcast.py:466] No available shared memory broadcast block "
       "found in 60 seconds. This typically happens when some processes are hanging.\n")
RPC = "(EngineCore_DP0 pid=210) ERROR 11-02 10:05:30 [multiproc_executor.py:230] RPC call to sample_tokens timed out.\n"
NVRM = "(Worker_TP0 pid=12) ERROR 01-01 00:00:01 [multiproc_executor.py:1] NVRM: failed to allocate: NV_ERR_NO_MEMORY\n"
DIED = "(APIServer pid=1) ERROR 01-01 00:00:02 [core_client.py:1] Engine core proc EngineCore_DP0 died unexpectedly\n"


def cfg(**over):
    values = dict(duration_s=1.5, concurrency=2, stall_limit_s=1.0, floor_gib=5.0, poll_interval_s=0.05,
                  prompt_tokens=[16, 64], max_tokens=8, prefill_limit_s=2.0, depths=[0, 256], depth_prompt_tokens=64,
                  depth_gen_tokens=8, depth_runs=2)
    values.update(over)
    return soak.settings(CLUSTER, **values)


@pytest.fixture(autouse=True)
def quick_watch(monkeypatch):
    monkeypatch.setattr(soak, "FULL_CHECK_S", 0.2)  # the watch reads containers and logs every 0.2 s here (2 s live)


def drive(server_kwargs=None, launcher=None, **over):
    with FakeServer(**(server_kwargs or {})) as server:
        api = Api(server.base_url, timeout_s=10)
        return soak.run(CLUSTER, launcher or FakeLauncher(), api, cfg(**over)), server


def codes(findings):
    return [(f.code, f.where) for f in findings]


# ---- sustained load ---------------------------------------------------------------------------------------------

def test_a_healthy_soak_says_nothing_and_reports_its_figures():
    launcher = FakeLauncher(mem=lambda node, t: 50.0 if node == A else 60.0 - t)
    result, server = drive(launcher=launcher)
    assert judge.judge_sustained(A, result) == []
    f = result.figures()
    assert f["requests_done"] >= 4 and f["requests_failed"] == 0 and f["output_tok_s"] > 0
    gaps, ttfts = [g for s in result.streams for g in s.gaps], [s.ttft_s for s in result.streams if s.ttft_s is not None]
    assert (f["itl_p50_ms"], f["itl_p99_ms"]) == (soak.percentile(gaps, 50) * 1000, soak.percentile(gaps, 99) * 1000)
    assert (f["ttft_p50_s"], f["ttft_p99_s"]) == (soak.percentile(ttfts, 50), soak.percentile(ttfts, 99))
    # B's memory falls a GiB a second: its minimum is the last reading, late in the 1.5 s run, not before it ended
    assert f["min_mem_available thinkstationpgx-30"] == 50.0 and 60 - launcher._t() <= f["min_mem_available thinkstationpgx-32"] < 59
    assert result.stopped_by is None and result.elapsed_s >= 1.5  # it ran its duration
    # every node sampled the whole time, every poll interval (0.05 s here)
    assert all(len(v) >= 10 for v in result.watched.memory.values())
    # mixed lengths, fresh text each (no two prompts alike: the prefix cache cannot answer them)
    prompts = [b["messages"][0]["content"] for b in server.requests]
    assert len(set(prompts)) == len(prompts) and len({len(p) // 100 for p in prompts}) >= 2
    assert all(b["stream"] and b["stream_options"] == {"include_usage": True} for b in server.requests)


def test_a_stream_that_goes_silent_is_a_stall_named_within_the_limit():
    result, _ = drive({"stall_after": 3}, stall_limit_s=1.0, duration_s=30)
    # duration_s 30: the stall ended it (how soon after the limit: test_watches_on_their_clock, on the driver's clock)
    assert result.stopped_by == "stall" and result.stalls[0].silent_s >= 1.0
    # wall-clock is what this bounds: the abort wakes the read blocked on the silent server at once; without it, the
    # run waits out its join limit (JOIN_S, 1 s) and leaves the stream to its read timeout
    assert all(s.ended_s is not None and s.ended_s < result.stalls[0].at_s + soak.JOIN_S for s in result.streams), \
        (result.stalls[0].at_s, [s.ended_s for s in result.streams])
    found = judge.judge_sustained(A, result)
    assert codes(found) == [(Code.SOAK_STALL, f"soak stream #{result.stalls[0].stream}")]
    text = found[0].text
    assert "while waiting for its next token (after 3 tokens; prompt ~" in text
    assert "expected its next token within 1 s (soak.stall_limit_s)" in text
    assert "No available shared memory broadcast block" in text and "vLLM issues 41725 and 42354" in text


def test_a_stream_with_no_first_token_is_a_stall_too():
    result, _ = drive({"ttft_s": 5}, stall_limit_s=0.8, duration_s=30)
    [f] = judge.judge_sustained(A, result)
    assert f.code == Code.SOAK_STALL and "waiting for its first token (after 0 tokens" in f.seen and result.stopped_by == "stall"


def test_the_memory_floor_stops_every_rank_and_names_the_node():
    launcher = FakeLauncher(mem=lambda node, t: 3.2 if node == B and t > 0.1 else 40.0)
    result, _ = drive(launcher=launcher, duration_s=30)
    assert result.stopped_by == "memory floor"
    assert sorted(launcher.stopped) == [(A, True), (B, True)]  # every rank killed, as the deploy's watchdog does
    found = judge.judge_sustained(A, result)
    assert codes(found) == [(Code.SOAK_MEMORY_FLOOR, B)]
    assert found[0].text.startswith(f"[soak-memory-floor] {B}: saw MemAvailable 3.2 GiB at ")
    # the reaction's figure is the machine's (0.0 s idle, 0.1 s on a loaded CI box): its form, not its value
    assert re.search(rf"the watchdog stopped every rank in \d+\.\d s \({A}: killed; {B}: killed\); expected >= 5 GiB on every "
                     "node", found[0].text), found[0].text
    assert f"fix: unified memory on {B} fell under the floor (5 GiB)" in found[0].text


def test_a_rank_that_exits_is_named_with_its_last_log_lines():
    launcher = FakeLauncher(exit=lambda node, t: 137 if node == B and t > 0.1 else None,
                            log=lambda node, t: "line one\nline two\n" + (DIED if node == B and t > 0.1 else ""))
    result, _ = drive(launcher=launcher, duration_s=30)
    assert result.stopped_by == "rank exited"
    found = judge.judge_sustained(A, result)
    assert (Code.SOAK_RANK_EXITED, B) in codes(found)
    f = next(f for f in found if f.code == Code.SOAK_RANK_EXITED)
    assert "rank 1's container exited with code 137 at " in f.seen and "last log lines:\nline one\nline two\n" in f.seen
    assert "cause: the engine or a worker process died" in f.seen
    assert f"fix: {B} (rank 1) exited mid-load (the engine or a worker process died" in f.text


@pytest.mark.parametrize("line, code, fix", [
    (COLLECTIVE, Code.SOAK_HANG_SIGNATURE, "make every rank's torch load the system library"),
    (SHM, Code.SOAK_HANG_SIGNATURE, "vLLM issues 41725 and 42354"),
    (RPC, Code.SOAK_HANG_SIGNATURE, "pin it with deploy.nccl {version, build_id}"),
    (NVRM, Code.SOAK_NO_MEMORY, "NV_ERR_NO_MEMORY; a long prefill can hard-reset a GB10, dgx-spark-playbooks issue 97"),
    (DIED, Code.SOAK_ENGINE_ERROR, "its cause is the error logged before this one: read thinkstationpgx-32's log around that line"),
])
def test_a_signature_in_a_ranks_log_ends_the_soak_with_its_fix(line, code, fix):
    launcher = FakeLauncher(log=lambda node, t: ("INFO 01-01 00:00:00 [x.py:1] fine\n" + (line if node == B and t > 0.1 else "")))
    result, _ = drive(launcher=launcher, duration_s=30)
    assert result.stopped_by == "signature"
    found = judge.judge_sustained(A, result)
    assert codes(found) == [(code, B)]
    assert found[0].seen.startswith("rank 1's log at ") and line.strip()[-40:] in found[0].seen
    assert fix in found[0].text


def test_request_errors_are_named_with_the_servers_text():
    # prompts of 2000 tokens and answers of 8 do not fit this server's 1024: every request refused with vLLM's 400
    result, _ = drive({"max_model_len": 1024}, prompt_tokens=[2000], duration_s=0.6)
    [f] = judge.judge_sustained(A, result)
    assert f.code == Code.SOAK_REQUEST_ERROR and f.seen.startswith(f"{len(result.streams)} of {len(result.streams)} requests failed: #0 at 0 s: 400: This model's maximum context length is 1024 tokens")
    assert "fix: the server failed requests under load (400: This model's maximum context length" in f.text


def test_failures_after_the_cause_are_its_consequences_not_more_findings():
    launcher = FakeLauncher(mem=lambda node, t: 1.0 if t > 0.1 else 40.0)
    result, _ = drive(launcher=launcher, duration_s=30)
    late = soak.StreamRecord(99, 16, 0.6, ended_s=result.watched.crossing_at_s + 0.5, error="None: connection lost")
    result.streams.append(late)
    assert [f.code for f in judge.judge_sustained(A, result)] == [Code.SOAK_MEMORY_FLOOR]


def test_no_request_done_and_an_unreadable_node():
    empty = soak.SoakResult(60, 2, 60, soak.Watched(5.0, unreadable=[f"{B}: MemAvailable: connection reset"]), elapsed_s=60)
    found = judge.judge_sustained(A, empty)
    assert [f.code for f in found] == [Code.COMMAND_FAILED]  # could not look: not checked, never a fault
    assert found[0].not_checked and "the watch could not read MemAvailable: connection reset" in found[0].text
    [f] = judge.judge_sustained(A, soak.SoakResult(60, 2, 60, soak.Watched(5.0), elapsed_s=60))
    assert f.code == Code.SOAK_NO_REQUESTS and f.text.startswith(f"[soak-no-requests] {A}: saw 0 requests completed in 60 s")


def test_stop_from_another_thread_ends_the_run_and_on_tick_sees_it():
    stop, ticks = threading.Event(), []

    def on_tick(elapsed, result):
        ticks.append((elapsed, len(result.streams)))
        if elapsed > 0.5:
            stop.set()

    with FakeServer() as server:
        result = soak.run(CLUSTER, FakeLauncher(), Api(server.base_url, timeout_s=10), cfg(duration_s=30), on_tick=on_tick,
                          stop=stop)
    assert result.stopped_by == "stop" and ticks[0][0] < ticks[-1][0] and ticks[-1][0] > 0.5
    assert judge.judge_sustained(A, result) == []


# ---- long context -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("placement", ["start", "middle", "end"])
def test_long_context_finds_the_nonce_sized_by_tokenize(placement):
    with FakeServer(answer=echo_digits) as server:
        lc = soak.long_context(CLUSTER, FakeLauncher(), Api(server.base_url, timeout_s=10), cfg(nonce_placement=placement))
        content = server.requests[0]["messages"][0]["content"]
    assert lc.sized_by == "/tokenize" and lc.target_tokens == int(4096 * 0.9)
    assert lc.target_tokens - 20 <= lc.prompt_tokens <= lc.target_tokens
    assert lc.found and lc.prompt_tok_s > 0 and judge.judge_long_context(A, lc) == []
    at = content.index(f"The secret code is {lc.nonce}.") / len(content)
    assert {"start": at < 0.01, "middle": 0.4 < at < 0.6, "end": 0.9 < at < 1}[placement]


def test_long_context_refused_names_the_servers_error():
    with FakeServer(answer=echo_digits, max_model_len=2048) as server:
        lc = soak.long_context(CLUSTER, FakeLauncher(), Api(server.base_url, timeout_s=10), cfg(), target_tokens=3000)
    [f] = judge.judge_long_context(A, lc)
    assert f.code == Code.LONG_CONTEXT_REFUSED
    assert f.seen.startswith("a 3000-token prompt (sized by /tokenize) -> 400: This model's maximum context length is 2048 "
                             "tokens. However, your request has ")
    assert f.text.endswith("fix: the server refused a 3000-token prompt: start vLLM with --max-model-len 4096 (and the KV "
                           "cache to hold it), or lower soak.long_context_fraction")


def test_long_context_without_the_nonce_in_the_answer():
    with FakeServer(answer=lambda content: "I could not find any code.") as server:
        lc = soak.long_context(CLUSTER, FakeLauncher(), Api(server.base_url, timeout_s=10), cfg(), nonce="12345678")
    [f] = judge.judge_long_context(A, lc)
    assert f.code == Code.LONG_CONTEXT_NONCE
    assert f.text.startswith(f"[long-context-nonce] {A}: saw answer 'I could not find any code.' to a ")
    assert "-token prompt with the nonce 12345678 at its middle; expected the nonce 12345678 in the answer" in f.text


def test_long_context_stall_and_memory_floor():
    with FakeServer(answer=echo_digits, stall_after=1) as server:
        lc = soak.long_context(CLUSTER, FakeLauncher(), Api(server.base_url, timeout_s=10), cfg(stall_limit_s=0.8))
    [f] = judge.judge_long_context(A, lc)
    assert f.code == Code.SOAK_STALL and f.where == "long-context stream #0"
    with FakeServer(answer=echo_digits, ttft_s=1.5) as server:
        launcher = FakeLauncher(mem=lambda node, t: 2.0 if node == A and t > 0.3 else 30.0)
        lc = soak.long_context(CLUSTER, launcher, Api(server.base_url, timeout_s=10), cfg())
    assert [f.code for f in judge.judge_long_context(A, lc)] == [Code.SOAK_MEMORY_FLOOR]


def test_without_tokenize_prompts_are_sized_by_a_safe_estimate():
    with FakeServer(answer=echo_digits) as server:
        api = Api(server.base_url, timeout_s=10)
        api.post = lambda *a, **k: __import__("gb10check.serving", fromlist=["Reply"]).Reply(404, '{"detail":"Not Found"}')
        lc = soak.long_context(CLUSTER, FakeLauncher(), api, cfg())
    assert lc.sized_by.startswith("estimate (3 chars/token; POST /tokenize -> 404: Not Found")
    assert lc.prompt_tokens < lc.target_tokens and lc.found  # shorter than asked, never longer


# ---- depth sweep ------------------------------------------------------------------------------------------------

def test_depth_sweep_table_reads_like_llama_benchys():
    with FakeServer() as server:
        sweep = depth.sweep(Api(server.base_url, timeout_s=10), "smollm2-135m", [0, 256], 64, 8, runs=2,
                            skipped=[(16384, "too long")])
        bodies = server.requests
    assert [r.depth for r in sweep.runs] == [0, 0, 256, 256] and all(r.error is None for r in sweep.runs)
    assert all(b["max_tokens"] == b["min_tokens"] == 8 and b["ignore_eos"] for b in bodies[1:])
    assert all(abs(r.prompt_tokens - (r.depth + 64)) <= 8 for r in sweep.runs)
    lines = depth.table(sweep).splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == ["model", "test", "t/s", "e2e_ttft (ms)"]
    assert [row.split("|")[2].strip() for row in lines[2:6]] == ["pp64", "tg8", "pp64 @ d256", "tg8 @ d256"]
    assert lines[1].startswith("|:-") and lines[1].endswith(":|") and " ± " in lines[2] and lines[-1] == "d16384: not run (too long)"
    assert judge.judge_depth(A, sweep, cfg()) == []


def test_depth_floors_and_failed_runs():
    sweep = depth.Sweep("m", 2048, 32, [depth.DepthRun(0, 2080, 0.5, 20.0, 32), depth.DepthRun(4096, 6200, 4.0, 12.0, 32),
                                        depth.DepthRun(4096, None, None, None, None, "400: too long")])
    found = judge.judge_depth(A, sweep, cfg(min_pp_tok_s={0: 1000.0, 4096: 2000.0}, min_tg_tok_s={4096: 15.0}))
    assert codes(found) == [(Code.DEPTH_RUN, f"{A} d4096"), (Code.DEPTH_PP_SLOW, f"{A} pp2048 @ d4096"),
                            (Code.DEPTH_TG_SLOW, f"{A} tg32 @ d4096")]
    assert found[0].seen == "400: too long"
    assert found[1].text.startswith(f"[depth-pp-slow] {A} pp2048 @ d4096: saw 1550.0 t/s (mean of 1); expected >= 2000 t/s "
                                    "(soak.min_pp_tok_s)\n  fix: prefill at depth 4096 is slow")
    assert "expected >= 15 t/s (soak.min_tg_tok_s)" in found[2].text


def test_llama_benchy_cells_and_names():
    assert depth.fmt([10.0, 12.0]) == "11.00 ± 1.00" and depth.fmt([]) == ""
    assert depth.test_name("pp", 2048, 0) == "pp2048" and depth.test_name("tg", 32, 16384) == "tg32 @ d16384"
    assert depth.pipe_table(["model", "test", "t/s"], [["m", "pp8", "1.00 ± 0.00"]]) == (
        "| model | test |         t/s |\n|:------|-----:|------------:|\n| m     |  pp8 | 1.00 ± 0.00 |")


def test_crossing_reason_is_the_deploys():
    c = Crossing(B, 3.2, 5.0, f"{A}: killed; {B}: killed", 0.4)
    assert c.reason == f"watchdog: {B} MemAvailable 3.2 GiB < 5 GiB; stopped every rank in 0.4 s ({A}: killed; {B}: killed)"
