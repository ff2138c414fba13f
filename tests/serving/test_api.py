"""The API is up on rank 0 only, lets us in, and serves the configured model under the configured name."""

import socket

import pytest

from gb10check.checks import serving
from gb10check.verdict import report

pytestmark = pytest.mark.serving

UNKNOWN_MODEL = "gb10check-no-such-model"


def test_health(api, api_state, cluster):
    report(serving.judge_health(f"{cluster.head.name} {api.root}", api_state["health"], api_state["health_error"],
                                cluster.deploy.api_port))


def test_api_key(api, api_state, cluster):
    models = api_state["models"]
    if models is None:
        pytest.skip(f"the API at {api.root} is not serving: see test_health")
    report(serving.judge_api_key(f"{cluster.head.name} {api.base_url}", models, bool(api.api_key),
                                 cluster.serving.api_key_env or "serving.api_key_env"))


def test_api_port_closed_on_follower(follower, cluster):
    """Only rank 0 serves: a follower that answers on the API port runs a full engine (no --headless)."""
    port = cluster.deploy.api_port
    try:
        with socket.create_connection((follower.spec.address, port), timeout=5):
            accepts = True
    except ConnectionRefusedError:
        accepts = False  # closed: what a headless follower looks like
    except OSError as exc:  # filtered or unreachable: not serving either, say so
        print(f"{follower.name}:{port}: {exc} (not serving)")
        accepts = False
    report(serving.judge_follower_port(follower.name, port, accepts))


def test_model_registered(served, cluster):
    url = f"{served.base_url}/models"
    report(serving.judge_models(f"{cluster.head.name} {url}", url, served.get("/models"), cluster.deploy))


def test_unknown_model_is_404(served, cluster):
    reply, _ = served.chat({"model": UNKNOWN_MODEL, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]})
    report(serving.judge_unknown_model(f"{cluster.head.name} {served.base_url}/chat/completions", reply, UNKNOWN_MODEL))


def test_metrics(served, cluster, measurements):
    reply = served.get("/metrics", root=True)
    report(serving.judge_metrics(f"{cluster.head.name} {served.root}/metrics", reply))
    measurements("kv_cache_usage", cluster.head.name, 100 * serving.kv_cache_usage(reply.text), "%")
