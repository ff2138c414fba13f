"""The kernel log: `journalctl -k` (short, short-monotonic, short-iso, short-precise, short-full, short-unix), `dmesg`
(plain, -T, -x, -r, -d, -H, --time-format iso), /var/log/kern.log lines and /dev/kmsg records, one entry per line with its
timestamp as printed and, where the form has one, seconds since boot. A CONFIG_PRINTK_CALLER kernel's caller id
(`[   T3919]`, `[    C2]`) is not part of the message.

Lines of no timestamp form (journalctl's `-- Boot ... --` / `-- No entries --`, our `-- source: dmesg --` note,
stack-trace continuation lines) are not entries; `-- source: X --` names where the lines came from.
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError, parser

_MONO = r"\[\s*(?P<mono>\d+\.\d+)(?:\s*<\s*[\d.]+>)?\]"  # dmesg -d adds the delta: "[  781.456651 <    0.000123>]"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?"
FORMS = (
    # journalctl -o short-monotonic: "[  781.456651] host kernel: text"
    re.compile(_MONO + r"\s+(?P<host>\S+)\s+kernel:\s?(?P<text>.*)$"),
    # dmesg -x: "kern  :info  : [  781.456651] text"
    re.compile(r"\w+\s*:\s*\w+\s*:\s*" + _MONO + r"\s?(?P<text>.*)$"),
    # dmesg: "[  781.456651] text"; dmesg -r: "<6>[  781.456651] text"
    re.compile(r"(?:<\d+>)?" + _MONO + r"\s?(?P<text>.*)$"),
    # dmesg -T: "[Mon Nov 30 21:14:51 2026] text"; day and month in the locale's words: "[Di Dez  1 09:00:00 2026]"
    re.compile(r"(?:<\d+>)?\[(?P<stamp>[^\W\d_]{2,}\.? [^\W\d_]{3,}\.?\s+\d+ \d\d:\d\d:\d\d \d{4})\]\s?(?P<text>.*)$"),
    # journalctl (short / short-precise, /var/log/kern.log): "Nov 30 21:14:51[.123456] host kernel: text"
    re.compile(r"(?P<stamp>" + _MONTH + r"\s+\d+ \d\d:\d\d:\d\d(?:\.\d+)?)\s+(?P<host>\S+)\s+kernel:\s?(?P<text>.*)$"),
    # journalctl -o short-full: "Mon 2026-11-30 21:14:51 UTC host kernel: text"
    re.compile(r"(?P<stamp>\w{3} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Za-z][\w+-]*)?)\s+(?P<host>\S+)\s+kernel:\s?(?P<text>.*)$"),
    # journalctl -o short-iso[-precise], rsyslog's RFC 3339 files: "2026-11-30T21:14:51+0000 host kernel: text"
    re.compile(r"(?P<stamp>" + _ISO + r")\s+(?P<host>\S+)\s+kernel:\s?(?P<text>.*)$"),
    # journalctl -o short-unix: "1764537291.123456 host kernel: text"
    re.compile(r"(?P<stamp>\d{9,}\.\d+)\s+(?P<host>\S+)\s+kernel:\s?(?P<text>.*)$"),
    # dmesg --time-format iso: "2026-11-30T21:14:51,123456+00:00 text"
    re.compile(r"(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d+[+-]\d\d:\d\d)\s(?P<text>.*)$"),
    # dmesg -H / --time-format reltime: "[Nov30 21:14] text" for a new minute, "[  +0.000123] text" after it
    re.compile(r"\[(?P<stamp>[^\W\d_]{3}\d{1,2} \d\d:\d\d)\]\s?(?P<text>.*)$"),
    re.compile(r"\[\s*(?P<stamp>\+\d+\.\d+)\]\s?(?P<text>.*)$"),
    # /dev/kmsg: "6,1234,781456651,-;text" (microseconds since boot; `,caller=T123` may follow the flag)
    re.compile(r"(?P<prio>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;(?P<text>.*)$"),
)
# The caller id a CONFIG_PRINTK_CALLER kernel adds before the message: "[  520.899558] [   T3919] text", "[    C2]".
CALLER = re.compile(r"^\[\s*[TC]\d+\]\s?")
# A syslog or journal line carries the kernel's own "[  781.456651] " when printk.time is on.
INNER_MONO = re.compile(r"^\[\s*(\d+\.\d+)\]\s?")
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
            text = g["text"].strip()
            if mono is None and (inner := INNER_MONO.match(text)):
                mono, text = float(inner[1]), text[inner.end():]
            return KmsgLine(line, CALLER.sub("", text, count=1), mono, g.get("stamp"))
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
