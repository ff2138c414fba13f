"""What one pytest run shares between its pytest-xdist workers (files beside the run's other files), and the locks that
keep two listeners off one port."""

import contextlib
import fcntl
import glob
import json
import os
import re
import tempfile
from typing import Any, Callable, TypeVar

from ..remote import RemoteError, RemoteNode
from .batch import Output

T = TypeVar("T")

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


def port_lock(node: str, port: int):
    """Held while something of ours listens on `port` of `node` (ib_write_bw's server, the reachability probes'
    listeners), across threads, pytest-xdist workers and runs on this runner."""
    return exclusive(f"port-{node}-{port}")


def run_shared(run_id: str | None, name: str, compute: Callable[[], T], dump: Callable[[T], Any], load: Callable[[Any], T]) -> T:
    """`compute()` once per pytest run: under pytest-xdist (`run_id`: the run's testrunuid, given to workers only) the
    first worker computes and writes its result (JSON, mode 600: outputs can hold a node's .env) beside the run's other
    files; the others read it. Without xdist, compute. (Not read from the environment: a pytest started by a test
    inherits PYTEST_XDIST_TESTRUNUID and would read another run's facts.)"""
    if run_id is None:
        return compute()
    path = shared_path(run_id, name)
    with exclusive(f"{run_id}-{name}"):
        if os.path.exists(path):
            with open(path) as f:
                return load(json.load(f))
        got = compute()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(dump(got), f)
        return got


def shared_path(run_id: str, name: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"gb10check-{run_id}-{name}.json")


def remove_shared(run_id: str) -> None:
    """The run's shared files and locks, at its end (the controller's): they hold node outputs."""
    prefix = os.path.join(tempfile.gettempdir(), f"gb10check-{run_id}-")
    for path in glob.glob(prefix + "*.json") + glob.glob(os.path.join(tempfile.gettempdir(), f"gb10check-{run_id}-*.lock")):
        with contextlib.suppress(OSError):
            os.unlink(path)


def dump_output(got: "Output | RemoteError") -> dict:
    return ({"error": type(got).__name__, "message": str(got)} if isinstance(got, RemoteError)
            else {"rc": got.rc, "stdout": got.stdout, "stderr": got.stderr})


def load_output(node: RemoteNode, command: str, got: dict) -> "Output | RemoteError":
    if "error" in got:
        from .. import remote

        return getattr(remote, got["error"], RemoteError)(got["message"]).at(node, command)
    return Output(command, got["rc"], got["stdout"], got["stderr"])
