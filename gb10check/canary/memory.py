"""The free memory CUDA reports on each device, for gb10check's start memory gate (test_start_memory).

Fed to the image's python3 on stdin (`python3 -`); stdlib and torch only. vLLM measures the same figures at start
(MemorySnapshot: torch.cuda.mem_get_info after gc.collect and empty_cache) and refuses to start when free is under
ceil(gpu_memory_utilization x total) ("Free memory on device ... on startup is less than desired GPU memory
utilization"). On an integrated GPU (GB10's unified memory: torch's device property is_integrated) vLLM releases that
carry its UMA fix (vllm-project/vllm PR 35356) compare psutil's available memory (MemAvailable) instead, since CUDA's
free leaves out the page cache the kernel could reclaim: the program prints both, /proc/meminfo as this process sees it.
Prints one JSON line: torch, cuda, devices ([{index, name, capability, integrated, free_bytes, total_bytes}]) and
meminfo_kb (MemTotal, MemFree, MemAvailable, Buffers, Cached). A torch without CUDA (a CPU build, the simulation)
prints {"gpu": null, "reason": ..., "meminfo_kb": ...}; a torch that cannot be imported prints {"error": ...} and exits 2.
"""

import gc
import json
import sys

MEMINFO_KEYS = ("MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached")


def meminfo_kb() -> dict:
    found = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in MEMINFO_KEYS and rest.split() and rest.split()[0].isdigit():
                    found[key] = int(rest.split()[0])
    except OSError:
        pass
    return found


def device(torch, index: int) -> dict:
    props = torch.cuda.get_device_properties(index)
    with torch.cuda.device(index):
        gc.collect()
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info(index)
    integrated = getattr(props, "is_integrated", None)
    return {"index": index, "name": props.name, "capability": f"sm_{props.major}{props.minor}",
            "integrated": None if integrated is None else bool(integrated), "free_bytes": int(free), "total_bytes": int(total)}


def main() -> int:
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure is the answer
        print(json.dumps({"error": f"cannot import torch: {type(exc).__name__}: {exc}"}))
        return 2
    out = {"torch": torch.__version__, "cuda": torch.version.cuda}
    if not torch.cuda.is_available():
        why = (f"torch {torch.__version__} has no CUDA (a CPU build)" if torch.version.cuda is None
               else f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU")
        print(json.dumps({**out, "gpu": None, "reason": why, "meminfo_kb": meminfo_kb()}))
        return 0
    out["devices"] = [device(torch, i) for i in range(torch.cuda.device_count())]
    out["meminfo_kb"] = meminfo_kb()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
