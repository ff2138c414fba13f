"""The Ray path (deploy.executor: ray, NVIDIA's two-node playbook) on the simulated pair with a real Ray (PyPI's ray,
pinned in sim/provision.py) in each node's own container: the checks pass on the healthy pair, `scripts/deploy` forms
the Ray cluster (head, worker, both at their QSFP addresses) and starts `vllm serve --distributed-executor-backend ray`
in the head's container, and each Ray fault scenario fails exactly the checks that exist to catch it.

What runs for real and what does not: vLLM for CPU has no Ray device key (`ray_device_key` is empty on its platform), so
TP=2 through Ray ends at start-up with `ValueError: current platform cpu does not support ray.`; the deploy must name
that and stop every node. The Ray cluster itself is proven with a Ray task placed on each node by its `node:<QSFP
address>` resource, returning where it ran, and with the network checks that read it (`ray status`, ray.nodes()).
One healthy pair is shared by the tests that only read it; each fault gets a fresh pair (a second or two).
"""

import json
import re
import shlex
import subprocess

import pytest

from gb10check import compose, gather
from gb10check.cluster import load_cluster
from gb10check.deploy import ray as ray_flow
from gb10check.deploy.run import down, launcher_for
from gb10check.facts import ParseError, parse
from gb10check.poll import wait_until
from gb10check.sim import control, provision, recordings, scenarios
from gb10check.sim.topology import mgmt_ip
from gb10check.stage import deployment_record_path

from .simbed import judge_scenario, require_provisioned_sim, run_suite, script

pytestmark = pytest.mark.sim
A, B = "thinkstationpgx-30", "thinkstationpgx-32"
B_MGMT = re.escape(mgmt_ip(1))  # in a regex
QSFP = {A: "169.254.94.252", B: "169.254.159.206"}
L0, L1 = "enp1s0f0np0", "enP2p1s0f0np0"
PF, NW = "tests/preflight", "tests/network"
CHECKS = "(preflight or network) and not slow"  # the slow measurements (bandwidth, NCCL, compute) know nothing of Ray
# What vLLM for CPU says when asked for the Ray executor (vllm/v1/executor/ray_utils.py: its platform's ray_device_key is "").
CPU_HAS_NO_RAY = "current platform cpu does not support ray"
RAY_CHECKS = ("test_ray_in_image", "test_ray_same_version_as_head", "test_ray_ports_allowed", "test_ray_names_as_head")
# A Ray task on each node, placed by the node's own resource (node:<its address>), saying where it ran.
TASK = """
import json, socket, sys, ray
ray.init(address="auto", logging_level="ERROR", log_to_driver=False)
@ray.remote(num_cpus=0)
def where():
    return {"hostname": socket.gethostname(), "ip": ray.util.get_node_ip_address()}
print(json.dumps(ray.get([where.options(resources={"node:" + ip: 0.001}).remote() for ip in sys.argv[1:]], timeout=120)))
"""


def ray_status_nodes(launcher) -> int:
    """Alive nodes in `ray status` on the head, 0 while it cannot be read."""
    out = launcher.nodes[A].run(gather.RAY_STATUS, timeout=60)
    try:
        return parse("ray_status", out.stdout).nodes if out.rc == 0 else 0
    except ParseError:
        return 0


def path(src, dst, link):
    return f"{src}:{link}->{dst}:{link}"


EXPECTED: dict[str, dict[str, str]] = {
    "ray-worker-mgmt-address": {
        f"{PF}/test_compose.py::test_env_file[{B}]":
            rf"\[env-file\] {B}: saw VLLM_HOST_IP={B_MGMT}; expected this node's own address 169\.254\.159\.206",
    },
    "ray-missing": {
        f"{PF}/test_ray.py::test_ray_in_image[{B}]":
            rf"\[ray-missing\] {B}: saw the `ray` command and the `ray` Python module not in gb10sim/vllm-cpu:local \(.*ray: "
            r"command not found.*No module named 'ray'.*\n  fix: ",
    },
    "ray-memory-monitor": {
        f"{PF}/test_compose.py::test_compose_lint[{n}]":
            r"\[ray-memory-monitor\] .*no RAY_memory_monitor_refresh_ms \(Ray's memory monitor on\); expected "
            r"RAY_memory_monitor_refresh_ms=0" for n in (A, B)
    },
    "ray-port-closed": {
        **{f"{PF}/test_ray.py::test_ray_ports_allowed[{B}]":
           rf"\[ray-port-not-allowed\] {B}:{L0}: saw ufw active \(default deny incoming\), no rule allowing 169\.254\.0\.0/16 to "
           rf"6700/tcp; expected 6700/tcp \(node manager\) allowed from 169\.254\.0\.0/16.*\n  fix: on {B}: sudo ufw allow from "
           r"169\.254\.0\.0/16 to any port 6700 proto tcp"},
        **{f"{NW}/test_reachability.py::test_port_open[{path(A, B, l)}-port6700]":
           rf"\[port-blocked\] {B}:6700/tcp: saw connection from {A} \(\S+\) to \S+:6700 dropped \(a firewall\)" for l in (L0, L1)},
    },
}
# Proven once Ray runs (the deploy failed fast, then Ray was started again to look at it): test id -> message.
AFTER_RAY_START = {
    "ray-worker-mgmt-address": {
        f"{NW}/test_ray.py::test_ray_node_address[{B}]":
            rf"\[ray-node-address\] {B}: saw registered with Ray at {B_MGMT} \(host {B}, node \w+\); expected its QSFP "
            rf"address 169\.254\.159\.206\n  fix: start {B}'s Ray with --node-ip-address=169\.254\.159\.206",
    },
}


