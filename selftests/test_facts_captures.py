"""Every captured real output is parsed and its facts asserted (values, not "no exception").

The expected facts live in selftests/expected/, one module per capture folder. Paths index the
JSON form of the facts: "0.netdev" is facts[0]["netdev"]; "#" is len(facts); "#rows" is
len(facts["rows"]).
"""

import pytest

from gb10check.facts import ParseError, parse, to_jsonable

from .conftest import OURS, OURS_PREFIX, read_capture
from .expected import EXPECTED


MISSING = "<missing>"


def dig(facts, path: str):
    """The value at path, or "<missing>" so that a failed test shows every difference at once."""
    if path.startswith("#"):
        target = dig(facts, path[1:]) if path[1:] else facts
        return MISSING if target is MISSING else len(target)
    try:
        for part in path.split("."):
            facts = facts[int(part)] if isinstance(facts, list) else facts[part]
    except (IndexError, KeyError, TypeError, ValueError):
        return MISSING
    return facts


def facts_of(kind: str, text: str):
    """The facts as JSON, or {"parse_error": message} for output a parser must refuse."""
    try:
        return to_jsonable(parse(kind, text))
    except ParseError as exc:
        return {"parse_error": str(exc)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_facts(name):
    kind, expected = EXPECTED[name]
    facts = facts_of(kind, read_capture(name))
    seen = {path: dig(facts, path) for path in expected}
    assert seen == expected


def test_every_capture_is_asserted(captures):
    on_disk = {str(p.relative_to(captures)) for p in captures.rglob("*") if p.is_file() and p.name != "SOURCES.md"}
    assert on_disk - set(EXPECTED) == set(), "public captures without asserted facts"


def test_every_capture_of_ours_is_asserted():
    # raw/ holds outputs of ours that no parse kind reads yet (nvidia-smi -L/-q, logs): kept, not asserted; facts/ holds
    # whole recordings (gb10check record), which test_facts_property judges check by check
    on_disk = {OURS_PREFIX + str(p.relative_to(OURS)) for p in OURS.rglob("*")
               if p.is_file() and p.name != "README.md" and p.relative_to(OURS).parts[0] not in ("raw", "facts")}
    assert on_disk - set(EXPECTED) == set(), "captures of ours without asserted facts"
