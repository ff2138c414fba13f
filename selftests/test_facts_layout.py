"""Copying an output through a web page, an issue tracker, a chat or a mail client damages its layout; the facts must not
change. Each class of damage seen in public bug reports is applied to every real capture (and to our own inputs of the
kinds no capture covers): tabs turned into spaces, no-break / zero-width spaces and a BOM, typographic quotes, the whole
block indented (a code block in a markdown list item), nested markdown and mail quotes, HTML entities left by a scraper,
mixed and lone CR line ends, a lost final newline, right-stripped lines, a line-number gutter (pastebin, `cat -n`).

Structural damage (a line lost, repeated or swapped, the text cut at or inside a line) must give the same facts or a
refusal; the few allowances (an answer the parser marks incomplete, a lost record of a one-record-per-line output, one
more sample of a sampling loop) are written next to the kinds they apply to, below."""

import os
import re

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from gb10check.facts import parse

from .conftest import read_capture
from .expected import EXPECTED
from .test_facts_captures import facts_of


def _lines(fn):
    return lambda text: "\n".join(fn(n, line) for n, line in enumerate(text.split("\n")))


def _apostrophes(text: str) -> str:  # what a chat or a word processor does to "Couldn't", "'quoted'" and "a "word""
    text = re.sub(r"(?<=\w)'(?=\w)", "\u2019", text)
    return re.sub(r"(?<![\w\"])\"([^\"\n]{1,40})\"(?![\w\"])", "\u201c\\1\u201d", text)


_LABEL_ONLY = re.compile(r"^\s*(?:\([^)]*\)|\[[^\]]*\])?\s*$")  # a line a progress redraw would follow on the same line


def _cr_after_some_lines(text: str) -> str:
    # An editor that mixed line ends: every third line ended by a lone CR. Not after a blank or label-only line: there a
    # lone CR is how a progress bar redraws ("(EngineCore pid=1) \rLoading ... 100%"), which the front end keeps as one line;
    # nor after a line that has a redraw already.
    lines = text.split("\n")
    return "".join(line + ("\r" if n % 3 == 1 and not _LABEL_ONLY.match(line) and "\r" not in line and n < len(lines) - 1 else "\n" if n < len(lines) - 1
                           else "") for n, line in enumerate(lines))


DAMAGE = {
    # (1) tabs rendered, or copied, as spaces
    "tabs-to-8-columns": lambda t: t.expandtabs(8),
    "tabs-to-4-spaces": lambda t: t.replace("\t", "    "),
    "tabs-to-1-space": lambda t: t.replace("\t", " "),
    # (2) no-break spaces (all of them, or HTML's `&nbsp; ` runs), narrow no-break spaces, zero-width spaces, a BOM
    "nbsp-everywhere": lambda t: t.replace(" ", "\u00a0"),
    "nbsp-in-runs": lambda t: t.replace("  ", "\u00a0 "),
    "narrow-nbsp-in-runs": lambda t: t.replace("  ", " \u202f"),
    "zero-width-spaces": _lines(lambda n, line: ("\u200b" + line.replace("/", "/\u200b", 1)) if line else line),
    "bom": lambda t: "\ufeff" + t,
    "typographic-quotes": _apostrophes,
    # (3) the whole block indented: a code block in a markdown list item, a mail client's tab
    "indented-2": _lines(lambda n, line: "  " + line if line else line),
    "indented-3": _lines(lambda n, line: "   " + line),
    "indented-4": _lines(lambda n, line: "    " + line if line else line),
    "indented-tab": _lines(lambda n, line: "\t" + line if line else line),
    # (4) nested markdown quotes, mail quoting, HTML entities of a scraped page
    "markdown-quote-nested": _lines(lambda n, line: "> > " + line),
    "mail-quote": _lines(lambda n, line: "> " + line if line else ">"),
    "mail-quote-twice": _lines(lambda n, line: ">> " + line if line else ">>"),
    "html-entities": lambda t: (t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
                                .replace("'", "&#39;")),
    # (5) line ends: CRLF mixed with LF, CR CR LF, LF CR, lone CRs mixed with LF, a missing final newline
    "crlf-mixed": _lines(lambda n, line: line + "\r" if n % 2 else line),
    "cr-cr-lf": lambda t: t.replace("\n", "\r\r\n"),
    "lf-cr": lambda t: t.replace("\n", "\n\r"),
    "lone-cr-mixed": _cr_after_some_lines,
    "no-final-newline": lambda t: t.rstrip("\n"),
    # (6) trailing padding stripped (ragged right edge of a table)
    "right-stripped": _lines(lambda n, line: line.rstrip()),
    # (7) a line-number gutter: pastebin / diff view, and `cat -n`
    "gutter-bar": _lines(lambda n, line: f"{n + 1} | {line}"),
    "gutter-cat-n": _lines(lambda n, line: f"{n + 1:6d}\t{line}"),
}


