"""The compose renderer and lint, offline: our rendering passes, the field report's own compose passes,
and each of the report's mistakes fails with its message."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from gb10check import compose
from gb10check.checks.compose import image_digest, judge, judge_entrypoint, judge_env_file, judge_image_pinned
from gb10check.cluster import load_cluster
from gb10check.facts import parse
from gb10check.facts.ip import Interface, Address
from gb10check.facts.rdma import Gid, IbPort
from gb10check.remedies import Code

from .conftest import read_capture

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


def test_a_wrong_master_addr_in_the_env_file_names_the_node_and_the_address_it_reaches_rank_0_by():
    node = CLUSTER.node("thinkstationpgx-32")
    [f] = judge_env_file(CLUSTER, node, {**our_env(node), "MASTER_ADDR": "192.168.1.10"})
    assert f.text == ("[env-file] thinkstationpgx-32: saw MASTER_ADDR=192.168.1.10; expected rank 0's address as "
                      "thinkstationpgx-32 reaches it, 169.254.94.252\n"
                      "  fix: set MASTER_ADDR=169.254.94.252 in thinkstationpgx-32's .env")
    # an older .env without the line: the compose file's interpolation of it is the lint's to judge, not this check's
    assert judge_env_file(CLUSTER, node, {k: v for k, v in our_env(node).items() if k != "MASTER_ADDR"}) == []


def test_a_wrong_master_addr_from_the_env_file_is_said_once_by_test_env_file():
    """The compose file takes MASTER_ADDR (its environment and --master-addr) from the .env: the lint leaves the .env's
    value to test_env_file; an address the compose file writes itself is still the lint's."""
    wrong = lambda node: {**our_env(node), "MASTER_ADDR": "192.168.1.10"}  # noqa: E731
    assert lint(compose.render(CLUSTER), wrong, "thinkstationpgx-32") == []
    hardcoded = compose.render(CLUSTER).replace('MASTER_ADDR: ${MASTER_ADDR}', 'MASTER_ADDR: 192.168.1.10')
    assert 'MASTER_ADDR: 192.168.1.10' in hardcoded
    [f] = lint(hardcoded, our_env, "thinkstationpgx-32")
    assert f.code == Code.COMPOSE_ENV and "MASTER_ADDR=192.168.1.10" in f.text, f.text


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


# ---- the service's image: its own entrypoint kept, pinned by digest --------------------------------------------------

def rendered_service() -> dict:
    return compose.vllm_service(yaml.safe_load(compose.render(CLUSTER)))[1]


def ngc_entrypoint() -> list[str]:
    """The entrypoint an NGC image gives its containers, from a real GB10 container's `docker inspect` (an NGC SGLang
    image run with its own entrypoint)."""
    import json

    doc = json.loads(read_capture("docker/docker-inspect-ngc-sglang-26.05-container-exited-code0-before-healthy-no-Health-key-"
                                  "gb10-jethac.json"))
    return (doc[0] if isinstance(doc, list) else doc)["Config"]["Entrypoint"]


def test_our_rendered_service_on_an_ngc_image_warns_with_the_chained_entrypoint_as_fix():
    entry = ngc_entrypoint()
    assert entry == ["/opt/nvidia/nvidia_entrypoint.sh"]
    [f] = judge_entrypoint("n1", "vllm", rendered_service(), entry)
    assert f.code == Code.COMPOSE_ENTRYPOINT and f.warning
    assert f.text.startswith("[compose-entrypoint] n1:vllm: saw entrypoint: /bin/bash -lc replaces the image's "
                             "/opt/nvidia/nvidia_entrypoint.sh (its CUDA forward-compatibility set-up is skipped: "
                             "cudaErrorUnsupportedPtxVersion")
    assert 'entrypoint: ["/opt/nvidia/nvidia_entrypoint.sh", "/bin/bash", "-lc"]' in f.text


