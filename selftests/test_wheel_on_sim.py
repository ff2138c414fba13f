"""The wheel against the simulated pair, as a new user runs it: in a fresh environment that holds the lowest versions
pyproject.toml allows (pytest 8.4 ...), from a folder outside the clone, `gb10check init` writes the cluster file, the
user fills in their cluster (here: the simulated pair's own file), and `gb10check check preflight` gives the same
outcome for every check, under the same ids, as the same stage run from the clone."""

import os
import subprocess

import pytest

from gb10check.sim import control

from .simbed import REPO, junit_outcomes, require_sim, run_suite

pytestmark = pytest.mark.sim

# Both runs leave out the compute spread between the nodes: it compares two CPU matmuls, and the self-tests measure it
# only on the vLLM worker's schedule (selftests/conftest.py); here the other worker's load could move it between runs.
SELECTION = ["-k", "not test_gpu_compute"]


@pytest.fixture(scope="module")
def pair():
    require_sim()
    yield control.up(2, quiet=True)
    control.down(quiet=True)


def test_wheel_check_preflight_outside_the_clone_matches_the_clone(pair, wheel_env, tmp_path):
    bin_dir = wheel_env.bin_dir  # the run's one environment with the wheel (selftests/wheelenv.py)
    user = tmp_path / "user"
    user.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    init = subprocess.run([str(bin_dir / "gb10check"), "init"], cwd=user, capture_output=True, text=True, timeout=120, env=env)
    assert init.returncode == 0 and (user / "cluster.yaml").is_file(), init.stdout + init.stderr
    (user / "cluster.yaml").write_text(pair.read_text())  # the user's edit: their cluster, here the simulated pair

    report = user / "junit.xml"
    wheel = subprocess.run([str(bin_dir / "gb10check"), "check", "preflight", "--cluster=cluster.yaml", "-q",
                            f"--junitxml={report}", "-o", "junit_family=xunit1", *SELECTION],
                           cwd=user, capture_output=True, text=True, timeout=600, env=env)
    assert wheel.returncode in (0, 1), wheel.stdout[-3000:] + wheel.stderr[-2000:]
    from_wheel = junit_outcomes(report)

    from_clone = run_suite(pair, "-m", "preflight", *SELECTION, timeout=600).results
    assert REPO not in user.parents
    assert len(from_clone) > 20, sorted(from_clone)
    differ = {t: (from_clone.get(t, "absent"), from_wheel.get(t, "absent")) for t in set(from_clone) | set(from_wheel)
              if getattr(from_clone.get(t), "outcome", None) != getattr(from_wheel.get(t), "outcome", None)}
    assert differ == {}, f"outcomes that differ between the clone and the wheel (clone, wheel): {differ}"
    failed = {t: o.message[:300] for t, o in from_wheel.items() if o.outcome in ("failed", "error", "not checked")}
    assert failed == {}, f"the healthy pair's preflight failed from the wheel: {failed}"