def _lone_cr(text: str) -> str:  # a classic Mac text, or a paste that lost every LF
    return text.replace("\r\n", "\n").replace("\n", "\r")


def _all_at_once(text: str) -> str:  # a quoted mail of a list item's code block, copied from a page with &nbsp;
    for label in ("tabs-to-4-spaces", "indented-4", "mail-quote", "nbsp-in-runs", "crlf-mixed", "bom"):
        text = DAMAGE[label](text)
    return text


def _mail_quoted_srun_output(text: str) -> str:  # `srun -l` output quoted in a mail reply
    return DAMAGE["mail-quote"]("\n".join(f"0: {line}" for line in text.split("\n")))


def _damages(text: str):
    yield from DAMAGE.items()
    yield "mail-quoted-srun-output", _mail_quoted_srun_output
    if "\r" not in text:  # a text with progress redraws that lost its LFs can't say which CR ended a line
        yield "lone-cr", _lone_cr
    yield "all-at-once", _all_at_once


def _check(kind: str, text: str, what: str) -> None:
    plain = facts_of(kind, text)
    for label, damage in _damages(text):
        if label == "typographic-quotes" and re.search(r"^\s*(?:[{\[]|data:)", text, re.M):
            continue  # JSON: a typographic quote in a string is the model's, and kept
        damaged = facts_of(kind, damage(text))
        if "parse_error" in plain and "parse_error" in damaged:
            continue  # refused either way ("could not check"); the excerpt it shows may differ
        assert damaged == plain, f"{label} changed the facts of {what}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_layout_damage_does_not_change_facts(name):
    _check(EXPECTED[name][0], read_capture(name), name)


def _own_inputs():
    """Our own inputs (made-up values, real layouts) of the kinds that no capture covers."""
    from . import test_judges_pcie as pcie
    from . import test_parsers_ray as ray

    yield "lspci", pcie.lspci(pcie.GX10)
    yield "lspci", pcie.OLD
    yield "lspci", pcie.DENIED
    yield "ray_version", ray.VERSION_OK
    yield "ray_status", ray.STATUS_PAIR
    yield "ray_status", ray.STATUS_PAIR_VERBOSE
    yield "ray_status", ray.STATUS_OLDER
    yield "ray_nodes", ray.NODES_PAIR
    yield "dd", "1024+0 records in\n1024+0 records out\n1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.84 s, 1.3 GB/s\n"
    yield "nmcli_profiles", ("-- profile 0b7a9c2e-1111-4a2b-9c3d-000000000002 --\ndevice:enP2p1s0f1np1\n"
                             "connection.id:qsfp\\:1\nconnection.type:802-3-ethernet\nconnection.interface-name:enP2p1s0f1np1\n"
                             "connection.autoconnect:no\nipv4.method:manual\n")
    # perftest's banner: two fields a line, the second after two tabs (the tabs a web page turns into spaces)
    yield "perftest", ("---------------------------------------------------------------------------------------\n"
                       "                    RDMA_Write BW Test\n"
                       " Dual-port       : OFF\t\tDevice         : rocep1s0f0\n"
                       " Number of qps   : 1\t\tTransport type : IB\n"
                       " Connection type : RC\t\tUsing SRQ      : OFF\n"
                       " PCIe relax order: ON\n"
                       " TX depth        : 128\n"
                       " CQ Moderation   : 1\n"
                       " Mtu             : 4096[B]\n"
                       " Link type       : Ethernet\n"
                       " GID index       : 3\n"
                       " Max inline data : 0[B]\n"
                       " rdma_cm QPs\t : OFF\n"
                       " Data ex. method : Ethernet\n"
                       "---------------------------------------------------------------------------------------\n"
                       " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
                       " 65536      5000             92.31              92.28\t\t     0.176012\n"
                       "---------------------------------------------------------------------------------------\n")
    # /etc/ufw/user.rules: tuple comments and iptables lines
    yield "ufw_user_rules", ("*filter\n:ufw-user-input - [0:0]\n:ufw-user-output - [0:0]\n### RULES ###\n\n"
                             "### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in\n"
                             "-A ufw-user-input -p tcp --dport 22 -j ACCEPT\n\n"
                             "### tuple ### allow any any 0.0.0.0/0 any 169.254.0.0/16 in_enP2p1s0f1np1\n"
                             "-A ufw-user-input -i enP2p1s0f1np1 -s 169.254.0.0/16 -j ACCEPT\n\n"
                             "### END RULES ###\nCOMMIT\n")


