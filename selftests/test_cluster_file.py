"""The cluster file: the example is valid, and each kind of mistake is one line naming the field."""

import copy
from pathlib import Path

import pytest
import yaml

from gb10check.cluster import ClusterError, gib, load_cluster, parse_cluster

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = yaml.safe_load((REPO / "cluster.example.yaml").read_text())


def test_example_is_the_seed_pair():
    c = load_cluster(REPO / "cluster.example.yaml")
    assert [n.name for n in c.nodes] == ["thinkstationpgx-30", "thinkstationpgx-32"]
    assert c.head.name == "thinkstationpgx-30" and c.master_addr == "169.254.94.252"
    assert [str(l.address) for l in c.node("thinkstationpgx-32").links] == ["169.254.159.206/16", "192.168.101.11/24"]
    assert c.deploy.model_id == "Qwen/Qwen3.8-Flash-Next-FP8" and c.deploy.tensor_parallel_size == 2
    assert (c.deploy.api_port, c.deploy.master_port, c.deploy.max_model_len, c.deploy.max_num_seqs) == (20001, 29501, 262144, 8)
    assert c.deploy.container_memory_limit == 105.0 and c.deploy.gpu_memory_utilization == 0.8
    assert c.expect.memory_gib == 119.0
    assert [p.id for p in c.link_pairs()] == ["thinkstationpgx-30:enp1s0f0np0--thinkstationpgx-32:enp1s0f0np0",
                                              "thinkstationpgx-30:enP2p1s0f0np0--thinkstationpgx-32:enP2p1s0f0np0"]
    assert c.base_url == "http://thinkstationpgx-30.local:20001/v1"


@pytest.mark.parametrize(("text", "value"), [("105G", 105.0), ("119 GiB", 119.0), ("512M", 0.5), ("1T", 1024.0), (7, 7.0),
                                             ("5 GB", 5.0), ("2.5g", 2.5)])
def test_sizes(text, value):
    assert gib(text) == value


def mutate(change):
    data = copy.deepcopy(EXAMPLE)
    change(data)
    return yaml.safe_dump(data)


def setitem(path, value):
    def change(data):
        *parents, last = path
        for p in parents:
            data = data[p]
        data[last] = value
    return change


def delitem(path):
    def change(data):
        *parents, last = path
        for p in parents:
            data = data[p]
        del data[last]
    return change


