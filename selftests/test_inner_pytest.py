"""The self-tests' inner pytest runs (selftests/inner_pytest.py): a run forked from the preloaded server gives what a
fresh `python -m pytest` gives, keeps nothing from the run before, and is killed at its timeout."""

import os
import re
import subprocess
import sys

import pytest
import yaml

from gb10check.gather import recording
from gb10check.sim import recordings

from .inner_pytest import REPO, run_pytest, runs_this_checkout

STATE = """
import os, sys

def test_starts_clean():
    assert "LEFT_BY_THE_RUN_BEFORE" not in os.environ
    assert "left_by_the_run_before" not in sys.modules
    assert os.environ["ASKED_FOR"] == os.environ["EXPECT"]
    assert os.getcwd() == os.environ["EXPECT_CWD"]
    os.environ["LEFT_BY_THE_RUN_BEFORE"] = "1"
    sys.modules["left_by_the_run_before"] = sys
"""


def forked(cwd, env) -> bool:
    assert runs_this_checkout(cwd, env)  # else the test would prove the fresh interpreter's path
    return True


def test_a_replay_forked_gives_what_a_fresh_interpreter_gives(tmp_path):
    name = "bf16-checkpoint"
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(recording.read(recordings.path_of(name))["cluster"], sort_keys=False))
    args = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-rA", f"--cluster={cluster}",
            f"--facts-from={recordings.path_of(name)}", *recordings.selection(name)]
    assert forked(REPO, dict(os.environ))
    inner = run_pytest(args, timeout=120)
    fresh = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    timing = re.compile(r" in \d+\.\d+s( \(\d+:\d+:\d+\))?")
    assert inner.returncode == fresh.returncode == 1
    assert timing.sub("", inner.stdout) == timing.sub("", fresh.stdout)
    assert "[bf16-checkpoint]" in inner.stdout or "FAILED" in inner.stdout


def test_each_run_starts_from_the_server_not_from_the_run_before(tmp_path):
    (tmp_path / "test_state.py").write_text(STATE)
    for asked in ("first", "second"):
        env = {**os.environ, "PYTHONPATH": str(REPO), "ASKED_FOR": asked, "EXPECT": asked, "EXPECT_CWD": str(tmp_path)}
        assert forked(tmp_path, env)
        run = run_pytest(["-p", "no:cacheprovider", "-q", "test_state.py"], cwd=tmp_path, env=env, timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "1 passed" in run.stdout


def test_a_run_past_its_timeout_is_killed_and_raises(tmp_path):
    (tmp_path / "test_slow.py").write_text("import time\n\ndef test_slow():\n    print('started', flush=True)\n"
                                           "    time.sleep(120)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    assert forked(tmp_path, env)
    with pytest.raises(subprocess.TimeoutExpired):
        run_pytest(["-p", "no:cacheprovider", "-s", "test_slow.py"], cwd=tmp_path, env=env, timeout=1)
    left = subprocess.run(["pgrep", "-f", "test_slow.py"], capture_output=True, text=True)
    assert str(tmp_path) not in left.stdout


def test_another_checkout_runs_in_a_fresh_interpreter(tmp_path):
    (tmp_path / "gb10check").mkdir()
    assert not runs_this_checkout(tmp_path, {"PYTHONPATH": str(REPO)})  # its own gb10check comes first
    assert not runs_this_checkout(tmp_path / "gb10check", {})  # nothing names this checkout
    assert runs_this_checkout(tmp_path / "gb10check", {"PYTHONPATH": str(REPO)})
    assert runs_this_checkout(REPO, {})
