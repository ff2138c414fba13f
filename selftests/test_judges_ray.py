"""Judges of the Ray path (gb10check/checks/ray.py and the compose lint with deploy.executor: ray), each failure code on
its input (the outputs of test_parsers_ray.py, the simulated node's real ufw capture, our rendered stack dry-run here with
the stubs the lint uses on a node) with its message, and the healthy counterpart silent."""

import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from gb10check import compose
from gb10check.checks import compose as compose_lint
from gb10check.checks import ray
from gb10check.cluster import load_cluster
from gb10check.facts import parse
from gb10check.remedies import Code

from .conftest import read_capture
from .test_compose_lint import facts_for
from .test_parsers_ray import (NODES_PAIR, NODES_WORKER_ON_LAN, NOT_YET, STATUS_PAIR, STATUS_PG_PENDING, VERSION_MISSING,
                               VERSION_OK, WORKER_ID, ray_node)

REPO = Path(__file__).resolve().parent.parent
MP = load_cluster(REPO / "cluster.example.yaml")
CLUSTER = MP.model_copy(update={"deploy": MP.deploy.model_copy(update={"executor": "ray"})})
A, B = "thinkstationpgx-30", "thinkstationpgx-32"


def codes(findings):
    return [(f.code, f.where, f.warning) for f in findings]


# ---- the image ---------------------------------------------------------------------------------


def test_ray_missing_from_the_image():
    image = CLUSTER.deploy.image
    [f] = ray.judge_version(B, image, parse("ray_version", VERSION_MISSING))
    assert codes([f]) == [(Code.RAY_MISSING, B, False)]
    assert f.text == (
        f"[ray-missing] {B}: saw the `ray` command and the `ray` Python module not in {image} (/bin/bash: line 1: ray: command "
        "not found; ModuleNotFoundError: No module named 'ray'); expected Ray in the image: `ray --version` and `import ray` "
        "(the Ray service runs `ray start`)\n"
        f"  fix: the image {image} has no Ray on {B} (vLLM 0.18+ dropped ray from its dependencies; dgx-spark-playbooks issues "
        "75 and 109: `ray: command not found`): build an image FROM it with pip install 'ray[default]' at the version every "
        "node runs, copy it to every node (gb10check sync), or use an image that ships Ray")
    assert ray.judge_version(B, image, parse("ray_version", VERSION_OK)) == []


def test_ray_version_differs():
    heads = parse("ray_version", VERSION_OK)
    mine = parse("ray_version", VERSION_OK.replace("2.60.0", "2.49.1"))
    [f] = ray.judge_version_same(B, A, mine, heads)
    assert codes([f]) == [(Code.RAY_VERSION_DIFFERS, B, False)]
    assert f.text == (f"[ray-version-differs] {B}: saw Ray 2.49.1; expected Ray 2.60.0 as on {A}\n"
                      f"  fix: run the same image on every node (gb10check sync copies {A}'s to {B}): Ray refuses a node "
                      "started with another Ray or Python version than the head's")
    assert ray.judge_version_same(B, A, heads, heads) == []
    assert ray.judge_version_same(B, A, parse("ray_version", VERSION_MISSING), heads) == []  # test_ray_in_image's finding


# ---- the compose file's Ray design (the lint, dry runs here as on a node) -------------------------


def dry_run(service: dict, program: str) -> list[str] | None:
    command = compose.dry_run_command(service, program=program)
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30)
    return compose.parse_dry_run(out.stdout)


def lint(text: str, name: str, cluster=CLUSTER):
    node = cluster.node(name)
    ifaces, ports = facts_for(node)
    config, env = yaml.safe_load(text), compose.parse_env(compose.env_file(cluster, node))
    svc = compose.interpolate(compose.vllm_service(config)[1], env)
    serve = compose.serve_service(svc)
    return compose_lint.judge(cluster, node, config, env, ifaces, ports, dry_run(serve, "vllm") if serve else None,
                              dry_run(svc, "ray"))


