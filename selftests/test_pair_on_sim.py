"""A pair's life on the simulated pair, with systemd as PID 1 of each node, on one deployment where a proof only reads it:
preflight and network pass (the network run without the slow runs: the gate names it partial, and the steps go on by a
logged override); the helper scripts in `scripts/` run as a user runs them between the stages and then find
nothing more to change; `scripts/deploy` brings up the real two-node vLLM (TP=2 over the simulated
enp1s0f0np0, rank 0 first, rank 1 headless, docker compose in each node); `pytest -m serving` passes against it (the concurrency sweep and
the ranks' traffic on the links only among its checks); the follower's management port taken down for 20 s during
generation does not stall or stop serving; a rank-like connection over the management network fails the fabric check both
ways; `pytest -m soak` passes the sustained load, the long-context request and a two-depth sweep on it; under each fault injected
mid-soak the soak fails with the cause named, within the stall limit plus a few seconds (a fault that ends the
deployment is followed by a fresh one, made by the deploy's own code); `gb10check watch` ticks against the deployment,
names the follower frozen by `docker pause` within one tick, and its ticks read back from the history; `scripts/down`
takes away what the last fault left. The soak runs as a user runs it (a pytest process against the cluster file); the faults: a rank's real processes
stopped (SIGSTOP), the follower's real container killed, a cluster file whose max_model_len is larger than the
server's, and 6 GiB of the follower's memory (as the sim renders it) taken at once; then a sweep whose second level
kills rank 0's worker. (test_deploy_run.py holds the
deploy's own faults.)
"""

import json
import re
import threading
import time
from pathlib import Path

import pytest
import yaml

from gb10check import history
from gb10check.cluster import load_cluster
from gb10check.deploy.run import ComposeLauncher, deploy, down
from gb10check.serving import ApiUnreachable, api_of, sweep_request
from gb10check.sim import control, scenarios
from gb10check.sim.topology import mgmt_ip
from gb10check.stage import deployment_record_path

from .simbed import require_provisioned_sim, run_suite, script, step

pytestmark = [pytest.mark.sim, pytest.mark.vllm]  # a real vLLM: one at a time (selftests/conftest.py)
A, B = "thinkstationpgx-30", "thinkstationpgx-32"
SK = "tests/soak"
LOAD = f"{SK}/test_sustained_load.py::test_sustained_load"
FAULT_AFTER_S = 10  # into the soak: its streams answer by then (the deploy's first completion paid the one-time cost)


class Pair:
    """The simulated pair with its cluster file and its deployed stack: `deployed()` takes the running deployment as it
    is (the one scripts/deploy made, or the last fresh one), and deploys afresh once a fault took it down."""

    def __init__(self):
        self.path = control.up(2, quiet=True, init="systemd")
        self.original = self.path.read_text()
        self.launcher: ComposeLauncher | None = None

    def cluster_file(self, watch: dict | None = None, **soak_change) -> Path:
        """The pair's cluster file, with soak settings changed for one test (`deploy_max_model_len` for the deploy's;
        `watch`: the watch section's)."""
        doc = yaml.safe_load(self.original)
        if "deploy_max_model_len" in soak_change:
            doc["deploy"]["max_model_len"] = soak_change.pop("deploy_max_model_len")
        doc["soak"].update(soak_change)
        doc.setdefault("watch", {}).update(watch or {})
        self.path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return self.path

    def deployed(self) -> ComposeLauncher:
        self.path.write_text(self.original)
        cluster = load_cluster(self.path)
        if self.launcher is None:
            self.launcher = ComposeLauncher(cluster)  # onto what scripts/deploy left running, if it did
        if all(self.launcher.exit_code(n) is None for n in (A, B)):
            return self.launcher
        down(self.launcher, [A, B], say=lambda m: None)
        self.launcher.close()
        self.launcher = ComposeLauncher(cluster)
        record = deploy(cluster, self.launcher, deployment_record_path(self.path), say=lambda m: None, stall_timeout_s=180)
        assert record.outcome == "serving"
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


