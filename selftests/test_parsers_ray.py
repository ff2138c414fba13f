"""Parsers of the Ray path (gb10check/facts/ray.py) on outputs in Ray's exact formats.

Where the outputs come from (no Ray cluster runs on this machine, so none is a capture of a live cluster):
- `ray --version` and the import line: printed by PyPI's ray 2.60.0 installed in a scratch virtualenv here; the missing
  case by this machine's bash and python3 without Ray, as the suite's command runs them (gather.RAY_VERSION_SCRIPT);
- `ray status`: rendered by Ray 2.60.0's own formatter (ray.autoscaler._private.util.format_info_string, the function
  `ray status` prints through on a cluster made with `ray start`: the read-only provider names each node `node_<id>`,
  legacy=True, so no "Idle:" section) from the summaries a healthy GB10 pair would give; and the same layout as older
  Ray 2.x prints it ("Usage:" / "Demands:"), written here;
- the node list: ray.nodes()'s dicts (the keys Ray 2.60.0's _raylet builds: NodeID, Alive, NodeManagerAddress,
  NodeManagerHostname, NodeManagerPort, ObjectManagerPort, ..., Resources, Labels) and `ray list nodes --format json`
  (ray.util.state's NodeState fields), written here for the simulated pair's addresses.
"""

import json

import pytest

from gb10check.facts import ParseError, parse

HEAD_ID = "3c8f0e6a9b5d4e21f7a0c3b2d1e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8"
WORKER_ID = "9a1b2c3d4e5f60718293a4b5c6d7e8f9011223344556677889900aab"

VERSION_OK = "ray, version 2.60.0\nray.__version__=2.60.0\n"
# An image without Ray (vLLM 0.18+ images): bash's and Python's own messages, stderr after stdout.
VERSION_MISSING = ("/bin/bash: line 1: ray: command not found\nTraceback (most recent call last):\n"
                   "  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'ray'\n")

STATUS_PAIR = f"""======== Autoscaler status: 2026-11-30 21:04:05.123456 ========
Node status
---------------------------------------------------------------
Active:
 1 node_{HEAD_ID}
 1 node_{WORKER_ID}
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/40.0 CPU
 0.0/2.0 GPU
 0B/169.24GiB memory
 0B/72.54GiB object_store_memory

From request_resources:
 (none)
Pending Demands:
 (no resource demands)
"""

STATUS_PAIR_VERBOSE = f"""======== Autoscaler status: 2026-11-30 21:04:05.123456 ========
GCS request time: 0.001230s
Node Provider non_terminated_nodes time: 0.000032s

Node status
---------------------------------------------------------------
Active:
 1 node_{HEAD_ID}
 1 node_{WORKER_ID}
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/40.0 CPU
 0.0/2.0 GPU
 0.0/2.0 accelerator_type:GB10
 0B/169.24GiB memory
 0B/72.54GiB object_store_memory

From request_resources:
 (none)
Pending Demands:
 (no resource demands)

Node: {HEAD_ID} (node_{HEAD_ID})
 Usage:
  0.0/20.0 CPU
  0.0/1.0 GPU
  0B/84.62GiB memory
  0B/36.27GiB object_store_memory

Node: {WORKER_ID} (node_{WORKER_ID})
 Usage:
  0.0/20.0 CPU
  0.0/1.0 GPU
  0B/84.62GiB memory
  0B/36.27GiB object_store_memory
"""

# The worker registered at its LAN address: the head alone is active and vLLM's placement group, which pins a GPU
# bundle to the driver's node, waits (spark-vllm-docker issue 227's symptom; the address is its management one).
STATUS_PG_PENDING = f"""======== Autoscaler status: 2026-11-30 21:04:05.123456 ========
Node status
---------------------------------------------------------------
Active:
 1 node_{HEAD_ID}
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/20.0 CPU
 0.0/1.0 GPU
 0B/84.62GiB memory
 0B/36.27GiB object_store_memory

From request_resources:
 (none)
Pending Demands:
 {{'node:198.18.0.11': 0.001, 'GPU': 1.0}} * 1, {{'GPU': 1.0}} * 1 (PACK): 1+ pending placement groups
"""

# Older Ray 2.x (before "Total Usage:"): the same sections as "Usage:" and "Demands:".
STATUS_OLDER = f"""======== Autoscaler status: 2025-02-02 19:52:24.223188 ========
Node status
---------------------------------------------------------------
Active:
 1 node_{HEAD_ID[:15]}
 1 node_{WORKER_ID[:15]}
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Usage:
 0.0/40.0 CPU
 0.0/2.0 GPU
 0B/169.24GiB memory
 0B/72.54GiB object_store_memory

Demands:
 (no resource demands)
"""