@pytest.mark.parametrize("name", [A, B])
def test_rendered_ray_stack_passes(name):
    text = compose.render(CLUSTER)
    assert lint(text, name) == []
    with_dashboard = CLUSTER.model_copy(update={"deploy": CLUSTER.deploy.model_copy(
        update={"ray": CLUSTER.deploy.ray.model_copy(update={"dashboard": True})})})
    assert lint(compose.render(with_dashboard), name, with_dashboard) == []


def test_rendered_ray_commands():
    svc = yaml.safe_load(compose.render(CLUSTER))["services"]["ray"]
    head = dry_run(compose.interpolate(svc, {"NODE_RANK": "0", "VLLM_HOST_IP": "169.254.94.252", "MODEL_ID": "m"}), "ray")
    worker = dry_run(compose.interpolate(svc, {"NODE_RANK": "1", "VLLM_HOST_IP": "169.254.159.206", "MODEL_ID": "m",
                                               "MASTER_ADDR": "169.254.94.252"}), "ray")
    ports = ["--node-manager-port=6700", "--object-manager-port=6701", "--runtime-env-agent-port=6702",
             "--dashboard-agent-grpc-port=6703", "--dashboard-agent-listen-port=52365", "--metrics-export-port=6704",
             "--min-worker-port=10002", "--max-worker-port=10101", "--disable-usage-stats"]
    assert head == ["start", "--block", "--head", "--node-ip-address=169.254.94.252", "--port=6379", "--include-dashboard=false",
                    *ports]
    assert worker == ["start", "--block", "--address=169.254.94.252:6379", "--node-ip-address=169.254.159.206", *ports]
    serve = dry_run(compose.interpolate(compose.serve_service(svc), {"MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8"}), "vllm")
    assert serve[:2] == ["serve", "Qwen/Qwen3.8-Flash-Next-FP8"]
    assert compose.flag(serve, "--distributed-executor-backend") == "ray" and "--nnodes" not in serve
    assert svc["environment"]["RAY_memory_monitor_refresh_ms"] == "0"
    exec_argv = shlex.split(compose.serve_exec_command(CLUSTER))
    assert exec_argv[:5] == ["docker", "exec", "-d", "gb10-ray", "/bin/bash"] and exec_argv[5] == "-c"
    inner = exec_argv[6]  # the serve script in the background, its output to the container's log, its pid and status kept
    assert inner.startswith("/bin/bash -c 'set -euo pipefail")
    assert inner.endswith(f">/proc/1/fd/1 2>/proc/1/fd/2 & echo $! > {compose.SERVE_PID}; wait $!; echo $? > {compose.SERVE_RC}")
    assert 'exec vllm serve "${MODEL_ID}" "${args[@]}"' in shlex.split(inner)[2]


@pytest.mark.parametrize("old, new", [("      RAY_memory_monitor_refresh_ms: '0'\n", ""),
                                      ("RAY_memory_monitor_refresh_ms: '0'", "RAY_memory_monitor_refresh_ms: '250'")])
def test_ray_memory_monitor_on_is_reported(old, new):
    text = compose.render(CLUSTER)
    assert old in text
    [f] = lint(text.replace(old, new), B)
    seen = "no RAY_memory_monitor_refresh_ms" if not new else "RAY_memory_monitor_refresh_ms=250"
    assert codes([f]) == [(Code.RAY_MEMORY_MONITOR, f"{B}:ray", False)]
    assert f.text == (f"[ray-memory-monitor] {B}:ray: saw {seen} (Ray's memory monitor on); expected "
                      "RAY_memory_monitor_refresh_ms=0 (the monitor off)\n"
                      f"  fix: set RAY_memory_monitor_refresh_ms=0 in the Ray service's environment on {B}, as NVIDIA's "
                      "playbook does: Ray's memory monitor otherwise kills vLLM's workers while the model fills unified memory "
                      "(OutOfMemoryError: 1 worker(s) were killed ...)")


