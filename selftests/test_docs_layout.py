"""The docs' layout section (docs/contributing.md) names every module and folder of the tree: a newcomer finds each by
its name there."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def layout_block() -> str:
    section = (REPO / "docs" / "contributing.md").read_text().split("\n## Layout\n", 1)[1]
    return section.split("```", 2)[1]


def test_every_module_and_folder_is_in_the_layout():
    block = layout_block()
    package = REPO / "gb10check"
    wanted = [f"gb10check/{p.name}" for p in package.glob("*.py") if not p.name.startswith("__")]
    wanted += [f"gb10check/{p.name}/" for p in package.iterdir() if p.is_dir() and not p.name.startswith("__")]
    wanted += [p.name for p in (package / "deploy").glob("*.py") if not p.name.startswith("__")]
    wanted += [f"{name}/" for name in ("tests", "selftests", "scripts", "bench", ".github", ".ci", "docs")]
    wanted += ["conftest.py", "pytest.ini", "pyproject.toml", "setup.py", "MANIFEST.in", "cluster.example.yaml", "mkdocs.yml"]
    missing = [name for name in wanted if name not in block]
    assert not missing, f"the layout section of docs/contributing.md does not name: {', '.join(missing)}"