def test_scripts_prepare_and_deploy_the_pair(pair):
    """As a user does it between the stages; the deployment stays for the serving and soak proofs that follow."""
    path = pair.path
    checks = run_suite(path, "-m", "(preflight or network) and not slow")
    assert checks.results and {o.outcome for o in checks.results.values()} <= {"passed", "skipped"}, checks.stdout[-3000:]
    # Without the slow runs (the compute and canaries, RDMA bandwidth, NCCL: proven in test_checks_on_sim) both stages'
    # runs are partial: the gate names each, and the steps that change the cluster go on by a logged override that says why.
    shut = step("gate", path, timeout=120)
    assert shut.returncode == 1, shut.stderr
    assert "preflight: no full run recorded" in shut.stderr and "network: no full run recorded" in shut.stderr, shut.stderr
    override = ("--override", "self-test: stages run without the slow checks (proven in test_checks_on_sim)")
    for name in ("netplan", "ssh-keys", "sync", "compose-render"):  # in the order of docs/helpers.md, then once more
        out = script(name, f"--cluster={path}", *override)
        assert out.returncode == 0, f"{name}: {out.stderr[-2000:]}"
        again = script(name, f"--cluster={path}", "--check")
        assert again.returncode == 0, f"{name} is not idempotent: {again.stderr[-2000:]}"
    gate = step("gate", path, *override, timeout=120)
    assert gate.returncode == 0 and "gate: OVERRIDDEN" in gate.stderr, gate.stdout + gate.stderr

    deployed = script("deploy", f"--cluster={path}", "--stall-timeout=180", *override, timeout=900)
    assert deployed.returncode == 0, deployed.stderr[-3000:]
    said = deployed.stdout.splitlines()
    assert said[:2] == [f"page cache on {A}: dropped", f"page cache on {B}: dropped"], said[:4]
    starts = [m for m in said if m.startswith("starting rank")]
    assert starts[0].startswith(f"starting rank 0 on {A}: docker compose up -d: vllm serve") and starts[1].startswith(f"starting rank 1 on {B}")
    assert starts[1].endswith("--headless") and not starts[0].endswith("--headless")
    assert f"health: http://{mgmt_ip(0)}:20001/health answers" in deployed.stdout
    assert re.search(r"serving: a first completion came back in \d+\.\d s,", deployed.stdout), deployed.stdout[-2000:]
    record = json.loads(deployment_record_path(path).read_text())
    assert record["outcome"] == "serving", record
    milestones = record["milestones"]
    assert list(milestones[A]).index("distributed_init") < list(milestones[A]).index("startup_complete")
    assert "headless" in milestones[B] and "startup_complete" not in milestones[B]
    launcher = pair.deployed()  # the running deployment, as it is
    assert "Launching vLLM" in launcher.log(B) and "headless multiproc executor" in launcher.log(B)
    for n in (A, B):  # really containers, from the node's own dockerd
        assert control.node_exec(n, "docker ps --format '{{.Names}} {{.Image}}'").stdout.strip() == "gb10-vllm gb10sim/vllm-cpu:local"


def test_serving_passes_on_the_deployment(pair):
    """Every serving check but the decode floor: two TP=2 ranks on this machine's two shared cores decode at about the
    sim's floor (5 tok/s; 5.0 failed a fresh-clone run), a figure of this box, not of the deployment. The decode check is
    proven on the head's TP=1 server (test_serving_on_sim: passes healthy, fails throttled)."""
    pair.deployed()
    serving = run_suite(pair.path, "-m", "serving", "-k", "not test_decode_throughput", timeout=900)
    failed = {k: o.message for k, o in serving.results.items() if o.outcome != "passed"}
    assert len(serving.results) >= 12 and not failed, failed
    # the concurrency sweep up to the pair's max_num_seqs, and the ranks' traffic on the links both ways
    for n in ("1 stream", "2 streams", "4 streams"):
        assert re.search(rf"sweep output_tok_s\s+{A} {n}\s+\d+\.\d\d tok/s", serving.stdout), serving.stdout[-2000:]
    assert {k for k in serving.results if "test_traffic_between_nodes_on_the_links" in k} == {
        f"tests/serving/test_fabric.py::test_traffic_between_nodes_on_the_links[{A}->{B}]",
        f"tests/serving/test_fabric.py::test_traffic_between_nodes_on_the_links[{B}->{A}]"}, sorted(serving.results)


