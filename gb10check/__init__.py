"""gb10check: pre-flight, network and serving checks for vLLM across GB10 machines."""

from pathlib import Path


def version(package_dir: Path = Path(__file__).resolve().parent) -> str:
    """The version pyproject.toml gives (its one source): read from pyproject.toml itself when the package runs from a
    clone (an editable install's metadata keeps the version it was installed with), else the installed metadata."""
    import importlib.metadata
    import tomllib

    pyproject = package_dir.parent / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        project = {}
    if project.get("name") == "gb10check" and project.get("version"):
        return project["version"]
    try:
        return importlib.metadata.version("gb10check")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed, no pyproject.toml beside the package)"


def __getattr__(name: str):
    if name == "__version__":
        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
