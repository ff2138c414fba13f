import ast
import functools
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The suite runs the self-tests start keep no history in the user's data folder (shared by every self-test run); the
# history's own tests name their file with --history.
os.environ["GB10CHECK_HISTORY"] = "off"
OURS = Path(__file__).resolve().parent / "captures"  # outputs our own runs produced (sim nodes, a real GPU)
OURS_PREFIX = "ours/"


def captures_dir() -> Path:
    """The public captures (../shared/captures), read in place, never copied into the repo."""
    return Path(os.environ.get("GB10CHECK_CAPTURES", REPO.parent / "shared" / "captures"))


def _missing(what: str) -> None:
    # Offline, a clean clone without ../shared still runs our own captures; in CI the public ones must be there.
    message = f"{what} (set GB10CHECK_CAPTURES to the folder of the public captures)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def captures() -> Path:
    path = captures_dir()
    if not path.is_dir():
        _missing(f"captured outputs not found at {path}")
    return path


def capture_path(name: str) -> Path:
    return OURS / name[len(OURS_PREFIX):] if name.startswith(OURS_PREFIX) else captures_dir() / name


def read_capture(name: str) -> str:
    path = capture_path(name)
    if not path.exists():
        if name.startswith(OURS_PREFIX):
            pytest.fail(f"our capture {path} is missing from the repository", pytrace=False)
        _missing(f"capture {name} not found under {captures_dir()}")
    return path.read_bytes().decode("utf-8")  # as captured: CR and CRLF are the front end's to handle, not Python's



@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A self-test stopped by the suite's own "could not check" (NotChecked, a failure to pytest) says so: its bed could
    not be reached or read, so it proved nothing."""
    from gb10check.verdict import NotChecked

    rep = yield
    if call.excinfo is not None and call.excinfo.errisinstance(NotChecked):
        rep.outcome = "failed"
        rep.longrepr = f"the self-test's own bed could not be checked, so it proved nothing: {call.excinfo.value.msg}"
    return rep


# Two simulated clusters at a time, one per xdist worker: worker gwN brings its own up as instance N (topology.instance:
# its own namespaces, links, cgroups, state folder and management subnet 198.18.N). The sim modules form two scopes,
# each run in order on one worker, while the other tests fill in around them: the modules that run a real vLLM
# (SIM_VLLM: the TP=2 deployments and the TP=1 serving scenarios) and the rest (the checks' scenarios, the sim's own
# tests). Never two vLLMs at once: on two cores they starve each other (the TP=1 server decoded 4.6 tok/s beside the
# TP=2 pair, about 18 alone, and failed the healthy run's 5 tok/s floor). The checks' one measurement that a neighbour
# could skew, the compute spread between nodes, is taken on every node at once (gather.Fleet.at_once), each node on a
# compute budget (0.4 CPU: sim/scenarios.NODE_CPU_QUOTA_US), and the live scenario that takes it (healthy; the compute
# faults are judged from their recordings) runs last on the vLLM worker (SIM_VLLM, SIM_LAST): after its vLLMs, when the
# other worker has mostly finished.
# xdist's own --dist loadgroup cannot do it with this pytest (it renames node ids, which pytest 9.2 no longer lets it:
# pytest-xdist issue 1386), so the selftests bring their scheduler: xdist's loadscope with those two scopes and one per
# other test; both sim scopes are bigger than any other, so loadscope hands them out first, to gw0 and gw1. The
# controller sees node ids only, never markers: a sim module is one whose module-level pytestmark names mark.sim, read
# from its source, and collection refuses a sim mark put anywhere else.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and _WORKER[2:].isdigit():
    os.environ["GB10CHECK_SIM_INSTANCE"] = str(int(_WORKER[2:]) % 10)  # gw0 and gw1 get the sim scopes (see above)

# Modules, module::test or module::test[param]: the Ray module's checks and faults start Ray, no vLLM; the checks' live
# scenario that judges the compute spread between nodes runs here too, away from a running vLLM (the healthy pair passed
# 50% with a vLLM busy beside one node's turn; cpu-throttled's rank 0, slowed by a vLLM beside it, came within 50% of
# its throttled rank 1; gpu-stuck-low-power, beside one, failed the spread it does not prove).
SIM_VLLM = ("test_pair_on_sim.py", "test_deploy_run.py", "test_serving_on_sim.py",
            "test_ray_on_sim.py::test_deploy_forms_the_ray_cluster_and_starts_vllm_through_ray",
            "test_checks_on_sim.py::test_scenario_fails_exactly_its_checks[healthy]")


@functools.cache
def is_sim_module(path: str) -> bool:
    tree = ast.parse(Path(path).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return any(isinstance(n, ast.Attribute) and n.attr == "sim" for n in ast.walk(node.value))
    return False


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class TwoSimScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module, _, test = nodeid.partition("::")
            if not is_sim_module(str(config.rootpath / module)):
                return nodeid
            name = Path(module).name
            return "sim-vllm" if {name, f"{name}::{test.split('[')[0]}", f"{name}::{test}"} & set(SIM_VLLM) else "sim"

    return TwoSimScopes(config, log)


# Within a scope, tests run in collection order: the sim's own quick modules first (a broken sim shows early), then the
# rest in file order, the compute-spread scenarios last.
SIM_FIRST = ("test_sim.py", "test_deploy_ssh_keys.py", "test_deploy_sync.py", "test_deploy_stack.py", "test_sim_systemd.py")
SIM_LAST = tuple(entry for entry in SIM_VLLM if entry.startswith("test_checks_on_sim.py::"))  # the compute spread


def pytest_collection_modifyitems(config, items):
    for item in items:
        if bool(item.get_closest_marker("sim")) != is_sim_module(str(item.path)):
            raise pytest.UsageError(f"{item.nodeid}: mark a sim test through its module's `pytestmark = pytest.mark.sim` "
                                    "(the xdist scheduler in selftests/conftest.py reads it from there), not per test")
    first = {name: i for i, name in enumerate(SIM_FIRST)}

    def place(item) -> int:
        if f"{item.path.name}::{item.name}" in SIM_LAST:
            return len(first) + 1
        return first.get(item.path.name, len(first))

    items.sort(key=place)  # stable: every module's own order kept