def test_our_rendered_service_keeps_the_image_entrypoint_named_in_the_cluster_file():
    cluster = CLUSTER.model_copy(update={"deploy": CLUSTER.deploy.model_copy(update={"image_entrypoint": ngc_entrypoint()})})
    service = compose.vllm_service(yaml.safe_load(compose.render(cluster)))[1]
    assert service["entrypoint"] == ["/opt/nvidia/nvidia_entrypoint.sh", "/bin/bash", "-lc"]
    assert judge_entrypoint("n1", "vllm", service, ngc_entrypoint()) == []
    [f] = judge_entrypoint("n1", "vllm", rendered_service(), ngc_entrypoint())
    assert 'set deploy.image_entrypoint: ["/opt/nvidia/nvidia_entrypoint.sh"] in the cluster file' in f.text


@pytest.mark.parametrize("entrypoint", [None, ["/opt/nvidia/nvidia_entrypoint.sh", "/bin/bash", "-lc"],
                                        "/opt/nvidia/nvidia_entrypoint.sh bash -lc"])
def test_an_ngc_image_keeping_its_entrypoint_passes(entrypoint):
    svc = {k: v for k, v in rendered_service().items() if k != "entrypoint"}
    if entrypoint is not None:
        svc["entrypoint"] = entrypoint
    assert judge_entrypoint("n1", "vllm", svc, ngc_entrypoint()) == []


@pytest.mark.parametrize("entrypoint", ["bash -lc", [], ""])
def test_an_ngc_entrypoint_replaced_or_emptied_warns(entrypoint):
    [f] = judge_entrypoint("n1", "vllm", {**rendered_service(), "entrypoint": entrypoint}, ngc_entrypoint())
    assert f.seen.startswith("entrypoint: " + ("bash -lc" if entrypoint else "an empty entrypoint") + " replaces the image's")


def test_another_image_may_have_its_entrypoint_replaced():
    image = parse("docker_image_inspect", read_capture("ours/docker/sim-docker-image-inspect-rank0.json"))
    assert image.entrypoint == [] and judge_entrypoint("n1", "vllm", rendered_service(), image.entrypoint) == []
    assert judge_entrypoint("n1", "vllm", rendered_service(), ["/usr/local/bin/docker-entrypoint.sh"]) == []


def test_a_pulled_image_under_a_tag_warns_with_its_digest():
    image = parse("docker_image_inspect", read_capture("docker/docker-image-inspect-rootfs-jethac.json"))  # a real pull
    tag, digest = image.tags[0], image.digests[0].split("@", 1)[1]
    assert image_digest(image) == (digest, image.id)
    [f] = judge_image_pinned("n1", "vllm", {"image": tag}, image)
    assert f.code == Code.COMPOSE_IMAGE_UNPINNED and f.warning
    assert f.text.startswith(f"[compose-image-unpinned] n1:vllm: saw image: {tag}, a tag (now {digest}, id {image.id[:19]}): "
                             "an unattended pull can replace it under the same tag; expected the image pinned by digest")
    assert f"fix: pin the image by digest in the compose file (image: {tag.rsplit(':', 1)[0]}@{digest})" in f.text
    assert judge_image_pinned("n1", "vllm", {"image": image.digests[0]}, image) == []  # pinned: name@sha256:...


def test_an_image_built_or_loaded_here_has_no_registry_to_be_replaced_from():
    image = parse("docker_image_inspect", read_capture("ours/docker/sim-docker-image-inspect-rank0.json"))
    assert image_digest(image) == (None, image.id)
    assert judge_image_pinned("n1", "vllm", {"image": "gb10sim/vllm-cpu:local"}, image) == []


def test_the_sim_image_pulled_under_its_tag_warns():
    image = parse("docker_image_inspect", read_capture("ours/docker/sim-docker-image-inspect-pulled-rank1.json"))
    [f] = judge_image_pinned("n2", "vllm", {"image": "gb10sim/vllm-cpu:local"}, image)
    assert f.seen.startswith(f"image: gb10sim/vllm-cpu:local, a tag (now sha256:{'5eb5a1c0' * 8}, id sha256:")
