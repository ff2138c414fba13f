"""dd's summary: how many bytes it copied in how many seconds. Forms read: GNU coreutils 8.24+
(`1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.84 s, 1.3 GB/s`), older coreutils (`... bytes (1.1 GB) copied, 0.84 s,
...`, `... copied, 0.840183 seconds, ...`), translated ones (`1073741824 Bytes (1,1 GB, 1,0 GiB) kopiert, 0,84 s, 1,3 GB/s`,
`octets ... copiés`), BusyBox (`1073741824 bytes (1.0GB) copied, 0.84 seconds, 1.2GB/s`), `1 byte copied`, BSD/macOS
(`1073741824 bytes transferred in 0.842 secs (1275227316 bytes/sec)`), and `status=progress` redraws before it. The
rate is computed from bytes and seconds (the printed one is rounded and in the locale's units). The `records in/out` lines, and the error line of a dd that failed, are kept.
"""

import re
from dataclasses import dataclass

from ._text import ParseError, parser

SUMMARY = re.compile(r"^(?P<bytes>\d+)\s+\S+(?:\s+\([^)]*\))?\s+\S+,\s+(?P<seconds>\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?)\s*(?:s|seconds?|sec)\b")
# The same in locales that write it without spaces and with full-width punctuation:
# "1073741824字节（1.1 GB，1.0 GiB）已复制，0.84 s，1.3 GB/s".
SUMMARY_CJK = re.compile(r"^(?P<bytes>\d+)\s*[^\d\s(（,，]+\s*[(（][^)）]*[)）]\s*[^\d\s,，]+\s*[,，]\s*"
                         r"(?P<seconds>\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?)\s*(?:s|秒)")
# BSD and macOS dd: "1073741824 bytes transferred in 0.842000 secs (1275227316 bytes/sec)".
SUMMARY_BSD = re.compile(r"^(?P<bytes>\d+) bytes transferred in (?P<seconds>\d+(?:\.\d+)?) secs\b")
RECORDS = re.compile(r"^(?P<full>\d+)\+(?P<partial>\d+)\s+\S+")


@dataclass
class DdRun:
    bytes: int
    seconds: float
    errors: list[str]

    @property
    def bytes_per_s(self) -> float | None:
        return self.bytes / self.seconds if self.seconds > 0 else None


@parser
def parse(text: str) -> DdRun:
    found = None
    errors = []
    for line in text.splitlines():
        line = line.strip()
        if (m := SUMMARY.match(line) or SUMMARY_CJK.match(line) or SUMMARY_BSD.match(line)):
            found = (int(m["bytes"]), float(m["seconds"].replace(",", ".")))
        elif line.startswith("dd:"):
            errors.append(line)
    if found is None:
        raise ParseError("dd", "dd's summary line (`N bytes (...) copied, S s, R GB/s`)", "\n".join(errors) or text)
    return DdRun(found[0], found[1], errors)
