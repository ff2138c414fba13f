import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def captures_dir() -> Path:
    return Path(os.environ.get("GB10CHECK_CAPTURES", REPO.parent / "shared" / "captures"))


@pytest.fixture(scope="session")
def captures() -> Path:
    path = captures_dir()
    if not path.is_dir():
        pytest.skip(f"captured outputs not found at {path} (set GB10CHECK_CAPTURES to their folder)")
    return path


def read_capture(name: str) -> str:
    path = captures_dir() / name
    if not path.exists():
        pytest.skip(f"capture {name} not found under {captures_dir()} (set GB10CHECK_CAPTURES)")
    return path.read_text(encoding="utf-8")