MGMT_DOWN_S = 20  # the management link down this long during generation: several requests' worth
# A rank that needs the management network stops at its next collective until the port is back: its request's first
# token or a gap between two tokens then lasts the rest of the window. Healthy, tokens come every fraction of a second.
TOKEN_GAP_LIMIT_S = 10


def test_management_link_down_on_the_follower_and_serving_goes_on(pair):
    """The follower's management port down for 20 s while rank 0 generates: the ranks talk over the links only (the
    fabric check above read that from ss), so every request of those 20 s is answered without a stall and the engine
    lives on."""
    pair.deployed()
    cluster = load_cluster(pair.path)
    api = api_of(cluster, timeout_s=60)
    port = control.node_exec(B, f"ip -o -4 addr show to {mgmt_ip(1)}").stdout.split()[1]
    answered = []
    control.node_exec(B, f"ip link set {port} down")
    try:
        until = time.monotonic() + MGMT_DOWN_S
        while time.monotonic() < until:
            reply, timed = api.stream(sweep_request(cluster.deploy.served_model_name, len(answered), 16))
            assert reply is None and timed.done and not timed.broken and timed.completion_tokens, (reply, timed)
            waits = [timed.ttft_s, *timed.gaps, timed.total_s - timed.last_token_s]
            assert max(waits) < TOKEN_GAP_LIMIT_S, f"request {len(answered)} stalled {max(waits):.1f} s with the port down"
            answered.append(timed.completion_tokens)
    finally:
        control.node_exec(B, f"ip link set {port} up")
        # the runner's SSH session to the follower died with its port: the next test's launcher opens a fresh one
        pair.launcher.close()
        pair.launcher = None
    assert len(answered) >= 2, answered
    assert api.get("/health", root=True).status == 200
    for n in (A, B):  # both ranks still running, asked from inside each node
        assert control.node_exec(n, "docker inspect -f '{{.State.Running}}' gb10-vllm").stdout.strip() == "true"


PROBE_PORT = 29599  # a rank-like connection's port, allowed on the management network for this test only
PROBE = "gb10check-mgmt-probe"  # in the probe processes' command lines, to find them again


