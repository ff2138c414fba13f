"""The property that makes a green mean it looked, over every check that reads facts: with the facts of a healthy pair
every check passes; with any fact it reads made unreadable, on one node or on all, in any way (the tool missing, exit 1,
exit 127, empty, garbage, the node unreachable), it is never "passed".

The healthy facts are recordings of the simulated pair (selftests/captures/facts/, made by `gb10check record`: real ip,
ufw, docker, sysfs and the stand-ins' GB10 outputs; an mp pair, and a Ray pair for the Ray path's checks); the checks run in this process on a Fleet replaying it, so no node
is reached (a live command would fail the case). Checks that measure live (the compute run, a shard read, ib_write_bw,
NCCL, the probes, the clock, the compose dry run, Ray's head) are named in LIVE with the reason: their live side is proven
on the simulated cluster.
"""

import importlib
import inspect
import json
import warnings
from pathlib import Path

import pytest

from gb10check.gather import recording, registry
from gb10check.plugin import LinkPath, LinkUnderTest
from gb10check.remote import RemoteError, RemoteNode
from gb10check.verdict import Degraded, NotChecked

REPO = Path(__file__).resolve().parent.parent
RECORDING = Path(__file__).resolve().parent / "captures" / "facts" / "sim-healthy-pair.json"
RAY_RECORDING = Path(__file__).resolve().parent / "captures" / "facts" / "sim-healthy-ray-pair.json"
H200 = Path(__file__).resolve().parent / "captures" / "facts" / "h200-local.json"

# Checks that read no recorded fact at all (they measure or probe live), and checks whose healthy pass needs a live step
# after their facts: the property still runs over the facts they declare.
LIVE = {
    "test_clock_skew": "reads the node's clock live (a recorded time is stale)",
    "test_ib_write_bw": "runs ib_write_bw across the link",
    "test_ping": "the reachability probes run live", "test_ssh_mesh": "the reachability probes run live",
    "test_port_open": "the reachability probes run live", "test_path_mtu": "the reachability probes run live",
    "test_ray_status": "reads rank 0's running Ray", "test_ray_node_address": "reads rank 0's running Ray",
}
# The simulated pair's torch is a CPU build: these canaries find no CUDA or NCCL there and say so as a skip; on a GB10 or
# the H200 they judge what they find.
CPU_BUILD = {"test_image_nccl", "test_image_kernels"}
LIVE_AFTER_FACTS = {
    "test_gpu_compute": "times a matmul live on every node at once",
    "test_shard_read_rate": "reads a shard live",
    "test_compose_lint": "runs the service's command in a dry run on the node",
    "test_nccl_collectives": "runs the collectives canary in the image on every node at once",
    "test_nccl_all_gather": "runs nccl-tests across the nodes, each rank with its node's service environment",
    "test_nccl_link_pair": "runs nccl-tests over each link pair, each end with its own HCA and interface",
}
MODES = {
    "tool missing": (127, "", "sh: 1: {tool}: not found\n"),
    "exit 1": (1, "", "{tool}: something went wrong\n"),
    "exit 127": (127, "", ""),
    "empty": (0, "", ""),
    "garbage": (0, "gb10check: %%% this is not the tool's output @@@ 0x0\n", ""),
}


