import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OURS = Path(__file__).resolve().parent / "captures"  # outputs our own runs produced (sim nodes, a real GPU)
OURS_PREFIX = "ours/"


def captures_dir() -> Path:
    """The public captures (../shared/captures), read in place, never copied into the repo."""
    return Path(os.environ.get("GB10CHECK_CAPTURES", REPO.parent / "shared" / "captures"))


def _missing(what: str) -> None:
    # Offline, a clean clone without ../shared still runs our own captures; in CI the public ones must be there.
    message = f"{what} (set GB10CHECK_CAPTURES to the folder of the public captures)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def captures() -> Path:
    path = captures_dir()
    if not path.is_dir():
        _missing(f"captured outputs not found at {path}")
    return path


def capture_path(name: str) -> Path:
    return OURS / name[len(OURS_PREFIX):] if name.startswith(OURS_PREFIX) else captures_dir() / name


def read_capture(name: str) -> str:
    path = capture_path(name)
    if not path.exists():
        if name.startswith(OURS_PREFIX):
            pytest.fail(f"our capture {path} is missing from the repository", pytrace=False)
        _missing(f"capture {name} not found under {captures_dir()}")
    return path.read_bytes().decode("utf-8")  # as captured: CR and CRLF are the front end's to handle, not Python's