def require_ray() -> None:
    require_provisioned_sim()
    if not (provision.venv() / "bin" / "ray").exists():
        pytest.fail(f"no Ray in {provision.venv()}: run `gb10check sim provision` (it adds {' '.join(provision.RAY_DEPS)})")


def in_head(command: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return control.node_exec(A, f"timeout {timeout} docker exec {compose.RAY_CONTAINER_NAME} {command}", check=False)


def start_ray(cluster) -> ray_flow.RayLauncher:
    """Ray head, then the worker, as the deploy starts them; no wait, no vLLM (the tests look at what formed)."""
    launcher = launcher_for(cluster)
    for n in (A, B):
        launcher.start(n)
    return launcher


@pytest.fixture(scope="module")
def ray_pair():
    """One healthy Ray pair for the tests that only read it (in file order: checks, deploy, the cluster). Under xdist the
    deploy test runs on the vLLM worker (selftests/conftest.py) with a pair of its own."""
    require_ray()
    path = control.up(2, quiet=True, executor="ray")
    yield path
    script("down", f"--cluster={path}")
    control.down(quiet=True)


def test_checks_pass_with_executor_ray(ray_pair):
    run = run_suite(ray_pair, "-m", CHECKS)
    bad = {k: v.message for k, v in run.results.items() if v.outcome not in ("passed", "skipped")}
    assert run.results and not bad, bad
    for check in RAY_CHECKS:  # the Ray checks ran and passed, on every node they are for
        ids = [k for k in run.results if f"::{check}[" in k]
        assert ids and all(run.results[k].outcome == "passed" for k in ids), (check, {k: run.results[k] for k in ids})
    assert all(run.results[f"{PF}/test_compose.py::test_compose_lint[{n}]"].outcome == "passed" for n in (A, B))
    assert all(run.results[f"{NW}/test_reachability.py::test_port_open[{path(s, d, l)}-port{p}]"].outcome == "passed"
               for s, d in ((A, B), (B, A)) for l in (L0, L1) for p in (6700, 6701, 10002, 10101))
    before = run.results[f"{NW}/test_ray.py::test_ray_status"]  # Ray not started yet: a skip that says so
    assert before.outcome == "skipped" and "Ray is not started" in before.message


@pytest.mark.vllm  # a real vLLM: one at a time (selftests/conftest.py)
def test_deploy_forms_the_ray_cluster_and_starts_vllm_through_ray(ray_pair):
    """scripts/deploy: head, worker, both in at their QSFP addresses, then `vllm serve` in the head's container. On this
    machine vLLM for CPU refuses the Ray executor, and the watcher names that at once and stops every node."""
    deploy = script("deploy", f"--cluster={ray_pair}", "--stall-timeout=180", "--override",
                    "self-test: the Ray deploy is proven here; the stages are proven in the tests above", timeout=600)
    record = json.loads(deployment_record_path(ray_pair).read_text())
    stages = record["stages"]
    print("Ray deploy stages (s):", stages, "milestones:", record["milestones"])
    assert list(stages)[:5] == ["caches dropped", "ray-head", "ray-workers", "ray-ready", "vllm-serve"], stages
    assert f"starting the Ray head on {A}: docker compose up -d: ray start --block --head --node-ip-address={QSFP[A]}" in deploy.stdout
    assert f"starting a Ray worker on {B}: docker compose up -d: ray start --block --address={QSFP[A]}:6379 " \
           f"--node-ip-address={QSFP[B]}" in deploy.stdout
    assert "Ray cluster ready: 2 nodes at their QSFP addresses" in deploy.stdout
    if deploy.returncode == 0:  # vLLM TP=2 through Ray served: the API checks against it
        serving = run_suite(ray_pair, "-m", "serving", timeout=900)
        failed = {k: o.message for k, o in serving.results.items() if o.outcome != "passed"}
        assert len(serving.results) >= 13 and not failed, failed
        return
    text = deploy.stderr
    assert record["outcome"] == "failed" and "vllm-serve" in stages, text[-3000:]
    assert f"{A} (rank 0, vLLM in gb10-ray) exited with code 1 during startup" in text, text[-3000:]
    assert CPU_HAS_NO_RAY in text, text[-3000:]
    assert f"{A}: stopped" in text and f"{B}: stopped" in text, "both nodes restart together"
    for n in (A, B):
        assert control.node_exec(n, "docker ps -q").stdout.strip() == ""


def test_ray_cluster_is_real_checks_see_it_and_a_task_runs_on_each_node(ray_pair):
    cluster = load_cluster(ray_pair)
    launcher = start_ray(cluster)
    try:
        took = ray_flow.wait_for_cluster(cluster, launcher.joined, 120)
        print(f"Ray cluster formed {took:.1f} s after the worker's start")
        ran = in_head(f"python3 -c {shlex.quote(TASK)} {QSFP[A]} {QSFP[B]}")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert json.loads(ran.stdout.strip().splitlines()[-1]) == [{"hostname": A, "ip": QSFP[A]}, {"hostname": B, "ip": QSFP[B]}]
        # `ray status` prints the autoscaler's last report, made every few seconds: it may still show one node for a
        # while after both have joined (the task above ran on each).
        def both_active() -> subprocess.CompletedProcess | None:
            status = in_head("ray status")
            return status if status.returncode == 0 and re.search(r"Active:\n(\s+1 node_\w+\n){2}", status.stdout) else None
        status = wait_until(both_active, 60, interval_s=2)
        assert status, in_head("ray status").stdout
        assert re.search(r"0\.0/2\.0 GPU", status.stdout), status.stdout
        run = run_suite(ray_pair, "-m", "network", "-k", "test_ray_")
        assert {k: v.outcome for k, v in run.results.items()} == {
            f"{NW}/test_ray.py::test_ray_status": "passed",
            f"{NW}/test_ray.py::test_ray_node_address[{A}]": "passed", f"{NW}/test_ray.py::test_ray_node_address[{B}]": "passed"}
    finally:
        said: list[str] = []
        assert down(launcher, [A, B], say=said.append), said
        launcher.close()
    assert said == [f"{A}: vLLM not running", f"{B}: down", f"{A}: down"], said
    for n in (A, B):
        assert control.node_exec(n, "docker ps -aq").stdout.strip() == ""


@pytest.fixture
def fault_bed():
    require_ray()
    yield
    control.down(quiet=True)


def judge_ray_exactly(name: str, results: dict) -> None:
    """The Ray scenario's run judged as every scenario's is (simbed.judge_scenario), with AFTER_RAY_START's checks
    expected too where Ray was started."""
    judge_scenario(name, {**EXPECTED[name], **AFTER_RAY_START.get(name, {})}, results)


# The Ray scenarios whose every proof reads facts (the compose file, the image) are judged from their recordings
# (test_scenarios_replayed.py); the rest need Ray or the network live.
LIVE_RAY = [n for n in EXPECTED if not recordings.replayed(n)]


@pytest.mark.parametrize("name", LIVE_RAY)
def test_ray_scenario_fails_exactly_its_checks(fault_bed, name):
    path = control.up(2, quiet=True, executor="ray")
    scenarios.apply(name)
    results = run_suite(path, "-m", CHECKS, "-k", "not test_image_nccl and not test_image_kernels").results
    if name in AFTER_RAY_START:  # the deploy fails fast naming the node; then Ray, started as it was, is looked at
        cluster = load_cluster(path)
        launcher = launcher_for(cluster)
        with pytest.raises(ray_flow.RayNotReady) as err:
            ray_flow.deploy(cluster, launcher, timeout_s=120)
        assert re.search(rf"\[ray-node-address\] {B}: saw registered with Ray at {B_MGMT}", str(err.value)), str(err.value)
        for n in (A, B):
            launcher.start(n)
        assert wait_until(lambda: any(n.alive and n.address == mgmt_ip(1) for n in launcher.ray_nodes() or []), 60, 2)
        # and until `ray status` (what test_ray_status reads) counts it too: its autoscaler report lags the node list by
        # seconds, more under load (it showed 1 active node right after the node list had both, in one run)
        assert wait_until(lambda: ray_status_nodes(launcher) == 2, 60, 2)
        results = {**results, **run_suite(path, "-m", "network", "-k", "test_ray_").results}
        down(launcher, [A, B], say=lambda m: None)
        launcher.close()
    judge_ray_exactly(name, results)


def test_ray_missing_fails_the_deploy_fast_naming_the_node(fault_bed):
    path = control.up(2, quiet=True, executor="ray")
    scenarios.apply("ray-missing")
    cluster = load_cluster(path)
    launcher = launcher_for(cluster)
    try:
        with pytest.raises(ray_flow.RayNotReady) as err:
            ray_flow.deploy(cluster, launcher, timeout_s=120)
        text = str(err.value)
        assert f"{B} (rank 1, Ray worker gb10-ray) exited with code 127 before the Ray cluster formed" in text, text
        assert "exec: ray: not found" in text, text  # bash's word for `exec ray` (a shell prompt says `ray: command not found`)
    finally:
        launcher.close()


def test_every_ray_scenario_is_proven():
    ray = {s.name for s in scenarios.SCENARIOS.values() if s.executor == "ray"}
    assert ray == set(EXPECTED), "each Ray scenario has its row in EXPECTED (and test_checks_on_sim leaves them out)"
    for name in ray:
        declared = {p.split(":")[0] for p in scenarios.SCENARIOS[name].proves}
        shown = {k.split("::")[1].split("[")[0] for k in {**EXPECTED[name], **AFTER_RAY_START.get(name, {})}}
        assert declared == shown, (name, declared ^ shown)
