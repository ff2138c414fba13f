"""A simulated node's PID is trusted only while it is the node's init (no root needed: the refusals)."""
import os

import pytest

from gb10check.sim import control


def test_a_pid_file_naming_another_process_of_the_runner_is_not_a_running_node(tmp_path, monkeypatch):
    """PIDs wrap: a node's pid file may, after the node died, name a process of the runner (a pytest worker), which
    must be neither entered as the node nor killed by `sim down`."""
    monkeypatch.setenv("GB10CHECK_SIM_DIR", str(tmp_path))
    (tmp_path / "nodes").mkdir()
    (tmp_path / "nodes" / "pgx-b.pid").write_text(str(os.getpid()))
    assert not control.is_node_init(os.getpid(), "pgx-b")
    with pytest.raises(control.SimError, match=rf"^node pgx-b is not running \(its init {os.getpid()} is gone\)$"):
        control.pid_of("pgx-b")


def test_a_pid_that_is_gone_is_not_a_node():
    assert not control.is_node_init(2 ** 22 + 1, "pgx-a")  # above any pid_max: no such process