def test_compose_ray_role_is_reported():
    text = compose.render(CLUSTER)
    swapped = text.replace('if [ \\"${NODE_RANK}\\" = \\"0\\" ]', 'if [ \\"${NODE_RANK}\\" != \\"0\\" ]')
    assert swapped != text
    [f] = lint(swapped, A)
    assert codes([f]) == [(Code.COMPOSE_RAY_ROLE, f"{A}:ray", False)]
    assert f.text == (f"[compose-ray-role] {A}:ray: saw rank 0 starts `ray start --block --address=169.254.94.252:6379 ...` "
                      "without --head; expected rank 0 runs the Ray head\n"
                      "  fix: rank 0 runs the Ray head (ray start --head --port=6379) and every other rank a worker (ray start "
                      f"--address=169.254.94.252:6379): fix the command on {A} (scripts/compose-render writes it)")
    [g] = lint(swapped, B)
    assert codes([g]) == [(Code.COMPOSE_RAY_ROLE, f"{B}:ray", False)]
    assert g.seen == "rank 1 starts a second Ray head (--head)"


def test_ray_start_args_are_linted():
    text = compose.render(CLUSTER)
    # A worker without --node-ip-address (Ray picks the LAN or Wi-Fi address) and Ray's random node manager port.
    broken = text.replace('\\"--address=${MASTER_ADDR}:6379\\" \\"--node-ip-address=${VLLM_HOST_IP}\\" --node-manager-port=6700',
                          '\\"--address=${MASTER_ADDR}:6379\\"')
    assert broken != text
    found = lint(broken, B)
    assert [(f.code, f.params["arg"]) for f in found] == [(Code.COMPOSE_ARG, "--node-ip-address"),
                                                          (Code.COMPOSE_ARG, "--node-manager-port")]
    assert found[0].text == (f"[compose-arg] {B}:ray: saw no --node-ip-address (Ray picks an address itself: the LAN or Wi-Fi "
                             "one on a GB10); expected --node-ip-address 169.254.159.206 (its QSFP address)\n"
                             f"  fix: pass --node-ip-address 169.254.159.206 on {B}")
    assert found[1].seen == "no --node-manager-port (a random port ufw cannot allow)"
    mp_backend = text.replace("--distributed-executor-backend ray", "--distributed-executor-backend mp --headless")
    assert [(f.code, f.params["arg"]) for f in lint(mp_backend, A)] == [(Code.COMPOSE_ARG, "--distributed-executor-backend"),
                                                                       (Code.COMPOSE_ARG, "--headless")]


def test_ray_interface_variables_are_linted():
    text = compose.render(CLUSTER).replace("UCX_NET_DEVICES: enp1s0f0np0", "UCX_NET_DEVICES: wlP9s9")
    [f] = lint(text, B)
    assert codes([f]) == [(Code.COMPOSE_ENV, f"{B}:ray", False)]
    assert f.seen == "UCX_NET_DEVICES=wlP9s9 (no such interface)"
    assert lint(compose.render(MP), B, MP) != []  # the mp file is linted as mp (no ray start): see test_compose_lint.py


# ---- the hosts -----------------------------------------------------------------------------------


def test_ray_ports_not_allowed_by_ufw():
    # The simulated node's real `ufw status verbose`: the QSFP subnets allowed whole, so every Ray port is.
    text = read_capture("ours/ufw/sim-ufw-status-verbose-rank0.txt")
    head = CLUSTER.node(A)
    assert ray.judge_ports(CLUSTER, head, parse("ufw_status", text)) == []
    # The same node allowing only SSH and the API port (the subnet rules deleted): each Ray port from each subnet.
    narrow = "".join(line for line in text.splitlines(keepends=True) if "ALLOW IN    169.254" not in line
                     and "ALLOW IN    192.168.101" not in line)
    found = ray.judge_ports(CLUSTER, head, parse("ufw_status", narrow))
    assert [(f.where, f.params["port"]) for f in found] == [(f"{A}:{link.netdev}", p) for link in head.links
                                                            for p in (6379, 6700, 6701, 10002, 10101)]
    assert codes(found[:1]) == [(Code.RAY_PORT_NOT_ALLOWED, f"{A}:enp1s0f0np0", False)]
    assert found[0].text == (f"[ray-port-not-allowed] {A}:enp1s0f0np0: saw ufw active (default deny incoming), no rule allowing "
                             "169.254.0.0/16 to 6379/tcp; expected 6379/tcp (GCS (ray start --port)) allowed from 169.254.0.0/16\n"
                             f"  fix: on {A}: sudo ufw allow from 169.254.0.0/16 to any port 6379 proto tcp (or the whole QSFP "
                             "subnet: sudo ufw allow from 169.254.0.0/16); the other Ray nodes connect to its GCS (ray start --port)")
    # A follower has no GCS: its node and object managers and worker ports only.
    assert [f.params["port"] for f in ray.judge_ports(CLUSTER, CLUSTER.node(B), parse("ufw_status", narrow))][:4] == \
        [6700, 6701, 10002, 10101]


