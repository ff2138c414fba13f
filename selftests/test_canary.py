"""The canary programs (gb10check/canary/) as the suite runs them: the command gather builds carries the program intact,
and through a local-connection cluster test_gpu_compute, test_image_kernels and test_image_nccl run it for real with a CPU torch (the
simulation's venv, when this machine has it) or say why they could not (a Python without torch)."""

import base64
import getpass
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gb10check import canary, gather
from gb10check.cluster import load_cluster

from .inner_pytest import run_pytest

REPO = Path(__file__).resolve().parent.parent
SIM_PYTHON = Path("/var/cache/gb10check/vllm-venv/bin/python3")  # gb10check/sim/provision.py's venv: CPU torch 2.13


def test_the_command_carries_the_program_and_the_sampler():
    cluster = load_cluster(REPO / "cluster.example.yaml")
    command, shown = gather.compute_command(cluster)
    encoded = re.search(r"echo (\S+) \| base64 -d \| docker run --rm -i --pull never --gpus all ", command)[1]
    assert base64.b64decode(encoded).decode() == canary.source("matmul")
    assert gather.SMI_SAMPLE in command and command.endswith("exit $rc")
    assert shown.startswith(f"docker run --rm -i --pull never --gpus all {cluster.deploy.image} python3 - --seconds 10 "
                            "< gb10check/canary/matmul.py (with `nvidia-smi -i 0 --query-gpu=clocks.sm,")
    nccl, _ = gather.program(cluster, "nccl", gpus=False)
    assert "--gpus" not in nccl and "docker run --rm -i --pull never vllm/vllm-openai" in nccl


# A CPU torch multiplies on one thread here: the figure is not what these tests prove, and the other xdist worker keeps
# the second core.
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}


def run_programs(tmp_path, python: str) -> subprocess.CompletedProcess:
    data = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
    data["nodes"] = [dict(data["nodes"][0], connection="local")]
    data["deploy"].update(tensor_parallel_size=1, canary_python=python)
    # A CPU torch on a shared machine: these tests prove the canary runs and is read, not this machine's speed (the
    # floor's judge is proven on real figures in test_judges_gpu), so the floor is one no running matmul falls under.
    data["expect"].update(profile="sim", compute_seconds=1, min_tflops=1e-6)
    data["ssh"].update(user=getpass.getuser(), known_hosts=str(tmp_path / "none"))
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    # test_no_gpu_process_left asks the host's nvidia-smi, which this machine lacks (not checked: tool missing).
    return run_pytest(["-p", "no:cacheprovider", "-rA", "tests/preflight/test_gpu.py", "-k", "not test_no_gpu_process_left",
                       f"--cluster={path}"], env=ONE_THREAD, timeout=300)


def test_a_python_without_torch_is_not_checked(tmp_path):
    run = run_programs(tmp_path, sys.executable)  # this venv has no torch
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "[command-failed] thinkstationpgx-30: could not check: `" in out
    assert "exited 2: cannot import torch: ModuleNotFoundError: No module named 'torch'" in out
    assert "thinkstationpgx-30: cannot import torch: ModuleNotFoundError" in out  # test_image_nccl: skipped, with the reason


@pytest.mark.skipif(not SIM_PYTHON.exists(), reason="no simulation venv (CPU torch) on this machine: gb10check sim provisions it")
def test_cpu_torch_multiplies_and_has_no_nccl(tmp_path):
    line = subprocess.run([str(SIM_PYTHON), "-", "--seconds", "0.5"], input=canary.source("matmul"), capture_output=True,
                          text=True, timeout=120, env=ONE_THREAD).stdout.strip().splitlines()[-1]
    result = json.loads(line)
    assert (result["backend"], result["device"], result["dtype"], result["n"]) == ("cpu", "cpu", "float32", 1024)
    assert result["tflops"] > 0 and result["iterations"] >= 1
    run = run_programs(tmp_path, str(SIM_PYTHON))
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert "PASSED tests/preflight/test_gpu.py::test_gpu_compute[thinkstationpgx-30]" in out
    assert re.search(r"SKIPPED \[1\] tests/preflight/test_gpu.py:\d+: thinkstationpgx-30: torch 2.13.0\+cpu has no NCCL "
                     r"\(a CPU build\) in /var/cache/gb10check/vllm-venv/bin/python3: no NCCL library to identify", out), out
    assert re.search(r"SKIPPED \[1\] tests/preflight/test_gpu.py:\d+: thinkstationpgx-30: torch 2.13.0\+cpu has no CUDA "
                     r"\(a CPU build\) in /var/cache/gb10check/vllm-venv/bin/python3: no GPU kernel to build or run", out), out
    assert re.search(r"SKIPPED \[1\] tests/preflight/test_gpu.py:\d+: thinkstationpgx-30: torch 2.13.0\+cpu has no CUDA "
                     r"\(a CPU build\); no CUDA driver library \(libcuda.so.1: .*\) in /var/cache/gb10check/vllm-venv/bin/python3: "
                     r"no CUDA memory to measure", out), out
    assert re.search(r"matmul \(median batch\) +thinkstationpgx-30 +\d+\.\d\d TFLOP/s \(float32 on cpu\)", out), out


@pytest.mark.skipif(not SIM_PYTHON.exists(), reason="no simulation venv (CPU torch) on this machine: gb10check sim provisions it")
def test_the_nccl_canary_names_the_images_vllm_and_flashinfer():
    """The versions manifest's vLLM and flashinfer (test_image_nccl records them) come from the packages' metadata, also
    where torch has no NCCL; a package not installed is None, never a guess."""
    line = subprocess.run([str(SIM_PYTHON), "-"], input=canary.source("nccl"), capture_output=True, text=True,
                          timeout=120).stdout.strip().splitlines()[-1]
    result = json.loads(line)
    assert result["nccl"] is None and re.fullmatch(r"\d+\.\d+\.\d+\S*", result["vllm"]), result
    assert "flashinfer" in result and result["flashinfer"] is None, result  # the CPU build ships no flashinfer


