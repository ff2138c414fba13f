"""The suite as users run it: pytest in a subprocess, on the example file and on broken ones."""

import subprocess
from pathlib import Path

import yaml

from .inner_pytest import run_pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_run(*args: str, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_pytest(["-p", "no:cacheprovider", *args], cwd=cwd, env=env, timeout=120)


def test_collect_preflight_on_the_example():
    run = pytest_run("-m", "preflight", "--collect-only", "-q", "--cluster", "cluster.example.yaml")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tests/preflight/test_identity.py::test_ssh_user[thinkstationpgx-30]" in run.stdout
    assert "tests/preflight/test_identity.py::test_ssh_user[thinkstationpgx-32]" in run.stdout


def test_malformed_cluster_stops_in_one_line(tmp_path):
    data = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
    data["nodes"][1]["rank"] = 0
    bad = tmp_path / "cluster.yaml"
    bad.write_text(yaml.safe_dump(data))
    run = pytest_run("-m", "preflight", "--collect-only", f"--cluster={bad}")
    assert run.returncode == 4
    lines = [l for l in (run.stdout + run.stderr).splitlines() if "invalid cluster file" in l]
    assert lines == [f"ERROR: invalid cluster file: {bad}: ranks must be 0..1, each exactly once; got [0, 0]"], run.stdout + run.stderr


def test_missing_cluster_file_says_how_to_make_one(tmp_path):
    run = pytest_run("--collect-only", "-q", "-c", str(REPO / "pytest.ini"), "--rootdir", str(REPO), str(REPO / "tests"),
                     cwd=tmp_path)
    assert run.returncode == 4
    assert "no cluster file: pass --cluster PATH, set GB10CHECK_CLUSTER, or write a commented cluster.yaml with `gb10check init`" in run.stdout + run.stderr


def test_every_check_carries_its_suite_marker():
    for suite in ("preflight", "network", "serving", "soak"):
        for path in (REPO / "tests" / suite).glob("test_*.py"):
            assert f"pytest.mark.{suite}" in path.read_text(), f"{path} lacks pytestmark = pytest.mark.{suite}"


def test_soak_is_its_own_stage_never_part_of_serving():
    serving = pytest_run("-m", "serving", "--collect-only", "-q", "--cluster=cluster.example.yaml")
    soak = pytest_run("-m", "soak", "--collect-only", "-q", "--cluster=cluster.example.yaml")
    assert serving.returncode == soak.returncode == 0, serving.stdout + soak.stdout
    assert "tests/soak/" not in serving.stdout
    assert [l for l in soak.stdout.splitlines() if l.startswith("tests/")] == [
        "tests/soak/test_depth_sweep.py::test_depth_sweep", "tests/soak/test_long_context.py::test_long_context",
        "tests/soak/test_sustained_load.py::test_sustained_load"]
    from gb10check.plugin import stage_of

    assert stage_of({"soak": 1}) == "soak" and stage_of({"serving": 1}) == "serving"


def test_cluster_path_with_a_space_outside_the_suite_is_explained(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text((REPO / "cluster.example.yaml").read_text())
    run = pytest_run("-m", "preflight", "--collect-only", "--cluster", str(path))
    assert run.returncode == 4
    assert f"write --cluster={path} (with '=')" in run.stdout + run.stderr


def test_plugin_stays_out_of_unrelated_tests(tmp_path):
    """The plugin is installed for the whole environment: a user's own `node` fixture and `path` parameter run untouched."""
    (tmp_path / "test_mine.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef node():\n    return 'mine'\n\n\n"
        "@pytest.mark.parametrize('path', ['/a', '/b'])\ndef test_path(path, node):\n    assert path.startswith('/') and node == 'mine'\n\n\n"
        "def test_cluster_is_theirs_to_name(request):\n    assert 'cluster' not in request.fixturenames\n")
    run = pytest_run("-p", "gb10check.plugin", str(tmp_path), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout
