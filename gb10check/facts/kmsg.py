"""The kernel log: `journalctl -k` (short, short-monotonic, short-iso, short-precise), `dmesg` (plain, -T, -x) and
/dev/kmsg records, one entry per line with its timestamp as printed and, where the form has one, seconds since boot.

Lines of no timestamp form (journalctl's `-- Boot ... --` / `-- No entries --`, our `-- source: dmesg --` note,
stack-trace continuation lines) are not entries; `-- source: X --` names where the lines came from.
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError, parser

_MONO = r"\[\s*(?P<mono>\d+\.\d+)\]"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
FORMS = (
    # journalctl -o short-monotonic: "[  781.456651] host kernel: text"
    re.compile(_MONO + r"\s+(?P<host>\S+)\s+kernel:\s?(?P<text>.*)$"),
    # dmesg -x: "kern  :info  : [  781.456651] text"
    re.compile(r"\w+\s*:\s*\w+\s*:\s*" + _MONO + r"\s?(?P<text>.*)$"),
    # dmesg: "[  781.456651] text"
    re.compile(_MONO + r"\s?(?P<text>.*)$"),
    # dmesg -T: "[Mon Nov 30 21:14:51 2026] text"
    re.compile(r"\[(?P<stamp>\w{3} " + _MONTH + r"\s+\d+ \d\d:\d\d:\d\d \d{4})\]\s?(?P<text>.*)$"),
    # journalctl (short / short-precise): "Nov 30 21:14:51[.123456] host kernel: text"
    re.compile(r"(?P<stamp>" + _MONTH + r"\s+\d+ \d\d:\d\d:\d\d(?:\.\d+)?)\s+(?P<host>\S+)\s+kernel:\s?(?P<text>.*)$"),
    # journalctl -o short-iso[-precise]: "2026-11-30T21:14:51+0000 host kernel: text"
    re.compile(r"(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)?)\s+(?P<host>\S+)\s+kernel:\s?(?P<text>.*)$"),
    # /dev/kmsg: "6,1234,781456651,-;text" (microseconds since boot)
    re.compile(r"(?P<prio>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;(?P<text>.*)$"),
)
NOTE = re.compile(r"^-- (?P<note>.+?) --$")


@dataclass
class KmsgLine:
    line: str  # as printed
    text: str  # the message, without timestamp and host
    since_boot_s: float | None  # seconds since boot, where the form prints them
    stamp: str | None  # the wall-clock timestamp as printed, where the form prints one


@dataclass
class KernelLog:
    source: str | None  # journalctl | dmesg | ..., from a `-- source: X --` note
    entries: list[KmsgLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _entry(line: str) -> KmsgLine | None:
    for form in FORMS:
        m = form.match(line)
        if m:
            g = m.groupdict()
            mono = float(g["mono"]) if g.get("mono") else (int(g["usec"]) / 1e6 if g.get("usec") else None)
            return KmsgLine(line, g["text"].strip(), mono, g.get("stamp"))
    return None


@parser
def parse(text: str) -> KernelLog:
    log = KernelLog(None)
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if (n := NOTE.match(line)):
            log.notes.append(n["note"])
            if n["note"].startswith("source: "):
                log.source = n["note"][len("source: "):].strip()
            continue
        entry = _entry(line)
        if entry is not None:
            log.entries.append(entry)
    if not log.entries and log.source is None:
        raise ParseError("kernel_log", "kernel log lines ('[  781.456651] text', 'Nov 30 21:14:51 host kernel: text') "
                         "from journalctl -k or dmesg", text)
    return log
