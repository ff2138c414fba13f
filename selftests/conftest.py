import ast
import functools
import os
import signal
import threading
from pathlib import Path

import pytest

from .machine_lock import MachineShare, take_machine_lock

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


@pytest.fixture(scope="session")
def wheel_env(tmp_path_factory):
    """The built wheel installed in a fresh environment at the lowest versions, once a run (selftests/wheelenv.py)."""
    from .wheelenv import shared

    return shared(tmp_path_factory)


@pytest.fixture(scope="session", autouse=True)
def wheel_env_built_ahead(request, tmp_path_factory):
    """A run with a test that needs the wheel's environment starts building it at its first test, in the background,
    so that no worker spends the end of the run on it alone. The build holds its own share of the machine (a speed
    measurement waits for it as for a test); a build that fails is left to the test, which builds again and says why."""
    if any("wheel_env" in getattr(item, "fixturenames", ()) for item in request.session.items):
        tmp_path_factory.getbasetemp()  # made here, once: made by two threads at once, it is two folders and two builds
        threading.Thread(target=_build_ahead, args=(tmp_path_factory,), daemon=True, name="wheel-env-ahead").start()


def _build_ahead(tmp_path_factory) -> None:
    from .wheelenv import shared

    share = MachineShare()
    try:
        share.share()
        shared(tmp_path_factory, wait=False)
    except BaseException:  # noqa: BLE001 - the test that needs it builds it again and reports the failure
        pass
    finally:
        share.release()


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
# its own namespaces, links, cgroups, state folder and management subnet 198.18.N). The sim tests form two scopes, each
# run in order on one worker, while the other tests fill in around them: the tests that run a real vLLM (marked
# `vllm`: the module's `pytestmark` or the test's own decorator) and the rest of the sim tests. Two vLLMs never run at
# once: on two shared cores each decodes at under half its speed alone, below the serving checks' decode floor, so a
# serving proof would measure its neighbour. Every other figure the checks compare between nodes (TFLOP/s, disk and
# link rates) comes from the stand-ins' state, not from the shared machine.
# xdist's own --dist loadgroup cannot do it with this pytest (it renames node ids, which pytest 9.2 no longer lets it:
# pytest-xdist issue 1386), so the selftests bring their scheduler: xdist's loadscope with those two scopes and one per
# other test; both sim scopes are bigger than any other, so loadscope hands them out first, to gw0 and gw1. The
# controller sees node ids only, never markers: it reads the sim and vllm marks from the module's source (the module's
# `pytestmark`, a test function's decorators), and collection refuses them put anywhere else.
# A second self-test run beside the first on one machine starts from another instance: GB10CHECK_SIM_INSTANCE=N set for
# the run gives its workers N, N+1, ... (modulo 10).
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and _WORKER[2:].isdigit():
    _BASE = os.environ.get("GB10CHECK_SIM_INSTANCE") or "0"
    if len(_BASE) == 1 and _BASE.isdigit():  # anything else stays as set, for sim.topology.instance() to refuse by name
        os.environ["GB10CHECK_SIM_INSTANCE"] = str((int(_BASE) + int(_WORKER[2:])) % 10)  # gw0, gw1: the sim scopes (above)


# Two self-test runs on one machine (a CI run and a developer's, say) keep their vLLMs apart too: the first test marked
# vllm in a process takes this machine-wide lock and holds it to the end of the process (the kernel releases it when
# the process ends, however it ends), so a second run's chain waits for the first one's to finish.
# Every self-test of every run holds the machine share while it runs (setup to teardown); a measurement against a speed
# floor takes the machine alone (the `machine_alone` fixture), so what it measures is not a neighbour's load. The vLLM
# lock is taken before the share: a test waiting for another run's vLLM chain holds no share that chain may wait for.
VLLM_LOCK = Path("/run/gb10check-selftests-vllm.lock")
VLLM_LOCK_WAIT_S = 3600  # longer than a whole chain of vLLM tests on a busy machine
_vllm_lock_fd: int | None = None
MACHINE_SHARE = MachineShare()


