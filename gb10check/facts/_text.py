"""Helpers shared by the parsers: the noise front end, errors, number parsing.

Real outputs reach us wrapped in noise: ANSI colour, a shell prompt with the command line (with a
virtualenv or conda prefix, or a two-line zsh prompt), `srun -l` / `mpirun --tag-output` / `mpiexec -l` /
`pdsh` labels before every line, a markdown quote (`> `) or code fence (```), CR line ends, trailing spaces, and what a web
page, issue tracker, chat or mail client does to a copied text: nested (`> > `) or mail (`>> `) quotes, HTML entities
(`&gt;`), no-break and zero-width spaces, a BOM, typographic quotes, the whole block indented (a code block in a list item).
`clean()` takes all of it off once, for every parser, and keeps the command lines apart: they say which interface
a section belongs to, or which unit `free -h` printed in. Every parser is wrapped by `@parser`, so
`perftest.parse(text)` and `gb10check parse perftest FILE` read the same facts.
"""

import copy
import functools
import inspect
import re
from dataclasses import dataclass, field

import yaml


def yaml_document(text: str):
    """yaml.safe_load(text), a copy of its own each call: one output is read by many checks, and parsed once."""
    return copy.deepcopy(_safe_load(text))


@functools.lru_cache(maxsize=16)
def _safe_load(text: str):
    return yaml.safe_load(text)  # an error is raised each time, never kept


class ParseError(ValueError):
    """Text that is not what a parser expects. The message says what was expected."""

    def __init__(self, kind: str, expected: str, text: str = ""):
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        excerpt = lines[0][:80] if lines else "<empty>"
        got = repr(excerpt)
        # The tool's own error after a first line that says little ("[]" then "Error: No such object: vllm"): shown too.
        if (error := next((line for line in lines[1:] if ERROR_LINE.search(line)), None)) and not ERROR_LINE.search(lines[0]):
            got += f" ... {error[:160]!r}"
        super().__init__(f"{kind}: expected {expected}; got {got}")
        self.kind = kind


# A line in which a tool says it failed: what a ParseError shows of an output besides its first line.
ERROR_LINE = re.compile(r"^(?:Error\b|ERROR\b|error:|Cannot |Can't |Could not |Couldn't |Failed |Unable |No such |Traceback\b"
                        r"|\w*(?:Error|Exception): |[\w.-]+: .*(?:command not found|Permission denied|No such file or directory"
                        r"|Operation not permitted|No such device|not found))", re.I)


# CSI sequences (colour, cursor), OSC sequences (window titles, ended by BEL or ST), and lone ESC-x.
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

# Commands people paste after a bare '#' prompt (a root shell). A bare '#' is otherwise a comment
# line of the output itself (nccl-tests prints dozens), so it counts as a prompt only before these.
TOOLS = (r"sudo|ibdev2netdev|ib_\w+|nvidia-smi|cat|free|ethtool|ip|ufw|docker|curl|show_gids|rdma|ibstat|ibv_devinfo"
         r"|numactl|mpirun|srun|pdsh|grep|journalctl|dmesg|vllm|kubectl|df|dd|lspci|nmcli|apt-config|apt-mark|dpkg-query|dpkg"
         r"|\./\S+|NCCL_\w+=\S*|[A-Z_]+=\S+")
