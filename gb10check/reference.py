"""The check reference (docs/reference/checks.md), generated from the code: every check of tests/ with its stage, what it
runs per (node, link, direction ...), the facts it reads and the codes it can report; every code with its fix.

    python -m gb10check.reference docs/reference/checks.md      # rewrite the page (no argument: print it)

Read statically, from the source's syntax tree: a check's markers, its fixtures and its `@reads(...)` from tests/, the
codes from the judges it calls in gb10check/checks/ (and the functions those call), the fixes from the remedies table,
the facts from the gather registry. Collecting with pytest would need a cluster file and yields one item per node, not
one per check, and the codes a check can report exist only in the judges' source; reading the tree needs neither a
cluster nor a run, and gives the same page on every machine.
"""

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .gather.registry import FACTS
from .remedies import NOT_CHECKED, REACH, REMEDIES, Code

PACKAGE = Path(__file__).resolve().parent
SUITE = PACKAGE.parent / "tests"  # the checks users run
JUDGES = PACKAGE / "checks"
PROGRAMS = PACKAGE / "gather" / "programs.py"
STAGES = ("preflight", "network", "serving", "soak")
COMMAND = "python -m gb10check.reference docs/reference/checks.md"

# What a check runs per, by the first of its fixtures found in this order (none of them: once per cluster).
PER = (("required_port", "direction × port"), ("path", "direction of a link"), ("link_pair", "link"),
       ("node_link", "link of a node"), ("node_pair", "ordered node pair"), ("follower", "node but rank 0, against rank 0"),
       ("node", "node"))


@dataclass
class Check:
    name: str
    path: str  # relative to the suite's parent
    stage: str
    per: str
    markers: list[str]
    reads: list[str]
    codes: dict[Code, set[str]] = field(default_factory=dict)  # code -> {"failure", "warning"}
    ray_only: bool = False


