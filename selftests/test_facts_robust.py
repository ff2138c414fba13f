"""Random and truncated input never crashes or hangs a parser: facts or a ParseError, nothing else."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gb10check.facts import KINDS, ParseError, parse

from .expected import EXPECTED
from .conftest import read_capture

SETTINGS = settings(max_examples=int(os.environ.get("GB10CHECK_FUZZ_EXAMPLES", "60")), deadline=2000, suppress_health_check=[HealthCheck.too_slow])
KIND_NAMES = sorted(KINDS)

# Text that looks like tool output: digits, separators, words the parsers look for.
TOKENS = st.sampled_from([" ", "  ", "\n", "\t", ":", "/", "(", ")", "[", "]", "{", "}", "\"", ",", "#", "==>", "port", "1",
                          "Up", "Down", "data: ", "[DONE]", "Status: active", "ALLOW", "IN", "Anywhere", "Gb/sec", "#bytes",
                          "65536", "MemTotal:", "kB", "NVRM version:", "Speed:", "Mb/s", "hca_id:", "link", "state", "ACTIVE",
                          "Avg bus bandwidth", "size", "count", "INFO 01-02 03:04:05", "GiB", "tokens", "\x1b[0;36m", "services:",
                          "NAME", "Up 3 seconds", "/sys/class/infiniband/x/ports/1/gids/3:", "v2", "0000:0000:ffff:c0a8:640a"])


@pytest.mark.parametrize("kind", KIND_NAMES)
@SETTINGS
@given(text=st.one_of(st.text(max_size=400), st.lists(TOKENS, max_size=80).map("".join)))
def test_random_text_is_facts_or_parse_error(kind, text):
    try:
        parse(kind, text)
    except ParseError:
        pass


CAPTURES_BY_KIND = sorted((kind, name) for name, (kind, _) in EXPECTED.items())


@pytest.mark.parametrize(("kind", "name"), CAPTURES_BY_KIND, ids=[n for _, n in CAPTURES_BY_KIND])
@SETTINGS
@given(cut=st.floats(min_value=0, max_value=1), drop=st.integers(min_value=0, max_value=40))
def test_truncated_capture_is_facts_or_parse_error(kind, name, cut, drop):
    text = read_capture(name)
    end = int(len(text) * cut)
    mangled = text[:end] + text[end + drop:]
    try:
        parse(kind, mangled)
    except ParseError:
        pass


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_empty_input_says_what_was_expected(kind):
    with pytest.raises(ParseError, match=rf"^{kind}: expected .+; got '<empty>'$"):
        parse(kind, "")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.sampled_from(["", "model", "x", "0"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["data", "choices", "delta", "message", "tool_calls", "function", "usage", "error", "detail",
                                       "object", "State", "RootFS", "Layers", "Health", "Status", "HostConfig", "Config",
                                       "ifname", "addr_info", "index", "id", "name", "arguments", "content", "services"]),
                      inner, max_size=5),
    max_leaves=20,
)


@pytest.mark.parametrize("kind", KIND_NAMES)
@SETTINGS
@given(value=JSON, sse=st.booleans())
def test_random_json_is_facts_or_parse_error(kind, value, sse):
    import json

    text = json.dumps(value)
    try:
        parse(kind, f"data: {text}\n\ndata: [DONE]\n" if sse else text)
    except ParseError:
        pass


# What surrounds real outputs when people paste or capture them. Each wrapper alone, then all of them.
def _prompted(text: str) -> str:
    return f"(venv) user@gb10-1:~/runs$ cat captured-output.txt\n{text}\nuser@gb10-1:~/runs$ \n"


def _coloured(text: str) -> str:
    return "\n".join(f"\x1b[1;32m{line}\x1b[0m" if n % 3 == 0 and line else line for n, line in enumerate(text.split("\n")))


def _srun_labelled(text: str) -> str:
    return "\n".join(f"0: {line}" for line in text.split("\n"))


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def _trailing_spaces(text: str) -> str:
    return "\n".join(f"{line}   " for line in text.split("\n"))


NOISE = {"prompt": _prompted, "ansi": _coloured, "srun-label": _srun_labelled, "crlf": _crlf, "trailing-spaces": _trailing_spaces}


def _all_noise(text: str) -> str:
    for wrap in (_srun_labelled, _coloured, _trailing_spaces, _prompted, _crlf):
        text = wrap(text)
    return text


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_noise_does_not_change_facts(name):
    from .test_facts_captures import facts_of

    kind, _ = EXPECTED[name]
    text = read_capture(name)
    plain = facts_of(kind, text)
    for label, wrap in [*NOISE.items(), ("all", _all_noise)]:
        assert facts_of(kind, wrap(text)) == plain, f"{label} noise changed the facts of {name}"