_VENV = r"(?:\([\w.@ -]+\)\s*)?"
_USER_HOST = r"[\w.-]*@[\w.-]+"  # the user may be redacted: "@host:~$"
PROMPT = re.compile(
    r"^\s*" + _VENV + r"(?:"
    + _USER_HOST + r"(?::[^\s$#%>]*)?(?:\s+\([\w./-]+\))?\s*[$#%>]"  # user@host:~$  root@node-0:/#  u@h:~/x (main)$
    + r"|\[" + _USER_HOST + r"[^\]]*\]\s*[$#]"         # [user@host dir]$
    + r"|" + _USER_HOST + r"\s+\S+\s*[$#%>]"           # User@MacBookAir ~ %   user@host ~> (fish)
    + r"|[\w.-]+:[~/][^\s$#]*\s*[$#]"                  # host:~/dir$ (no user, or cut by the author)
    + r"|~[\w./-]*\s*[$#]"                            # ~$  ~/vllm $ (user and host cut by the author)
    + r"|(?:ba|z|k|da)?sh-\d+(?:\.\d+)*[$#]"            # bash-5.2$  sh-5.1# (a shell without a profile: containers)
    + r"|➜\s+\S+(?:\s+git:\([^)]*\))?(?:\s+✗)?"        # oh-my-zsh: ➜  vllm git:(main) ✗
    + r"|PS [A-Za-z]:\\[^>]*>"                           # PowerShell: PS C:\Users\lab>
    + r"|└─+[$#]"                                      # zsh two-line prompt, second line
    + r"|[$%❯]"                                        # bare $ % ❯
    + r"|#(?=\s+(?:" + TOOLS + r")\b)"                 # bare # before a known command
    + r"|(?:/[\w./-]*|[\w.-]+) ?#(?=\s+(?:" + TOOLS + r")\b)"  # busybox ash `/ # `, `/app # `; `root# ` (snap shell)
    + r")(?:\s+(?P<command>\S.*?))?\s*$"
)
PROMPT_DECORATION = re.compile(r"^\s*┌──.*$")  # zsh two-line prompt, first line: ┌──(kali㉿kali)-[~]
FENCE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")  # a markdown code fence around a pasted output: ```, ```console
SRUN_LABEL = re.compile(r"^\s*(\d+):(?: |$)")  # srun -l: "0: ", ranks from 0 (a PCI domain "0000:01:00.0" has no space)
MPIRUN_LABEL = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>: ?")
HYDRA_LABEL = re.compile(r"^\[(\d+)\](?: |$)")  # MPICH / Intel MPI mpiexec -l, -prepend-rank: "[0] "
PDSH_LABEL = re.compile(r"^(?P<host>[a-z0-9][a-z0-9.-]*[0-9-][a-z0-9.-]*): ")
TOOL_NAME = re.compile(r"(?:" + TOOLS + r"|nvidia-container-cli|docker-compose|apt-get|update-initramfs|ib_\w+)")
QUOTE = re.compile(r"^\s*> ?")
# What web pages, chats and mail clients put in copied text: no-break and narrow/thin spaces for spaces (HTML `&nbsp;` runs),
# zero-width spaces and word joiners (chat line breaking), a BOM at the start (a file saved on Windows).
SPACES = re.compile(r"[\u00a0\u2000-\u200a\u202f\u205f]")
INVISIBLE = re.compile(r"[\u200b\u2060\ufeff]")
TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
# HTML entities a scraped page leaves: undone only where every `&` of the text starts one (a scraper escapes them all).
ENTITY = re.compile(r"&(?:gt|lt|amp|quot|apos|nbsp|#39|#x27|#34|#x22|#62|#60|#38);")
ENTITIES = {"&gt;": ">", "&lt;": "<", "&amp;": "&", "&quot;": '"', "&apos;": "'", "&nbsp;": " ", "&#39;": "'", "&#x27;": "'",
            "&#34;": '"', "&#x22;": '"', "&#62;": ">", "&#60;": "<", "&#38;": "&"}
BARE_COMMAND = re.compile(r"^\s*(?:" + TOOLS + r")(?:\s|$)")  # a command pasted without its prompt, on the first line


@dataclass
class Cleaned:
    text: str                      # the output alone
    commands: list[str] = field(default_factory=list)  # command lines, in order, without their prompts
    sections: list[tuple[str | None, str]] = field(default_factory=list)  # (command or None, its output)
    hosts: list[str | None] = field(default_factory=list)  # each section's host, as its prompt names it (or None)

    @property
    def command(self) -> str | None:
        """The command whose output this is: the first one followed by output."""
        with_output = [cmd for cmd, out in self.sections if cmd and out.strip()]
        return with_output[0] if with_output else (self.commands[0] if self.commands else None)