def _code(node: ast.AST) -> Code | None:
    """`Code.NAME` -> the member."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Code":
        return Code[node.attr] if node.attr in Code.__members__ else None
    return None


def _kinds(call: ast.Call) -> set[str]:
    """What a Finding(...) is: warning=True a warning, warning=<expression> either, no warning a failure."""
    warning = next((k.value for k in call.keywords if k.arg == "warning"), None)
    if warning is None or (isinstance(warning, ast.Constant) and not warning.value):
        return {"failure"}
    return {"warning"} if isinstance(warning, ast.Constant) else {"failure", "warning"}


def _codes_in(body: ast.AST) -> dict[Code, set[str]]:
    found: dict[Code, set[str]] = {}
    built = set()
    for n in ast.walk(body):
        # Finding(Code.X, ..., warning=...), or a row of a table of them: SomeRow(..., Code.X, ..., warning=...)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            for arg in n.args:
                if _code(arg) is not None:
                    found.setdefault(_code(arg), set()).update(_kinds(n))
                    built.add(id(arg))
    for n in ast.walk(body):
        if id(n) not in built and (code := _code(n)) is not None:
            found.setdefault(code, set()).add("failure")  # a code handed to a helper that builds the Finding
    return found


def _imported_judges(tree: ast.Module, here: str | None) -> dict[str, str]:
    """Local name -> judge module name, for `from gb10check.checks import x [as y]` and, inside checks/, `from . import x`."""
    names = {}
    for n in tree.body:
        if isinstance(n, ast.ImportFrom) and (n.module == "gb10check.checks" or (here and n.level == 1 and not n.module)):
            names.update({a.asname or a.name: a.name for a in n.names})
    return names


def _calls(body: ast.AST, modules: dict[str, str], module: str | None) -> set[tuple[str, str]]:
    """(module, function) called: `alias.f(...)` for an imported judge module, `f(...)` in the same module."""
    out = set()
    for n in ast.walk(body):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
                out.add((modules[f.value.id], f.attr))
            elif isinstance(f, ast.Name) and module is not None:
                out.add((module, f.id))
    return out


def judge_index() -> dict[tuple[str, str], tuple[dict[Code, set[str]], set[tuple[str, str]]]]:
    """(module, function) of gb10check/checks/ and of the gathering programs -> (the codes it names, the functions it
    calls). The programs (dry runs, canaries, bandwidth runs) report NOT CHECKED themselves when they cannot run."""
    index = {}
    for path in [*sorted(JUDGES.glob("*.py")), PROGRAMS]:
        tree = ast.parse(path.read_text(), str(path))
        modules = _imported_judges(tree, path.stem)
        # The module's tables (KERNEL_SIGNS ...): a function that reads one can report the codes in its rows.
        tables = {n.targets[0].id: n.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)}
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef):
                codes = _codes_in(fn)
                for name in sorted({x.id for x in ast.walk(fn) if isinstance(x, ast.Name) and x.id in tables}):
                    for code, kinds in _codes_in(tables[name]).items():
                        codes.setdefault(code, set()).update(kinds)
                index[(path.stem, fn.name)] = (codes, _calls(fn, modules, path.stem))
    return index


def _reach(start: set[tuple[str, str]], index) -> dict[Code, set[str]]:
    codes: dict[Code, set[str]] = {}
    todo, seen = list(start), set()
    while todo:
        key = todo.pop()
        if key in seen or key not in index:
            continue
        seen.add(key)
        found, calls = index[key]
        for code, kinds in found.items():
            codes.setdefault(code, set()).update(kinds)
        todo += calls
    return codes


def _reported(body: ast.AST) -> list[ast.Call]:
    """The `report(...)` calls: a judge called only to decide something else reports nothing of its own."""
    return [n for n in ast.walk(body) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "report"]


def _marks(decorators: list[ast.expr]) -> list[str]:
    """`pytest.mark.NAME` (called or not) among decorators or a pytestmark value."""
    out = []
    for d in decorators:
        d = d.func if isinstance(d, ast.Call) else d
        if isinstance(d, ast.Attribute) and isinstance(d.value, ast.Attribute) and d.value.attr == "mark":
            out.append(d.attr)
    return out


def _reads(decorators: list[ast.expr], constants: dict[str, list[str]]) -> list[str]:
    for d in decorators:
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "reads":
            names = []
            for a in d.args:
                names += constants[a.value.id] if isinstance(a, ast.Starred) else [ast.literal_eval(a)]
            return names
    return []


def checks(suite: Path = SUITE) -> list[Check]:
    index = judge_index()
    found = []
    for path in sorted(suite.rglob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        modules = _imported_judges(tree, None)
        gathering = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "gb10check.gather"
                     for a in n.names}
        constants, module_marks, helpers = {}, [], {}
        for n in tree.body:
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
                if n.targets[0].id == "pytestmark":
                    module_marks = _marks(n.value.elts if isinstance(n.value, (ast.List, ast.Tuple)) else [n.value])
                elif isinstance(n.value, (ast.List, ast.Tuple)):
                    constants[n.targets[0].id] = [ast.literal_eval(e) for e in n.value.elts]
            elif isinstance(n, ast.FunctionDef) and not n.name.startswith("test_"):
                helpers[n.name] = n
        for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")):
            markers = module_marks + _marks(fn.decorator_list)
            args = [a.arg for a in fn.args.args]
            bodies = [fn] + [helpers[name] for (_, name) in _calls(fn, {}, "") if name in helpers]
            codes: dict[Code, set[str]] = {}
            if any(isinstance(n, ast.Name) and n.id == "NodeUnreachable" for n in ast.walk(fn)):
                codes.update({code: {"failure"} for code in REACH})  # it judges the way a node could not be reached
            for body in bodies:
                reported = set().union(*(_calls(r, modules, None) for r in _reported(body)))
                reported |= {(PROGRAMS.stem, name) for (_, name) in _calls(body, {}, "") if name in gathering}
                for code, kinds in [*_codes_in(body).items(), *_reach(reported, index).items()]:
                    codes.setdefault(code, set()).update(kinds)
            found.append(Check(
                name=fn.name, path=str(path.relative_to(suite.parent)), stage=next(m for m in markers if m in STAGES),
                per=next((label for fixture, label in PER if fixture in args), "cluster"),
                markers=[m for m in markers if m not in STAGES], reads=_reads(fn.decorator_list, constants), codes=codes,
                ray_only="ray_cluster" in args))
    return found


def _escape(text: str) -> str:
    """Markdown's emphasis and HTML characters taken literally, outside `code spans`."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _kind(code: Code, kinds: set[str]) -> str:
    return "not checked" if code in NOT_CHECKED else " or ".join(k for k in ("failure", "warning") if k in kinds)


