"""The healthy deployment (rank 0 first, rank 1 headless) and `pytest -m soak` against the real two-node TP=2 vLLM on the simulated pair (deployed as scripts/deploy does: rank 0
first, rank 1 headless, docker compose in each node): healthy, it passes the sustained load, the long-context request
and a two-depth sweep; under each fault injected mid-soak it fails with the cause named, within the stall limit plus
a few seconds. The soak runs as a user runs it (a pytest process against the cluster file); the faults: a rank's real
processes stopped (SIGSTOP), the follower's real container killed, a cluster file whose max_model_len is larger than
the server's, and 6 GiB of the follower's memory (as the sim renders it) taken at once.
"""

import re
import threading
import time
from pathlib import Path

import pytest
import yaml

from gb10check.cluster import load_cluster
from gb10check.deploy.run import ComposeLauncher, deploy, down
from gb10check.sim import control, scenarios

from .simbed import require_provisioned_sim, run_suite

pytestmark = pytest.mark.sim
A, B = "thinkstationpgx-30", "thinkstationpgx-32"
SK = "tests/soak"
LOAD = f"{SK}/test_sustained_load.py::test_sustained_load"


class Pair:
    """The simulated pair with its cluster file and a deployed stack; `deployed()` redeploys after a fault took it down."""

    def __init__(self):
        self.path = control.up(2, quiet=True)
        self.original = self.path.read_text()
        self.launcher: ComposeLauncher | None = None
        self.said: list[str] = []  # what the last deploy said
        self.record = None

    def cluster_file(self, **soak_change) -> Path:
        """The pair's cluster file, with soak settings changed for one test (`deploy_max_model_len` for the deploy's)."""
        doc = yaml.safe_load(self.original)
        if "deploy_max_model_len" in soak_change:
            doc["deploy"]["max_model_len"] = soak_change.pop("deploy_max_model_len")
        doc["soak"].update(soak_change)
        self.path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return self.path

    def deployed(self) -> ComposeLauncher:
        self.path.write_text(self.original)
        cluster = load_cluster(self.path)
        if self.launcher is not None:
            if all(self.launcher.exit_code(n) is None for n in (A, B)):
                return self.launcher
            down(self.launcher, [A, B], say=lambda m: None)
            self.launcher.close()
        self.launcher = ComposeLauncher(cluster)
        self.said = []
        self.record = deploy(cluster, self.launcher, self.path.parent / "deployment.json", say=self.said.append, stall_timeout_s=180)
        assert self.record.outcome == "serving"
        return self.launcher

    def close(self):
        if self.launcher is not None:
            down(self.launcher, [A, B], say=lambda m: None)
            self.launcher.close()


@pytest.fixture(scope="module")
def pair():
    require_provisioned_sim()
    p = Pair()
    yield p
    p.close()
    control.down(quiet=True)


def soak_with_fault(path: Path, inject, after_s: float, *args: str) -> tuple[dict, float]:
    """The soak stage in its own process; `inject()` runs `after_s` into it. Returns (results, seconds from the fault to
    the stage's end)."""
    done: dict = {}
    worker = threading.Thread(target=lambda: done.update(run=run_suite(path, "-m", "soak", *args, timeout=600)))
    worker.start()
    time.sleep(after_s)
    injected = time.monotonic()
    inject()
    worker.join(600)
    took = time.monotonic() - injected
    print(f"{inject.__name__}: the soak stage ended {took:.1f} s after the fault")  # shown with -rP
    return done["run"], took


def failure(run, test_id: str) -> str:
    outcome = run.results[test_id]
    assert outcome.outcome == "failed", (test_id, outcome, run.stdout[-3000:])
    return outcome.message


def test_healthy_pair_deploys_rank0_first_follower_headless(pair):
    """The deployment the soak runs on, as scripts/deploy makes it (test_deploy_run.py holds its faults)."""
    launcher = pair.deployed()
    rec, said, path = pair.record, pair.said, pair.path
    assert list(rec.milestones[A]).index("distributed_init") < list(rec.milestones[A]).index("startup_complete")
    assert "headless" in rec.milestones[B] and "startup_complete" not in rec.milestones[B]
    starts = [m for m in said if m.startswith("starting rank")]
    assert starts[0].startswith(f"starting rank 0 on {A}: docker compose up -d: vllm serve") and starts[1].startswith(f"starting rank 1 on {B}")
    assert starts[1].endswith("--headless") and not starts[0].endswith("--headless")
    assert said[:2] == [f"page cache on {A}: dropped", f"page cache on {B}: dropped"]
    assert "Launching vLLM" in launcher.log(B) and "headless multiproc executor" in launcher.log(B)
    assert (path.parent / "deployment.json").exists() and '"outcome": "serving"' in (path.parent / "deployment.json").read_text()
    for n in (A, B):  # really containers, from the node's own dockerd
        assert control.node_exec(n, "docker ps --format '{{.Names}} {{.Image}}'").stdout.strip() == "gb10-vllm gb10sim/vllm-cpu:local"


