"""The API is up on rank 0 only, lets us in, and serves the configured model under the configured name."""

import socket

import pytest

from gb10check.facts.vllm_api import parse_models
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.serving


def test_health(api, api_state, cluster):
    where = f"{cluster.head.name} {api.root}"
    if api_state["health"] is None:
        report([Finding(Code.API_DOWN, where, f"no answer: {api_state['health_error']}", "GET /health -> 200",
                        port=cluster.deploy.api_port)])
    status = api_state["health"].status
    if status != 200:
        report([Finding(Code.API_DOWN, where, f"GET /health -> {status} {api_state['health'].text[:200]!r}",
                        "GET /health -> 200 (the engine is up)", port=cluster.deploy.api_port)])


def test_api_key(api, api_state, cluster):
    models = api_state["models"]
    if models is None:
        pytest.skip(f"the API at {api.root} is not serving: see test_health")
    env = cluster.serving.api_key_env or "serving.api_key_env"
    if models.status in (401, 403):
        sent = "a key from " + env if api.api_key else f"no key ({env} is not set)"
        report([Finding(Code.API_KEY, f"{cluster.head.name} {api.base_url}",
                        f"GET /v1/models -> {models.status} {models.error!r} with {sent}",
                        "200 with the configured key (or no key required)", env=env)])


def test_api_port_closed_on_follower(follower, cluster):
    """Only rank 0 serves: a follower that answers on the API port runs a full engine (no --headless)."""
    port = cluster.deploy.api_port
    try:
        with socket.create_connection((follower.spec.address, port), timeout=5):
            report([Finding(Code.API_ON_FOLLOWER, follower.name, f"port {port} accepts connections",
                            f"port {port} closed on every rank but 0")])
    except ConnectionRefusedError:
        pass  # closed: what a headless follower looks like
    except OSError as exc:  # filtered or unreachable: not serving either, say so
        print(f"{follower.name}:{port}: {exc} (not serving)")


def test_model_registered(served, cluster):
    reply = served.get("/models")
    where = f"{cluster.head.name} {served.base_url}/models"
    assert reply.status == 200, f"{where}: GET -> {reply.status} {reply.text[:300]!r}"
    models = parse_models(reply.text)
    d = cluster.deploy
    mine = [m for m in models if m.id == d.served_model_name]
    if not mine:
        report([Finding(Code.MODEL_NOT_SERVED, where, f"models {[m.id for m in models]}", f"{d.served_model_name!r} listed",
                        name=d.served_model_name)])
    m = mine[0]
    findings = []
    if m.root is not None and m.root != d.model_id:
        findings.append(Finding(Code.MODEL_ROOT, where, f"root {m.root!r}", f"root {d.model_id!r}", model=d.model_id))
    if m.max_model_len is None:
        print(f"{where}: the server does not report max_model_len (older vLLM); not checked")
    elif m.max_model_len != d.max_model_len:
        findings.append(Finding(Code.MAX_MODEL_LEN, where, f"max_model_len {m.max_model_len}", f"max_model_len {d.max_model_len}",
                                value=d.max_model_len))
    report(findings)


def test_unknown_model_is_404(served, cluster):
    reply = served.post("/chat/completions", {"model": "gb10check-no-such-model", "max_tokens": 1,
                                             "messages": [{"role": "user", "content": "hi"}]})
    if reply.status != 404:
        report([Finding(Code.ERROR_STATUS, f"{cluster.head.name} {served.base_url}/chat/completions",
                        f"{reply.status} {reply.error if reply.status != 200 else reply.text[:200]!r}",
                        "404 naming the unknown model", status=reply.status)])
    assert "gb10check-no-such-model" in reply.error, f"404 without naming the model: {reply.error!r}"


def test_metrics(served, cluster, measurements):
    reply = served.get("/metrics", root=True)
    where = f"{cluster.head.name} {served.root}/metrics"
    if reply.status != 200:
        report([Finding(Code.METRICS, where, f"GET -> {reply.status}", "200 with Prometheus metrics")])
    usage = [line for line in reply.text.splitlines()
             if line.startswith(("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")) and not line.startswith("#")]
    if not usage:
        report([Finding(Code.METRICS, where, "no vllm:kv_cache_usage_perc (or vllm:gpu_cache_usage_perc) sample",
                        "the KV cache usage gauge")])
    measurements("kv_cache_usage", cluster.head.name, 100 * float(usage[0].rsplit(" ", 1)[1]), "%")
