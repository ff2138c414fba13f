"""Programs the suite feeds to the deployment image's own Python (`python3 -` in `docker run`), so the same program runs
anywhere: stdlib and torch only, one JSON line on stdout. `source(name)` is a program's text."""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def source(name: str) -> str:
    return (HERE / f"{name}.py").read_text()
