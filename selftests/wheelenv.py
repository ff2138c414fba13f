"""The package as a new user gets it: the wheel built from this tree, installed into a fresh virtual environment that
already holds the lowest versions pyproject.toml allows (.ci/lowest.txt: pytest 8.4 ...). Packages come through pip's
cache; nothing of the clone is on that environment's path."""

import subprocess
import sys
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
    floors = subprocess.run([str(root / "bin" / "pip"), "install", "-q", "-r", str(LOWEST)], capture_output=True, text=True,
                            timeout=600)
    assert floors.returncode == 0, pip_out(floors)
    return root / "bin"


def install(bin_dir: Path, wheel: Path) -> None:
    """`pip install WHEEL` as a user types it: the dependencies the environment already satisfies stay as they are."""
    done = subprocess.run([str(bin_dir / "pip"), "install", "-q", str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, pip_out(done)


def versions(bin_dir: Path) -> dict[str, str]:
    frozen = subprocess.run([str(bin_dir / "pip"), "freeze"], capture_output=True, text=True, timeout=120, check=True)
    return dict(l.lower().replace("_", "-").split("==") for l in frozen.stdout.splitlines() if "==" in l)