NOT_YET = "No cluster status. It may take a few seconds for the Ray internal services to start up.\n"


def ray_node(node_id, ip, hostname, head, gpus=1.0, alive=True):
    """One dict of ray.nodes() as Ray 2.60.0 builds it."""
    resources = {"CPU": 20.0, "memory": 90861035520.0, "object_store_memory": 38943301632.0, f"node:{ip}": 1.0,
                 "accelerator_type:GB10": 1.0}
    if gpus:
        resources["GPU"] = gpus
    if head:
        resources["node:__internal_head__"] = 1.0
    return {"NodeID": node_id, "Alive": alive, "NodeManagerAddress": ip, "NodeManagerHostname": hostname,
            "NodeManagerPort": 6700, "ObjectManagerPort": 6701,
            "ObjectStoreSocketName": "/tmp/ray/session_2026-11-30_21-03-51_402913_1/sockets/plasma_store",
            "RayletSocketName": "/tmp/ray/session_2026-11-30_21-03-51_402913_1/sockets/raylet", "MetricsExportPort": 6704,
            "NodeName": ip, "RuntimeEnvAgentPort": 6702, "DeathReason": 0, "DeathReasonMessage": "", "alive": alive,
            "Resources": resources, "Labels": {"ray.io/node_id": node_id}}


NODES_PAIR = json.dumps([ray_node(HEAD_ID, "169.254.94.252", "thinkstationpgx-30", True),
                         ray_node(WORKER_ID, "169.254.159.206", "thinkstationpgx-32", False)])
NODES_WORKER_ON_LAN = json.dumps([ray_node(HEAD_ID, "169.254.94.252", "thinkstationpgx-30", True),
                                  ray_node(WORKER_ID, "198.18.0.11", "thinkstationpgx-32", False)])
LIST_NODES_JSON = json.dumps([
    {"node_id": HEAD_ID, "node_ip": "169.254.94.252", "is_head_node": True, "state": "ALIVE", "state_message": None,
     "node_name": "169.254.94.252", "resources_total": {"CPU": 20.0, "GPU": 1.0, "node:__internal_head__": 1.0},
     "labels": {"ray.io/node_id": HEAD_ID}, "start_time_ms": 1796072631402, "end_time_ms": 0},
    {"node_id": WORKER_ID, "node_ip": "169.254.159.206", "is_head_node": False, "state": "DEAD",
     "state_message": "Expected termination: received SIGTERM", "node_name": "169.254.159.206",
     "resources_total": {"CPU": 20.0, "GPU": 1.0}, "labels": {"ray.io/node_id": WORKER_ID}, "start_time_ms": 1796072640117,
     "end_time_ms": 1796072700000}], indent=2)


def test_version():
    v = parse("ray_version", VERSION_OK)
    assert (v.cli, v.module, v.version, v.errors) == ("2.60.0", "2.60.0", "2.60.0", [])
    missing = parse("ray_version", VERSION_MISSING)
    assert (missing.cli, missing.module, missing.version) == (None, None, None)
    assert missing.errors == ["/bin/bash: line 1: ray: command not found", "ModuleNotFoundError: No module named 'ray'"]
    with pytest.raises(ParseError, match="ray --version"):
        parse("ray_version", "Unable to find image 'vllm/vllm-openai:latest' locally\n")


@pytest.mark.parametrize("text", [STATUS_PAIR, STATUS_PAIR_VERBOSE])
def test_status_of_a_healthy_pair(text):
    s = parse("ray_status", text)
    assert s.ready and s.time == "2026-11-30 21:04:05.123456"
    assert s.active == {f"node_{HEAD_ID}": 1, f"node_{WORKER_ID}": 1} and s.nodes == 2
    assert s.usage["GPU"] == ("0.0", "2.0") and s.total("GPU") == 2.0 and s.total("CPU") == 40.0
    assert s.usage["memory"] == ("0B", "169.24GiB")  # the per-node blocks of -v are not added in
    assert s.pending == [] and s.failures == [] and s.demands == [] and s.demanded_node_addresses == []


def test_status_with_a_placement_group_pinned_to_another_address():
    s = parse("ray_status", STATUS_PG_PENDING)
    assert s.nodes == 1 and s.total("GPU") == 1.0
    assert s.demands == ["{'node:198.18.0.11': 0.001, 'GPU': 1.0} * 1, {'GPU': 1.0} * 1 (PACK): 1+ pending placement groups"]
    assert s.demanded_node_addresses == ["198.18.0.11"]


