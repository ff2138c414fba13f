"""Compose and .env lint on the files each node will start from: identical compose, the seed's design (or, with
deploy.executor ray, NVIDIA's two-node playbook's), the right rank, HF_HUB_OFFLINE once the model is complete everywhere,
and the compile caches on the host."""

import pytest

from gb10check import compose as stack
from gb10check import gather
from gb10check.checks import compose, model
from gb10check.facts import parse
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def files(node, cluster) -> tuple[str, str, str | None, str | None]:
    """The compose file's and the .env's paths and texts (None where `cat` failed)."""
    compose_path, env_path = gather.compose_files(cluster)
    text, env = (gather.result(node, gather.cat(p)) for p in (compose_path, env_path))
    return compose_path, env_path, text.stdout if text.rc == 0 else None, env.stdout if env.rc == 0 else None


def test_compose_same_as_head(follower, head, cluster):
    path, _, mine, _ = files(follower, cluster)
    heads = files(head, cluster)[2]
    if mine is None or heads is None:
        pytest.skip(f"no {path} on {follower.name if mine is None else head.name} to compare (see test_compose_lint)")
    report(compose.judge_same_as_head(follower.name, head.name, path, mine, heads))


def test_compose_lint(node, cluster):
    compose_path, env_path, text, env = files(node, cluster)
    report(compose.judge_files(node.name, compose_path, env_path, text, env))
    config, env_vars = parse("compose_config", text), stack.parse_env(env)
    found = stack.vllm_service(config)
    args, ray_args = gather.service_args(node, cluster, stack.interpolate(found[1], env_vars) if found else None)
    ifaces = gather.parsed(node, "ip_j_addr", gather.IP_ADDR)
    ports = gather.parsed(node, "ib_sysfs", gather.SYSFS_IB)
    report(compose.judge(cluster, node.spec, config, env_vars, ifaces, ports, args, ray_args))


def test_env_file(node, cluster):
    _, env_path, _, env = files(node, cluster)
    if env is None:
        pytest.skip(f"no {env_path} on {node.name} (see test_compose_lint)")
    report(compose.judge_env_file(cluster, node.spec, stack.parse_env(env)))


def service(node, cluster) -> tuple[str, dict]:
    """The vllm service of the node's compose file, interpolated with its .env; skipped when there is none."""
    compose_path, _, text, env = files(node, cluster)
    if text is None or env is None:
        pytest.skip(f"no {compose_path} and .env on {node.name} (see test_compose_lint)")
    found = stack.vllm_service(parse("compose_config", text))
    if found is None:
        pytest.skip(f"no vllm service in {compose_path} on {node.name} (see test_compose_lint)")
    return found[0], stack.interpolate(found[1], stack.parse_env(env))


def model_complete(node, cluster) -> bool:
    """Whether this node's Hugging Face cache holds the whole model (test_model_artifacts' judge finds nothing)."""
    listing = gather.result(node, gather.model_listing(cluster))
    index = gather.result(node, gather.snapshot_file(cluster, "model.safetensors.index.json"))
    return not model.judge_cache(node.name, cluster.deploy.model_id, model.parse_listing(listing.stdout if listing.rc == 0 else ""),
                                 index.stdout if index.rc == 0 else None)


def test_compose_offline(node, cluster):
    name, svc = service(node, cluster)
    if not model_complete(node, cluster):  # this node's own copy: another node's state does not change what it loads
        pytest.skip(f"{cluster.deploy.model_id} is not complete on {node.name} (see test_model_artifacts): "
                    "HF_HUB_OFFLINE=1 is for a model already on the node")
    report(compose.judge_offline(node.name, name, compose.service_environment(svc)))


def test_compose_caches(node, head, cluster):
    name, svc = service(node, cluster)
    heads = None if node.name == head.name else compose.cache_mounts(service(head, cluster)[1])
    report(compose.judge_caches(node.name, name, compose.cache_mounts(svc), head.name, heads))