MISTAKES = [
    ("duplicate rank", setitem(["nodes", 1, "rank"], 0), r"ranks must be 0\.\.1, each exactly once; got \[0, 0\]"),
    ("no rank 0", lambda d: (setitem(["nodes", 0, "rank"], 2)(d), setitem(["nodes", 1, "rank"], 1)(d)),
     r"ranks must be 0\.\.1, each exactly once; got \[1, 2\]"),
    ("negative rank", setitem(["nodes", 1, "rank"], -1), r"nodes\[1\]\(thinkstationpgx-32\)\.rank: Input should be greater than or equal to 0"),
    ("address without prefix", setitem(["nodes", 0, "links", 0, "address"], "169.254.94.252"),
     r"nodes\[0\]\(thinkstationpgx-30\)\.links\[0\]\.address: expected an IPv4 address with its prefix length, e\.g\. '169\.254\.94\.252/24'"),
    ("not an address", setitem(["nodes", 0, "links", 1, "address"], "192.168.101/24"),
     r"nodes\[0\]\(thinkstationpgx-30\)\.links\[1\]\.address: .*(valid|IPv4)"),
    ("duplicate address", setitem(["nodes", 1, "links", 1, "address"], "192.168.101.10/24"),
     r"address 192\.168\.101\.10 is used twice: thinkstationpgx-30 enP2p1s0f0np0 and thinkstationpgx-32 enP2p1s0f0np0"),
    ("link without peer", setitem(["nodes", 1, "links", 1, "address"], "192.168.102.11/24"),
     r"thinkstationpgx-30 enP2p1s0f0np0 \(192\.168\.101\.10/24\) has no peer link on another node in 192\.168\.101\.0/24"),
    ("both links on one subnet", lambda d: (setitem(["nodes", 0, "links", 1, "address"], "169.254.1.10/16")(d),
                                            setitem(["nodes", 1, "links", 1, "address"], "169.254.1.11/16")(d)),
     r"nodes\[0\]\(thinkstationpgx-30\): links enp1s0f0np0 \(169\.254\.94\.252/16\) and enP2p1s0f0np0 \(169\.254\.1\.10/16\) are on one subnet"),
    ("bad memory unit", setitem(["deploy", "container_memory_limit"], "105 bananas"),
     r"deploy\.container_memory_limit: expected a size such as '105G' or '119 GiB', got '105 bananas'"),
    ("missing model", delitem(["deploy", "model_id"]), r"deploy\.model_id: Field required"),
    ("unknown key (typo)", setitem(["deploy", "max_model_length"], 4096), r"deploy\.max_model_length: Extra inputs are not permitted"),
    ("port out of range", setitem(["deploy", "api_port"], 70000), r"deploy\.api_port: Input should be less than or equal to 65535"),
    ("utilization above 1", setitem(["deploy", "gpu_memory_utilization"], 1.5), r"deploy\.gpu_memory_utilization: Input should be less than or equal to 1"),
    ("bad firewall port", setitem(["expect", "firewall", "ports"], ["20001"]), r"expect\.firewall\.ports: expected 'PORT/tcp' or 'PORT/udp', got '20001'"),
    ("no nodes", setitem(["nodes"], []), r"nodes: List should have at least 1 item"),
    ("tp not a multiple of nodes", setitem(["deploy", "tensor_parallel_size"], 3),
     r"deploy\.tensor_parallel_size 3 is not a multiple of the 2 nodes"),
    ("duplicate node name", setitem(["nodes", 1, "name"], "thinkstationpgx-30"), r"node names must be unique"),
    ("missing ssh user", delitem(["ssh", "user"]), r"ssh\.user: Field required"),
    ("unknown executor", setitem(["deploy", "executor"], "slurm"),
     r"deploy\.executor: expected 'mp' \(vLLM's multiprocess executor with --headless followers, the field report's\) or 'ray' "
     r"\(a Ray head and a Ray worker per node with --distributed-executor-backend ray, NVIDIA's two-node playbook\), got 'slurm'"),
    ("ray port inside the worker range", setitem(["deploy", "ray"], {"node_manager_port": 10050}),
     r"deploy\.ray: node_manager_port 10050 is inside the worker port range 10002-10101"),
    ("ray worker range upside down", setitem(["deploy", "ray"], {"min_worker_port": 12000, "max_worker_port": 11000}),
     r"deploy\.ray: min_worker_port 12000 is above max_worker_port 11000"),
    ("ray ports twice", setitem(["deploy", "ray"], {"object_manager_port": 6700}),
     r"deploy\.ray: object_manager_port and node_manager_port are both 6700"),
]


def test_executor_defaults_to_mp_and_ray_adds_its_ports():
    mp = parse_cluster(mutate(lambda d: None), "cluster.yaml")
    assert mp.deploy.executor == "mp" and not mp.uses_ray and mp.required_ports() == mp.expect.reachable_ports
    ray = parse_cluster(mutate(setitem(["deploy", "executor"], "ray")), "cluster.yaml")
    assert ray.uses_ray and ray.required_ports() == [*mp.expect.reachable_ports, 6379, 6700, 6701, 10002, 10101]


@pytest.mark.parametrize(("change", "message"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES])
def test_mistake_is_one_line_naming_the_field(change, message):
    with pytest.raises(ClusterError) as err:
        parse_cluster(mutate(change), "cluster.yaml")
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("cluster.yaml: ")
    assert __import__("re").search(message, text), text


def test_not_yaml():
    with pytest.raises(ClusterError, match=r"^c\.yaml: line 3: not valid YAML: expected .,. or .\]."):
        parse_cluster("nodes:\n  - name: [unclosed\n", "c.yaml")


def test_not_a_mapping():
    with pytest.raises(ClusterError, match=r"^c\.yaml: expected a mapping with ssh, nodes, expect, deploy, serving; got list$"):
        parse_cluster("- a\n- b\n", "c.yaml")


def test_missing_file(tmp_path):
    with pytest.raises(ClusterError, match=r"cannot read the cluster file: No such file or directory"):
        load_cluster(tmp_path / "nope.yaml")