def render(suite: Path = SUITE) -> str:
    found = checks(suite)
    by_code: dict[Code, list[Check]] = {}
    kinds: dict[Code, set[str]] = {}
    for check in found:
        for code, k in check.codes.items():
            by_code.setdefault(code, []).append(check)
            kinds.setdefault(code, set()).update(k)
    out = ["# Check reference", "",
           f"Generated from the code by `{COMMAND}`; a self-test fails when this page is stale. Each check runs once per "
           "*per* (a node, a link, a direction of a link ...), reads the facts named (gathered once per node per run: "
           "[facts](#facts)) and can report the codes named; each code's fix is under [codes](#codes). A check whose facts "
           "could not be read is NOT CHECKED with the cause ([not checked](#not-checked)).", ""]
    for stage in STAGES:
        out += [f"## {stage}", "", "| check | per | reads | codes |", "|---|---|---|---|"]
        for c in (c for c in found if c.stage == stage):
            notes = [f"`{m}`" for m in c.markers] + (["Ray executor only"] if c.ray_only else [])
            name = f"<a id=\"{c.name}\"></a>`{c.name}`" + (f" ({', '.join(notes)})" if notes else "") + f"<br>{c.path}"
            reads = ", ".join(f"[{r}](#fact-{r})" for r in c.reads) or "-"
            codes = ", ".join(f"[{code.value}](#{code.value})" + {"warning": " (warning)", "failure or warning": " (or warning)"}
                              .get(_kind(code, k), "")
                              for code, k in sorted(c.codes.items(), key=lambda kv: kv[0].value)) or "-"
            out.append(f"| {name} | {c.per} | {reads} | {codes} |")
        out.append("")
    out += ["## Codes", "", "Each code's fix as the check prints it; `{node}` and the other names in braces are filled in "
            "with what the check saw.", ""]
    for code in Code:
        if code in NOT_CHECKED:
            continue
        who = ", ".join(f"[`{c.name}`](#{c.name})" for c in by_code.get(code, [])) or "no check"
        out += [f"### {code.value}", "", f"{_kind(code, kinds.get(code, {'failure'}))}, reported by {who}", "",
                f"fix: {_escape(REMEDIES[code])}", ""]
    out += ["## Not checked", "", "We could not look: never a pass, never blamed on the cluster, and the gate refuses a stage "
            "that has any unless the cluster file waives its code. Every check that reads a fact can be stopped by the causes "
            "of that fact (its command timed out or failed, its output could not be read, its tool is missing, root was "
            "refused, a fact it depends on is absent); the checks named report the code themselves. A node that cannot be reached "
            "or refuses the runner fails its reachability check with the way it failed (ssh-no-route, ssh-refused, "
            "ssh-timeout, ssh-name-unresolved, host-key-unknown, host-key-changed, ssh-key-refused; node-unreachable: the "
            "connection broke mid-run), and every other check of that node is not checked with the same code, told once.", ""]
    for code in sorted(NOT_CHECKED, key=list(Code).index):
        who = ", ".join(f"[`{c.name}`](#{c.name})" for c in by_code.get(code, []))
        out += [f"### {code.value}", "", f"fix: {_escape(REMEDIES[code])}", ""] + ([f"reported by {who}", ""] if who else [])
    out += ["## Facts", "", "What the checks read from each node, gathered once per run in one batch per node (`gb10check "
            "record` writes them all). *root*: run with `sudo -n` (sudo-refused or sudo-missing when it cannot); *tool*: "
            "missing, it is tool-missing with the package named; *needs*: absent, the check is prerequisite-failed.", "",
            "| fact | what | root | tool (package) | needs |", "|---|---|---|---|---|"]
    for name, f in sorted(FACTS.items()):
        needs = ", ".join(f.needs) if isinstance(f.needs, tuple) else _escape((f.needs.__doc__ or "").strip())
        tool = f"`{f.tool}` ({_escape(f.package or '')})" if f.tool else "-"
        out.append(f"| <a id=\"fact-{name}\"></a>`{name}` | {_escape(f.what)} | {'yes' if f.sudo else '-'} | {tool} | "
                   f"{needs or '-'} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if argv:
        Path(argv[0]).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
