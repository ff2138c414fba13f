"""Container runtime and image: docker and compose v2, the deployment image on every node (architecture, the same
layers as rank 0), the GPU from inside a container of that image, and no serving container left running."""

import pytest

from gb10check import compose, gather
from gb10check.checks import container
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def needs_docker(node):
    if gather.result(node, container.DOCKER_SERVER).rc != 0:
        pytest.skip(f"{node.name}: docker is not usable (see test_container_runtime)")


def image_of(node, cluster):
    """The deployment image on the node (None when docker says it is not there) and docker's answer."""
    needs_docker(node)
    command = gather.image_inspect(cluster.deploy.image)
    out = gather.result(node, command)
    return (gather.parsed(node, "docker_image_inspect", command), "") if out.rc == 0 else (None, out.stderr)


def test_container_runtime(node, cluster):
    server, compose_out = gather.result(node, container.DOCKER_SERVER), gather.result(node, container.COMPOSE_VERSION)
    report(container.judge_runtime(node.name, cluster.ssh.user, server.rc, server.stdout + server.stderr,
                                   compose_out.stdout + compose_out.stderr))


def test_image(node, cluster):
    image, missing = image_of(node, cluster)
    report(container.judge_image(node.name, cluster.deploy.image, image, missing, gather.output(node, gather.MACHINE)))


def test_image_same_as_head(follower, head, cluster):
    mine, heads = image_of(follower, cluster)[0], image_of(head, cluster)[0]
    if mine is None or heads is None:
        pytest.skip(f"{cluster.deploy.image} is missing on {follower.name if mine is None else head.name} (see test_image)")
    report(container.judge_same_layers(follower.name, head.name, cluster.deploy.image, mine, heads))


def test_gpu_in_container(node, cluster):
    if gather.result(node, gather.GPU_LIST).rc != 0:
        pytest.skip(f"{node.name}: nvidia-smi fails on the host itself (see test_driver_parity); a container cannot do better")
    if image_of(node, cluster)[0] is None:
        pytest.skip(f"{node.name}: no {cluster.deploy.image} to start (see test_image)")
    command = container.gpu_probe(cluster.deploy.image, cluster.deploy.extra_volumes)
    out = gather.result(node, command)
    report(container.judge_gpu_in_container(node.name, command, out.rc, out.stdout + out.stderr))


def test_no_serving_container_left(node, cluster):
    needs_docker(node)
    report(container.judge_stale(node.name, cluster.deploy.workdir, compose.CONTAINER_NAME, cluster.deploy.image,
                                 gather.output(node, gather.DOCKER_PS), gather.result(node, gather.DOCKER_STATS).stdout))