def test_status_older_layout_and_not_yet():
    s = parse("ray_status", STATUS_OLDER)
    assert s.nodes == 2 and s.total("GPU") == 2.0 and s.demands == []
    assert parse("ray_status", NOT_YET).ready is False
    with pytest.raises(ParseError, match="Autoscaler status"):
        parse("ray_status", "ConnectionError: Could not find any running Ray instance.\n")


def test_status_through_the_noise_people_paste_it_with():
    from .test_facts_robust import NOISE, _all_noise

    plain = parse("ray_status", STATUS_PG_PENDING)
    for wrap in [*NOISE.values(), _all_noise]:
        assert parse("ray_status", wrap(STATUS_PG_PENDING)) == plain


def test_nodes_from_ray_nodes():
    head, worker = parse("ray_nodes", NODES_PAIR)
    assert (head.node_id, head.address, head.hostname, head.alive, head.head, head.gpus) == \
        (HEAD_ID, "169.254.94.252", "thinkstationpgx-30", True, True, 1.0)
    assert (worker.address, worker.head, worker.gpus) == ("169.254.159.206", False, 1.0)
    # ray.init's log lines after the JSON (stderr merged) do not matter.
    assert parse("ray_nodes", NODES_PAIR + "\n2026-11-30 21:04:07,001\tINFO worker.py:1942 -- Connected\n")[1].address == \
        "169.254.159.206"


def test_nodes_from_ray_list_nodes():
    head, worker = parse("ray_nodes", LIST_NODES_JSON)
    assert (head.address, head.head, head.alive, head.gpus) == ("169.254.94.252", True, True, 1.0)
    assert (worker.address, worker.alive) == ("169.254.159.206", False)
    assert parse("ray_nodes", "[]") == []
    with pytest.raises(ParseError, match="ray_nodes: expected"):
        parse("ray_nodes", '[{"name": "x"}]')


STATUS_V2_IDLE = f"""======== Autoscaler status: 2026-11-30 21:04:05.123456 ========
Node status
---------------------------------------------------------------
Active:
 (no active nodes)
Idle:
 1 node_{HEAD_ID}
 1 node_{WORKER_ID}
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/40.0 CPU
 0.0/2.0 GPU
 0B/169.24GiB memory
 0B/72.54GiB object_store_memory

From request_resources:
 (none)
Pending Demands:
 (no resource demands)
"""

STATUS_RAY_2_2 = """======== Autoscaler status: 2023-01-10 08:00:00.000001 ========
Node status
---------------------------------------------------------------
Healthy:
 1 node_aa11
 1 node_bb22
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Usage:
 0.0/40.0 CPU
 2.0/2.0 GPU
 0.00/169.240 GiB memory
 0.00/72.540 GiB object_store_memory

Demands:
 (no resource demands)
"""

STATUS_NO_NODE_TYPES = """======== Cluster status: 2021-05-11 16:10:16.056925 ========
Node status
------------------------------------------------------------
 2 node(s) with resources: {'CPU': 20.0, 'GPU': 1.0, 'memory': 84.0, 'object_store_memory': 36.0}

Resources
------------------------------------------------------------
Usage:
 0.0/40.0 CPU
 0.0/2.0 GPU
 0.00/168.000 GiB memory
 0.00/72.000 GiB object_store_memory

Demands:
 (no resource demands)
"""


def test_status_autoscaler_v2_idle_nodes_are_alive_nodes():
    s = parse("ray_status", STATUS_V2_IDLE)
    assert s.active == {} and s.idle == {f"node_{HEAD_ID}": 1, f"node_{WORKER_ID}": 1} and s.nodes == 2
    assert s.total("GPU") == 2.0


def test_status_memory_with_the_unit_after_both_numbers_ray_2_2_and_older():
    s = parse("ray_status", STATUS_RAY_2_2)
    assert s.nodes == 2 and s.total("GPU") == 2.0
    assert s.usage["memory"] == ("0.00GiB", "169.240GiB") and s.usage["object_store_memory"] == ("0.00GiB", "72.540GiB")
    assert "GiB" not in s.usage
    old = parse("ray_status", STATUS_NO_NODE_TYPES)
    assert old.nodes == 2 and old.total("GPU") == 2.0 and old.time == "2021-05-11 16:10:16.056925"
