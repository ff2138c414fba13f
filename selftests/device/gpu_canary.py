#!/usr/bin/env python3
"""GPU canary, run on a real NVIDIA machine (not by CI): a bf16 matmul loop and the NCCL identity.

1. n x n x n bf16 torch.matmul for about --seconds seconds on cuda:0, timed with CUDA events in
   batches; prints one line a second and the achieved TFLOP/s (2*n^3 per product).
2. The libnccl that this python3's torch really loads: its path (read from /proc/self/maps after
   torch.cuda.nccl.version()), its version through ctypes ncclGetVersion, and its GNU build id
   (read from the ELF PT_NOTE segments here, and from `readelf -n` where readelf exists).

Prints one JSON object at the end and writes it to --json. Used by selftests/device/capture_h200.sh.
"""

import argparse
import ctypes
import json
import mmap
import shutil
import statistics
import struct
import subprocess
import sys
import time

import torch


def loaded_libs(word: str) -> list[str]:
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if word in line and "/" in line})


def gnu_build_id(path: str) -> str | None:
    """The NT_GNU_BUILD_ID note of an ELF64 little-endian file, as hex, from its PT_NOTE segments."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as elf:
        if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
            return None
        phoff, = struct.unpack_from("<Q", elf, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
        for i in range(phnum):
            p_type, _flags, p_offset, _vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
            if p_type != 4:  # PT_NOTE
                continue
            pos, end = p_offset, p_offset + p_filesz
            while pos + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
                name_at = pos + 12
                desc_at = name_at + ((namesz + 3) & ~3)
                if ntype == 3 and elf[name_at:name_at + namesz] == b"GNU\x00":
                    return elf[desc_at:desc_at + descsz].hex()
                pos = desc_at + ((descsz + 3) & ~3)
    return None


def readelf_build_id(path: str) -> str | None:
    if not shutil.which("readelf"):
        return None
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None


def nccl_identity() -> dict:
    torch_version = torch.cuda.nccl.version()
    paths = loaded_libs("libnccl")
    ident = {"torch_cuda_nccl_version": ".".join(map(str, torch_version)), "loaded_libnccl": paths}
    if paths:
        lib = ctypes.CDLL(paths[0])
        code = ctypes.c_int()
        rc = lib.ncclGetVersion(ctypes.byref(code))
        v = code.value
        ident.update({
            "ncclGetVersion_rc": rc,
            "ncclGetVersion_code": v,
            # NCCL >= 2.9 encodes major*10000 + minor*100 + patch
            "ncclGetVersion": f"{v // 10000}.{v % 10000 // 100}.{v % 100}",
            "gnu_build_id": gnu_build_id(paths[0]),
            "gnu_build_id_readelf": readelf_build_id(paths[0]),
        })
    return ident


def matmul_loop(n: int, seconds: float, batch: int) -> dict:
    dev = torch.device("cuda:0")
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    flop = 2.0 * n ** 3 * batch
    rates, start, next_print = [], time.time(), 1.0
    while time.time() - start < seconds:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(batch):
            torch.matmul(a, b, out=c)
        e.record()
        e.synchronize()
        rates.append(flop / (s.elapsed_time(e) / 1e3) / 1e12)
        if time.time() - start >= next_print:
            print(f"t={time.time() - start:5.1f}s batches={len(rates)} last={rates[-1]:.1f} TFLOP/s", flush=True)
            next_print += 1.0
    return {
        "n": n, "dtype": "bfloat16", "products_per_batch": batch, "batches": len(rates),
        "seconds": round(time.time() - start, 3),
        "tflops_mean": round(statistics.fmean(rates), 1),
        "tflops_median": round(statistics.median(rates), 1),
        "tflops_min": round(min(rates), 1),
        "tflops_max": round(max(rates), 1),
        "tflops_first_batch": round(rates[0], 1),
        "tflops_last_batch": round(rates[-1], 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    result = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
        "matmul": matmul_loop(args.n, args.seconds, args.batch),
        "nccl": nccl_identity(),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
