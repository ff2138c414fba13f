"""dd: the real one (/usr/bin/dd) does the copy; a read with direct I/O (iflag=direct), where the filesystem allowed it,
reports the disk's rate from the node's state (disk_read_bytes_s): the drive is hardware the simulation lacks, and the
machine's own disk, shared by every node and every other job on it, is no GB10's. Its summary line is GNU coreutils'
(`N bytes (1.0 MB, 1.0 MiB) copied, S s, R MB/s`); everything else, and every other dd, passes through as dd printed it."""

import re
import subprocess
import sys

from .common import state

# A healthy GB10's read: the seed's model, 86.4 GiB (92771926016 bytes), loaded in about 300 s.
HEALTHY_READ_BYTES_S = 92771926016 / 300
SUMMARY = re.compile(r"^(\d+) bytes \(([^)]*)\) copied, [^,]+, .*$")


def si(value: float) -> str:
    """GNU's human-readable figure: three digits at most, one decimal under 10 ("1.0 MB", "309 MB", "10.5 MB")."""
    for unit in ("", "k", "M", "G", "T"):
        if value < 999.5 or unit == "T":
            return f"{value:.1f} {unit}" if value < 9.95 else f"{value:.0f} {unit}" if value >= 99.5 else f"{value:.3g} {unit}"
        value /= 1000
    return ""


def reported(args: list[str], rc: int, stderr: str, rate: float) -> str:
    """What dd says on stderr: a successful read with direct I/O at `rate` bytes/s, anything else as it said it."""
    lines = stderr.splitlines()
    direct = any(a.startswith("iflag=") and "direct" in a.split("=", 1)[1].split(",") for a in args)
    if rc == 0 and direct and lines and (m := SUMMARY.match(lines[-1])):
        copied = int(m[1])
        lines[-1] = f"{copied} bytes ({m[2]}) copied, {copied / rate:g} s, {si(rate)}B/s"
    return "".join(f"{line}\n" for line in lines)


def dd(args: list[str]) -> int:
    done = subprocess.run(["/usr/bin/dd", *args], stdin=sys.stdin, stdout=sys.stdout, stderr=subprocess.PIPE, text=True,
                          timeout=600)
    sys.stderr.write(reported(args, done.returncode, done.stderr, float(state().get("disk_read_bytes_s") or HEALTHY_READ_BYTES_S)))
    return done.returncode