OWN = list(_own_inputs())


@pytest.mark.parametrize(("kind", "text"), OWN, ids=[f"{kind}-{n}" for n, (kind, _) in enumerate(OWN)])
def test_layout_damage_does_not_change_facts_of_our_inputs(kind, text):
    assert "parse_error" not in facts_of(kind, text)  # the input itself reads (else the check compares two refusals)
    _check(kind, text, f"our {kind} input")


# ---- what clean() undoes, and where it must not guess -------------------------------------------------------------------

def test_entities_are_kept_where_the_text_has_a_bare_ampersand():
    # A log line with "&&" and a URL's "&amp;" was not escaped by a scraper: "&amp;" stays as printed.
    from gb10check.facts._text import clean

    text = "INFO 01-02 03:04:05 [launcher.py:10] cmd: a && b; url http://x/?a=1&amp;b=2\n"
    assert clean(text).text == text


def test_json_strings_keep_their_typographic_quotes():
    body = ('{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant",'
            '"content":"It\u2019s \u201cfine\u201d"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,'
            '"total_tokens":3}}')
    assert parse("vllm_chat", body).content == "It\u2019s \u201cfine\u201d"


def test_progress_redraw_after_a_label_stays_one_line_and_a_cr_after_text_ends_it():
    from gb10check.facts._text import clean

    redraw = "(EngineCore pid=7) \rLoading shards:   0% 0/1\rLoading shards: 100% 1/1\nnext\n"
    assert clean(redraw).text == "Loading shards: 100% 1/1\nnext\n"
    mixed = "mlx5_0 port 1 ==> enp1s0f0np0 (Up)\rmlx5_1 port 1 ==> enp1s0f1np1 (Down)\n"
    assert [(p.rdma_device, p.netdev, p.state) for p in parse("ibdev2netdev", mixed)] == [
        ("mlx5_0", "enp1s0f0np0", "up"), ("mlx5_1", "enp1s0f1np1", "down")]


def test_a_numbered_column_that_does_not_count_up_is_not_a_gutter():
    from gb10check.facts._text import clean

    text = "1 | a\n1 | b\n3 | c\n"
    assert clean(text).text == text
    indexes = "0\n1\n2\n3\n"  # nvidia-smi --query-gpu=index --format=csv,noheader: numbers that count up, and nothing else
    assert clean(indexes).text == indexes


# ---- structural damage: lines lost, repeated, swapped or cut ------------------------------------------------------------
# A paste can lose its end or a line, repeat a line or swap two. What a parser reads from such a text is the undamaged
# text's facts, or a refusal (ParseError: its checks are "not checked"), never a different answer that looks valid.
# Where a damage may change the answer without the parser being able to tell, the reason is written next to the kind.

# Fields by which a parser says it saw less than the whole output, in the value that says so. A damaged answer that
# shows one of them (where the undamaged one does not) is marked incomplete: the judges read it as such.
INCOMPLETE = {"complete": False, "truncated": True, "processes_listed": False, "done": False}

