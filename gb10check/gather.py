"""Gathering for the checks: run a command on a node and parse it, or fail saying the output was garbled."""

import contextlib
import fcntl
import os
import re
import tempfile
from typing import Any

from dataclasses import dataclass

from . import compose, facts
from .remedies import Code
from .remote import RemoteNode
from .verdict import Finding, not_checked, report


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


@dataclass
class DryRun:
    """The service's command run on the node with a stub `vllm`: the arguments vllm would get, or None."""

    command: str
    rc: int
    args: list[str] | None
    output: str

    @property
    def could_not_run(self) -> bool:
        return self.args is None and self.rc in compose.DRY_RUN_CANNOT_RUN


def compose_dry_run(node: RemoteNode, service: dict) -> DryRun | None:
    """Run the (interpolated) service's command on the node itself, never on the runner; None if it has no command."""
    command = compose.dry_run_command(service)
    if command is None:
        return None
    out = node.run(command, timeout=compose.DRY_RUN_TIMEOUT_S + 10)
    return DryRun(command, out.rc, compose.parse_dry_run(out.stdout), (out.stdout + out.stderr).strip())


def vllm_args(node: RemoteNode, service: dict) -> list[str] | None:
    """The arguments the service's command gives `vllm` on this node; NOT CHECKED if the dry run could not run there."""
    dry = compose_dry_run(node, service)
    if dry is not None and dry.could_not_run:
        shown = " ".join(str(a) for a in [*(service.get("entrypoint") or []), *(service.get("command") or [])])[:200]
        not_checked(Code.DRY_RUN_FAILED, node.name, f"the dry run exited {dry.rc}: {dry.output[-200:] or 'no output'}",
                    "the service's command to reach `vllm` within the dry run's time", command=shown)
    return dry.args if dry else None
