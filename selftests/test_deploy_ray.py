"""The Ray deploy flow (gb10check/deploy/ray.py) without Ray: readiness and the wait over parsed node lists (the outputs of
test_parsers_ray.py), a fake clock; the steps in order against fake nodes that answer as docker and rank 0's Ray would."""

import json

import pytest

from gb10check import compose, gather
from gb10check.deploy import ray as ray_deploy
from gb10check.facts import parse
from gb10check.remedies import Code

from .test_judges_ray import CLUSTER, A, B
from .test_parsers_ray import NODES_PAIR, NODES_WORKER_ON_LAN, ray_node

HEAD_ONLY = json.dumps([ray_node("a" * 56, "169.254.94.252", A, True)])


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.now += s


def test_readiness():
    assert ray_deploy.readiness(CLUSTER, parse("ray_nodes", NODES_PAIR)).ready
    waiting = ray_deploy.readiness(CLUSTER, parse("ray_nodes", HEAD_ONLY))
    assert not waiting.ready and not waiting.fatal and [f.code for f in waiting.waiting] == [Code.RAY_NODE_MISSING]
    wrong = ray_deploy.readiness(CLUSTER, parse("ray_nodes", NODES_WORKER_ON_LAN))
    assert [(f.code, f.where) for f in wrong.fatal] == [(Code.RAY_NODE_ADDRESS, B)]
    assert [f.code for f in ray_deploy.readiness(CLUSTER, None).waiting] == [Code.RAY_NODE_MISSING]


def test_wait_joins_fails_fast_or_times_out():
    clock = Clock()
    answers = iter([None, parse("ray_nodes", HEAD_ONLY), parse("ray_nodes", NODES_PAIR)])
    assert ray_deploy.wait_for_cluster(CLUSTER, lambda: next(answers), 60, 2, clock, clock.sleep) == 4.0
    clock = Clock()
    with pytest.raises(ray_deploy.RayNotReady, match=rf"\[ray-node-address\] {B}: saw registered with Ray at 198\.18\.0\.11"):
        ray_deploy.wait_for_cluster(CLUSTER, lambda: parse("ray_nodes", NODES_WORKER_ON_LAN), 60, 2, clock, clock.sleep)
    assert clock.now == 0.0  # at once, not at the timeout
    with pytest.raises(ray_deploy.RayNotReady, match=rf"after 10 s:\n\[ray-node-missing\] {B}: saw no alive Ray node"):
        ray_deploy.wait_for_cluster(CLUSTER, lambda: parse("ray_nodes", HEAD_ONLY), 10, 2, clock, clock.sleep)


class Out:
    def __init__(self, rc=0, stdout="", stderr=""):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr


class FakeNode:
    """Answers as docker on a node would; rank 0's node list changes with what was started."""

    def __init__(self, name, world):
        self.name, self.world, self.commands = name, world, []

    def run(self, command, timeout=None, sudo=False):
        self.commands.append(command)
        self.world.append((self.name, command.split(" && ")[-1].split(" ")[0:3]))
        if command == gather.RAY_NODES:
            started = [n for n, c in self.world if c[:3] == ["docker", "compose", "up"]]
            nodes = [ray_node("a" * 56, "169.254.94.252", A, True)] if A in started else []
            if B in started:
                nodes.append(ray_node("b" * 56, self.world.worker_ip, B, False))
            return Out(stdout=json.dumps(nodes)) if nodes else Out(1, stderr="Error: No such container: gb10-ray")
        return Out()


class World(list):
    worker_ip = "169.254.159.206"


def launcher(worker_ip="169.254.159.206"):
    world = World()
    world.worker_ip = worker_ip
    return ray_deploy.RayLauncher(CLUSTER, {n.name: FakeNode(n.name, world) for n in CLUSTER.nodes}), world


def test_deploy_steps_in_order():
    ray_launcher, world = launcher()
    clock = Clock()
    stages = ray_deploy.deploy(CLUSTER, ray_launcher, 60, 2, clock, clock.sleep)
    assert list(stages) == list(ray_deploy.STEPS)
    head_commands = ray_launcher.nodes[A].commands
    assert head_commands[0].endswith("docker compose up -d --pull never 2>&1")
    assert ray_launcher.nodes[B].commands[0].endswith("docker compose up -d --pull never 2>&1")
    assert head_commands[-1] == compose.serve_exec_command(CLUSTER)


