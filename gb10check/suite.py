"""Where the suite lives, and the one pytest command line that runs it (`gb10check check`, `gb10check rehearse`).

One copy of the checks: a clone has pytest.ini, cluster.example.yaml and tests/ at its root, beside the package; the
wheel carries the same files inside the package (gb10check/pytest.ini, gb10check/cluster.example.yaml, tests/ as
gb10check.tests: setup.py). Either folder is the suite's root: pytest's rootdir, so test ids read the same
(tests/preflight/test_driver.py::...) wherever the suite runs from.
"""

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
STAGES = ("preflight", "network", "serving", "soak")


class SuiteMissing(Exception):
    """Neither the package nor the folder above it holds the suite (a broken install)."""


def root() -> Path:
    """The folder with pytest.ini and tests/: the installed package itself, else the clone the package runs from."""
    for candidate in (PACKAGE, PACKAGE.parent):
        if (candidate / "pytest.ini").is_file() and (candidate / "tests" / "conftest.py").is_file():
            return candidate
    raise SuiteMissing(f"the suite's pytest.ini and tests/ are neither in {PACKAGE} nor in {PACKAGE.parent}: reinstall "
                       "gb10check (pip install --force-reinstall gb10check)")


def installed() -> bool:
    """Whether the suite runs from the installed package (a wheel), not from a clone."""
    return root() == PACKAGE


def ini() -> Path:
    return root() / "pytest.ini"


def tests() -> Path:
    return root() / "tests"


def example() -> Path:
    return root() / "cluster.example.yaml"


def cache_dir() -> Path:
    """pytest's cache (--lf, --ff) for the installed suite: the user's, never inside site-packages."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "gb10check" / "pytest"


def pytest_argv(marker: str, cluster: str | None, extra: list[str]) -> list[str]:
    """pytest's arguments (after `python -m pytest`) for one run of the suite's checks selected by `marker`: the suite's
    ini and root, its plugin named explicitly (not left to the environment's autoloading), then the user's options."""
    argv = ["-c", str(ini()), f"--rootdir={root()}", "-p", "gb10check.plugin", "-m", marker]
    if installed() and "no:cacheprovider" not in extra:
        argv += ["-o", f"cache_dir={cache_dir()}"]
    if cluster:
        argv.append(f"--cluster={Path(cluster).resolve()}")
    return argv + list(extra) + [str(tests())]
