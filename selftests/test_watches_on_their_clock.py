"""The deploy's and the soak's watches on their clock seam: a scripted launcher (selftests/fake_openai.FakeLauncher) and a
scripted clock (ScriptedClock: sleeping advances it at once), so each watch's timing rule is proven exactly, whatever
the machine's load: the memory floor acted on at the first reading under it, every rank stopped; a rank's exit and a
log signature read within one full check (FULL_CHECK_S); a stall named once its limit has passed, not before. No
vLLM, no root, no wall-clock bound; the same faults on the real pair are test_deploy_run.py's and test_pair_on_sim.py's."""

from pathlib import Path

import pytest

from gb10check import soak
from gb10check.cluster import Cluster, load_cluster
from gb10check.deploy.run import DeployFailed, deploy
from gb10check.remote import RemoteError
from gb10check.watch import FULL_CHECK_S

from .conftest import read_capture
from .fake_openai import FakeLauncher, ScriptedClock

REPO = Path(__file__).resolve().parent.parent
CLUSTER = load_cluster(REPO / "cluster.example.yaml")
A, B = "thinkstationpgx-30", "thinkstationpgx-32"
RANKS = {A: 0, B: 1}
POLL = CLUSTER.deploy.watchdog.poll_interval_s  # 0.5 s
FLOOR = CLUSTER.deploy.watchdog.min_mem_available  # 5 GiB
INIT = "(Worker pid=7) INFO 12-01 10:00:00 [parallel_state.py:1] world_size=2 rank={rank} local_rank=0 backend=nccl\n"
NO_HEADLESS = ("(EngineCore_DP0 pid=9) ERROR 12-01 10:00:05 [core.py:1] AssertionError: collective_rpc should not be called "
               "on follower node\n")


def deploy_on(clock: ScriptedClock, launcher: FakeLauncher, tmp_path: Path, stall_s: float = 240):
    """The deploy's watch on the scripted clock: (the failure's text, virtual seconds from the start to it)."""
    start = clock()
    with pytest.raises(DeployFailed) as err:
        deploy(CLUSTER, launcher, tmp_path / "deployment.json", say=lambda m: None, stall_timeout_s=stall_s, clock=clock,
               sleep=clock.sleep)
    return str(err.value), clock() - start


def started_log(node: str, t: float) -> str:
    return INIT.format(rank=RANKS[node])


# ---- the deploy's watch ------------------------------------------------------------------------------------------

def test_deploy_a_rank_that_exits_fails_within_one_full_check_and_stops_the_other(tmp_path):
    clock = ScriptedClock()
    launcher = FakeLauncher(exit=lambda node, t: 1 if node == B and t >= 30 else None, clock=clock, ranks=RANKS,
                            log=lambda node, t: started_log(node, t) + (NO_HEADLESS if node == B and t >= 30 else ""))
    text, took = deploy_on(clock, launcher, tmp_path)
    assert 30 <= took <= 30 + FULL_CHECK_S + POLL, took  # not the stall limit (240 s): the exit, at the next full check
    assert f"{B} (rank 1) exited with code 1 during startup" in text and "startup stalled" not in text
    assert "cause: rank 1+ started without --headless" in text
    assert launcher.stopped == [(A, False)] and f"{A}: stopped; {B}: not running" in text  # TERM first: it is no wedge


def test_deploy_memory_floor_kills_every_rank_at_the_first_reading_under_it(tmp_path):
    clock = ScriptedClock()
    launcher = FakeLauncher(mem=lambda node, t: FLOOR - 1.8 if node == B and t >= 10 else 40.0, clock=clock, ranks=RANKS,
                            log=started_log)
    text, took = deploy_on(clock, launcher, tmp_path)
    assert 10 <= took <= 10 + POLL, took  # every poll interval, whatever the full check's cadence
    assert text.startswith(f"watchdog: {B} MemAvailable 3.2 GiB < 5 GiB; stopped every rank in 0.0 s")
    assert sorted(launcher.stopped) == [(A, True), (B, True)]  # killed: a wedging load does not wait for TERM


def test_deploy_no_new_milestone_is_a_stall_named_after_its_limit_not_before(tmp_path):
    clock = ScriptedClock()
    launcher = FakeLauncher(clock=clock, ranks=RANKS, log=started_log)
    text, took = deploy_on(clock, launcher, tmp_path, stall_s=45)
    assert 45 < took <= 45 + FULL_CHECK_S + POLL, took
    assert (f"startup stalled: no new milestone on any rank for 46 s ({A} at 'distributed_init', "
            f"{B} at 'distributed_init'); likely causes: a firewall dropping the master port 29501") in text
    assert sorted(launcher.stopped) == [(A, False), (B, False)]


# ---- the deploy's startup phases (deploy/phases.py), on phase lines of real logs ------------------------------------

GB10_LOG = "vllm_logs/vllm-gb10-single-node-startup-jethac-server.log"  # a GB10 0.20.1 start: compile and graph capture
SIM_LOG = "ours/vllm_logs/sim-vllm-0.32.0-cpu-serve-tp1-eager.log"  # our sim's eager start: no compile, no capture


