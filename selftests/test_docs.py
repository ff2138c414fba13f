"""The documentation: the README stays a quickstart, the site builds with every link and anchor resolved, and the
generated check reference is the one the code gives today."""

import subprocess
import sys
from pathlib import Path

from gb10check import reference

REPO = Path(__file__).resolve().parent.parent
README_MAX_LINES = 200


def test_site_builds_strict(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "site" / "reference" / "checks" / "index.html").is_file()


def test_check_reference_is_fresh():
    committed = (REPO / "docs" / "reference" / "checks.md").read_text()
    assert committed == reference.render(), f"docs/reference/checks.md is stale: run `{reference.COMMAND}` and commit it"


def test_reference_names_every_check_and_code():
    """Every test function of tests/ is a row, and every failure code has its fix under a heading of its own."""
    text = reference.render()
    tests = [line.split("def ", 1)[1].split("(", 1)[0] for path in (REPO / "tests").rglob("test_*.py")
             for line in path.read_text().splitlines() if line.startswith("def test_")]
    assert tests and all(f'<a id="{name}"></a>' in text for name in tests)
    assert all(f"\n### {code.value}\n" in text for code in reference.Code)


def test_reference_reads_codes_severities_and_fixtures():
    by_name = {c.name: c for c in reference.checks()}
    gid = by_name["test_roce_gid"]
    assert (gid.stage, gid.per, gid.reads) == ("network", "link of a node", ["ib_sysfs"])
    assert reference.Code.GID_NOT_ROCE_V2 in gid.codes
    assert by_name["test_link_speed"].codes[reference.Code.LINK_SPEED] == {"warning"}
    assert by_name["test_advisories"].codes[reference.Code.KNOWN_BAD_VERSION] == {"failure", "warning"}
    assert by_name["test_ib_write_bw"].markers == ["slow"] and by_name["test_port_open"].per == "direction × port"
    # A judge called only to decide whether to look reports nothing of its own.
    assert reference.Code.MODEL_MISSING not in by_name["test_compose_offline"].codes


def test_readme_is_a_quickstart():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move detail to docs/"
    commands = [l for l in lines if l.startswith("sudo ") or l.startswith("python") or l.startswith("pip ")]
    assert commands[:2] == [l for l in lines if l.startswith("sudo bash .ci/run")][:2]
    assert commands[0].startswith("sudo bash .ci/run --rehearse") and commands[1].startswith("sudo bash .ci/run ")