def checks():
    """(module, function) of every check under tests/preflight and tests/network."""
    for path in sorted((REPO / "tests").glob("*/test_*.py")):
        if path.parent.name not in ("preflight", "network"):
            continue
        module = importlib.import_module(f"tests.{path.parent.name}.{path.stem}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("test_") and fn.__module__ == module.__name__:
                yield f"{path.parent.name}/{path.stem}::{name}", fn


def declared(fn) -> tuple[str, ...]:
    return tuple(f for m in getattr(fn, "pytestmark", []) if m.name == "gb10check_reads" for f in m.args)


READING = {cid: fn for cid, fn in checks() if declared(fn)}
RAY = {cid for cid, fn in READING.items() if "ray_cluster" in inspect.signature(fn).parameters}
HEALTHY = sorted(cid for cid in READING if cid.split("::")[1] not in LIVE_AFTER_FACTS)


def with_driver(got: dict) -> dict:
    """The recording, with the profile naming the driver the pair runs (so test_driver_version has one to compare)."""
    driver = next(o["stdout"].strip() for o in got["facts"][got["cluster"]["nodes"][0]["name"]] if o["fact"] == "driver_query")
    got["cluster"].setdefault("expect", {})["driver_version"] = driver
    return got


@pytest.fixture(scope="module")
def recordings() -> dict:
    """The healthy pair as the field report deploys it (mp), and as NVIDIA's playbook does (Ray), for the Ray checks."""
    return {"mp": with_driver(json.loads(RECORDING.read_text())), "ray": with_driver(json.loads(RAY_RECORDING.read_text()))}


@pytest.fixture(autouse=True)
def nothing_live(monkeypatch):
    def refuse(self, command, *args, **kwargs):
        raise RemoteError(f"replay: {self.name} is not reached (`{command[:60]}`)")

    monkeypatch.setattr(RemoteNode, "run", refuse)


def arguments(fn, fleet) -> list[dict]:
    """Every parametrization of the check on the replayed cluster, as its fixture values."""
    cluster = fleet.cluster
    nodes = [fleet.node(n.name) for n in cluster.by_rank()]
    pairs = cluster.link_pairs()
    values = {
        "node": nodes, "follower": nodes[1:], "head": [fleet.node(cluster.head.name)], "cluster": [cluster],
        "ray_cluster": [cluster], "measurements": [lambda *a: None], "versions": [lambda *a: None],
        "node_link": [(n, l) for n in nodes for l in n.spec.links],
        "link_pair": [LinkUnderTest(fleet.node(p.a.name), p.a_link, fleet.node(p.b.name), p.b_link) for p in pairs],
        "path": [LinkPath(fleet.node(a.name), la, fleet.node(b.name), lb) for p in pairs
                 for a, la, b, lb in ((p.a, p.a_link, p.b, p.b_link), (p.b, p.b_link, p.a, p.a_link))],
    }
    combos = [{}]
    for name in inspect.signature(fn).parameters:
        combos = [{**c, name: v} for c in combos for v in values[name]]
    return combos


def read_by(fn, kwargs: dict, fleet) -> set[tuple[str, str]]:
    """(node, fact) of every command fact this parametrization of the check reads on the healthy recording."""
    seen, real = set(), fleet.fact_output

    def logged(name, fact, arg=None):
        seen.add((name, fact))
        return real(name, fact, arg)

    fleet.fact_output = logged
    try:
        outcome(fn, kwargs, fleet.cluster)
    finally:
        fleet.fact_output = real
    return seen


def outcome(fn, kwargs: dict, cluster) -> str:
    return run_check(fn, kwargs, cluster)[0]


def run_check(fn, kwargs: dict, cluster) -> tuple[str, str]:
    """(outcome, what it said) of one parametrization of a check, as the plugin would report it."""
    token = registry.declared(declared(fn), cluster)
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            fn(**kwargs)
        said = [str(w.message) for w in seen if issubclass(w.category, Degraded)]
        return ("warning", "\n".join(said)) if said else ("passed", "")
    except NotChecked as exc:
        return "not checked", str(exc.msg)
    except pytest.fail.Exception as exc:
        return "failed", str(exc.msg)
    except pytest.skip.Exception as exc:
        return "skipped", str(exc.msg)
    except RemoteError as exc:
        return "not checked", str(exc)  # as the plugin reports it
    finally:
        registry.undeclare(token)


def broken(recorded: dict, fact: str, nodes: list[str], mode: str) -> dict:
    """The recording with `fact` (every arg of it) on `nodes` made unreadable in that way. A new list for each node
    changed and a new entry for each output changed; the rest is the recording's own, which a replay only reads."""
    facts = dict(recorded["facts"])
    tool = registry.FACTS[fact].tool or "tool"
    for name in nodes:
        if mode == "unreachable":
            facts[name] = {"error": "NodeUnreachable", "message": f"node {name} unreachable: No route to host"}
            continue
        rc, out, err = MODES[mode]
        facts[name] = [dict(o, rc=rc, stdout=out, stderr=err.format(tool=tool)) if o["fact"] == fact else o
                       for o in facts[name]]
    return {**recorded, "facts": facts}


def command_facts(fn, cluster) -> list[str]:
    return sorted(f for f in registry.closure(declared(fn), cluster) if registry.FACTS[f].command is not None)


def test_every_check_reads_declared_facts_or_is_live():
    every = dict(checks())
    assert set(every) - set(READING) == {c for c in every if c.split("::")[1] in LIVE}, \
        "a check that declares no facts must be a live one (LIVE), and a LIVE one declares none"
    assert {c.split("::")[1] for c in READING} >= set(LIVE_AFTER_FACTS)


@pytest.mark.parametrize("check", HEALTHY)
def test_healthy_pair_passes(check, recordings):
    recorded = recordings["ray" if check in RAY else "mp"]
    fn = READING[check]
    fleet = recording.replay(recorded)
    got = {i: outcome(fn, kw, fleet.cluster) for i, kw in enumerate(arguments(fn, fleet))}
    assert got and set(got.values()) == {"skipped" if fn.__name__ in CPU_BUILD else "passed"}, got


@pytest.mark.parametrize("check", sorted(READING))
def test_never_passes_on_an_unreadable_fact(check, recordings):
    """Each parametrization, with each (node, fact) it reads made unreadable in each way, alone and with that fact broken
    on every node at once."""
    recorded = recordings["ray" if check in RAY else "mp"]
    fn = READING[check]
    healthy = recording.replay(recorded)
    names = [n.name for n in healthy.cluster.by_rank()]
    passed, cases = [], 0
    for i, kw in enumerate(arguments(fn, healthy)):
        reads = read_by(fn, kw, healthy)
        assert reads, f"{check} [{i}] read no fact on the healthy recording"
        for node, fact in sorted(reads):
            # A clean empty output is an answer for the facts the registry says so of (nothing running, no settings); a fact
            # that reads every exit (its errors are facts) is held to its judge even then.
            f = registry.FACTS[fact]
            answer = f.empty_ok and f.ok_exits is not registry.ANY_EXIT
            for mode in [m for m in [*MODES, "unreachable"] if not (m == "empty" and answer)]:
                for nodes in ([node], names):
                    fleet = recording.replay(broken(recorded, fact, nodes, mode))
                    cases += 1
                    if outcome(fn, arguments(fn, fleet)[i], fleet.cluster) == "passed":
                        passed.append(f"[{i}] {fact} {mode} on {'+'.join(nodes)}")
    assert cases and not passed, "\n".join(passed)


# The borrowed H200 machine as a one-node cluster (selftests/device/run_local_h200.sh, the h200 profile): its GPU, driver and
# canaries pass; what a GPU box without docker, RDMA, ufw, iproute2 or a DMI table lacks is not checked, with its cause;
# what the cluster file asks of it and it does not have (a compose file, the model, the netplan file) fails.
H200_VERDICTS = {
    "test_ssh_user": "passed", "test_gpu_name": "passed", "test_driver_parity": "passed", "test_driver_version": "passed",
    "test_reboot_required": "passed", "test_driver_packages_held": "passed", "test_kernel_log": "passed",
    "test_no_dhcp_on_qsfp": "passed", "test_image_kernels": "passed", "test_image_nccl": "warning",
    "test_container_runtime": "failed", "test_model_artifacts": "failed", "test_netplan_file": "failed",
    "test_image": "not checked", "test_gpu_in_container": "not checked", "test_no_serving_container_left": "not checked",
    "test_env_file": "not checked", "test_compose_offline": "not checked", "test_compose_caches": "not checked",
    "test_nccl_topology_env": "not checked",
    "test_disk_space": "not checked", "test_memory_fit": "not checked", "test_memory_available": "not checked",
    "test_firewall": "not checked", "test_advisories": "not checked", "test_pcie_link": "not checked",
    "test_link_address": "not checked", "test_links_on_distinct_subnets": "not checked",
    "test_no_default_route_on_qsfp": "not checked", "test_rdma_link_up": "not checked", "test_rdma_port_active": "not checked",
    "test_roce_gid": "not checked", "test_link_speed": "not checked", "test_roce_mtu": "not checked",
    "test_rdma_error_counters": "not checked",
    # Newer than the recording: the facts they read are not in it (not-recorded).
    "test_container_toolkit": "not checked", "test_cdi_spec": "not checked", "test_compose_image": "not checked",
    "test_nccl_config": "not checked", "test_start_memory": "not checked", "test_no_gpu_process_left": "not checked",
    "test_cabling": "not checked",
}


def test_the_h200_recording_gives_the_machines_verdicts():
    fleet = recording.replay(json.loads(H200.read_text()))
    got = {}
    for cid, fn in READING.items():
        name = cid.split("::")[1]
        if cid in RAY or name in LIVE_AFTER_FACTS:
            continue
        outcomes = {outcome(fn, kw, fleet.cluster) for kw in arguments(fn, fleet)}
        if outcomes:  # a check over node pairs or links between nodes has no instance on one node
            got[name] = outcomes.pop() if len(outcomes) == 1 else outcomes
    assert got == H200_VERDICTS