def test_healthy_soak_long_context_and_depth_sweep_pass(pair):
    pair.deployed()
    run = run_suite(pair.path, "-m", "soak", timeout=900)
    assert {k: v.outcome for k, v in run.results.items()} == {
        LOAD: "passed", f"{SK}/test_long_context.py::test_long_context": "passed",
        f"{SK}/test_depth_sweep.py::test_depth_sweep": "passed"}, run.stdout[-4000:]
    out = run.stdout
    assert re.search(rf"soak requests_done\s+{A}\s+\d+\.\d\d requests", out), out[-3000:]
    for figure in ("itl_p50_ms", "itl_p99_ms", "ttft_p50_s", "ttft_p99_s", "output_tok_s"):
        assert re.search(rf"soak {figure}\s+{A}\s+\d+\.\d\d", out), (figure, out[-3000:])
    for node in (A, B):
        assert re.search(rf"soak min_mem_available\s+{node}\s+\d+\.\d\d GiB", out), out[-3000:]
    assert re.search(rf"long-context prefill\s+{A}\s+\d+\.\d\d s", out), out[-3000:]
    # llama-benchy's table: pp and tg rows per depth (d0 has no suffix)
    assert re.search(r"\|\s+pp128\s+\|\s+\d+\.\d+", out) and re.search(r"\|\s+tg16 @ d512\s+\|\s+\d+\.\d+", out), out[-3000:]


def test_prompt_larger_than_the_server_accepts_is_named(pair):
    pair.deployed()
    # The cluster file says 16384 and asks for 0.99 of it; the server runs 8192.
    path = pair.cluster_file(deploy_max_model_len=16384, long_context_fraction=0.99)
    run = run_suite(path, "-m", "soak", "-k", "test_long_context", timeout=600)
    text = failure(run, f"{SK}/test_long_context.py::test_long_context")
    assert re.search(rf"\[long-context-refused\] {A}: saw a 16\d\d\d-token prompt .*-> .*(maximum context length|max_model_len|8192)", text), text
    assert "fix: the server refused a 16" in text and "--max-model-len 16384" in text, text


def test_memory_hog_on_the_follower_stops_every_rank_and_names_it(pair):
    launcher = pair.deployed()
    # The floor 3 GiB under what the follower has now (the loaded ranks move it by well under a GiB under load); 6 GiB
    # more taken at once on the follower, as its unified memory is rendered (its processes' memory and the state's
    # extra_used_kb). A real 6 GiB process fills at about 60 MB/s on this box under the soak's load (1.2 GB/s idle,
    # 0.5 GB/s beside four busy loops): its crossing came 40-60 s after it started, at the soak's end or after it,
    # which timed the box's page zeroing, not the watch. test_deploy_run's watchdog test holds the real hog.
    path = pair.cluster_file(min_mem_available=round(launcher.mem_available_gib(B) - 3.0, 2))

    def hog():
        scenarios.change_state(B, {"extra_used_kb": 6 * 1024 * 1024})

    try:
        run, took = soak_with_fault(path, hog, 20, "-k", "test_sustained_load")
    finally:
        scenarios.change_state(B, {"extra_used_kb": 0})
    text = failure(run, LOAD)
    assert re.search(rf"\[soak-memory-floor\] {B}: saw MemAvailable \d+\.\d GiB at \d+ s into the run; the watchdog stopped "
                     rf"every rank", text), text
    assert launcher.exit_code(A) is not None and launcher.exit_code(B) is not None, "every rank stopped"
    # The bound for every fault: the stall limit plus a few seconds.
    stall_limit = load_cluster(pair.path).soak.stall_limit_s
    assert took < stall_limit + 15, f"named {took:.0f} s after the memory was taken (stall limit {stall_limit:g} s)"


def test_frozen_rank_is_a_stall_named_within_the_limit(pair):
    launcher = pair.deployed()
    stall_limit = load_cluster(pair.path).soak.stall_limit_s
    # SIGSTOP every process of the follower's rank but the container's init (vllm serve's engine and workers).
    def freeze():
        control.node_exec(B, "docker exec gb10-vllm sh -c 'kill -STOP -1'", check=False)

    try:
        run, took = soak_with_fault(pair.path, freeze, 20, "-k", "test_sustained_load")
    finally:
        control.node_exec(B, "docker exec gb10-vllm sh -c 'kill -CONT -1'", check=False)
    text = failure(run, LOAD)
    assert re.search(r"\[soak-stall\] .*soak stream #\d+: saw no answer for 3\d\.\d s while waiting for", text), text
    assert took < stall_limit + 15, f"named {took:.0f} s after the freeze (stall limit {stall_limit:g} s)"
    launcher.stop(A, kill=True)  # a stalled TP pair does not come back by itself: the next test deploys again
    launcher.stop(B, kill=True)


def test_follower_container_killed_is_named_with_its_log(pair):
    launcher = pair.deployed()
    def kill():
        control.node_exec(B, "docker kill gb10-vllm", check=False)

    run, took = soak_with_fault(pair.path, kill, 20, "-k", "test_sustained_load")
    text = failure(run, LOAD)
    assert re.search(rf"\[soak-rank-exited\] {B}: saw rank 1's container exited with code \d+ at \d+ s into the run", text), text
    assert "last log lines:" in text, text
    assert launcher.exit_code(B) is not None
    stall_limit = load_cluster(pair.path).soak.stall_limit_s
    assert took < stall_limit + 15, f"named {took:.0f} s after the kill (stall limit {stall_limit:g} s)"


def test_down_takes_every_rank_away_and_is_idempotent(pair):
    """On what the last fault left (the follower's container killed): scripts/down's order, nothing left."""
    launcher = pair.launcher
    assert launcher is not None
    said = []
    assert down(launcher, [A, B], say=said.append) and said == [f"{B}: down", f"{A}: down"]
    for n in (A, B):
        assert control.node_exec(n, "docker ps -aq").stdout.strip() == ""
    assert down(launcher, [A, B], say=lambda m: None), "down is idempotent"
