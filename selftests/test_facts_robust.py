"""Random and truncated input never crashes or hangs a parser: facts or a ParseError, nothing else."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gb10check.facts import KINDS, ParseError, parse

from .test_facts_captures import EXPECTED
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
