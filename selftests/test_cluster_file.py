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
    assert c.head.name == "thinkstationpgx-30" and c.rendezvous_addr(c.head) == c.rendezvous_addr(c.nodes[1]) == "169.254.94.252"
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
     r"nodes\[0\]\(thinkstationpgx-30\): links enp1s0f0np0 \(169\.254\.94\.252/16\) and enP2p1s0f0np0 \(169\.254\.1\.10/16\) are on one subnet"
     r".*\ncluster\.yaml: nodes\[1\]\(thinkstationpgx-32\): links enp1s0f0np0 \(169\.254\.159\.206/16\) and enP2p1s0f0np0 "
     r"\(169\.254\.1\.11/16\) are on one subnet"),
    ("bad memory unit", setitem(["deploy", "container_memory_limit"], "105 bananas"),
     r"deploy\.container_memory_limit: expected a size such as '105G' or '119 GiB', got '105 bananas'"),
    ("missing model", delitem(["deploy", "model_id"]), r"deploy\.model_id: Field required"),
    ("unknown key (typo)", setitem(["deploy", "max_model_length"], 4096), r"deploy\.max_model_length: unknown field; did you mean max_model_len\?$"),
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
    """One line per mistake: a change that breaks both nodes is two lines, each naming its node."""
    with pytest.raises(ClusterError) as err:
        parse_cluster(mutate(change), "cluster.yaml")
    text = str(err.value)
    assert text.count("\n") == message.count(r"\n")
    assert all(line.startswith("cluster.yaml: ") for line in text.split("\n"))
    assert __import__("re").search(message, text), text


def rename(path, new):
    def change(data):
        *parents, last = path
        for p in parents:
            data = data[p]
        data[new] = data.pop(last)
    return change


def cluster_error(change) -> list[str]:
    with pytest.raises(ClusterError) as err:
        parse_cluster(mutate(change), "cluster.yaml")
    return str(err.value).split("\n")


def test_a_misspelled_required_key_is_named_with_the_field_it_stands_for():
    assert cluster_error(rename(["nodes", 1, "address"], "adress")) == [
        "cluster.yaml: nodes[1](thinkstationpgx-32).adress: unknown field; did you mean address? "
        "(address is required and missing)"]
    assert cluster_error(rename(["nodes"], "node")) == [
        "cluster.yaml: node: unknown field; did you mean nodes? (nodes is required and missing)"]


def test_each_mistake_on_its_own_line_the_misspelled_key_first():
    lines = cluster_error(lambda d: (setitem(["deploy", "max_model_len"], "big")(d), rename(["nodes", 0, "rank"], "rnak")(d),
                                     setitem(["ssh", "prot"], 22)(d)))
    assert lines == ["cluster.yaml: ssh.prot: unknown field; did you mean port?",
                     "cluster.yaml: nodes[0](thinkstationpgx-30).rnak: unknown field; did you mean rank? (rank is required and missing)",
                     "cluster.yaml: deploy.max_model_len: got 'big' (a string); expected an integer, e.g. 32768"]
    assert not any("more)" in line for line in lines)


def test_an_unknown_key_like_no_field_lists_the_fields_there():
    assert cluster_error(setitem(["serving", "zzz"], 1)) == [
        "cluster.yaml: serving.zzz: unknown field; the fields here are base_url, api_key_env, expect_reasoning, "
        "expect_tool_calls, min_decode_tok_s, basic_prompt, basic_expect, repetitions, decode_max_tokens, "
        "sweep_max_concurrency, sweep_max_tokens, log_command, expect_engine"]


def test_expect_engine_names_a_misspelled_key_and_a_bad_budget():
    assert cluster_error(setitem(["serving", "expect_engine"], {"kv_cache_dtpye": "fp8"})) == [
        "cluster.yaml: serving.expect_engine.kv_cache_dtpye: unknown field; did you mean kv_cache_dtype?"]
    assert cluster_error(setitem(["expect", "startup_phase_budgets_s"], {"weights": 10})) == [
        "cluster.yaml: expect.startup_phase_budgets_s: no budget for compile, kv_cache, graph_capture, api: give every phase "
        "(weights, compile, kv_cache, graph_capture, api) its seconds"]


def test_past_ten_mistakes_the_rest_are_counted():
    lines = cluster_error(lambda d: [setitem(["deploy", f"unknown_{i}"], i)(d) for i in range(12)])
    assert len(lines) == 11 and lines[-1] == "cluster.yaml: (and 2 more)"


WRONG_TYPES = [
    ("integer from the profile", ["expect", "link_speed_mbps"], "fast",
     "expect.link_speed_mbps: got 'fast' (a string); expected an integer, e.g. 200000"),
    ("number from the profile", ["expect", "max_compute_spread"], "lots",
     "expect.max_compute_spread: got 'lots' (a string); expected a number, e.g. 0.15"),
    ("integer with an example", ["deploy", "max_model_len"], 1.5,
     "deploy.max_model_len: got 1.5 (a number with a fraction); expected an integer, e.g. 32768"),
    ("integer from its bounds", ["deploy", "tensor_parallel_size"], "two",
     "deploy.tensor_parallel_size: got 'two' (a string); expected an integer, e.g. 1"),
    ("null for a default", ["ssh", "port"], None, "ssh.port: got null (empty); expected an integer, e.g. 22"),
    ("boolean", ["deploy", "map_infiniband"], "maybe",
     "deploy.map_infiniband: got 'maybe' (a string); expected true or false, e.g. true"),
    ("string to quote", ["deploy", "nccl"], {"version": 2.28},
     "deploy.nccl.version: got 2.28 (a number with a fraction); expected a string: put it in quotes, e.g. '2.28'"),
    ("yes is not a string", ["serving", "basic_expect"], True,
     "serving.basic_expect: got true (a boolean); expected a string: put it in quotes, e.g. 'true'"),
    ("list of strings", ["deploy", "extra_args"], "--enforce-eager",
     "deploy.extra_args: got '--enforce-eager' (a string); expected a list, e.g. ['--enforce-eager']"),
    ("list item", ["soak", "depths"], [0, "deep"], "soak.depths[1]: got 'deep' (a string); expected an integer, e.g. 0"),
    ("list of mappings", ["nodes"], 5,
     "nodes: got 5 (an integer); expected a list, each item a mapping of name, address, rank, ssh_port, connection, links"),
    ("mapping", ["gate"], "open", "gate: got 'open' (a string); expected a mapping of waive"),
    ("address", ["nodes", 0, "links", 1, "address"], "192.168.101/24",
     "nodes[0](thinkstationpgx-30).links[1].address: got '192.168.101/24' (a string); expected an IPv4 address with its "
     "prefix length, e.g. '192.168.101.10/24'"),
    ("one of a few", ["soak", "nonce_placement"], "top",
     "soak.nonce_placement: Input should be 'start', 'middle' or 'end'; got 'top'"),
]


@pytest.mark.parametrize(("path", "value", "message"), [m[1:] for m in WRONG_TYPES], ids=[m[0] for m in WRONG_TYPES])
def test_a_wrong_type_shows_the_value_and_an_example(path, value, message):
    assert cluster_error(setitem(path, value)) == [f"cluster.yaml: {message}"]


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
    ("typo", {"duration": 60}, r"soak\.duration: unknown field; did you mean duration_s\?$"),
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
