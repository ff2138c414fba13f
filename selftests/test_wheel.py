"""The package as a new user installs it: the wheel carries the suite (tests/ as gb10check.tests, pytest.ini,
cluster.example.yaml) and every file the package reads, and in a fresh environment that already holds pytest 8.4 (the
lowest versions pyproject.toml allows, .ci/lowest.txt) and another pytest project of its own, `pip install` keeps those
versions, the other project stays green (its own --cluster option, `node` fixture, an exported GB10CHECK_CLUSTER naming
no file), and from a folder outside the clone `gb10check init` and `gb10check check` reach the same checks, with the
same ids, as the clone. One test: the environment is built once a run (selftests/wheelenv.py), shared with
test_wheel_on_sim."""

import subprocess
import zipfile
from pathlib import Path

from .inner_pytest import run_pytest
from .wheelenv import REPO, lowest, versions


def tracked(under: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", under], cwd=REPO, capture_output=True, text=True, timeout=30, check=True)
    return [line for line in out.stdout.splitlines() if line and "__pycache__" not in line]


def run(argv: list, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def collected(stdout: str) -> list[str]:
    return sorted(line for line in stdout.splitlines() if "::" in line)


def test_wheel_in_a_fresh_environment_beside_another_project(wheel_env, tmp_path):
    inside = set(zipfile.ZipFile(wheel_env.wheel).namelist())
    wanted = tracked("gb10check") + [f"gb10check/{f}" for f in tracked("tests")] + ["gb10check/pytest.ini",
                                                                                   "gb10check/cluster.example.yaml"]
    missing = [f for f in wanted if f not in inside]
    assert missing == [], f"files the wheel leaves out: {missing}"

    bin_dir, env = wheel_env.bin_dir, wheel_env.their_env
    floors = lowest()
    assert floors["pytest"].startswith("8.4."), floors
    before = wheel_env.their_run_before  # the other project's run before the wheel was installed
    assert before["returncode"] == 0 and "3 passed" in before["stdout"], before["stdout"] + before["stderr"]

    now = versions(bin_dir)
    changed = {name: (version, now.get(name)) for name, version in floors.items() if now.get(name) != version}
    assert changed == {}, f"installing the wheel changed the environment's versions (was, now): {changed}"
    after = wheel_env.their_run()
    assert after.returncode == 0 and "3 passed" in after.stdout, f"beside the wheel:\n{after.stdout}{after.stderr}"

    user = tmp_path / "user"  # outside the clone: nothing of the checkout is reachable from here
    user.mkdir()
    gb10check = bin_dir / "gb10check"
    init = run([gb10check, "init"], user, env)
    assert init.returncode == 0, init.stdout + init.stderr
    assert (user / "cluster.yaml").read_text() == (REPO / "cluster.example.yaml").read_text()
    assert "profile: gb10" in (user / "cluster.yaml").read_text()
    (user / "cluster.yaml").write_text((user / "cluster.yaml").read_text() + "# my edit\n")
    again = run([gb10check, "init"], user, env)
    assert again.returncode == 1 and "cluster.yaml exists" in again.stderr, again.stdout + again.stderr
    assert (user / "cluster.yaml").read_text().endswith("# my edit\n"), "a second init overwrote the user's file"

    # The same checks with the same ids as from the clone, and no cache written into site-packages.
    clone = run_pytest(["-p", "no:cacheprovider", "-m", "preflight", "--collect-only", "-q", "--cluster=cluster.example.yaml"])
    assert clone.returncode == 0, clone.stdout + clone.stderr
    check = run([gb10check, "check", "preflight", "--cluster", "cluster.yaml", "--collect-only", "-q"], user,
                {**env, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert check.returncode == 0, check.stdout + check.stderr
    assert collected(check.stdout) == collected(clone.stdout) != []
    nothing = run([gb10check, "check", "preflight", "--cluster=cluster.yaml", "-k", "no_such_check"], user,
                  {**env, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert nothing.returncode == 5, nothing.stdout + nothing.stderr  # pytest's "no tests ran": a session that ends writes its cache
    site = next((wheel_env.root / "venv" / "lib").glob("python3*/site-packages"))
    assert not list(site.glob("gb10check/.pytest_cache")), "gb10check check wrote pytest's cache into site-packages"
    assert (tmp_path / "cache" / "gb10check" / "pytest").is_dir()

    everything = run_pytest(["-p", "no:cacheprovider", "--collect-only", "-q", "--cluster=cluster.example.yaml"])
    pyargs = run([bin_dir / "python", "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "gb10check.tests", "--collect-only",
                  "-q", "--cluster=cluster.yaml"], user, env)
    assert pyargs.returncode == 0, pyargs.stdout + pyargs.stderr
    assert len(collected(pyargs.stdout)) == len(collected(everything.stdout)) > len(collected(clone.stdout))

    # rehearse's stage runner runs the installed suite from the rehearsal's folder (here every check deselected: no sim).
    stage = ("import sys; from pathlib import Path; from gb10check import rehearse;"
             "sys.exit(rehearse.run_stage(Path('cluster.yaml').resolve(), Path('rehearsal').resolve(), 'probe', 'preflight and not preflight'))")
    rehearsed = run([bin_dir / "python", "-c", stage], user, env)
    assert rehearsed.returncode == 5 and f"{len(collected(everything.stdout))} deselected" in rehearsed.stdout, rehearsed.stdout + rehearsed.stderr
    assert (user / "rehearsal" / "probe" / "junit.xml").is_file()
    assert not list(site.glob("gb10check/.pytest_cache"))

    # At the lowest versions the package imports without a warning (pydantic's protected namespaces, paramiko's ciphers).
    probe = ("import gb10check, json, sys; from gb10check import cli, remote, suite; from gb10check.sim import provision;"
             "assert gb10check.__file__.startswith(sys.argv[1]) and suite.installed(), gb10check.__file__;"
             "assert (provision.ASSETS / 'chat_template.jinja').is_file();"
             "from gb10check.cluster import Expect, known_profiles, PROFILES_DIR;"
             "assert str(PROFILES_DIR).startswith(sys.argv[1]) and known_profiles() == ['gb10', 'h200', 'sim'], known_profiles();"
             "assert (Expect().compute_seconds, Expect(profile='sim').compute_seconds) == (10, 2);"
             "print(json.dumps({'ready': provision.ready()}))")
    probed = run([bin_dir / "python", "-W", "error", "-c", probe, site], user, env)
    assert probed.returncode == 0, probed.stderr[-2000:]
    listed = run([gb10check, "parse", "--list"], user, env)
    assert listed.returncode == 0 and "ibdev2netdev" in listed.stdout and "perftest" in listed.stdout, listed.stdout + listed.stderr
