"""The compose renderer and lint, offline: our rendering passes, the field report's own compose passes,
and each of the report's mistakes fails with its message."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from gb10check import compose
from gb10check.checks.compose import judge, judge_env_file
from gb10check.cluster import load_cluster
from gb10check.facts.ip import Interface, Address
from gb10check.facts.rdma import Gid, IbPort

REPO = Path(__file__).resolve().parent.parent
SEED = REPO.parent / "shared" / "seed" / "000_a8e6f903eaefa255.txt"
CLUSTER = load_cluster(REPO / "cluster.example.yaml")


def facts_for(node, gid_index=3):
    ifaces = [Interface(l.netdev, i, "up", 1500, addresses=[Address("inet", l.ip, l.address.network.prefixlen, "link")])
              for i, l in enumerate(node.links)]
    ports = [IbPort(l.rdma_device, 1, "ACTIVE", "LinkUp", 200.0, gids=[Gid(l.rdma_device, 1, gid_index, "", "RoCE v2", l.ip, l.netdev)])
             for l in node.links]
    return ifaces, ports


def dry_run_here(config: dict, env: dict) -> list[str] | None:
    """The dry run as gb10check runs it on a node, run here: the compose text is ours (rendered, or the seed's), not a node's."""
    found = compose.vllm_service(config)
    command = compose.dry_run_command(compose.interpolate(found[1], env)) if found else None
    if command is None:
        return None
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30)
    return compose.parse_dry_run(out.stdout)


def lint(text, env_for, node_name, **kw):
    node = CLUSTER.node(node_name)
    ifaces, ports = facts_for(node, **kw)
    config, env = yaml.safe_load(text), env_for(node)
    return judge(CLUSTER, node, config, env, ifaces, ports, dry_run_here(config, env))


def our_env(node):
    return compose.parse_env(compose.env_file(CLUSTER, node))


@pytest.mark.parametrize("name", ["thinkstationpgx-30", "thinkstationpgx-32"])
def test_rendered_stack_passes(name):
    assert lint(compose.render(CLUSTER), our_env, name) == []
    assert judge_env_file(CLUSTER, CLUSTER.node(name), our_env(CLUSTER.node(name))) == []


def seed_compose() -> str:
    if not SEED.exists():
        pytest.skip(f"the field report is not at {SEED}")
    text = SEED.read_text()
    start = text.index("# Dual-node TP=2 for Qwen3.8-Flash-Next")
    end = text.index("Appendix C")
    return text[start:end]


def seed_env(node):
    return {"MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8", "NODE_RANK": str(node.rank), "VLLM_HOST_IP": node.links[0].ip}


@pytest.mark.parametrize("name", ["thinkstationpgx-30", "thinkstationpgx-32"])
def test_the_field_reports_own_compose_passes(name):
    assert lint(seed_compose(), seed_env, name) == []


def test_the_field_reports_first_round_without_headless_fails():
    first_round = seed_compose().replace("--port 20001 \\\n            --headless", "--port 20001")
    found = lint(first_round, seed_env, "thinkstationpgx-32")
    assert [f.code.value for f in found] == ["compose-headless"]
    assert "collective_rpc should not be called on follower node" in found[0].text


def test_the_field_reports_hyphen_fails():
    found = lint(seed_compose().replace("-cc.cudagraph_mode", "-cc.cudagraph-mode"), seed_env, "thinkstationpgx-30")
    assert [f.code.value for f in found] == ["compose-cudagraph-hyphen"]


def test_wrong_gid_index_names_the_right_one():
    found = lint(compose.render(CLUSTER), our_env, "thinkstationpgx-30", gid_index=5)
    assert any(re.search(r"NCCL_IB_GID_INDEX=3; rocep1s0f0 has RoCE v2 at 5", f.text) for f in found)


def test_settings_of_the_design():
    text = compose.render(CLUSTER).replace("network_mode: host", "network_mode: bridge").replace("- IPC_LOCK\n", "") \
        .replace("restart: 'no'", "restart: always").replace("GLOO_USE_LIBUV: '0'", "GLOO_USE_LIBUV: '1'")
    found = [f.text.split("\n")[0] for f in lint(text, our_env, "thinkstationpgx-30")]
    assert any("network_mode: 'bridge'" in t for t in found)
    assert any("IPC_LOCK not in cap_add" in t for t in found)
    assert any("restart: 'always'" in t for t in found)
    assert any("GLOO_USE_LIBUV=1" in t for t in found)


def test_interpolation():
    env = {"A": "1", "B": ""}
    assert compose.interpolate("${A} ${B:-x} $A $$A ${C-d}", env) == "1 x 1 $A d"
