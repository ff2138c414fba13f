"""The order of the vLLM chain (selftests/conftest.py): under xdist, the tests of one-rank servers
(`pytest.mark.vllm(ranks=1)`) come first, each module's tests still together and in their order; without xdist, the
files' order. Read from a real collection of the self-tests."""

import os

from .inner_pytest import run_pytest


def vllm_chain(worker: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    if worker:
        env["PYTEST_XDIST_WORKER"] = worker
    out = run_pytest(["selftests", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "vllm"], env=env, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return [line for line in out.stdout.splitlines() if line.startswith("selftests/")]


def modules(ids: list[str]) -> list[str]:
    """Each module once, in the order its first test comes."""
    return list(dict.fromkeys(i.split("::")[0] for i in ids))


def test_the_one_rank_server_goes_first_under_xdist_and_modules_stay_whole():
    chain = vllm_chain("gw7")
    in_file_order = vllm_chain(None)
    assert sorted(chain) == sorted(in_file_order) and len(chain) > 10
    assert modules(chain)[0] == "selftests/test_serving_on_sim.py"
    assert modules(in_file_order) == sorted(modules(in_file_order))  # without xdist: the files' order
    for module in modules(chain):  # each module whole, its tests in their own order
        mine = [i for i in chain if i.startswith(module + "::")]
        first = chain.index(mine[0])
        assert chain[first:first + len(mine)] == mine
        assert mine == [i for i in in_file_order if i.startswith(module + "::")]
    assert modules(chain)[1:] == [m for m in modules(in_file_order) if m != "selftests/test_serving_on_sim.py"]
