"""The Ray path before deploying (deploy.executor: ray; skipped, saying so, for mp): Ray in the image at the same
version on every node, Ray's ports allowed by ufw from the QSFP subnets, the head's interface and RDMA device names on
every node (vLLM copies the head's NCCL_*/GLOO_*/VLLM_* variables to the Ray workers)."""

import pytest

from gb10check import gather
from gb10check.checks import ray
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def ray_in_image(node, cluster):
    """Ray as the deployment image has it on this node; skipped when the image is not there (see test_image)."""
    d = cluster.deploy
    if gather.result(node, gather.image_inspect(d.image)).rc != 0:
        pytest.skip(f"no {d.image} on {node.name} to look into (see test_image)")
    return gather.parsed(node, "ray_version", gather.ray_version(d.image, d.extra_volumes))


def test_ray_in_image(ray_cluster, node):
    report(ray.judge_version(node.name, ray_cluster.deploy.image, ray_in_image(node, ray_cluster)))


def test_ray_same_version_as_head(ray_cluster, follower, head):
    report(ray.judge_version_same(follower.name, head.name, ray_in_image(follower, ray_cluster), ray_in_image(head, ray_cluster)))


def test_ray_ports_allowed(ray_cluster, node):
    status = gather.parsed(node, "ufw_status", gather.UFW_STATUS, sudo=True)
    report(ray.judge_ports(ray_cluster, node.spec, status))


def test_ray_names_as_head(ray_cluster, follower):
    ifaces = gather.parsed(follower, "ip_j_addr", gather.IP_ADDR)
    ports = gather.parsed(follower, "ib_sysfs", gather.SYSFS_IB)
    report(ray.judge_names(ray_cluster, follower.spec, ifaces, ports))