def local_cluster(tmp_path):
    """The example's rank 0 alone, reached through the local connection (this machine), as two workers' fleets see it."""
    data = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
    data["nodes"] = [dict(data["nodes"][0], connection="local")]
    data["deploy"]["tensor_parallel_size"] = 1
    data["ssh"].update(user=getpass.getuser())
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_cluster(path)


def test_under_xdist_the_compute_runs_once_for_all_workers(tmp_path):
    """Two workers' fleets in one xdist run: the first runs the command on every node, the second reads its outputs."""
    from gb10check.gather import Fleet

    cluster = local_cluster(tmp_path)
    counter = tmp_path / "runs"
    command = f"echo x >> {counter}; cat {counter} | wc -l"
    first, second = Fleet(cluster), Fleet(cluster)
    first.run_id = second.run_id = f"selftest{tmp_path.name}"  # what the plugin gives a worker's fleet
    a = first.at_once(command, 10)["thinkstationpgx-30"]
    b = second.at_once(command, 10)["thinkstationpgx-30"]
    assert (a.rc, a.stdout.strip()) == (0, "1") and (b.rc, b.stdout) == (a.rc, a.stdout)
    assert counter.read_text() == "x\n"  # ran once


def test_the_compute_runs_on_every_node_at_the_same_time(tmp_path):
    """Both nodes' runs overlap (each GB10 is its own machine; simulated nodes share the cores evenly): each notes when it
    starts and ends, and both start before either ends."""
    from gb10check.gather import Fleet

    from .fake_node_tools import sshd_pair

    log = tmp_path / "log"
    with sshd_pair(tmp_path, a={}, b={}) as (path, _):  # two real sshd on loopback
        got = Fleet(load_cluster(path)).at_once(f"echo start >> {log}; sleep 1; echo end >> {log}", 10)
    assert sorted(got) == ["thinkstationpgx-30", "thinkstationpgx-32"] and all(out.rc == 0 for out in got.values())
    assert log.read_text().split() == ["start", "start", "end", "end"]


def test_under_xdist_the_facts_are_gathered_once_for_all_workers_and_removed_at_the_end(tmp_path, monkeypatch):
    """Two workers' fleets: the first gathers every node's facts, the second reads them (mode 600: they hold the node's
    .env); the controller's remove_shared takes the run's files away."""
    import os
    import stat

    from gb10check import gather
    from gb10check.gather import Fleet

    cluster = local_cluster(tmp_path)
    run_id = f"selftest{tmp_path.name}"
    gather.remove_shared(run_id)  # what an earlier self-test run under the same name may have left
    calls = []
    first, second = Fleet(cluster), Fleet(cluster)
    first.run_id = second.run_id = run_id
    assert Fleet(cluster).run_id is None  # not a worker: nothing shared (an inherited PYTEST_XDIST_TESTRUNUID is not read)
    real = Fleet._gather_node
    monkeypatch.setattr(Fleet, "_gather_node", lambda self, node: calls.append(node.name) or real(self, node))
    first.wanted = second.wanted = {"kernel"}  # what the plugin sets from the run's @reads
    a = first.facts("thinkstationpgx-30")[("kernel", None)]
    b = second.facts("thinkstationpgx-30")[("kernel", None)]
    assert calls == ["thinkstationpgx-30"]  # gathered once
    assert (b.rc, b.stdout) == (a.rc, a.stdout) == (0, os.uname().release + "\n")
    shared = gather.shared_path(run_id, "facts")
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o600
    gather.remove_shared(run_id)
    assert not os.path.exists(shared)


def test_the_stale_container_look_comes_before_the_runs_own_containers(tmp_path):
    """The facts' batch starts every command at once, except those that start a container: they wait for `docker ps` and
    `docker stats` (LOOK_FIRST), which must not take this run's own GPU probe, with the deployment's image, for a serving
    container left behind (a simulated run failed test_no_serving_container_left that way, once). Run for real by sh."""
    log = tmp_path / "log"
    look = f"sleep 0.5; echo look >> {log}"
    probe = f": docker run ; echo probe >> {log}"  # a container start, as text; runs nothing
    other = f"echo other >> {log}"
    commands = [probe, look, other]
    out = subprocess.run(["sh", "-c", gather.batch_script(commands, 10, first=(look,))], capture_output=True, text=True,
                         timeout=30)
    got = gather.read_batch(commands, out.stdout)
    assert sorted(got) == sorted(commands) and all(o.rc == 0 for o in got.values()), out
    assert log.read_text().split() == ["other", "look", "probe"]
    # the suite's own facts: every container they start is held behind the look
    cluster = load_cluster(REPO / "cluster.example.yaml")
    batch = gather.registry.batch_commands(cluster, cluster.by_rank()[0], set(gather.FACTS))
    user = [command for command, sudo in batch.values() if not sudo]
    starters = {fact for (fact, _), (command, sudo) in batch.items() if gather.starts_container(command)}
    assert set(gather.LOOK_FIRST) <= set(user)
    assert starters == {"gpu_probe", "canary_nccl", "canary_kernels", "canary_memory", "nccl_conf_image", *(["ray_version"] if cluster.uses_ray else [])}
    assert all(not batch[(f, None)][1] for f in starters)  # in the user's batch, where LOOK_FIRST holds them back
