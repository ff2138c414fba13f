"""Compose and .env lint on the files each node will start from: identical compose, the seed's design (or, with
deploy.executor ray, NVIDIA's two-node playbook's), the right rank, HF_HUB_OFFLINE once the model is complete everywhere,
the compile caches on the host, and the service's image: its own entrypoint kept (an NGC image's CUDA
forward-compatibility set-up) and pinned by digest."""

import pytest

from gb10check import compose as stack
from gb10check.checks import compose, model
from gb10check.gather import compose_files, read, reads, service_args
from gb10check.remedies import Code
from gb10check.verdict import not_checked, report

pytestmark = pytest.mark.preflight


@reads("compose_file", "compose_config")
def test_compose_same_as_head(follower, head, cluster):
    read(follower, "compose_config"), read(head, "compose_config")  # both there and readable as compose files
    mine, heads = read(follower, "compose_file"), read(head, "compose_file")
    report(compose.judge_same_as_head(follower.name, head.name, compose_files(cluster)[0], mine, heads))


@reads("compose_file", "env_file", "compose_config", "env_vars", "ip_addr", "ib_sysfs")
def test_compose_lint(node, cluster):
    compose_path, env_path = compose_files(cluster)
    report(compose.judge_files(node.name, compose_path, env_path, read(node, "compose_file"), read(node, "env_file")))
    config, env = read(node, "compose_config"), read(node, "env_vars")
    found = stack.vllm_service(config)
    args, ray_args = service_args(node, cluster, stack.interpolate(found[1], env) if found else None)
    report(compose.judge(cluster, node.spec, config, env, read(node, "ip_addr"), read(node, "ib_sysfs"), args, ray_args))


@reads("env_vars")
def test_env_file(node, cluster):
    report(compose.judge_env_file(cluster, node.spec, read(node, "env_vars")))


@reads("vllm_service", "model_listing", "model_index")
def test_compose_offline(node, cluster):
    name, svc = read(node, "vllm_service")
    # This node's own copy: another node's state does not change what it loads.
    if model.judge_cache(node.name, cluster.deploy.model_id, read(node, "model_listing"), read(node, "model_index")):
        not_checked(Code.PREREQUISITE, node.name, f"{cluster.deploy.model_id} is not complete on the node: HF_HUB_OFFLINE=1 is for "
                    "a model already there", "the whole model on the node", check="test_model_artifacts")
    report(compose.judge_offline(node.name, name, compose.service_environment(svc)))


@reads("vllm_service")
def test_compose_caches(node, head, cluster):
    name, svc = read(node, "vllm_service")
    heads = None if node.name == head.name else compose.cache_mounts(read(head, "vllm_service")[1])
    report(compose.judge_caches(node.name, name, compose.cache_mounts(svc), head.name, heads))


@reads("vllm_service", "image_present")
def test_compose_image(node, measurements):
    name, svc = read(node, "vllm_service")
    image = read(node, "image_present").info
    digest, image_id = compose.image_digest(image)
    measurements("image digest", node.name, digest or image_id, "")  # kept in findings.json: what a later run compares
    report(compose.judge_entrypoint(node.name, name, svc, image.entrypoint) + compose.judge_image_pinned(node.name, name, svc, image))
