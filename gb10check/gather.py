"""Gathering for the checks: run a command on a node and parse it, or fail saying the output was garbled."""

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
                        command=command)])


def text(node: RemoteNode, command: str, sudo: bool = False) -> str:
    """stdout and stderr together: for outputs whose errors are facts too (nvidia-smi's NVML mismatch)."""
    result = node.run(command, sudo=sudo)
    return result.stdout + result.stderr


SYSFS_IB = ("for f in /sys/class/infiniband/*/ports/*/state /sys/class/infiniband/*/ports/*/phys_state "
            "/sys/class/infiniband/*/ports/*/rate /sys/class/infiniband/*/ports/*/link_layer "
            "/sys/class/infiniband/*/ports/*/gids/* /sys/class/infiniband/*/ports/*/gid_attrs/types/* "
            "/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*; do [ -r \"$f\" ] && printf '%s:%s\\n' \"$f\" \"$(cat \"$f\" 2>/dev/null)\"; done")