# Outputs of one independent record (or one `key: value`) per line, with no count or closing line: a lost or cut-off
# line is a lost record or value, and one the tool never printed looks the same. There a lost line may only lose its
# record or leave its value None ("unknown"), never change one, and two swapped lines only reorder records; the judges
# compare the records with the cluster file's, by name, and read None as not known.
RECORD_PER_LINE = {"ray_status", "ray_version", "proc_driver_nvidia_version", "ethtool", "ibstat", "ibv_devinfo",
                   "vllm_error", "ibdev2netdev", "rdma_link", "dpkg_query", "df", "compose_ps", "nvidia_smi_query",
                   "ufw_status", "ip_addr", "show_gids", "ib_sysfs", "nmcli_profiles", "free", "meminfo", "ss"}

# Outputs of repeated samples (`nvidia-smi --query-gpu=... -l N`): a loop prints each GPU's row once per sample,
# identical while nothing changes, so a repeated row is one more sample of the same values (the judges read them as
# samples, never count GPUs from rows).
SAMPLES = {"nvidia_smi_query"}

# Logs are sequences of independent events, most of them lines no check needs: a lost, repeated or swapped line is
# another log, and a log cut short is the log of a server stopped there. Their parsers are held to the layout damage
# above, not to this test.
LOGS = {"vllm_log", "kernel_log"}


def _marked_incomplete(damaged, plain) -> bool:
    def flags(facts, out):
        if isinstance(facts, dict):
            for key, value in facts.items():
                if key in INCOMPLETE and value == INCOMPLETE[key]:
                    out.add(key)
                flags(value, out)
        elif isinstance(facts, list):
            for value in facts:
                flags(value, out)
        return out

    return bool(flags(damaged, set()) - flags(plain, set()))


# Figures a parser computes from the rows it read (the largest size's bandwidth, the highest peak): from a prefix of the
# rows, marked incomplete, they are the prefix's, and the judges read them only from a complete output.
DERIVED = {"busbw_gbps", "max_busbw_gbps", "bw_average_gbps", "bw_peak_gbps", "bw_bytes"}


def _derived_out(facts):
    return {k: v for k, v in facts.items() if k not in DERIVED} if isinstance(facts, dict) else facts


def _unmarked(facts):
    """The facts without their incompleteness fields."""
    if isinstance(facts, dict):
        return {k: _unmarked(v) for k, v in facts.items() if k not in INCOMPLETE}
    if isinstance(facts, list):
        return [_unmarked(v) for v in facts]
    return facts


def _weaker(damaged, plain) -> bool:
    """The damaged answer says less than the undamaged one, never something else: each of its records is one of the
    undamaged answer's (list elements matched one to one), each value the same or None ("unknown")."""
    if damaged is None or damaged == plain:
        return True
    if isinstance(damaged, dict) and isinstance(plain, dict):
        return all(_weaker(v, plain[k]) if k in plain else (v is None or k in ESTIMATES) for k, v in damaged.items())
    if isinstance(damaged, list) and isinstance(plain, list):
        unused = list(plain)
        for d in damaged:
            match = next((n for n, p in enumerate(unused) if _weaker(d, p)), None)
            if match is None:
                return False
            del unused[match]
        return True
    return False


def _lost_records_only(damaged, plain) -> bool:
    return _weaker(damaged, plain)


# Fields a parser computes, under a name that says so, where the output lacks the figure itself: /proc/meminfo without
# MemAvailable (a kernel before 3.14, or the line lost from a paste of a kernel that prints none of the later lines
# either) gets procps' estimate, and the judges say it is one.
ESTIMATES = {"mem_available_estimate_gib"}


