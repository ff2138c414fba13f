"""Gathering for the checks: run a command on a node and parse it, or fail saying the output was garbled."""

import contextlib
import fcntl
import os
import re
import tempfile
from typing import Any

from . import facts
from .remedies import Code
from .remote import RemoteNode
from .verdict import Finding, report


def parsed(node: RemoteNode, kind: str, command: str, sudo: bool = False, ok_codes: tuple[int, ...] = (0,)) -> Any:
    result = node.run(command, sudo=sudo)
    text = result.stdout + (result.stderr if result.rc not in ok_codes else "")
    try:
        return facts.parse(kind, text)
    except facts.ParseError as exc:
        report([Finding(Code.GARBLED, node.name, f"{exc} (exit {result.rc})", f"{facts.KINDS[kind].what} output",
                        command=command, kind=kind)])


def text(node: RemoteNode, command: str, sudo: bool = False) -> str:
    """stdout and stderr together: for outputs whose errors are facts too (nvidia-smi's NVML mismatch)."""
    result = node.run(command, sudo=sudo)
    return result.stdout + result.stderr


SYSFS_IB = ("for f in /sys/class/infiniband/*/ports/*/state /sys/class/infiniband/*/ports/*/phys_state "
            "/sys/class/infiniband/*/ports/*/rate /sys/class/infiniband/*/ports/*/link_layer "
            "/sys/class/infiniband/*/ports/*/gids/* /sys/class/infiniband/*/ports/*/gid_attrs/types/* "
            "/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*; do [ -r \"$f\" ] && printf '%s:%s\\n' \"$f\" \"$(cat \"$f\" 2>/dev/null)\"; done")


@contextlib.contextmanager
def exclusive(name: str):
    """One holder at a time across pytest-xdist workers (they share the runner's /tmp): for tests that bind a port on a node."""
    path = os.path.join(tempfile.gettempdir(), f"gb10check-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.lock")
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
