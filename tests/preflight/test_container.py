"""Container runtime and image: docker and compose v2, the deployment image on every node (architecture, the same
layers as rank 0), the GPU from inside a container of that image, and no serving container left running."""

import pytest

from gb10check import compose
from gb10check.checks import container
from gb10check.facts import docker
from gb10check.facts._text import ParseError
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.preflight


def needs_docker(node):
    if node.run(container.DOCKER_SERVER).rc != 0:
        pytest.skip(f"{node.name}: docker is not usable (see test_container_runtime)")


def inspect_image(node, cluster) -> tuple[docker.Image | None, str]:
    """The deployment image on the node, or None and docker's answer when it is not there (one `docker image inspect`)."""
    needs_docker(node)
    command = f"docker image inspect {cluster.deploy.image}"
    out = node.run(command)
    if out.rc != 0:
        return None, out.stderr
    try:
        return docker.parse_image(out.stdout), ""
    except ParseError as exc:
        report([Finding(Code.GARBLED, node.name, str(exc), "docker image inspect output", command=command)])


def image_of(node, cluster) -> docker.Image | None:
    return inspect_image(node, cluster)[0]


def test_container_runtime(node, cluster):
    server = node.run(container.DOCKER_SERVER)
    compose_out = node.run(container.COMPOSE_VERSION)
    report(container.judge_runtime(node.name, cluster.ssh.user, server.rc, server.stdout + server.stderr,
                                   compose_out.stdout + compose_out.stderr))


def test_image(node, cluster):
    image, missing = inspect_image(node, cluster)
    report(container.judge_image(node.name, cluster.deploy.image, image, missing, node.output("uname -m")))


def test_image_same_as_head(follower, head, cluster):
    mine, heads = image_of(follower, cluster), image_of(head, cluster)
    if mine is None or heads is None:
        pytest.skip(f"{cluster.deploy.image} is missing on {follower.name if mine is None else head.name} (see test_image)")
    report(container.judge_same_layers(follower.name, head.name, cluster.deploy.image, mine, heads))


def test_gpu_in_container(node, cluster):
    host = node.run("nvidia-smi -L")
    if host.rc != 0:
        pytest.skip(f"{node.name}: nvidia-smi fails on the host itself (see test_driver_parity); a container cannot do better")
    if image_of(node, cluster) is None:
        pytest.skip(f"{node.name}: no {cluster.deploy.image} to start (see test_image)")
    command = container.gpu_probe(cluster.deploy.image, cluster.deploy.extra_volumes)
    out = node.run(command)
    report(container.judge_gpu_in_container(node.name, command, out.rc, out.stdout + out.stderr))


def test_no_serving_container_left(node, cluster):
    needs_docker(node)
    ps = node.output(f"docker ps --format '{docker.PS_FORMAT}'")
    stats = node.run(f"docker stats --no-stream --format '{docker.STATS_FORMAT}'").stdout if ps.strip() else ""
    try:
        running = docker.parse_ps(ps, stats)
    except ParseError as exc:
        report([Finding(Code.GARBLED, node.name, str(exc), "docker ps output", command="docker ps")])
    report(container.judge_stale(node.name, cluster.deploy.workdir, compose.CONTAINER_NAME, cluster.deploy.image, running))
