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
