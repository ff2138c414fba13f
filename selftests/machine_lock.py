"""Machine-wide locks of the self-tests: flocks under /run, shared by every self-test run on this machine.

- The vLLM lock: one run's chain of vLLM tests at a time (take_machine_lock, held to the end of the process).
- The machine share: every self-test holds it shared while it runs; a measurement whose floor is a speed takes it
  alone (MachineShare.alone): it waits for the running tests of every worker and run to end, and none starts until it
  is done. A turnstile file keeps new tests from starting while the measurement waits, so it cannot starve.

The kernel releases a flock when its process ends, however it ends. Every wait has a limit and fails naming what held
it (what the holder wrote into the file).
"""

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def holder_note(why: str) -> bytes:
    return (f"pid {os.getpid()}, simulated instance {os.environ.get('GB10CHECK_SIM_INSTANCE', '0')}, checkout {REPO}, "
            f"{why}since {time.strftime('%H:%M:%S')}\n").encode()


def _written(fd: int) -> str:
    return os.pread(fd, 500, 0).decode(errors="replace").strip() or "a process that wrote nothing"


def wait_for_flock(fd: int, op: int, wait_s: float, poll_s: float, refusal) -> None:
    """flock(fd, op) within wait_s, else pytest.fail(refusal(what the file says))."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, op | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                pytest.fail(refusal(_written(fd)), pytrace=False)
            time.sleep(poll_s)


def take_machine_lock(path: Path, wait_s: float, poll_s: float = 2.0) -> int:
    """An exclusive flock on path (its descriptor, held until closed or the process ends), or a failure naming the
    holder (what it wrote into the file) once wait_s has passed."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        wait_for_flock(fd, fcntl.LOCK_EX, wait_s, poll_s, lambda holder: (
            f"another self-test run on this machine has held {path} for over {wait_s:.0f} s ({holder}): its vLLM tests "
            "must end before this run's start; stop it, or wait and run again"))
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, holder_note(""), 0)
    return fd


class MachineShare:
    """Shared while a self-test runs; alone for a speed measurement. Without a writable `directory` (a run without
    root, which cannot boot the simulated nodes and so never measures) sharing does nothing and alone() fails."""

    def __init__(self, directory: Path = Path("/run"), wait_s: float = 1800, poll_s: float = 0.2):
        self.machine = directory / "gb10check-selftests-machine.lock"
        self.turnstile = directory / "gb10check-selftests-turnstile.lock"
        self.wait_s, self.poll_s = wait_s, poll_s
        self._fds: tuple[int, int] | None = None
        self.held = False

    def _open(self) -> tuple[int, int] | None:
        if self._fds is None:
            try:
                self._fds = (os.open(self.machine, os.O_RDWR | os.O_CREAT, 0o644),
                             os.open(self.turnstile, os.O_RDWR | os.O_CREAT, 0o644))
            except OSError:
                return None
        return self._fds

    def _through_turnstile(self, turnstile: int) -> None:
        wait_for_flock(turnstile, fcntl.LOCK_EX, self.wait_s, self.poll_s, lambda holder: (
            f"a measurement that runs alone has kept this test from starting for over {self.wait_s:.0f} s "
            f"({self.turnstile}: {holder}): stop that run, or wait and run again"))

    def share(self) -> None:
        fds = self._open()
        if fds is None or self.held:
            return
        machine, turnstile = fds
        self._through_turnstile(turnstile)
        try:
            wait_for_flock(machine, fcntl.LOCK_SH, self.wait_s, self.poll_s, lambda holder: (
                f"a measurement has had the machine to itself for over {self.wait_s:.0f} s ({self.machine})"))
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        self.held = True

    def release(self) -> None:
        if self._fds is not None and self.held:
            fcntl.flock(self._fds[0], fcntl.LOCK_UN)
            self.held = False

    @contextmanager
    def alone(self, why: str):
        """The machine to this process while the block runs: every other self-test of every run on it has ended and
        none starts until the block ends. The test's own share is given up first, so two such waits cannot deadlock."""
        fds = self._open()
        if fds is None:
            pytest.fail(f"cannot measure alone: {self.machine.parent} is not writable (run the simulated tier as root)",
                        pytrace=False)
        machine, turnstile = fds
        was_held = self.held
        self.release()
        self._through_turnstile(turnstile)
        try:
            os.ftruncate(turnstile, 0)
            os.pwrite(turnstile, holder_note(f"measuring {why} alone, "), 0)
            wait_for_flock(machine, fcntl.LOCK_EX, self.wait_s, self.poll_s, lambda _: (
                f"other self-tests on this machine kept running for over {self.wait_s:.0f} s while {why} waited to be "
                "measured alone: stop the other run, or wait and run again"))
            try:
                yield
            finally:
                fcntl.flock(machine, fcntl.LOCK_SH if was_held else fcntl.LOCK_UN)
                self.held = was_held
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
