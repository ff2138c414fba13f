"""The self-tests' one way to run pytest as a user runs it (`python -m pytest ARGS` in a folder, with an environment).

A run whose code is this checkout's is forked from a server process that has already imported pytest, its built-in
plugins, gb10check's dependencies and most of its modules (multiprocessing's forkserver: a fresh interpreter that does
nothing but fork). Each run gets its own child, forked from the same untouched server, with the caller's arguments,
working folder, environment and sys.path (the folder first, then PYTHONPATH, then the interpreter's own, as `python -m`
sets it), so nothing one run does reaches another. A replay takes about 0.3 s instead of 0.8 s in a fresh interpreter
on a quiet CI machine (bench/inner_runs.py): imports are most of an inner run's start-up, and the self-tests make
hundreds of runs.

A run whose code may differ (another folder with a gb10check of its own, PYTHONPATH naming another checkout) starts a
fresh interpreter instead. Either way the result is a subprocess.CompletedProcess, and a run past its timeout is killed
and raises subprocess.TimeoutExpired, as subprocess.run does.
"""

import atexit
import gc
import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_context = None


# gb10check's own dependencies that are not pytest plugins. A pytest plugin's distribution (gb10check, testinfra,
# xdist, ...) is left to the run: pytest rewrites the asserts of its modules as it imports them, which it cannot do to
# a module imported before it starts.
DEPENDENCIES = ["paramiko", "requests", "pydantic", "yaml", "rich"]  # openai: its httpx loads anyio, a pytest plugin
# gb10check's own modules too, but the plugin, the fixtures that import it and the entry point, which pytest imports
# itself, as plugins. pytest marks a plugin distribution's modules (gb10check's, testinfra's) for assertion rewriting and
# warns of those already imported: a forked run ignores that one warning (ALREADY_IMPORTED), which only the preload
# causes; gb10check asserts nothing for pytest to rewrite (its checks report through gb10check.verdict). None of these
# modules reads the environment or the working folder as it is imported: a run sees its own, set after the fork. Not
# the command line's (gb10check.cli, __main__, rehearse) nor the simulation's: an inner run of the suite imports neither.
OWN_PACKAGES = ["gb10check", "gb10check.checks", "gb10check.facts", "gb10check.gather", "gb10check.deploy"]
NOT_PRELOADED = {"gb10check.autoload", "gb10check.fixtures", "gb10check.plugin",
                 "gb10check.__main__", "gb10check.cli", "gb10check.rehearse"}
ALREADY_IMPORTED = ["-W", "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"]


def _own_modules() -> list[str]:
    import importlib.util
    import pkgutil

    names = []
    for package in OWN_PACKAGES:
        path = importlib.util.find_spec(package).submodule_search_locations
        names += [package] + [f"{package}.{m.name}" for m in pkgutil.iter_modules(path) if not m.ispkg]
    return [n for n in names if n not in NOT_PRELOADED]


def _preloaded() -> list[str]:
    """What the server imports once: pytest with its built-in plugins, gb10check's dependencies and its modules."""
    import _pytest.config

    return ["pytest", *(f"_pytest.{p}" for p in _pytest.config.default_plugins), *DEPENDENCIES, *_own_modules(), __name__]


def _server():
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_preloaded())
        _context = context
    return _context


def _pythonpath(env: dict[str, str]) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def _interpreter_paths() -> list[str]:
    """The interpreter's own entries of sys.path (standard library, site-packages), as any start of it has them."""
    prefixes = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    return [p for p in sys.path if p and p.startswith(prefixes)]


def _child(args: list[str], cwd: str, env: dict[str, str], out: str, err: str) -> None:
    gc.freeze()  # what the server imported lives as long as the run: pytest's closing collections need not walk it
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path[:] = [cwd, *_pythonpath(env), *_interpreter_paths()]
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    import pytest

    try:
        code = int(pytest.main(args))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    atexit._run_exitfuncs()  # pytest's own clean-up (its temporary folders' locks); a forked child skips atexit
    sys.exit(code)


def runs_this_checkout(cwd: Path, env: dict[str, str]) -> bool:
    """Whether `python -m pytest` in cwd with env imports this checkout's gb10check, as the server did."""
    if Path(cwd).resolve() == REPO:
        return True
    first = next(iter(_pythonpath(env)), None)
    return not (Path(cwd) / "gb10check").exists() and first is not None and Path(first).resolve() == REPO


def run_pytest(args: list[str], cwd: Path = REPO, env: dict[str, str] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m pytest ARGS` in cwd with env (this process's environment when None): its exit status and output."""
    env = dict(os.environ if env is None else env)
    args = [str(a) for a in args]
    argv = [sys.executable, "-m", "pytest", *args]
    if not runs_this_checkout(cwd, env):
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    with tempfile.TemporaryDirectory(prefix="gb10check-inner-") as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        run = (ALREADY_IMPORTED + args, str(Path(cwd).resolve()), env, str(out), str(err))
        child = _server().Process(target=_child, args=run)
        child.start()
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join(10)
            raise subprocess.TimeoutExpired(argv, timeout, output=_text(out), stderr=_text(err))
        return subprocess.CompletedProcess(argv, child.exitcode, _text(out), _text(err))


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace") if path.exists() else ""