def test_ray_names_differ():
    node = CLUSTER.node(B)
    ifaces, ports = facts_for(node)
    assert ray.judge_names(CLUSTER, node, ifaces, ports) == []
    # Cabled on the other port: the head's enp1s0f0np0 / rocep1s0f0 are not this node's.
    for i in ifaces:
        i.name = i.name.replace("f0np0", "f1np1")
    ports[0].rdma_device = "rocep1s0f1"
    [f] = ray.judge_names(CLUSTER, node, ifaces, ports)
    assert codes([f]) == [(Code.RAY_NAMES_DIFFER, B, False)]
    assert f.text == (f"[ray-names-differ] {B}: saw no interface enp1s0f0np0; RDMA device rocep1s0f0 absent; expected the names "
                      f"{A} uses (enp1s0f0np0, rocep1s0f0, roceP2p1s0f0) with this node's own QSFP address and ACTIVE devices\n"
                      f"  fix: vLLM copies the head's NCCL_*, GLOO_* and VLLM_* variables to every Ray worker: give {B} the "
                      f"interface and RDMA device names {A} has (enp1s0f0np0, rocep1s0f0, roceP2p1s0f0: cable the same QSFP port "
                      "on every node), or use deploy.executor: mp, whose ranks read their own compose file")


# ---- the running Ray cluster ---------------------------------------------------------------------


def test_ray_status_of_a_healthy_pair_passes():
    assert ray.judge_status(CLUSTER, A, parse("ray_status", STATUS_PAIR)) == []
    for name in (A, B):
        assert ray.judge_node(CLUSTER, CLUSTER.node(name), parse("ray_nodes", NODES_PAIR)) == []


def test_ray_node_registered_at_its_management_address():
    nodes = parse("ray_nodes", NODES_WORKER_ON_LAN)
    [f] = ray.judge_node(CLUSTER, CLUSTER.node(B), nodes)
    assert codes([f]) == [(Code.RAY_NODE_ADDRESS, B, False)]
    assert f.text == (f"[ray-node-address] {B}: saw registered with Ray at 198.18.0.11 (host {B}, node {WORKER_ID[:12]}); "
                      "expected its QSFP address 169.254.159.206\n"
                      f"  fix: start {B}'s Ray with --node-ip-address=169.254.159.206 and VLLM_HOST_IP=169.254.159.206 (its QSFP "
                      "address, what run_cluster.sh passes): registered elsewhere, vLLM's placement group never fits (No "
                      "available node types can fulfill resource request {'GPU': 1.0, 'node:...': 0.001}; spark-vllm-docker "
                      "issue 227)")
    assert ray.judge_node(CLUSTER, CLUSTER.node(A), nodes) == []
    # `ray status` on the head shows it too: one node, one GPU, a placement group pinned to an address no node has.
    sim = CLUSTER.model_copy(update={"nodes": [n.model_copy(update={"address": f"198.18.0.{10 + n.rank}"}) for n in CLUSTER.nodes]})
    found = ray.judge_status(sim, A, parse("ray_status", STATUS_PG_PENDING))
    assert codes(found) == [(Code.RAY_NODE_MISSING, A, False), (Code.RAY_GPUS, A, False), (Code.RAY_NODE_ADDRESS, B, False)]
    assert found[0].text.startswith(f"[ray-node-missing] {A}: saw ray status: 1 active node(s); expected 2 (one per node of the "
                                    "cluster file)\n")
    assert found[1].text == (f"[ray-gpus] {A}: saw ray status: 1.0 GPU in the cluster; expected 2 GPUs (--tensor-parallel-size 2)\n"
                             "  fix: check the GPU inside each node's Ray container (docker exec gb10-ray nvidia-smi -L: the NVIDIA "
                             "container toolkit and the compose file's GPU reservation), then restart Ray there: "
                             "--tensor-parallel-size 2 needs 2 GPUs in the cluster")
    assert found[2].seen == f"a pending placement group pinned to node:198.18.0.11 ({B}'s management address)"