def structural(text: str, how: str, at: int) -> str:
    lines = text.split("\n")
    content = [n for n, line in enumerate(lines) if line.strip()]
    n = content[at % len(content)]
    if how == "drop":
        return "\n".join(lines[:n] + lines[n + 1:])
    if how == "dup":
        return "\n".join(lines[:n + 1] + lines[n:])
    if how == "swap":
        nxt = next((m for m in content if m > n), None)
        if nxt is None:
            return text
        lines[n], lines[nxt] = lines[nxt], lines[n]
        return "\n".join(lines)
    if how == "cut":
        return "\n".join(lines[:n]) + "\n"
    if how == "cut-mid-line":
        return "\n".join(lines[:n] + [lines[n][: len(lines[n]) // 2]])
    raise ValueError(how)


def structural_verdict(kind: str, how: str, plain, damaged) -> str | None:
    """None when the damaged facts are allowed, else why not."""
    if damaged == plain or "parse_error" in damaged:
        return None
    if _marked_incomplete(damaged, plain) and _lost_records_only(_derived_out(_unmarked(damaged)), _unmarked(plain)):
        return None  # less than the whole, and saying so (its figures computed from what is there)
    if kind in SAMPLES and how == "dup" and isinstance(damaged, list) and all(row in plain for row in damaged):
        return None  # one more sample, the same values
    if kind in RECORD_PER_LINE and how in ("drop", "swap", "cut", "cut-mid-line") and _lost_records_only(damaged, plain):
        return None
    return f"{how} gave a different valid answer"


STRUCTURAL = ("drop", "dup", "swap", "cut", "cut-mid-line")


# Kinds whose parsers do not yet hold to this rule (a lost, repeated or cut line still reads as another valid answer):
# the test runs on them and is expected to fail until their parsers are fixed; one that passes shows as XPASS.
# (proc_driver_nvidia_version: its build and GCC texts cut inside read as shorter texts; the version itself is held.
# ss: a line cut inside the peer's port reads as another port; its column padding, which would tell, is stripped.
# nvidia_compute_apps: a process-table line cut off reads as a process that ended between nvidia-smi and ps; the command
# has no end mark to tell them apart.)
NOT_YET_HELD = {"ss", "compose_config", "docker_health", "docker_image_inspect", "docker_inspect", "free", "ip_j_addr",
                "lspci", "nccl_tests", "nvidia_compute_apps", "nmcli_profiles", "nvidia_smi", "nvml_mismatch", "perftest",
                "proc_driver_nvidia_version", "ufw_user_rules", "unattended_upgrades", "vllm_chat", "vllm_models",
                "vllm_sse"}


def _structural_sources():
    for name in sorted(EXPECTED):
        if EXPECTED[name][0] not in LOGS:
            yield name, EXPECTED[name][0], None
    for n, (kind, text) in enumerate(OWN):
        yield f"own-{kind}-{n}", kind, text
    from . import test_parsers_ray as ray

    for n, text in enumerate([ray.STATUS_PG_PENDING, ray.STATUS_V2_IDLE, ray.STATUS_RAY_2_2, ray.STATUS_NO_NODE_TYPES]):
        yield f"own-ray_status-more-{n}", "ray_status", text


SOURCES = list(_structural_sources())


def _param(name, kind, own):
    marks = [pytest.mark.xfail(reason=f"{kind}: not yet held to the structural-damage rule", strict=False)] \
        if kind in NOT_YET_HELD else []
    return pytest.param(name, kind, own, id=name, marks=marks)


@pytest.mark.parametrize(("name", "kind", "own"), [_param(*source) for source in SOURCES])
@settings(max_examples=int(os.environ.get("GB10CHECK_FUZZ_EXAMPLES", "20")), deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.generate],  # no shrinking: the message names the damage and the line already
          suppress_health_check=[HealthCheck.too_slow])
@given(how=st.sampled_from(STRUCTURAL), at=st.integers(min_value=0, max_value=10_000))
def test_lost_repeated_swapped_or_cut_lines_give_the_same_facts_or_a_refusal(name, kind, own, how, at):
    text = own if own is not None else read_capture(name)
    plain = facts_of(kind, text)
    if "parse_error" in plain:
        return  # refused undamaged: nothing to compare
    damaged = facts_of(kind, structural(text, how, at))
    why = structural_verdict(kind, how, plain, damaged)
    assert why is None, f"{how} at content line {at} of {name}: {why}:\n{damaged}\n!=\n{plain}"
