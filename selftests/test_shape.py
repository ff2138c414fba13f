"""Every check has one shape: gather -> judge (gb10check/checks/) -> verdict.report(). No bare `assert`, no
`pytest.fail` and no Finding built inline in the checks users run: a failure without a code and a fix is a bug, and a
verdict outside gb10check/checks/ is one no judge test covers. Read from the AST of tests/.

"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHECKED = ["tests"]


def offences(path: Path, root: Path = REPO) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    fails = {"fail"}  # pytest.fail, and `from pytest import fail [as x]`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "pytest":
            fails |= {a.asname or a.name for a in node.names if a.name == "fail"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            found.append(f"{path.relative_to(root)}:{node.lineno}: assert")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Finding":
            found.append(f"{path.relative_to(root)}:{node.lineno}: Finding built inline (judges in gb10check/checks/ build them)")
        elif isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "fail" and isinstance(f.value, ast.Name) and f.value.id == "pytest") \
                    or (isinstance(f, ast.Name) and f.id in fails - {"fail"}):
                found.append(f"{path.relative_to(root)}:{node.lineno}: pytest.fail")
    return found


def files() -> list[Path]:
    return sorted(p for d in CHECKED for p in (REPO / d).rglob("*.py"))


def test_checked_folders_exist():
    assert files(), CHECKED
    assert all((REPO / d).is_dir() for d in CHECKED), CHECKED


@pytest.mark.parametrize("source", files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_bare_assert_or_pytest_fail(source):
    assert offences(source) == []


def test_the_walker_catches_each_form(tmp_path):
    bad = tmp_path / "t.py"
    bad.write_text("import pytest\nfrom pytest import fail as f\n\ndef test_a(x):\n    assert x\n    pytest.fail('no')\n    f('no')\n"
                   "    report([Finding(1, 2, 3, 4)])\n")
    good = tmp_path / "g.py"
    good.write_text("import pytest\nfrom gb10check.verdict import report\n\ndef test_b():\n    pytest.skip('why')\n    report([])\n")
    assert offences(bad, tmp_path) == ["t.py:5: assert", "t.py:6: pytest.fail", "t.py:7: pytest.fail",
                                       "t.py:8: Finding built inline (judges in gb10check/checks/ build them)"]
    assert offences(good, tmp_path) == []

