"""The deploy's last step: /health answers, then one one-token completion must come back before the deployment is
called serving (gb10check/deploy/run.py, FirstAnswer). A rank hung at its first collective answers /health and never
a token: that is a failed deploy, named, every rank stopped. Seconds, no vLLM, no root: a scripted launcher and a
local HTTP server; the healthy path runs on the real TP=2 pair (test_pair_on_sim)."""

import json
import re
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from gb10check.cluster import load_cluster
from gb10check.deploy import run
from gb10check.deploy.run import DeployFailed, deploy

from .fake_openai import FakeLauncher, JsonHandler, in_background

REPO = Path(__file__).resolve().parent.parent
A, B = "thinkstationpgx-30", "thinkstationpgx-32"
READY_LOG = ("(APIServer pid=1) INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.32.0\n"
             "INFO:     Application startup complete.\n")


@pytest.fixture(autouse=True)
def quick_watch(monkeypatch):
    monkeypatch.setattr(run, "FULL_CHECK_S", 0.2)  # logs, exits and /health read every 0.2 s here (2 s live)


def quick(cluster):
    """The watchdog's poll at 0.1 s (0.5 s live): the watch's cadence is test_watches_on_their_clock's to prove."""
    watchdog = cluster.deploy.watchdog.model_copy(update={"poll_interval_s": 0.1})
    return cluster.model_copy(update={"deploy": cluster.deploy.model_copy(update={"watchdog": watchdog})})


class Launcher(FakeLauncher):
    def drop_caches(self, node: str) -> str:
        return "dropped"

    def start(self, node: str) -> str:
        return "docker compose up -d: vllm serve"

    def describe(self, node: str) -> str:
        return node


class Api:
    """/health 200; POST /v1/completions answers `completion` ("ok", "hang" until closed, or "500")."""

    def __init__(self, completion: str):
        self.release, self.asked = threading.Event(), []
        api = self

        class Handler(JsonHandler):
            def do_GET(self):
                self._json(200 if self.path == "/health" else 404, {})

            def do_POST(self):
                api.asked.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
                if completion == "hang":
                    api.release.wait(30)
                elif completion == "500":
                    self._json(500, {"error": {"message": "EngineCore encountered an issue"}})
                else:
                    self._json(200, {"choices": [{"text": " there"}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        in_background(self.httpd)

    def cluster(self):
        base = load_cluster(REPO / "cluster.example.yaml")
        nodes = [n.model_copy(update={"address": "127.0.0.1"}) if n.rank == 0 else n for n in base.nodes]
        deploy_ = base.deploy.model_copy(update={"api_port": self.httpd.server_address[1]})
        return base.model_copy(update={"nodes": nodes, "deploy": deploy_})

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def api_with(request):
    made = []

    def make(completion: str) -> Api:
        made.append(Api(completion))
        return made[-1]

    yield make
    for a in made:
        a.close()


def run_deploy(api: Api, tmp_path: Path, stall_s: float = 30, cluster=None):
    launcher = Launcher(log=lambda node, t: READY_LOG if node == A else "")
    said: list[str] = []
    try:
        rec = deploy(quick(cluster or api.cluster()), launcher, tmp_path / "deployment.json", say=said.append,
                     stall_timeout_s=stall_s)
    except DeployFailed as exc:
        return None, str(exc), said, launcher
    return rec, "", said, launcher


def test_serving_only_once_a_first_token_came_back(api_with, tmp_path):
    api = api_with("ok")
    rec, _, said, _ = run_deploy(api, tmp_path)
    assert rec.outcome == "serving" and list(rec.stages)[-2:] == ["health", "serving"]
    assert api.asked == [("/v1/completions", {"model": api.cluster().deploy.served_model_name, "prompt": "Hello",
                                              "max_tokens": 1})]
    assert said[-2].startswith("health: http://127.0.0.1:") and said[-2].endswith("asking for a first token")
    assert said[-1].startswith("serving: a first completion came back in ")


def test_health_without_a_first_token_is_a_stall_and_every_rank_stops(api_with, tmp_path):
    api = api_with("hang")
    rec, text, said, launcher = run_deploy(api, tmp_path, stall_s=1)
    assert rec is None and "startup stalled: http://127.0.0.1:" in text
    found = re.search(r"/health answers but a first one-token completion got no answer in (\d+) s; likely causes: a rank hung "
                      r"at its first collective", text)
    assert found and int(found[1]) >= 1, text  # not before the limit (how soon after: test_watches_on_their_clock)
    assert f"stopped every rank ({A}: stopped; {B}: stopped)" in text
    assert json.loads((tmp_path / "deployment.json").read_text())["outcome"] == "failed"


def test_a_first_completion_that_errors_fails_the_deploy_with_the_servers_words(api_with, tmp_path):
    rec, text, _, _ = run_deploy(api_with("500"), tmp_path)
    assert rec is None and re.search(r"answers but the first completion failed after \d+ s \(HTTP 500: ", text), text
    assert "EngineCore encountered an issue" in text and "every rank's log (docker logs) says why" in text


def test_the_readiness_probe_and_first_token_go_to_serving_base_url(api_with, tmp_path):
    """serving.base_url names where the API is served (a proxy, another port): /health and the first token go there,
    not to rank 0's address and deploy.api_port."""
    api = api_with("ok")
    base = load_cluster(REPO / "cluster.example.yaml")
    served = f"http://127.0.0.1:{api.httpd.server_address[1]}/v1"
    cluster = base.model_copy(update={"serving": base.serving.model_copy(update={"base_url": served})})
    assert not served.startswith(f"http://{cluster.head.address}:{cluster.deploy.api_port}")
    rec, text, said, _ = run_deploy(api, tmp_path, cluster=cluster)
    assert rec is not None and rec.outcome == "serving", text
    assert said[-2].startswith(f"health: http://127.0.0.1:{api.httpd.server_address[1]}/health answers")
    assert [path for path, _ in api.asked] == ["/v1/completions"]
