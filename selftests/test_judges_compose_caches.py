"""Compose lint of the Hub and the compile caches (checks/compose.py: judge_offline, judge_caches): our rendered stack
passes; the field report's own compose (no HF_HUB_OFFLINE, only the Hugging Face cache mounted) fails the first and
warns for each cache; the forms compose files use for volumes and the compilers' own variables are read right."""

import yaml

from gb10check import compose as stack
from gb10check.checks import compose
from gb10check.remedies import Code

from .test_compose_lint import CLUSTER, our_env, seed_compose, seed_env

A, B = "thinkstationpgx-30", "thinkstationpgx-32"


def service(text: str, env_for, name: str = B) -> dict:
    return stack.interpolate(stack.vllm_service(yaml.safe_load(text))[1], env_for(CLUSTER.node(name)))


def findings(svc: dict, node: str = B, heads=None):
    return (compose.judge_offline(node, "vllm", compose.service_environment(svc))
            + compose.judge_caches(node, "vllm", compose.cache_mounts(svc), A if heads else None, heads))


def codes(found):
    return [(f.code, f.where, f.warning) for f in found]


def test_the_rendered_stack_is_offline_with_its_caches_on_the_host():
    svc = service(stack.render(CLUSTER), our_env)
    assert compose.cache_mounts(svc) == {
        "vLLM": ("/root/.cache/vllm", "/home/lenovo/vllm/cache/vllm"),
        "flashinfer": ("/root/.cache/flashinfer", "/home/lenovo/vllm/cache/flashinfer"),
        "Triton": ("/root/.triton/cache", "/home/lenovo/vllm/cache/triton/cache")}
    heads = compose.cache_mounts(service(stack.render(CLUSTER), our_env, A))
    assert findings(svc, heads=heads) == []
    moved = CLUSTER.model_copy(update={"deploy": CLUSTER.deploy.model_copy(update={"cache_dir": "/data/jit"})})
    assert compose.cache_mounts(service(stack.render(moved), our_env))["Triton"][1] == "/data/jit/triton/cache"


def test_the_field_reports_compose_is_online_and_compiles_at_every_start():
    found = findings(service(seed_compose(), seed_env))
    assert codes(found) == [(Code.COMPOSE_NO_OFFLINE, f"{B}:vllm", False)] + [(Code.COMPOSE_CACHE_NOT_MOUNTED, f"{B}:vllm", True)] * 3
    assert found[0].text == (
        f"[compose-no-offline] {B}:vllm: saw no HF_HUB_OFFLINE in the service's environment; expected HF_HUB_OFFLINE=1 "
        f"(the model is complete on every node)\n  fix: set HF_HUB_OFFLINE: \"1\" in the compose environment on {B} "
        "(scripts/compose-render writes it): the model is complete on every node; without it each rank asks the Hub at "
        "start-up and a follower downloads the model itself, or a newer revision of it (spark-vllm-docker issue 262)")
    assert [f.seen for f in found[1:]] == [
        "no host mount holds the vLLM cache /root/.cache/vllm (compiled again at every start)",
        "no host mount holds the flashinfer cache /root/.cache/flashinfer (compiled again at every start)",
        "no host mount holds the Triton cache /root/.triton/cache (compiled again at every start)"]
    assert found[3].text.endswith("otherwise every start compiles the Triton kernels again, and a JIT compile during "
                                  "inference has killed an engine")


def test_offline_values():
    for value in ("1", "ON", "yes", "True"):
        assert compose.judge_offline(B, "vllm", {"HF_HUB_OFFLINE": value}) == []
    [f] = compose.judge_offline(B, "vllm", {"HF_HUB_OFFLINE": "0"})
    assert f.seen == "HF_HUB_OFFLINE=0"
    # The list form of `environment:`.
    assert compose.service_environment({"environment": ["HF_HUB_OFFLINE=1", "A=b=c"]}) == {"HF_HUB_OFFLINE": "1", "A": "b=c"}


def test_volume_forms_and_the_compilers_variables():
    svc = {"volumes": [{"type": "bind", "source": "/srv/cache", "target": "/root/.cache"},  # holds vLLM and flashinfer
                       {"type": "volume", "source": "triton", "target": "/cache/triton"},  # a named volume
                       {"type": "tmpfs", "target": "/tmp"}, "/scratch"],  # neither outlives the container
           "environment": {"TRITON_CACHE_DIR": "/cache/triton"}}
    assert compose.cache_mounts(svc) == {"vLLM": ("/root/.cache/vllm", "/srv/cache/vllm"),
                                         "flashinfer": ("/root/.cache/flashinfer", "/srv/cache/flashinfer"),
                                         "Triton": ("/cache/triton", "triton")}
    home = {"volumes": ["/home/me/c:/home/me/.cache:rw"], "environment": {"HOME": "/home/me"}}
    assert compose.cache_mounts(home)["flashinfer"] == ("/home/me/.cache/flashinfer", "/home/me/c/flashinfer")
    assert compose.cache_mounts(home)["Triton"] == ("/home/me/.triton/cache", None)
    assert compose.cache_mounts({"volumes": ["/:/"]})["vLLM"][1] is None  # the host's root is no cache


def test_a_cache_from_another_folder_than_on_rank_0_warns():
    heads = {"vLLM": ("/root/.cache/vllm", "/home/lenovo/vllm/cache/vllm")}
    mine = {"vLLM": ("/root/.cache/vllm", "/mnt/other/vllm")}
    [f] = compose.judge_caches(B, "vllm", mine, A, heads)
    assert codes([f]) == [(Code.COMPOSE_CACHE_NOT_MOUNTED, f"{B}:vllm", True)]
    assert f.text.startswith(f"[compose-cache-not-mounted] {B}:vllm: saw the vLLM cache /root/.cache/vllm from /mnt/other/vllm; "
                             f"expected from /home/lenovo/vllm/cache/vllm as on {A}\n  fix: mount /root/.cache/vllm from one host "
                             "folder, the same on every node")
