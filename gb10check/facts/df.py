"""df: free space per filesystem. `df [-h|-B1] [--output=...] [PATH...]`: the header names the columns (`Mounted on`
is one column; `Avail` / `Available`), sizes are 1K blocks unless the header says otherwise (`1B-blocks`,
`1M-blocks`), `-h` prints suffixed sizes (76G; with `-H`/`--si`, on the command line, powers of 1000), and `-B1` prints bytes under a bare `Avail` (the command line, or
gb10check's `-- df -B1 PATH --` note before each run, says so). Error lines (`df: /x: No such file or directory`)
are not rows. A filesystem name too long for its column (`/dev/mapper/ubuntu--vg-ubuntu--lv`) puts the rest of its row
on the next line; a mount point may hold spaces.
"""

import re
from dataclasses import dataclass

from ._text import ParseError, parser

NOTE = re.compile(r"^-- df (?P<flags>(?:-\S+\s+)*)(?P<path>\S.*?) --$")
_SUFFIX = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


@dataclass
class DfRow:
    target: str  # the mount point
    avail_bytes: int | None
    path: str | None = None  # the path asked about (gb10check's note), when there was one
    filesystem: str | None = None


def _size(value: str, unit: int, si: bool = False) -> int | None:
    m = re.fullmatch(r"(\d+(?:[.,]\d+)?)([kKMGTP]?)i?B?", value)
    if not m:
        return None
    number = float(m[1].replace(",", "."))
    if not m[2]:
        return int(number * unit)
    return int(number * (1000 ** " KMGTP".index(m[2].upper()) if si else _SUFFIX[m[2].upper()]))


def _header(line: str) -> list[str] | None:
    if not re.search(r"\bMounted on(\s|$)", line) or not re.search(r"\bAvail(able)?\b", line):
        return None
    columns = line.replace("Mounted on", "Mounted_on").split()
    # Column names only (a line cut into another, `$Mounted on`, is not a header).
    return columns if all(re.fullmatch(r"[A-Za-z0-9%_-]+", c) for c in columns) else None


def _paths(command: str) -> list[str] | None:
    """The paths a `df` command line asks about (None when it is not a plain df command)."""
    words = command.split()
    if not words or words[0] != "df" or any(c in command for c in "|;&<>$`"):
        return None
    paths, skip = [], False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in ("-B", "-t", "-x", "--block-size", "--type", "--exclude-type", "--output"):
            skip = True
        elif not word.startswith("-"):
            paths.append(word)
    return paths


@parser
def parse(text: str, command: str | None = None) -> list[DfRow]:
    rows: list[DfRow] = []
    columns: list[str] | None = None
    path, unit = None, 1024
    default_unit = 1 if command and re.search(r"(-B\s*1|--block-size=1)(\s|$)", command) else 1024
    si = bool(command and re.search(r"(?:^|\s)(?:-[a-zA-Z]*H[a-zA-Z]*|--si)(?:\s|$)", command))
    wrapped = ""  # a filesystem name too long for its column: df (without -P) prints the rest of its row on the next line
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("df:"):
            continue
        if wrapped:
            line, wrapped = f"{wrapped} {line}", ""
        if (n := NOTE.match(line)):
            path = n["path"]
            default_unit = 1 if re.search(r"-B1\b|--block-size=1\b", n["flags"]) else 1024
            si = bool(re.search(r"(?:^|\s)(?:-[a-zA-Z]*H[a-zA-Z]*|--si)(?:\s|$)", n["flags"]))
            continue
        if (h := _header(line)) is not None:
            columns, unit = h, default_unit
            blocks = next((c for c in h if c.endswith("-blocks")), None)
            if blocks:
                unit = _size(blocks[:-len("-blocks")], 1, "kB" in blocks or "MB" in blocks or "GB" in blocks) or 1024
            elif "Size" in h:
                unit = 1  # -h / -H: a number without a suffix is bytes
            elif command is None and path is None:
                # `--output=...,avail` prints a bare Avail in the unit of -B: without the command line, no unit
                raise ParseError("df", "df's command line (or gb10check's note) with a bare 'Avail' column: it says "
                                       "the unit", line)
            continue
        if columns is None:
            raise ParseError("df", "df's header line ('... Avail ... Mounted on') before its rows", line)
        cells = line.split()
        if len(cells) == 1 and columns[0] == "Filesystem" and len(columns) > 1:
            wrapped = line
            continue
        if len(cells) > len(columns) and columns[-1] == "Mounted_on":  # a mount point with spaces in it
            cells = cells[:len(columns) - 1] + [" ".join(cells[len(columns) - 1:])]
        if len(cells) != len(columns):  # a row cut short, or another tool's line: never a filesystem fewer
            raise ParseError("df", f"rows of {len(columns)} columns ({' '.join(columns)})", line)
        row = dict(zip(columns, cells))
        avail = row.get("Avail", row.get("Available"))
        if avail is not None and _size(avail, unit, si) is None:
            raise ParseError("df", "a size in the Avail column", line)
        # Two paths on one filesystem give the same row twice; without paths on the command line a row is a filesystem.
        if not (command and _paths(command)) and any(
                (r.target, r.filesystem, r.path) == (row["Mounted_on"], row.get("Filesystem"), path) for r in rows):
            raise ParseError("df", f"each filesystem once ({row['Mounted_on']} is listed twice)", line)
        rows.append(DfRow(row["Mounted_on"], _size(avail, unit, si) if avail is not None else None, path,
                          row.get("Filesystem")))
    # df prints one row per path it was asked about (the same filesystem twice for two paths on it), or an error line:
    # with the command line at hand, a row more or fewer is a damaged output.
    asked = _paths(command) if command and not NOTE.search(text) else None
    errors = sum(1 for raw in text.splitlines() if raw.strip().startswith("df:"))
    if asked and len(rows) + errors != len(asked):
        raise ParseError("df", f"a row or an error line for each of the {len(asked)} paths on the command line "
                               f"(got {len(rows)} rows and {errors} errors)", text)
    if not rows:
        raise ParseError("df", "a header with 'Mounted on' and 'Avail' and rows below it (df [-B1] [--output=target,avail] PATH)", text)
    return rows
