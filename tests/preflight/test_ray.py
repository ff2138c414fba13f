"""The Ray path before deploying (deploy.executor: ray; skipped, saying so, for mp): Ray in the image at the same
version on every node, Ray's ports allowed by ufw from the QSFP subnets, the head's interface and RDMA device names on
every node (vLLM copies the head's NCCL_*/GLOO_*/VLLM_* variables to the Ray workers)."""

import pytest

from gb10check.checks import ray
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


@reads("ray_version")
def test_ray_in_image(ray_cluster, node):
    report(ray.judge_version(node.name, ray_cluster.deploy.image, read(node, "ray_version")))


@reads("ray_version")
def test_ray_same_version_as_head(ray_cluster, follower, head):
    report(ray.judge_version_same(follower.name, head.name, read(follower, "ray_version"), read(head, "ray_version")))


@reads("ufw_status")
def test_ray_ports_allowed(ray_cluster, node):
    report(ray.judge_ports(ray_cluster, node.spec, read(node, "ufw_status")))


@reads("ip_addr", "ib_sysfs")
def test_ray_names_as_head(ray_cluster, follower):
    report(ray.judge_names(ray_cluster, follower.spec, read(follower, "ip_addr"), read(follower, "ib_sysfs")))
