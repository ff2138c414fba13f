"""A built wheel works: `pip wheel .` carries every file the package reads at run time, and the package runs from it.

The wheel is installed into a folder of its own and imported from there (the checkout is not on the path); the
dependencies come from the running environment (only the build backend, setuptools, comes from the registry).
"""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def tracked_package_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "gb10check"], cwd=REPO, capture_output=True, text=True, timeout=30, check=True)
    return [line for line in out.stdout.splitlines() if line and "__pycache__" not in line]


def test_wheel_carries_every_file_and_runs(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                            str(REPO)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(tmp_path.glob("gb10check-*.whl"))
    inside = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in tracked_package_files() if f not in inside]
    assert missing == [], f"files of the package that the wheel leaves out: {missing}"

    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    deps = [p for p in sys.path if p.endswith("site-packages")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *deps])}
    probe = ("import gb10check, json, sys; from gb10check import cli; from gb10check.sim import provision, standins;"
             "assert gb10check.__file__.startswith(sys.argv[1]), gb10check.__file__;"
             "assert (provision.ASSETS / 'chat_template.jinja').is_file();"
             "from gb10check.cluster import Expect, known_profiles, PROFILES_DIR;"
             "assert str(PROFILES_DIR).startswith(sys.argv[1]) and known_profiles() == ['gb10', 'h200', 'sim'], known_profiles();"
             "assert (Expect().min_tflops, Expect(profile='sim').min_tflops) == (60, 0.01);"
             "print(json.dumps({'ready': provision.ready()}))")
    run = subprocess.run([sys.executable, "-c", probe, str(site)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    listed = subprocess.run([sys.executable, "-m", "gb10check", "parse", "--list"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0 and "ibdev2netdev" in listed.stdout and "perftest" in listed.stdout, listed.stdout + listed.stderr