def test_a_rank_connection_on_the_management_network_fails_the_fabric_check(pair):
    """A python3 in each rank's container connected over the management network (as Gloo or NCCL's bootstrap is when
    bound to the default route), the firewall letting it through: the fabric check fails both directions, naming the
    connection, its process and the variables that bind it; the probes gone, the deployment serves on."""
    pair.deployed()
    a_mgmt, b_mgmt = mgmt_ip(0), mgmt_ip(1)
    rule = f"allow proto tcp from {b_mgmt} to any port {PROBE_PORT}"
    control.node_exec(A, f"ufw {rule}")
    control.node_exec(A, "docker exec -d gb10-vllm python3 -c 'import socket, time; tag = \"%s\"; "
                         "s = socket.create_server((\"\", %d)); c, _ = s.accept(); time.sleep(300)'" % (PROBE, PROBE_PORT))
    control.node_exec(B, "docker exec -d gb10-vllm python3 -c 'import socket, time; tag = \"%s\"; "
                         "c = socket.create_connection((\"%s\", %d), timeout=10); time.sleep(300)'" % (PROBE, a_mgmt, PROBE_PORT))
    try:
        deadline = time.monotonic() + 20
        while f"{a_mgmt}:{PROBE_PORT}" not in control.node_exec(B, "ss -tnH state established").stdout:
            assert time.monotonic() < deadline, "the probe never connected"
            time.sleep(0.5)
        run = run_suite(pair.path, "-m", "serving", "-k", "test_traffic_between_nodes", timeout=300)
    finally:
        for n in (A, B):
            control.node_exec(n, f"pkill -f '{PROBE[:-1]}[{PROBE[-1]}]'", check=False)  # never the shell running it
        control.node_exec(A, f"ufw delete {rule}", check=False)
    fabric = "tests/serving/test_fabric.py::test_traffic_between_nodes_on_the_links"
    text = failure(run, f"{fabric}[{B}->{A}]")
    assert re.search(rf"\[traffic-on-mgmt\] {B}->{A}: saw {re.escape(b_mgmt)}:\d+ -> {re.escape(a_mgmt)}:{PROBE_PORT} \({A}'s "
                     rf"management address\), process python3 \(pid \d+\); expected connections between nodes on the links' "
                     rf"addresses", text), text
    assert "GLOO_SOCKET_IFNAME=" in text and "NCCL_SOCKET_IFNAME=" in text, text
    text = failure(run, f"{fabric}[{A}->{B}]")
    assert re.search(rf"\[traffic-on-mgmt\] {A}->{B}: saw {re.escape(a_mgmt)}:{PROBE_PORT} -> {re.escape(b_mgmt)}:\d+ \({B}'s "
                     rf"management address\), process python3", text), text
    assert api_of(load_cluster(pair.path), timeout_s=30).get("/health", root=True).status == 200


def test_healthy_soak_long_context_and_depth_sweep_pass(pair):
    pair.deployed()
    # 30 s of sustained load (the sim's cluster file says 60, a rehearsal's): how the soak judges time is proven on its
    # clock (test_judges_soak, test_watches_on_their_clock); here, that a real pair carries it and reports its figures.
    run = run_suite(pair.cluster_file(duration_s=30), "-m", "soak", timeout=900)
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


def served_requests(cluster_path: Path) -> float:
    """The requests the server finished (vLLM's /metrics), to count what a watch tick sent."""
    text = api_of(load_cluster(cluster_path)).get("/metrics", root=True).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:e2e_request_latency_seconds_count{"))


def tick(path: Path, history_file: Path) -> tuple[int, dict, str]:
    """`gb10check watch --once` as a timer runs it: (exit status, its JSON line, its stderr)."""
    out = step("watch", path, "--once", f"--history={history_file}", timeout=300)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, out.stdout + out.stderr
    return out.returncode, json.loads(lines[0]), out.stderr


def test_watch_ticks_and_names_the_paused_follower_within_one_tick(pair, tmp_path):
    """A tick against the deployed pair passes with one request; the follower's container frozen (`docker pause`), the
    next tick fails naming rank 1 and why; unpaused, the pair answers again; its memory squeezed, the next tick names
    the node; every tick's rows read back."""
    pair.deployed()
    hist = tmp_path / "history.sqlite"
    before = served_requests(pair.path)
    status, line, said = tick(pair.path, hist)
    assert status == 0 and set(line["outcomes"].values()) == {"passed"}, said + json.dumps(line)
    assert served_requests(pair.path) - before == 1  # one small request a tick, never more
    for node in (A, B):
        assert line["figures"][f"watch mem available {node}"] > 0 and f"boot id {node}" in line["figures"]
    assert line["figures"][f"watch ttft {A}"] < 30 and line["stopped"].startswith("no rank shows why")
    # The TTFT budget of this tick alone at 10 s (the pair answers in about 2-3 s here): the frozen tick ends 15 s in.
    path = pair.cluster_file(watch={"ttft_budget_s": 10})
    control.node_exec(B, "docker pause gb10-vllm")
    try:
        frozen, line2, said2 = tick(path, hist)
    finally:
        control.node_exec(B, "docker unpause gb10-vllm")
    assert frozen == 1 and line2["outcomes"]["watch::ranks"] == "failed", said2
    assert line2["stopped"].startswith(f"rank 1 on {B} stopped: its container is paused (docker pause: every process in it "
                                       "frozen)"), line2["stopped"]
    assert re.search(rf"\[rank-stopped\] {B}: saw rank 1 stopped \(the watch's request: .*\): its container is paused", said2)
    status3, line3, said3 = tick(pair.cluster_file(), hist)  # the pair serves again once unpaused
    assert status3 == 0, said3
    # A memory squeeze on the follower: its floor 3 GiB under what it has, then 6 GiB more taken (as its unified memory
    # is rendered): the next tick names the node and its MemAvailable.
    have = line3["figures"][f"watch mem available {B}"]
    squeezed = pair.cluster_file(watch={"min_mem_available": round(have - 3.0, 2)})
    scenarios.change_state(B, {"extra_used_kb": 6 * 1024 * 1024})
    try:
        status4, line4, said4 = tick(squeezed, hist)
    finally:
        scenarios.change_state(B, {"extra_used_kb": 0})
        pair.cluster_file()
    assert status4 == 1 and line4["outcomes"][f"watch::memory[{B}]"] == "failed", said4 + json.dumps(line4)
    floor = re.escape(f"{round(have - 3.0, 2):g}")
    assert re.search(rf"\[watch-memory\] {B}: saw MemAvailable \d+\.\d GiB; expected >= {floor} GiB", said4), said4
    assert line4["outcomes"]["watch::ranks"] == "passed"  # a squeeze is not a stopped rank
    store = history.History.open(hist)
    try:
        runs = store.runs(load_cluster(pair.path).name)
        assert [r.id for r in runs] == [line4["run"], line3["run"], line2["run"], line["run"]]
        assert [r.green for r in runs] == [False, True, False, True]
        shown = store.show(line2["run"])
        assert shown.stages == ["watch"] and {f["code"] for f in shown.findings} >= {"rank-stopped", "watch-no-answer"}
        assert ("watch mem available", B) in {(w, where) for w, where, _, _ in shown.figures}
    finally:
        store.close()


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
        run, _ = soak_with_fault(path, hog, FAULT_AFTER_S, "-k", "test_sustained_load")
    finally:
        scenarios.change_state(B, {"extra_used_kb": 0})
    text = failure(run, LOAD)
    assert re.search(rf"\[soak-memory-floor\] {B}: saw MemAvailable \d+\.\d GiB at \d+ s into the run; the watchdog stopped "
                     rf"every rank", text), text
    assert launcher.exit_code(A) is not None and launcher.exit_code(B) is not None, "every rank stopped"
    # How soon the watch names a fault is proven on its own clock (test_watches_on_their_clock); here, that it names it.


def test_frozen_rank_is_a_stall_named_within_the_limit(pair):
    launcher = pair.deployed()
    # SIGSTOP every process of the follower's rank but the container's init (vllm serve's engine and workers).
    def freeze():
        control.node_exec(B, "docker exec gb10-vllm sh -c 'kill -STOP -1'", check=False)

    try:
        run, _ = soak_with_fault(pair.path, freeze, FAULT_AFTER_S, "-k", "test_sustained_load")
    finally:
        control.node_exec(B, "docker exec gb10-vllm sh -c 'kill -CONT -1'", check=False)
    text = failure(run, LOAD)
    assert re.search(r"\[soak-stall\] .*soak stream #\d+: saw no answer for 3\d\.\d s while waiting for", text), text
    # ... and the rank that stopped named first, from the looks the soak took after the stall
    assert re.search(rf"\[rank-stopped\] {B}: saw rank 1 stopped \(soak stream #\d+ stalled\): its processes .* are stopped "
                     r"\(SIGSTOP\)", text), text
    # Resumed, the pair serves on (the soak's streams ended; the engine waited): the next test takes it as it is. Should
    # it not answer, both ranks go and the next test deploys afresh.
    cluster = load_cluster(pair.path)
    try:  # the deploy's own readiness step: one completion
        serves = api_of(cluster, timeout_s=60).first_token(cluster.deploy.served_model_name).status == 200
    except ApiUnreachable:
        serves = False
    if not serves:
        launcher.stop(A, kill=True)
        launcher.stop(B, kill=True)


def test_follower_container_killed_is_named_with_its_log(pair):
    launcher = pair.deployed()
    def kill():
        control.node_exec(B, "docker kill gb10-vllm", check=False)

    run, _ = soak_with_fault(pair.path, kill, FAULT_AFTER_S, "-k", "test_sustained_load")
    text = failure(run, LOAD)
    assert re.search(rf"\[soak-rank-exited\] {B}: saw rank 1's container exited with code \d+ at \d+ s into the run", text), text
    assert "last log lines:" in text, text
    assert launcher.exit_code(B) is not None


SWEEP = "tests/serving/test_sweep.py::test_concurrency_sweep"
RUNNING = re.compile(r"^vllm:num_requests_running\{[^}]*\} (\d+(?:\.\d+)?)$", re.M)
# rank 0's tensor-parallel worker, by the process title vLLM gives it, killed from inside its container
KILL_RANK0_WORKER = ("docker exec gb10-vllm sh -c 'for p in /proc/[0-9]*; do case \"$(tr \"\\0\" \" \" < $p/cmdline 2>/dev/null)\" "
                     "in VLLM::Worker*) kill -9 ${p#/proc/};; esac; done'")


def test_a_sweep_level_that_kills_a_rank_is_named(pair):
    """Rank 0's worker killed as soon as two requests run at once (an engine that dies only at some batch sizes): the
    sweep passes level 1, fails level 2 naming it, and leaves the levels above it unrun."""
    pair.deployed()
    cluster = load_cluster(pair.path)
    api = api_of(cluster, timeout_s=10)
    stop, killed = threading.Event(), []

    def kill_at_two_running():
        while not stop.is_set():
            try:
                m = RUNNING.search(api.get("/metrics", root=True, timeout_s=5).text or "")
            except Exception:  # noqa: BLE001 - the server between requests; poll again
                m = None
            if m and float(m[1]) >= 2:
                killed.append(control.node_exec(A, KILL_RANK0_WORKER, check=False).returncode)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=kill_at_two_running, daemon=True)
    watcher.start()
    try:
        run = run_suite(pair.path, "-m", "serving", "-k", "test_concurrency_sweep", timeout=600)
    finally:
        stop.set()
        watcher.join(10)
    assert killed, "two requests never ran at once"
    text = failure(run, SWEEP)
    assert re.search(rf"\[sweep-level\] {A}: saw level 2 \(2 streams at once\): \d+ problems?: ", text), text
    assert re.search(rf"sweep output_tok_s\s+{A} 1 stream\s+\d+\.\d\d tok/s", run.stdout), run.stdout[-2000:]
    assert "| 4 | not run (a lower level failed) |" in run.stdout, run.stdout[-3000:]


def test_down_takes_every_rank_away_and_is_idempotent(pair):
    """On what the last fault left (rank 0's worker killed by the sweep's fault): scripts/down's order, nothing left, and again."""
    out = script("down", f"--cluster={pair.path}")
    assert out.returncode == 0 and out.stdout.splitlines() == [f"{B}: down", f"{A}: down"], out.stdout + out.stderr
    for n in (A, B):
        assert control.node_exec(n, "docker ps -aq").stdout.strip() == ""
    again = script("down", f"--cluster={pair.path}")
    assert again.returncode == 0, "down is idempotent: " + again.stdout + again.stderr