def test_ray_node_missing():
    head_only = parse("ray_nodes", NODES_PAIR)[:1]
    [f] = ray.judge_node(CLUSTER, CLUSTER.node(B), head_only)
    assert codes([f]) == [(Code.RAY_NODE_MISSING, B, False)]
    assert f.text == (f"[ray-node-missing] {B}: saw no alive Ray node at 169.254.159.206, 192.168.101.11; expected a Ray worker "
                      "at 169.254.159.206\n"
                      f"  fix: {B} is not in the Ray cluster: read its Ray container's log (docker logs gb10-ray on {B}), check it "
                      "reaches the head's GCS at 169.254.94.252:6379 over the QSFP link (ufw, test_port_open) with the same "
                      "image, then start its Ray worker again")
    dead = parse("ray_nodes", NODES_PAIR.replace('"Alive": true, "NodeManagerAddress": "169.254.159.206"',
                                                 '"Alive": false, "NodeManagerAddress": "169.254.159.206"'))
    assert ray.judge_node(CLUSTER, CLUSTER.node(B), dead)[0].seen == \
        f"no alive Ray node at 169.254.159.206, 192.168.101.11 (one there died: node {WORKER_ID[:12]})"


def test_ray_node_without_gpu():
    import json

    nodes = parse("ray_nodes", json.dumps([ray_node("a" * 56, "169.254.94.252", A, True),
                                           ray_node("b" * 56, "169.254.159.206", B, False, gpus=0)]))
    [f] = ray.judge_node(CLUSTER, CLUSTER.node(B), nodes)
    assert codes([f]) == [(Code.RAY_GPUS, B, False)]
    assert f.seen == "the Ray node at 169.254.159.206 has 0 GPU"


def test_ray_status_not_ready_is_not_checked():
    [f] = ray.judge_status(CLUSTER, A, parse("ray_status", NOT_YET))
    assert f.not_checked and f.code is Code.COMMAND_FAILED
    assert f.text.startswith(f"[command-failed] {A}: could not check: `ray status` says: No cluster status")


def test_a_wrong_vllm_host_ip_in_the_env_file_is_said_once():
    """--node-ip-address=${VLLM_HOST_IP}: a wrong address in the .env is test_env_file's finding, not the compose file's;
    the same wrong address written into the compose file itself is the compose file's."""
    node = CLUSTER.node(B)
    ifaces, ports = facts_for(node)
    text = compose.render(CLUSTER)
    config = yaml.safe_load(text)
    env = {**compose.parse_env(compose.env_file(CLUSTER, node)), "VLLM_HOST_IP": "198.18.0.11"}
    svc = compose.interpolate(compose.vllm_service(config)[1], env)
    found = compose_lint.judge(CLUSTER, node, config, env, ifaces, ports, None, dry_run(svc, "ray"))
    assert [f for f in found if f.params.get("arg") == "--node-ip-address"] == []
    [wrong_env] = compose_lint.judge_env_file(CLUSTER, node, env)
    assert wrong_env.text.startswith(f"[env-file] {B}: saw VLLM_HOST_IP=198.18.0.11; expected this node's own address "
                                     "169.254.159.206")
    hardcoded = text.replace('\\"--node-ip-address=${VLLM_HOST_IP}\\"', '\\"--node-ip-address=198.18.0.11\\"')
    assert hardcoded != text
    [f] = lint(hardcoded, B)
    assert (f.code, f.params["arg"]) == (Code.COMPOSE_ARG, "--node-ip-address") and "saw --node-ip-address 198.18.0.11" in f.text