def hold_the_machines_vllm_lock() -> None:
    global _vllm_lock_fd
    if _vllm_lock_fd is None:
        _vllm_lock_fd = take_machine_lock(VLLM_LOCK, VLLM_LOCK_WAIT_S)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before any fixture of a vllm test (a module's pair may start one) is set up."""
    if item.get_closest_marker("vllm"):
        hold_the_machines_vllm_lock()
    MACHINE_SHARE.share()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        MACHINE_SHARE.release()


@pytest.fixture
def machine_alone():
    """`with machine_alone("what"):` the block runs with no other self-test running on this machine."""
    return MACHINE_SHARE.alone


def _names_mark(node, mark: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == mark for n in ast.walk(node))


@functools.cache
def module_marks(path: str) -> tuple[frozenset, dict]:
    """(the marks of the module's `pytestmark`, {test function: its sim/vllm marks}) read from its source."""
    tree = ast.parse(Path(path).read_text())
    module, tests = set(), {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            module = {m for m in ("sim", "vllm") if _names_mark(node.value, m)}
        elif isinstance(node, ast.FunctionDef):
            tests[node.name] = frozenset(m for m in ("sim", "vllm") if any(_names_mark(d, m) for d in node.decorator_list))
    return frozenset(module), tests


def is_sim_module(path: str) -> bool:
    return "sim" in module_marks(path)[0]


def runs_vllm(path: str, test: str) -> bool:
    module, tests = module_marks(path)
    return "vllm" in module or "vllm" in tests.get(test.split("[")[0], ())


def pytest_configure(config):
    config.addinivalue_line("markers", "vllm(ranks=2): a simulated test that runs a real vLLM (of `ranks` ranks): never "
                                       "beside another (selftests/conftest.py runs them all on one xdist worker, the "
                                       "one-rank servers first)")
    # A crashed worker fails the run there and then: its replacement would boot another simulated cluster beside the
    # running ones and take over scopes half-run (xdist's default restarts up to 4 workers per process).
    if getattr(config.option, "maxworkerrestart", "unset") is None:
        config.option.maxworkerrestart = "0"


def pytest_testnodedown(node, error):
    """A worker that died says how (its exit status or the signal that ended it): xdist says only "Not properly
    terminated"."""
    if not error:
        return
    popen = getattr(getattr(node.gateway, "_io", None), "popen", None)
    try:
        rc = popen.wait(timeout=10) if popen else None
    except Exception as exc:  # still running or not ours to wait for: say so rather than guess
        rc = f"unknown ({type(exc).__name__})"
    how = (f"killed by signal {-rc} ({signal.Signals(-rc).name})" if isinstance(rc, int) and rc < 0 and -rc in
           signal.valid_signals() else f"exit status {rc}")
    reporter = node.config.pluginmanager.get_plugin("terminalreporter")
    if reporter:
        reporter.write_line(f"[{node.gateway.id}] worker process ended: {how}")


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class TwoSimScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module, _, test = nodeid.partition("::")
            path = str(config.rootpath / module)
            if not is_sim_module(path):
                return nodeid
            return "sim-vllm" if runs_vllm(path, test) else "sim"

    return TwoSimScopes(config, log)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if bool(item.get_closest_marker("sim")) != is_sim_module(str(item.path)):
            raise pytest.UsageError(f"{item.nodeid}: mark a sim test through its module's `pytestmark = pytest.mark.sim` "
                                    "(the xdist scheduler in selftests/conftest.py reads it from there), not per test")
        if bool(item.get_closest_marker("vllm")) != (is_sim_module(str(item.path)) and runs_vllm(str(item.path), item.name)):
            raise pytest.UsageError(f"{item.nodeid}: mark a test that runs a real vLLM with `pytest.mark.vllm` in a sim "
                                    "module's `pytestmark` or on the test function itself (the xdist scheduler in "
                                    "selftests/conftest.py reads it from there)")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_one_rank_servers_first(items)


def vllm_ranks(item) -> int:
    """The ranks of the vLLM a test runs (`pytest.mark.vllm(ranks=1)`: the head's TP=1 server; else the pair's two)."""
    return item.get_closest_marker("vllm").kwargs.get("ranks", 2)


def run_one_rank_servers_first(items) -> None:
    """The vLLM chain, on one worker, runs the tests of one-rank servers first, in their modules' order: a server of one
    rank takes one core, and the other worker's tests have the other; the pair's two ranks come later, and have the
    whole machine once the other worker has run out of tests. Only the vLLM tests move, among their own places (a module
    stays whole: its tests all go to that worker)."""
    places = [k for k, item in enumerate(items) if item.get_closest_marker("vllm")]
    chain = sorted((items[k] for k in places), key=vllm_ranks)  # stable: each module's tests in their order
    for k, item in zip(places, chain):
        items[k] = item