def upto(name: str, marker: str) -> str:
    """A real log up to its first line holding `marker`: a start that stopped there."""
    lines = read_capture(name).split("\n")
    end = next(i for i, line in enumerate(lines) if marker in line)
    return "\n".join(lines[:end + 1]) + "\n"


def budgets(**over) -> Cluster:
    expect = CLUSTER.expect.model_copy(update={"startup_phase_budgets_s": {**CLUSTER.expect.startup_phase_budgets_s, **over}})
    return CLUSTER.model_copy(update={"expect": expect})


def phase_deploy(cluster, clock, launcher, tmp_path, stall_s=45):
    start = clock()
    with pytest.raises(DeployFailed) as err:
        deploy(cluster, launcher, tmp_path / "deployment.json", say=lambda m: None, stall_timeout_s=stall_s, clock=clock,
               sleep=clock.sleep)
    return str(err.value), clock() - start


@pytest.mark.parametrize("name, marker, phase", [
    (GB10_LOG, "non-default args", None),  # before the weights: the stall limit's time
    (GB10_LOG, "Loading safetensors checkpoint shards:   0%", "weights"),
    (GB10_LOG, "Model loading took", "compile"),
    (GB10_LOG, "Dynamo bytecode", "compile"),
    (GB10_LOG, "torch.compile took", "kv_cache"),
    (GB10_LOG, "GPU KV cache size", "graph_capture"),
    (GB10_LOG, "Graph capturing finished", "api"),
    (GB10_LOG, "Application startup complete", None),
    (SIM_LOG, "Loading weights took", "weights"),
    (SIM_LOG, "KV cache size", "api"),  # eager: neither compile nor capture
    ("ours/vllm_logs/sim-vllm-0.32.0-cpu-tp2-rank0.log", "KV cache size", "api"),
])
def test_the_phase_a_real_start_is_in(name, marker, phase):
    from gb10check.deploy.phases import current
    from gb10check.watch import read_log

    assert current(read_log(upto(name, marker))) == phase


def test_deploy_a_phase_longer_than_the_stall_limit_goes_on_within_its_budget_then_fails_named(tmp_path):
    """Weights load for 100 s (past the 45 s stall limit: no new milestone meanwhile), then torch.compile hangs: the
    deploy fails in compile once its budget (the cluster file's 60 s) has passed, naming the phase, the budget, its source."""
    clock = ScriptedClock()
    loading, compiling = upto(GB10_LOG, "Loading safetensors checkpoint shards:   0%"), upto(GB10_LOG, "Dynamo bytecode")
    launcher = FakeLauncher(clock=clock, ranks=RANKS, log=lambda node, t: loading if t < 100 else compiling)
    text, took = phase_deploy(budgets(compile=60), clock, launcher, tmp_path)
    assert 100 + 60 < took <= 100 + 60 + FULL_CHECK_S + POLL, took  # not at 45 s (the stall limit), nor before the budget
    assert text.startswith(f"startup stalled in phase 'compile' (torch.compile) on {A} (rank 0): 6") and \
        "over its budget of 60 s (expect.startup_phase_budgets_s.compile in the cluster file); last milestone 'model_loaded'" \
        in text and "likely causes: a cold torch.compile cache" in text
    record = (tmp_path / "deployment.json").read_text()
    assert '"weights": [\n   0.0,\n   100.' in record and '"compile": [\n   100.' in record


def test_deploy_graph_capture_budget_comes_from_the_profile(tmp_path):
    clock = ScriptedClock()
    capturing = upto(GB10_LOG, "GPU KV cache size")  # past the KV cache: CUDA graph capture next (FULL_AND_PIECEWISE)
    launcher = FakeLauncher(clock=clock, ranks=RANKS, log=lambda node, t: capturing)
    text, took = phase_deploy(CLUSTER, clock, launcher, tmp_path)
    limit = CLUSTER.expect.startup_phase_budgets_s["graph_capture"]  # 900 s, profile gb10
    assert limit < took <= limit + FULL_CHECK_S + POLL, took
    assert f"startup stalled in phase 'graph_capture' (CUDA graph capture) on {A} (rank 0)" in text
    assert f"over its budget of {limit:g} s (expect.startup_phase_budgets_s.graph_capture of profile gb10)" in text


def test_deploy_an_eager_start_skips_compile_and_capture(tmp_path):
    """The sim's eager engine goes from its KV cache to the API: a stall there is the API's, not a graph capture's."""
    clock = ScriptedClock()
    launcher = FakeLauncher(clock=clock, ranks=RANKS, log=lambda node, t: upto(SIM_LOG, "KV cache size"))
    text, took = phase_deploy(budgets(api=30), clock, launcher, tmp_path)
    assert 30 < took <= 30 + FULL_CHECK_S + POLL, took
    assert text.startswith(f"startup stalled in phase 'api' (the API server's start) on {A} (rank 0)")


