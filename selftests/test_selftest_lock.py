"""The self-tests' machine-wide locks (selftests/machine_lock.py). The vLLM lock: a second taker waits, then fails naming
the holder; the kernel frees it when the holder ends, however it ends. The machine share: a measurement alone waits for
the running tests, no test starts while it waits or runs, and every wait fails after its limit saying why."""

import os
import subprocess
import sys
import threading

import pytest

from .machine_lock import MachineShare, take_machine_lock

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


# Each MachineShare opens its own descriptors, and flock treats those apart even within one process: three instances
# here are three self-tests of different workers or runs.
def shares(tmp_path, n: int, wait_s: float = 10) -> list[MachineShare]:
    return [MachineShare(tmp_path, wait_s=wait_s, poll_s=0.01) for _ in range(n)]


def test_a_measurement_waits_for_running_tests_and_fails_naming_why_after_its_limit(tmp_path):
    running, measuring = MachineShare(tmp_path), MachineShare(tmp_path, wait_s=0.3, poll_s=0.01)
    running.share()
    with pytest.raises(pytest.fail.Exception) as refused:
        with measuring.alone("the head's decode floor"):
            pass
    assert "other self-tests on this machine kept running for over 0 s while the head's decode floor waited to be " \
           "measured alone" in str(refused.value)
    running.release()
    with measuring.alone("the head's decode floor"):  # the failed wait left the turnstile open
        assert measuring.held is False


def test_no_test_starts_while_a_measurement_runs_and_one_waiting_starts_after_it(tmp_path):
    measuring, refused_one, waiting = shares(tmp_path, 3)
    refused_one.wait_s = 0.3
    started = threading.Event()

    def start_waiting():
        waiting.share()
        started.set()

    with measuring.alone("the head's decode floor"):
        with pytest.raises(pytest.fail.Exception) as refused:
            refused_one.share()
        assert "a measurement that runs alone has kept this test from starting for over 0 s" in str(refused.value)
        assert "measuring the head's decode floor alone, since " in str(refused.value)
        thread = threading.Thread(target=start_waiting)
        thread.start()
        assert not started.wait(0.5)
    thread.join(timeout=10)
    assert started.is_set() and waiting.held


def test_a_test_that_measures_gives_up_its_share_so_two_measurements_cannot_deadlock(tmp_path):
    first, second = shares(tmp_path, 2)
    first.share()
    second.share()
    done = []

    def test_that_measures(share, name):
        with share.alone(name):
            done.append(name)
        done.append((name, "share back", share.held))
        share.release()  # its test ends

    thread = threading.Thread(target=test_that_measures, args=(first, "first"))
    thread.start()
    test_that_measures(second, "second")
    thread.join(timeout=10)
    assert sorted(map(str, done)) == sorted(map(str, ["first", "second", ("first", "share back", True),
                                                      ("second", "share back", True)]))


def test_sharing_without_a_writable_folder_does_nothing_and_measuring_alone_says_why(tmp_path):
    share = MachineShare(tmp_path / "absent")
    share.share()
    assert not share.held
    with pytest.raises(pytest.fail.Exception) as refused:
        with share.alone("x"):
            pass
    assert f"cannot measure alone: {tmp_path / 'absent'} is not writable" in str(refused.value)
