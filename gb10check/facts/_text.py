"""Helpers shared by the parsers: errors, ANSI stripping, number parsing."""

import re


class ParseError(ValueError):
    """Text that is not what a parser expects. The message says what was expected."""

    def __init__(self, kind: str, expected: str, text: str = ""):
        excerpt = text.strip().splitlines()[0][:80] if text.strip() else "<empty>"
        super().__init__(f"{kind}: expected {expected}; got {excerpt!r}")
        self.kind = kind


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# A shell prompt line copied along with a command's output: "user@host:~$ cmd", "$ cmd", "# cmd".
PROMPT = re.compile(r"^\s*(?:\S+@\S+[:\s].*?[$#]|[$#❯>%])\s+\S")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def is_prompt(line: str) -> bool:
    return bool(PROMPT.match(line))


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