def test_deploy_a_follower_that_cannot_start_stops_rank0_without_waiting(tmp_path):
    clock = ScriptedClock()
    launcher = FakeLauncher(clock=clock, ranks=RANKS, refuse={B})
    text, took = deploy_on(clock, launcher, tmp_path)
    assert took == 0 and launcher.started == [A]
    assert text.startswith(f"{B}: `docker compose up -d` exited 1") and f"stopped every rank ({A}: stopped; " in text


# ---- the soak's watch ---------------------------------------------------------------------------------------------

def soak_watch(clock: ScriptedClock, launcher: FakeLauncher, until_s: float = 60) -> soak.Watch:
    """The soak's watch run on the scripted clock in this thread, until it fires or `until_s` virtual seconds passed."""
    t0 = clock()
    watch = soak.Watch(CLUSTER, launcher, FLOOR, POLL, t0, clock=clock)

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if clock() - t0 >= until_s:
            watch.done.set()

    watch.sleep = sleep
    watch.start_logs()
    watch.run()
    return watch


def test_soak_memory_floor_at_the_first_poll_under_it_every_node_sampled_every_poll():
    clock = ScriptedClock()
    launcher = FakeLauncher(mem=lambda node, t: 3.2 if node == B and t >= 5 else 40.0, clock=clock)
    watch = soak_watch(clock, launcher)
    seen = watch.seen
    assert watch.cause == "memory floor" and seen.crossing.node == B and seen.crossing.gib == 3.2
    assert 5 <= seen.crossing_at_s <= 5 + POLL and sorted(launcher.stopped) == [(A, True), (B, True)]
    assert [t for t, _ in seen.memory[A]] == [i * POLL for i in range(len(seen.memory[A]))]  # every poll, none skipped
    assert seen.min_memory() == {A: 40.0, B: 3.2}


def test_soak_a_rank_exit_is_read_within_one_full_check_with_its_last_lines():
    clock = ScriptedClock()
    launcher = FakeLauncher(exit=lambda node, t: 137 if node == B and t >= 7 else None, clock=clock,
                            log=lambda node, t: "line one\nline two\n")
    watch = soak_watch(clock, launcher)
    [gone] = watch.seen.exits
    assert watch.cause == "rank exited" and (gone.node, gone.rank, gone.code) == (B, 1, 137)
    assert 7 <= gone.at_s <= 7 + FULL_CHECK_S and gone.last_lines == ["line one", "line two"]


def test_soak_a_signature_is_read_within_one_full_check():
    clock = ScriptedClock()
    launcher = FakeLauncher(clock=clock, log=lambda node, t: NO_HEADLESS if node == A and t >= 3 else "")
    watch = soak_watch(clock, launcher)
    [sig] = watch.seen.signatures
    assert watch.cause == "signature" and (sig.node, sig.name) == (A, "follower_collective_rpc")
    assert 3 <= sig.at_s <= 3 + FULL_CHECK_S


def test_soak_a_node_that_cannot_be_read_is_said_once_and_ends_nothing():
    clock = ScriptedClock()

    def mem(node, t):
        if node == B:
            raise RemoteError("connection reset")
        return 40.0

    watch = soak_watch(clock, FakeLauncher(mem=mem, clock=clock), until_s=10)
    assert not watch.fired.is_set() and watch.cause is None
    assert watch.seen.unreadable == ["a node: MemAvailable: connection reset"]


# ---- the soak's stall detector -------------------------------------------------------------------------------------

class NoApi:
    client = None  # the driver makes the client before its clock starts; nothing is sent here


def test_soak_stall_detector_names_a_stream_once_its_limit_has_passed_not_before():
    clock = ScriptedClock()
    cfg = soak.settings(CLUSTER, stall_limit_s=1.0, poll_interval_s=POLL)
    driver = soak._Driver(CLUSTER, None, NoApi(), cfg, lambda: None, 1, 30, 2.0, None, None, clock=clock)
    waiting = soak._Active(soak.StreamRecord(0, 64, 0.0), clock(), clock(), 2.0)  # no token yet: the first-token limit
    talking = soak._Active(soak.StreamRecord(1, 512, 0.0, tokens=3), clock(), clock(), 2.0)  # tokens: the stall limit
    driver.active = {0: waiting, 1: talking}
    clock.sleep(1.0)
    driver._stalls()
    assert driver.result.stalls == []  # at the limit is not over it
    clock.sleep(0.25)
    driver._stalls()
    assert [(s.stream, s.waiting_for, s.silent_s, s.limit_s, s.tokens) for s in driver.result.stalls] == \
        [(1, "its next token", 1.2, 1.0, 3)]
    clock.sleep(1.0)
    driver._stalls()
    assert [(s.stream, s.waiting_for, s.silent_s, s.limit_s) for s in driver.result.stalls] == \
        [(1, "its next token", 1.2, 1.0), (0, "its first token", 2.2, 2.0)]  # each stream named once
