"""The machine-wide lock that keeps two self-test runs' vLLMs apart (selftests/conftest.py): a second taker waits, then
fails naming the holder; the kernel frees it when the holder ends, however it ends."""

import os
import subprocess
import sys

import pytest

from .conftest import take_machine_lock

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, b"pid %d, simulated instance 5, checkout /elsewhere" % os.getpid(), 0)
print("held", flush=True)
time.sleep(60)
"""


def test_a_second_taker_fails_naming_the_holder_and_gets_it_once_the_holder_dies(tmp_path):
    path = tmp_path / "vllm.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(pytest.fail.Exception) as refused:
            take_machine_lock(path, wait_s=0.3, poll_s=0.05)
        assert f"has held {path} for over 0 s (pid {holder.pid}, simulated instance 5, checkout /elsewhere)" in str(
            refused.value)
    finally:
        holder.kill()
        holder.wait(timeout=10)
    fd = take_machine_lock(path, wait_s=10, poll_s=0.05)  # SIGKILL: the kernel released it
    try:
        assert path.read_text().startswith(f"pid {os.getpid()}, simulated instance ")
    finally:
        os.close(fd)
