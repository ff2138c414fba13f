"""The start memory gate (gb10check/checks/memory.py) and its parser (facts.nvidia.parse_compute_apps) on the field's
figures: each of the four causes of vLLM's "Free memory on device ... less than desired GPU memory utilization" with the
numbers its owners published, and the processes in the nvidia-smi stand-in's rendering of a real process."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gb10check.checks import memory
from gb10check.cluster import Expect
from gb10check.facts import ParseError, parse
from gb10check.facts.nvidia import GpuProcess
from gb10check.remedies import Code, fix

from .conftest import read_capture

REPO = Path(__file__).resolve().parent.parent
GIB = 1 << 30
GB10 = Expect()  # the gb10 profile: margin 2 GiB, idle floor 100 GiB
TOTAL = int(121.69 * GIB)  # CUDA's total on a DGX Spark (MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks issue 47)
MEMINFO = parse("meminfo", read_capture("meminfo/dgxspark-proc-meminfo-partial-author-selected-idx68529745704.txt"))


def probe(free_gib: float, total: int = TOTAL) -> dict:
    return {"torch": "2.11.0", "devices": [{"index": 0, "name": "NVIDIA GB10", "capability": "sm_121", "integrated": True,
                                            "free_bytes": int(free_gib * GIB), "total_bytes": total}]}


def gate(free_gib: float, meminfo: dict, processes=(), utilization: float = 0.87):
    return memory.judge_start_memory("spark-1", probe(free_gib), meminfo, list(processes), utilization,
                                     GB10.start_memory_margin_gib, GB10.idle_free_floor_gib)


IDLE = {"cached_gib": 0.4, "buffers_gib": 0.0}  # caches dropped


def test_vllm_request_is_its_ceiling_of_utilization_times_total():
    # vLLM's own message on a GB10 (the same thread): 0.87 of 121.69 GiB is 105.87 GiB
    assert round(memory.requested_gib(121.69, 0.87), 2) == 105.87


def test_an_idle_node_with_room_passes():
    # the same thread's passing boot: 110.37 GiB free of 121.69 at 0.87
    assert gate(110.37, IDLE) == []


def test_an_orphaned_engine_core_is_named_with_pid_and_container():
    # jethac/dgx-spark-hijinks' nvidia-smi on a GB10: VLLM::EngineCore pid 577729 holding 89093 MiB
    orphan = GpuProcess(577729, "VLLM::EngineCore", 89093 / 1024, ppid=1, elapsed_s=7260, args="VLLM::EngineCore",
                        container="3f2a9c1d0b7e")
    [f] = gate(30.1, IDLE, [orphan])
    assert f.code == Code.START_MEMORY_PROCESS and not f.warning
    assert "pid 577729 VLLM::EngineCore (in container 3f2a9c1d0b7e, parent 1, running 2h01m) holding 87.0 GiB" in f.seen
    assert "CUDA reports 30.10 GiB free of 121.69" in f.seen and "77.77 GiB short" in f.seen
    assert "105.87 GiB (what vLLM asks for at start) + margin 2 GiB" in f.expected
    [left] = memory.judge_no_gpu_process("spark-1", [orphan])
    assert left.code == Code.GPU_PROCESS_LEFT and "docker stop 3f2a9c1d0b7e" in fix(left.code, **left.params)


def test_a_process_on_the_host_is_killed_by_pid():
    [left] = memory.judge_no_gpu_process("spark-2", [GpuProcess(4242, "python3", None)])
    assert "pid 4242 python3 (on the host, gone from the process table) holding memory nvidia-smi does not figure" in left.seen
    assert "kill 4242" in fix(left.code, **left.params)
    assert memory.judge_no_gpu_process("spark-2", []) == []


def test_page_cache_that_covers_the_shortfall_is_dropped():
    # a real Spark's /proc/meminfo with 35.9 GiB of page cache; CUDA's free 85.92 GiB (a GB10 log's figure at 0.92)
    [f] = gate(85.92, MEMINFO, utilization=0.92)
    assert f.code == Code.START_MEMORY_PAGE_CACHE
    assert "the page cache holds 35.96 GiB" in f.seen
    assert "drop the page cache on spark-1 (35.96 GiB; 28.03 GiB short)" in fix(f.code, **f.params)


def test_memory_held_by_no_process_under_the_idle_floor_is_a_reboot():
    [f] = gate(60.0, IDLE)
    assert f.code == Code.START_MEMORY_REBOOT
    assert "60.40 GiB with the cache dropped, under the idle floor 100 GiB" in f.seen
    assert fix(f.code, **f.params).startswith("reboot spark-1")


def test_an_idle_node_short_of_the_request_lowers_the_utilization():
    # the thread's stock installs: CUDA's free capped at 101.3 GiB, idle, caches dropped: 0.87 never passes
    [f] = gate(101.3, IDLE)
    assert f.code == Code.START_MEMORY_UTILIZATION
    assert "lower gpu_memory_utilization from 0.87 to 0.81 or less (6.57 GiB short of 107.87 GiB)" in fix(f.code, **f.params)


@pytest.mark.parametrize("bad", [{}, {"devices": []}, {"devices": [{"index": 0}]},
                                 {"devices": [{"free_bytes": 5, "total_bytes": 4}]},
                                 {"devices": [{"free_bytes": "1", "total_bytes": 4}]}, {"devices": ["x"]}])
def test_a_probe_without_figures_is_never_judged(bad):
    with pytest.raises(memory.ProbeUnreadable):
        memory.judge_start_memory("spark-1", bad, IDLE, [], 0.87, 2, 100)


APPS = "pid, process_name, used_gpu_memory [MiB]\n"


def test_compute_apps_with_their_process_table_lines():
    text = (APPS + "577729, VLLM::EngineCore, 89093 MiB\n4242, python3, [N/A]\n-- ps --\n"
            "3f2a9c1d0b7e 577729 1 7260 VLLM::EngineCore\n- 4242 4100 12 python3 -c import torch\n")
    a, b = parse("nvidia_compute_apps", text)
    assert (a.pid, a.name, a.used_gib, a.container, a.ppid, a.elapsed_s) == (577729, "VLLM::EngineCore", 87.005, "3f2a9c1d0b7e", 1, 7260)
    assert (b.used_gib, b.container, b.args) == (None, None, "python3 -c import torch")
    assert parse("nvidia_compute_apps", APPS + "-- ps --\n") == []


@pytest.mark.parametrize("garbled", ["", "-- ps --\n", APPS, APPS + "12, x, 3 MiB\n-- ps --\nnonsense\n",
                                     "No devices were found\n-- ps --\n", APPS + "x, y\n-- ps --\n"])
def test_garbled_compute_apps_are_unreadable(garbled):
    with pytest.raises(ParseError):
        parse("nvidia_compute_apps", garbled)


def test_the_standin_lists_a_real_vllm_named_process(tmp_path, monkeypatch, capsys):
    """The nvidia-smi stand-in's --query-compute-apps lists a real process named VLLM::EngineCore (argv[0], as vLLM's
    setproctitle leaves it), read back by the parser with its line from the real process table. (Here it is asked as a node's:
    in a container of the node's docker it sees none, as a container's nvidia-smi.)"""
    monkeypatch.syspath_prepend(str(REPO / "gb10check" / "sim"))
    from standins import nvidia_smi

    monkeypatch.setattr(nvidia_smi, "in_container", lambda: False)
    holder = subprocess.Popen(["bash", "-c", f'exec -a VLLM::EngineCore {sys.executable} -c "import time; time.sleep(60)"'])
    try:
        for _ in range(100):  # until exec has renamed it
            with open(f"/proc/{holder.pid}/cmdline", "rb") as f:
                if f.read().startswith(b"VLLM::"):
                    break
            time.sleep(0.05)
        assert nvidia_smi.compute_apps(["--format=csv"], "pid,process_name,used_memory") == 0
        out = capsys.readouterr().out
        ps = subprocess.run(["ps", "-o", "pid=,ppid=,etimes=,args=", "-p", str(holder.pid)], capture_output=True, text=True,
                            timeout=10).stdout.strip()
        [p] = [p for p in parse("nvidia_compute_apps", out + "-- ps --\n- " + ps + "\n") if p.pid == holder.pid]
        assert p.name == "VLLM::EngineCore" and p.used_gib is not None and p.args.startswith("VLLM::EngineCore")
        assert out.startswith(APPS)
    finally:
        holder.kill()
        holder.wait(timeout=10)


# The H200 (selftests/captures/memory/, selftests/device/capture_memory_h200.sh): idle, then a python3 named
# VLLM::EngineCore holding 20 GiB on GPU 0, then after it was killed; each state read by the suite's own command and probe.
H200_MEMINFO = parse("meminfo", read_capture("ours/meminfo/h200-proc-meminfo.txt"))


def h200(state: str):
    probe = json.loads(read_capture(f"ours/raw/memory/h200-memory-probe-{state}.json"))
    return probe, parse("nvidia_compute_apps", read_capture(f"ours/memory/h200-gpu-processes-{state}.txt"))


def test_the_real_engine_core_is_read_with_its_process_table_line():
    _, [p] = h200("holding")
    assert (p.pid, p.name, p.used_gib, p.container, p.ppid, p.elapsed_s, p.args) == (
        987, "VLLM::EngineCore", round(20998 / 1024, 3), None, 911, 6, "VLLM::EngineCore /tmp/holder.py")
    assert h200("idle")[1] == [] and h200("after")[1] == []


def test_the_real_probe_sees_what_the_engine_core_holds():
    [idle], [holding] = (memory.devices(h200(s)[0]) for s in ("idle", "holding"))
    assert round(holding.total_gib, 2) == 139.80 and holding.total_gib == idle.total_gib
    _, [p] = h200("holding")
    assert abs((idle.free_gib - holding.free_gib) - p.used_gib) < 0.1  # CUDA's free and nvidia-smi agree on the holder


def test_the_real_holder_fails_the_gate_by_pid_and_the_idle_gpu_passes():
    probe, processes = h200("holding")
    [f] = memory.judge_start_memory("h200", probe, H200_MEMINFO, processes, 0.9, GB10.start_memory_margin_gib,
                                    GB10.idle_free_floor_gib)
    assert f.code == Code.START_MEMORY_PROCESS and f.where == "h200" and not f.warning
    assert "CUDA reports 118.77 GiB free of 139.80 on device 0 (NVIDIA H200), 9.05 GiB short" in f.seen
    assert "pid 987 VLLM::EngineCore (on the host, parent 911, running 0h00m) holding 20.5 GiB" in f.seen
    [left] = memory.judge_no_gpu_process("h200", processes)
    assert left.code == Code.GPU_PROCESS_LEFT and "kill 987" in fix(left.code, **left.params)
    for state in ("idle", "after"):
        probe, processes = h200(state)
        assert memory.judge_start_memory("h200", probe, H200_MEMINFO, processes, 0.9, GB10.start_memory_margin_gib,
                                         GB10.idle_free_floor_gib) == []
        assert memory.judge_no_gpu_process("h200", processes) == []
