"""Compose and .env lint on the files each node will start from: identical compose, the seed's design, the right rank."""

import hashlib

import pytest

from gb10check import compose as stack
from gb10check.checks import compose
from gb10check.facts import parse
from gb10check.gather import SYSFS_IB, parsed, vllm_args
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.preflight


def files(node, cluster) -> tuple[str, str, str | None, str | None]:
    d = cluster.deploy
    path = f"{d.workdir}/{d.compose_file}"
    text = node.run(f"cat {path}")
    env = node.run(f"cat {d.workdir}/.env")
    return path, f"{d.workdir}/.env", text.stdout if text.rc == 0 else None, env.stdout if env.rc == 0 else None


def test_compose_same_as_head(follower, head, cluster):
    path, _, mine, _ = files(follower, cluster)
    heads = files(head, cluster)[2]
    if mine is None or heads is None:
        pytest.skip(f"no {path} on {follower.name if mine is None else head.name} to compare (see test_compose_lint)")
    h = lambda t: hashlib.sha256(t.encode()).hexdigest()[:12]  # noqa: E731
    report([] if mine == heads else [Finding(Code.COMPOSE_DIFFERS, follower.name, f"{path} sha256 {h(mine)}",
                                             f"sha256 {h(heads)} as on {head.name}", head=head.name)])


def test_compose_lint(node, cluster):
    path, env_path, text, env = files(node, cluster)
    if text is None or env is None:
        report([Finding(Code.COMPOSE_MISSING, node.name, f"no {path if text is None else env_path}", "the compose file and .env",
                        path=path if text is None else env_path)])
    config, env_vars = parse("compose_config", text), stack.parse_env(env)
    found = stack.vllm_service(config)
    args = vllm_args(node, stack.interpolate(found[1], env_vars)) if found else None
    ifaces = parsed(node, "ip_j_addr", "ip -j addr")
    ports = parsed(node, "ib_sysfs", SYSFS_IB)
    report(compose.judge(cluster, node.spec, config, env_vars, ifaces, ports, args))


def test_env_file(node, cluster):
    _, env_path, _, env = files(node, cluster)
    if env is None:
        pytest.skip(f"no {env_path} on {node.name} (see test_compose_lint)")
    report(compose.judge_env_file(cluster, node.spec, stack.parse_env(env)))
