"""The package as a new user gets it: the wheel built from this tree, installed into a fresh virtual environment that
already holds the lowest versions pyproject.toml allows (.ci/lowest.txt: pytest 8.4 ...) and another pytest project of
its own. Packages come through pip's cache; nothing of the clone is on that environment's path. A self-test run builds
it once (`shared`), whichever worker asks first; every test that uses it only reads it."""

import fcntl
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOWEST = REPO / ".ci" / "lowest.txt"


def pip_out(proc: subprocess.CompletedProcess) -> str:
    return "\n".join(l for l in (proc.stdout + proc.stderr).splitlines() if not l.startswith("WARNING: Location"))[-3000:]


def build_wheel(dest: Path) -> Path:
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dest), str(REPO)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, pip_out(built)
    return next(dest.glob("gb10check-*.whl"))


def lowest() -> dict[str, str]:
    """.ci/lowest.txt as name -> version."""
    pins = [l.split("#")[0].strip() for l in LOWEST.read_text().splitlines()]
    return dict(p.lower().split("==") for p in pins if p)


def fresh_env(root: Path) -> Path:
    """A new virtual environment with the lowest versions installed; its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True, timeout=120)
    # --no-compile: Python compiles what a run imports as it imports it; most of these modules no run here reads
    floors = subprocess.run([str(root / "bin" / "pip"), "install", "-q", "--no-compile", "-r", str(LOWEST)],
                            capture_output=True, text=True, timeout=600)
    assert floors.returncode == 0, pip_out(floors)
    return root / "bin"


def install(bin_dir: Path, wheel: Path) -> None:
    """`pip install WHEEL` as a user types it: the dependencies the environment already satisfies stay as they are."""
    done = subprocess.run([str(bin_dir / "pip"), "install", "-q", str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, pip_out(done)


def versions(bin_dir: Path) -> dict[str, str]:
    frozen = subprocess.run([str(bin_dir / "pip"), "freeze"], capture_output=True, text=True, timeout=120, check=True)
    return dict(l.lower().replace("_", "-").split("==") for l in frozen.stdout.splitlines() if "==" in l)


# Another project, unrelated to gb10check: an option named --cluster and a fixture named node of its own.
THEIR_CONFTEST = '''import pytest


def pytest_addoption(parser):
    parser.addoption("--cluster", default="local", help="the cluster this project deploys to")


@pytest.fixture
def node(request):
    return "node-of-" + request.config.getoption("--cluster")
'''
THEIR_TESTS = '''import pytest


@pytest.mark.parametrize("path", ["/a", "/b"])
def test_node_is_ours(node, path):
    assert node == "node-of-staging" and path.startswith("/")


def test_report_dir_is_not_an_option(pytestconfig):
    assert not hasattr(pytestconfig.option, "report_dir")
'''


@dataclass(frozen=True)
class WheelEnv:
    root: Path
    wheel: Path
    bin_dir: Path
    theirs: Path  # the other project's folder
    their_env: dict  # the environment its runs get: an exported GB10CHECK_CLUSTER naming no file, no PYTEST_*
    their_run_before: dict  # its run before the wheel was installed: returncode, stdout, stderr

    def their_run(self) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin_dir / "python"), "-m", "pytest", "-p", "no:cacheprovider", "--cluster", "staging"],
                              cwd=self.theirs, capture_output=True, text=True, timeout=300, env=self.their_env)


def shared(tmp_path_factory, wait: bool = True) -> WheelEnv | None:
    """The run's one environment: built by the first worker to ask (the others wait on its lock), then only read.
    With wait=False, None at once when another is building it."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "wheel-env"  # the run's own folder
    root.mkdir(exist_ok=True)
    built = root / "built.json"
    with open(root / "lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))  # released when the file closes
        except BlockingIOError:
            return None
        if not built.exists():
            built.write_text(json.dumps(_build(root)))
    facts = json.loads(built.read_text())
    return WheelEnv(root, Path(facts["wheel"]), root / "venv" / "bin", root / "their-project", facts["their_env"],
                    facts["their_run_before"])


def _build(root: Path) -> dict:
    wheel = build_wheel(root / "dist")
    bin_dir = fresh_env(root / "venv")
    theirs = root / "their-project"
    theirs.mkdir()
    (theirs / "conftest.py").write_text(THEIR_CONFTEST)
    (theirs / "test_theirs.py").write_text(THEIR_TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GB10CHECK_"))}
    env["GB10CHECK_CLUSTER"] = str(root / "no-such-cluster.yaml")  # exported for gb10check, read by no one here
    before = WheelEnv(root, wheel, bin_dir, theirs, env, {}).their_run()
    install(bin_dir, wheel)
    return {"wheel": str(wheel), "their_env": env,
            "their_run_before": {"returncode": before.returncode, "stdout": before.stdout, "stderr": before.stderr}}
