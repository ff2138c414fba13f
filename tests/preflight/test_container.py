"""Container runtime and image: docker and compose v2, the deployment image on every node (architecture, the same
layers as rank 0), the GPU from inside a container of that image, and no serving container left running."""

import pytest

from gb10check import compose
from gb10check.checks import container
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


@reads("docker_server", "compose_version")
def test_container_runtime(node, cluster, versions):
    rc, server = read(node, "docker_server")
    if rc == 0:
        versions(node.name, "docker", (server.split() or [None])[0])
    report(container.judge_runtime(node.name, cluster.ssh.user, rc, server, read(node, "compose_version")))


@reads("image", "machine")
def test_image(node, cluster, versions):
    image = read(node, "image")
    if image.info is not None:
        versions(node.name, f"image {cluster.deploy.image}", image.info.id)
    report(container.judge_image(node.name, cluster.deploy.image, image.info, image.missing, read(node, "machine")))


@reads("image_present")
def test_image_same_as_head(follower, head, cluster):
    mine, heads = read(follower, "image_present").info, read(head, "image_present").info
    report(container.judge_same_layers(follower.name, head.name, cluster.deploy.image, mine, heads))


@reads("gpu_probe")
def test_gpu_in_container(node, cluster):
    rc, said = read(node, "gpu_probe")
    report(container.judge_gpu_in_container(node.name, container.gpu_probe(cluster.deploy.image, cluster.deploy.extra_volumes),
                                            rc, said))


@reads("docker_ps", "docker_stats")
def test_no_serving_container_left(node, cluster):
    report(container.judge_stale(node.name, cluster.deploy.workdir, compose.CONTAINER_NAME, cluster.deploy.image,
                                 read(node, "docker_ps"), read(node, "docker_stats")))
