"""The Ray cluster once `ray start` ran on every node (deploy.executor: ray; skipped, saying so, for mp and while no Ray
container runs on rank 0): `ray status` counts every node and every GPU (the playbook's own check), and each node
registered at its QSFP address, not its LAN or Wi-Fi one. Read in rank 0's Ray container, once per run."""

import pytest

from gb10check import compose
from gb10check.gather import RAY_NODES, RAY_STATUS, parsed_output, ray_head_output
from gb10check.checks import ray
from gb10check.verdict import report

pytestmark = pytest.mark.network


def on_head(head, command):
    out = ray_head_output(head, command)
    if out is None:
        pytest.skip(f"Ray is not started: no running {compose.RAY_CONTAINER_NAME} container on {head.name} (these checks run "
                    "after `ray start`: scripts/deploy starts Ray, then vLLM)")
    return out


def test_ray_status(ray_cluster, head):
    status = parsed_output(head, "ray_status", on_head(head, RAY_STATUS))
    report(ray.judge_status(ray_cluster, head.name, status))


def test_ray_node_address(ray_cluster, node, head):
    report(ray.judge_node(ray_cluster, node.spec, parsed_output(head, "ray_nodes", on_head(head, RAY_NODES))))
