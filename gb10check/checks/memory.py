"""The start memory gate: before deploy, the free memory CUDA reports in the image on each node against what vLLM will
ask for (test_start_memory), and no GPU compute process left on a node (test_no_gpu_process_left). Facts in (the
memory probe's JSON, /proc/meminfo, nvidia-smi's compute processes with their process-table lines), findings out.

vLLM refuses to start when the free memory it measures is under ceil(gpu_memory_utilization x total) ("Free memory on
device ... on startup is less than desired GPU memory utilization", vllm/v1/worker/utils.py request_memory). The gate
asks for a margin beyond that, and when a node is short it names one cause of four, in this order:
1. a GPU compute process holds memory (an orphaned VLLM::EngineCore after its API server was killed): its pid and name;
2. the page cache would cover the shortfall (on unified memory CUDA counts it as used): drop it;
3. no GPU process, and what is free with the page cache dropped is under the profile's idle floor (memory held after
   an abnormal exit, which only a reboot frees): reboot;
4. otherwise the node is idle and simply has less than asked for (some kernel/driver pairs take 8-9 GiB more at
   start): lower gpu_memory_utilization by the shortfall.
"""

import math
from dataclasses import dataclass

from ..facts.nvidia import GpuProcess
from ..remedies import Code
from ..verdict import Finding

GIB = 1 << 30


@dataclass(frozen=True)
class Device:
    index: int
    name: str
    integrated: bool | None
    free_gib: float
    total_gib: float


class ProbeUnreadable(ValueError):
    """The memory probe's JSON lacks a figure the gate needs."""


def devices(probe: dict) -> list[Device]:
    """The probe's devices; ProbeUnreadable when one lacks its free or total bytes or they make no sense."""
    found = []
    for d in probe.get("devices") or []:
        free, total = d.get("free_bytes") if isinstance(d, dict) else None, d.get("total_bytes") if isinstance(d, dict) else None
        if not isinstance(free, int) or not isinstance(total, int) or total <= 0 or not 0 <= free <= total:
            raise ProbeUnreadable(f"device {d!r}: free_bytes and total_bytes (0 <= free <= total, total > 0)")
        found.append(Device(int(d.get("index", len(found))), str(d.get("name") or "?"), d.get("integrated"), free / GIB,
                            total / GIB))
    if not found:
        raise ProbeUnreadable("no device in the probe's output")
    return found


def requested_gib(total_gib: float, utilization: float) -> float:
    """What vLLM asks for: ceil(total x gpu_memory_utilization) bytes (vLLM's request_memory), in GiB."""
    return math.ceil(total_gib * GIB * utilization) / GIB


def page_cache_gib(meminfo: dict) -> float:
    return (meminfo.get("cached_gib") or 0.0) + (meminfo.get("buffers_gib") or 0.0)


def process_text(p: GpuProcess) -> str:
    held = f"{p.used_gib:.1f} GiB" if p.used_gib is not None else "memory nvidia-smi does not figure"
    where = f"in container {p.container}" if p.container else "on the host"
    age = f", running {p.elapsed_s // 3600}h{p.elapsed_s % 3600 // 60:02d}m" if p.elapsed_s is not None else ""
    parent = f", parent {p.ppid}" if p.ppid is not None else ", gone from the process table"
    return f"pid {p.pid} {p.name} ({where}{parent}{age}) holding {held}"


def judge_start_memory(node: str, probe: dict, meminfo: dict, processes: list[GpuProcess], utilization: float,
                       margin_gib: float, idle_floor_gib: float) -> list[Finding]:
    """Each device's free memory as CUDA reports it against vLLM's request plus the margin; when short, the cause.

    On an integrated GPU CUDA's free leaves out the page cache; vLLM releases with the UMA fix compare MemAvailable
    instead, older ones CUDA's free: the gate reads CUDA's, which both must clear once the page cache is dropped."""
    findings = []
    for d in devices(probe):
        request = requested_gib(d.total_gib, utilization)
        need = request + margin_gib
        if d.free_gib >= need:
            continue
        short = need - d.free_gib
        seen = (f"CUDA reports {d.free_gib:.2f} GiB free of {d.total_gib:.2f} on device {d.index} ({d.name}), "
                f"{short:.2f} GiB short")
        expected = (f"at least {need:.2f} GiB free: gpu_memory_utilization {utilization:g} x {d.total_gib:.2f} GiB = "
                    f"{request:.2f} GiB (what vLLM asks for at start) + margin {margin_gib:g} GiB")
        figures = {"free": f"{d.free_gib:.2f}", "need": f"{need:.2f}", "short": f"{short:.2f}"}
        cache = page_cache_gib(meminfo)
        if processes:
            held = "; ".join(process_text(p) for p in processes)
            findings.append(Finding(Code.START_MEMORY_PROCESS, node, f"{seen}: {held}", expected, **figures,
                                    pids=" ".join(str(p.pid) for p in processes)))
        elif cache >= short:
            findings.append(Finding(Code.START_MEMORY_PAGE_CACHE, node, f"{seen}; the page cache holds {cache:.2f} GiB "
                                    "(unified memory: CUDA counts it as used)", expected, cache=f"{cache:.2f}", **figures))
        elif d.free_gib + cache < idle_floor_gib:
            findings.append(Finding(Code.START_MEMORY_REBOOT, node, f"{seen}; no GPU process and {cache:.2f} GiB of page cache: "
                                    f"{d.free_gib + cache:.2f} GiB with the cache dropped, under the idle floor "
                                    f"{idle_floor_gib:g} GiB (expect.idle_free_floor_gib)", expected, **figures))
        else:
            fits = math.floor((d.free_gib - margin_gib) / d.total_gib * 100) / 100
            findings.append(Finding(Code.START_MEMORY_UTILIZATION, node, f"{seen}; no GPU process, {cache:.2f} GiB of page "
                                    "cache: the node is idle and has less than asked for", expected,
                                    utilization=f"{utilization:g}", fits=f"{fits:.2f}", **figures))
    return findings


def judge_no_gpu_process(node: str, processes: list[GpuProcess]) -> list[Finding]:
    """No GPU compute process may be left on a node before deploy: it holds memory the new ranks need."""
    return [Finding(Code.GPU_PROCESS_LEFT, node, process_text(p), "no GPU compute process before deploy", pid=str(p.pid),
                    name=p.name, stop=(f"docker stop {p.container}" if p.container else f"kill {p.pid}"))
            for p in processes]
