"""The free memory CUDA reports on each device, for gb10check's start memory gate (test_start_memory).

Fed to the image's python3 on stdin (`python3 -`); stdlib and torch only. vLLM measures the same figures at start
(MemorySnapshot: torch.cuda.mem_get_info after gc.collect and empty_cache) and refuses to start when free is under
ceil(gpu_memory_utilization x total) ("Free memory on device ... on startup is less than desired GPU memory
utilization"). On an integrated GPU (GB10's unified memory: torch's device property is_integrated) vLLM releases that
carry its UMA fix (vllm-project/vllm PR 35356) compare psutil's available memory (MemAvailable) instead, since CUDA's
free leaves out the page cache the kernel could reclaim: the program prints both, /proc/meminfo as this process sees it.
Where torch has no CUDA (a CPU build) but the container was given the GPU, the same figures come from the CUDA driver
itself (libcuda.so.1, which the NVIDIA container toolkit mounts: cuMemGetInfo in the device's primary context, what
torch's mem_get_info returns): source says which answered. Prints one JSON line: torch, cuda, source (torch or driver),
devices ([{index, name, capability, integrated, free_bytes, total_bytes}]) and meminfo_kb (MemTotal, MemFree,
MemAvailable, Buffers, Cached). With no GPU to ask it prints {"gpu": null, "reason": ..., "meminfo_kb": ...}; a torch
that cannot be imported prints {"error": ...} and exits 2.
"""

import ctypes
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


def driver_devices() -> tuple[list | None, str]:
    """(devices, "") from the CUDA driver API, or (None, why) where there is no driver or no device."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return None, f"no CUDA driver library ({exc})"
    rc = lib.cuInit(0)
    count = ctypes.c_int(0)
    if rc or lib.cuDeviceGetCount(ctypes.byref(count)) or not count.value:
        return None, f"the CUDA driver sees no device (cuInit {rc})"
    found = []
    for i in range(count.value):
        dev, name, ctx = ctypes.c_int(), ctypes.create_string_buffer(256), ctypes.c_void_p()
        major, minor, integrated = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        calls = [lib.cuDeviceGet(ctypes.byref(dev), i), lib.cuDeviceGetName(name, 256, dev),
                 lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev), lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev),
                 lib.cuDeviceGetAttribute(ctypes.byref(integrated), 18, dev), lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                 lib.cuCtxSetCurrent(ctx), lib.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))]
        lib.cuDevicePrimaryCtxRelease_v2(dev)
        if any(calls):
            return None, f"the CUDA driver failed on device {i} (results {calls})"
        found.append({"index": i, "name": name.value.decode(errors="replace"), "capability": f"sm_{major.value}{minor.value}",
                      "integrated": bool(integrated.value), "free_bytes": free.value, "total_bytes": total.value})
    return found, ""


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
        found, no_driver = driver_devices()
        if found is None:
            print(json.dumps({**out, "gpu": None, "reason": f"{why}; {no_driver}", "meminfo_kb": meminfo_kb()}))
            return 0
        print(json.dumps({**out, "source": "driver", "devices": found, "meminfo_kb": meminfo_kb()}))
        return 0
    out["source"] = "torch"
    out["devices"] = [device(torch, i) for i in range(torch.cuda.device_count())]
    out["meminfo_kb"] = meminfo_kb()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