def test_deploy_stops_every_node_when_a_worker_registers_elsewhere():
    ray_launcher, world = launcher(worker_ip="198.18.0.11")
    clock = Clock()
    with pytest.raises(ray_deploy.RayNotReady, match=r"\[ray-node-address\]"):
        ray_deploy.deploy(CLUSTER, ray_launcher, 60, 2, clock, clock.sleep)
    assert not any("docker exec -d" in c for c in ray_launcher.nodes[A].commands)  # vLLM never started
    assert [n for n, c in world if c[:3] == ["docker", "compose", "down"]] == [B, A]  # followers first


class WatchedNode(FakeNode):
    """As FakeNode, and what the deploy's watch reads: memory, the container's state, vLLM's exit status in rank 0's
    container (written when vLLM ends there; the container stays up, Ray keeps it), its log."""

    MEMINFO = "MemTotal:       24000000 kB\nMemFree:        20000000 kB\nMemAvailable:   20000000 kB\nCached: 100 kB\n"
    VLLM_LOG = ("(APIServer pid=91) INFO 12-01 01:10:00 [api_server.py:1] vLLM API server version 0.32.0\n"
                "(EngineCore pid=120) ERROR 12-01 01:10:20 [core.py:1] ValueError: current platform cpu does not support ray.\n")

    def output(self, command, timeout=None, sudo=False):
        return self.run(command, timeout, sudo).stdout

    def run(self, command, timeout=None, sudo=False):
        if command == "cat /proc/meminfo":
            return Out(stdout=self.MEMINFO)
        if command == f"docker inspect {compose.RAY_CONTAINER_NAME}":
            stopped = any(c.startswith("docker stop") or c.startswith("docker kill") for c in self.commands)
            return Out(stdout=json.dumps([{"Name": "/gb10-ray", "State": {"Status": "exited" if stopped else "running",
                                                                          "Running": not stopped, "ExitCode": 0}}]))
        if command.endswith(f"cat {compose.SERVE_RC}"):
            served = any(c.startswith("docker exec -d") for c in self.commands)
            return Out(stdout="1\n") if served else Out(1, stderr="cat: /tmp/gb10check-serve.rc: No such file or directory")
        if command.startswith("docker logs"):
            return Out(stdout=self.VLLM_LOG if self.name == A else "")
        return super().run(command, timeout, sudo)


def test_run_deploy_takes_the_ray_steps_then_watches_vllm_in_the_head_container(tmp_path):
    from gb10check.deploy import run

    world = World()
    launcher = ray_deploy.RayLauncher(CLUSTER, {n.name: WatchedNode(n.name, world) for n in CLUSTER.nodes})
    said = []
    with pytest.raises(run.DeployFailed) as err:
        run.deploy(CLUSTER, launcher, tmp_path / "deployment.json", say=said.append, stall_timeout_s=30)
    record = json.loads((tmp_path / "deployment.json").read_text())
    assert list(record["stages"]) == ["caches dropped", "ray-head", "ray-workers", "ray-ready", "vllm-serve", "failed"]
    assert said[2].startswith(f"starting the Ray head on {A}: docker compose up -d: ray start --block --head")
    assert said[3].startswith(f"starting a Ray worker on {B}: docker compose up -d: ray start --block --address=169.254.94.252:6379")
    text = str(err.value)
    assert f"{A} (rank 0, vLLM in gb10-ray) exited with code 1 during startup" in text
    assert "current platform cpu does not support ray" in text
    assert f"stopped every rank ({A}: stopped; {B}: stopped)" in text  # both containers: Ray with vLLM's
    assert [c for c in launcher.nodes[B].commands if c.startswith("docker stop")] == ["docker stop -t 10 gb10-ray"]
    said.clear()
    assert run.down(launcher, [A, B], say=said.append) and said == [f"{A}: vLLM stopped", f"{B}: down", f"{A}: down"]
    assert launcher.nodes[A].commands[-2].startswith(f"docker exec gb10-ray /bin/sh -c 'p=$(cat {compose.SERVE_PID}")