def test_relative_ssh_paths_follow_the_file(tmp_path):
    data = copy.deepcopy(EXAMPLE)
    data["ssh"]["identity_file"] = "keys/id"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(data))
    c = load_cluster(tmp_path / "c.yaml")
    assert c.ssh.identity_file == str(tmp_path / "keys" / "id")


# ---- soak: the soak stage's section ----------------------------------------------------------------------------

SOAK_MISTAKES = [
    ("placement", {"nonce_placement": "top"}, r"soak\.nonce_placement: Input should be 'start', 'middle' or 'end'"),
    ("negative duration", {"duration_s": -5}, r"soak\.duration_s: Input should be greater than 0"),
    ("zero concurrency", {"concurrency": 0}, r"soak\.concurrency: Input should be greater than 0"),
    ("fraction of 1", {"long_context_fraction": 1.0}, r"soak\.long_context_fraction: Input should be less than 1"),
    ("depth twice", {"depths": [0, 4096, 4096]}, r"soak\.depths: each depth once; got \[0, 4096, 4096\]"),
    ("negative depth", {"depths": [0, -1]}, r"soak\.depths\[1\]: Input should be greater than or equal to 0"),
    ("floor unit", {"min_mem_available": "5 bananas"}, r"soak\.min_mem_available: expected a size such as '105G'"),
    ("tg of one", {"depth_gen_tokens": 1}, r"soak\.depth_gen_tokens: Input should be greater than 1"),
    ("floor not a number", {"min_pp_tok_s": "fast"},
     r"soak\.min_pp_tok_s: expected tok/s \(a number > 0\) for every depth, or \{depth: tok/s\}; got 'fast'$"),
    ("floor per depth", {"min_tg_tok_s": {4096: 0}}, r"soak\.min_tg_tok_s: expected tok/s .*; got 0$"),
    ("typo", {"duration": 60}, r"soak\.duration: Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("soak", "message"), [m[1:] for m in SOAK_MISTAKES], ids=[m[0] for m in SOAK_MISTAKES])
def test_soak_mistake_names_the_field(soak, message):
    with pytest.raises(ClusterError) as err:
        parse_cluster(mutate(setitem(["soak"], soak)), "cluster.yaml")
    text = str(err.value)
    assert "\n" not in text and __import__("re").search(message, text), text


def test_soak_defaults_resolve_against_the_deployment():
    from gb10check import soak

    c = parse_cluster(mutate(delitem(["soak"])) if "soak" in EXAMPLE else mutate(lambda d: None), "cluster.yaml")
    s = soak.settings(c)
    assert (s.duration_s, s.concurrency, s.stall_limit_s, s.floor_gib) == (1800.0, 8, 60.0, 5.0)  # max_num_seqs, the watchdog's
    assert s.long_context_tokens == int(262144 * 0.9) and s.nonce_placement == "middle"
    assert s.depths == [0, 4096, 16384] and (s.depth_prompt_tokens, s.depth_gen_tokens, s.depth_runs) == (2048, 32, 3)
    assert s.min_pp_tok_s == {} and s.poll_interval_s == c.deploy.watchdog.poll_interval_s


def test_soak_depths_are_capped_by_max_model_len_and_floors_apply_per_depth():
    from gb10check import soak

    text = mutate(lambda d: (setitem(["deploy", "max_model_len"], 8192)(d),
                             setitem(["soak"], {"min_mem_available": "3 GiB", "concurrency": 2, "min_pp_tok_s": 100,
                                                "min_tg_tok_s": {0: 20, 4096: 15}, "prompt_tokens": [64, 9000]})(d)))
    s = soak.settings(parse_cluster(text, "cluster.yaml"))
    assert s.depths == [0, 4096] and s.concurrency == 2 and s.floor_gib == 3.0
    assert s.depths_skipped == [(16384, "16384 + 2048 prompt + 32 generated tokens do not fit max_model_len 8192")]
    assert s.min_pp_tok_s == {0: 100.0, 4096: 100.0, 16384: 100.0} and s.min_tg_tok_s == {0: 20.0, 4096: 15.0}
    assert s.prompt_tokens == [64, 8192 - 64 - 256]  # a load prompt and its answer fit the context
    assert soak.settings(parse_cluster(text, "cluster.yaml"), duration_s=60).duration_s == 60