# The host a prompt names: user@HOST:~$, [user@HOST dir]$, HOST:~/dir$.
PROMPT_HOST = re.compile(r"^\s*" + _VENV + r"\[?[\w.-]*@(?P<host>[\w.-]+)|^\s*" + _VENV + r"(?P<bare>[\w.-]+):[~/]")


def prompt_host(line: str) -> str | None:
    m = PROMPT_HOST.match(line) if PROMPT.match(line) else None
    return (m["host"] or m["bare"]) if m else None


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def prompt_command(line: str) -> str | None:
    """The command of a shell prompt line ('' for a prompt with none), or None if it is not a prompt."""
    m = PROMPT.match(line)
    return None if m is None else (m["command"] or "")


def is_prompt(line: str) -> bool:
    return prompt_command(line) is not None


def _strip_labels(lines: list[str]) -> list[str]:
    """Per-line labels that launchers add (`0: `, `[1,0]<stdout>: `, `host-1: `), when every output line has one.

    The prompt that started the launcher is not labelled, so prompt lines are left out of the test."""
    body = [line for line in lines if line.strip() and not is_prompt(line)]
    if not body:
        return lines
    if all(MPIRUN_LABEL.match(line) for line in body):
        return [MPIRUN_LABEL.sub("", line, count=1) for line in lines]
    for label in (SRUN_LABEL, HYDRA_LABEL):
        ranks = [m[1] if (m := label.match(line)) else None for line in body]
        # Rank 0 is always among the labels; `ip -o` lines start "1: lo ..." too, but no interface has index 0.
        if None not in ranks and "0" in {r.lstrip("0") or "0" for r in ranks}:
            return [label.sub("", line, count=1) for line in lines]
    # A tool's own error lines ("dpkg-query: no packages found matching X", one per pattern) look like a host label.
    hosts = [m["host"] if (m := PDSH_LABEL.match(line)) and not TOOL_NAME.fullmatch(m["host"]) else None for line in body]
    # pdsh labels repeat (a few hosts, many lines); `key: value` outputs (ethtool -i) have a new key every line.
    if len(body) >= 2 and None not in hosts and len(set(hosts)) * 2 <= len(body):
        return [PDSH_LABEL.sub("", line, count=1) for line in lines]
    return lines


def _unescape(text: str) -> str:
    if ENTITY.search(text) and text.count("&") == len(ENTITY.findall(text)):
        return ENTITY.sub(lambda m: ENTITIES[m[0]], text)
    return text


def _gutter(lines: list[str]) -> list[str]:
    """Line numbers before every line, counting up by one (blank lines numbered too): taken off. Only a full run counts."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    numbers = [int(m[1]) if (m := GUTTER.match(line)) else None for line in lines]
    if len(lines) < 2 or None in numbers or numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return lines
    if not any(GUTTER.sub("", line, count=1).strip() for line in lines):
        return lines  # numbers alone: the output itself (`nvidia-smi --query-gpu=index --format=csv,noheader`)
    return [GUTTER.sub("", line, count=1) for line in lines]


def _unquote(lines: list[str]) -> list[str]:
    """Quoted in markdown or mail, maybe several levels deep (`> > `, `>> `): one level at a time."""
    body = [line for line in lines if line.strip()]
    if any(line.startswith(("< ", "* ")) for line in body):  # curl -v marks request lines with "> " too
        return lines
    while body and sum(bool(QUOTE.match(line)) for line in body) * 2 >= len(body):
        lines = [QUOTE.sub("", line, count=1) for line in lines]
        body = [line for line in lines if line.strip()]
    return lines


def _dedent(lines: list[str]) -> list[str]:
    """The indentation every line shares (a code block in a markdown list item, a mail client's tab): taken off."""
    body = [line for line in lines if line.strip()]
    if not body:
        return lines
    prefix = min(len(line) - len(line.lstrip()) for line in body)
    while prefix and len({line[:prefix] for line in body}) > 1:  # "  \t" and "    " share only two spaces
        prefix -= 1
    return [line[prefix:] for line in lines] if prefix else lines


# What stands before a progress redraw on its line: nothing, or a process label ("(EngineCore pid=803) ", "[rank0]: ").
REDRAW_PREFIX = re.compile(r"^\s*(?:>\s*)*(?:[(\[][^()\[\]]*[)\]]:?\s*)?$")  # after a quote marker too
# A line-number gutter a pastebin, a diff view or `cat -n` puts before every line: "  12 | ", "12\t", "  12 │ ", "  12  ".
GUTTER = re.compile(r"^\s*(\d+)(?:\t| ?[|│] ?|(?= )|$)")  # spaces after it: left to _dedent


def _redraw(line: str) -> list[str]:
    """A line's lone CRs: a progress redraw keeps what was drawn last; else they end lines.

    Progress output (tqdm, dd status=progress) starts its line with the CR, after nothing but a label; a CR after text
    ends that line (a paste through an editor that mixed line ends). Redraws after text would read as lines of their own."""
    parts = line.split("\r")
    drawn = [part for part in parts if part.strip()]
    if len(parts) == 1 or not drawn:
        return [parts[-1]]
    return [drawn[-1]] if REDRAW_PREFIX.match(parts[0]) else parts


def clean(text: str) -> Cleaned:
    text = INVISIBLE.sub("", SPACES.sub(" ", _unescape(text)))
    if not re.search(r"^\s*(?:[{\[]|data:)", text, re.M):  # JSON strings keep their quotes (a model writes "it’s")
        text = text.translate(TYPOGRAPHIC)
    text = strip_ansi(text.replace("\r\n", "\n"))
    if "\n" not in text.rstrip("\r"):  # CR alone ends every line (a classic Mac text, a paste that lost its LFs)
        text = text.replace("\r", "\n")
    lines = _gutter([line.rstrip() for line in text.split("\n")])
    # Launcher labels stand before the first CR of a line; a lone CR then redraws the rest (progress output). Quotes
    # come off around them: a mail quoting labelled lines, or labelled lines of a quoted paste.
    lines = [part.rstrip() for line in _strip_labels(_unquote(lines)) for part in _redraw(line)]
    lines = _unquote(lines)
    lines = _dedent(lines)
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    if first is not None and prompt_command(lines[first]) is None and BARE_COMMAND.match(lines[first]):
        lines[first] = "$ " + lines[first].strip()
    sections: list[tuple[str | None, list[str], str | None]] = [(None, [], None)]
    for line in lines:
        if PROMPT_DECORATION.match(line) or FENCE.match(line):
            continue
        command = prompt_command(line)
        if command is not None:
            sections.append((command or None, [], prompt_host(line)))
            continue
        sections[-1][1].append(line)
    kept = [(cmd, out, host) for cmd, out, host in sections if cmd is not None or any(s.strip() for s in out)]
    out_lines = [line for _, out, _ in kept for line in out]
    return Cleaned(text="\n".join(out_lines).strip("\n") + ("\n" if out_lines else ""),
                   commands=[cmd for cmd, _, _ in kept if cmd],
                   sections=[(cmd, "\n".join(out).strip("\n")) for cmd, out, _ in kept],
                   hosts=[host for _, _, host in kept])


def parser(fn):
    """Wrap a parser so it reads cleaned text; it gets `command=` / `sections=` too if it asks for them."""
    params = inspect.signature(fn).parameters

    @functools.wraps(fn)
    def wrapper(text: str, *args, **kwargs):
        cleaned = clean(text)
        for name in ("command", "commands", "sections", "hosts"):
            if name in params and name not in kwargs:
                kwargs[name] = getattr(cleaned, name)
        return fn(cleaned.text, *args, **kwargs)

    return wrapper


def to_float(value: str) -> float | None:
    """A number, or None for the placeholders tools print instead ([N/A], Not Supported, N/A, -)."""
    value = value.strip().strip("[]")
    try:
        return float(value.replace(",", ""))
    except ValueError:
        return None


KIB_PER_GIB = 1024 * 1024


def kib_to_gib(kib: float) -> float:
    return round(kib / KIB_PER_GIB, 3)
