"""The NCCL that torch in this Python really loads, for gb10check's test_image_nccl.

Fed to the image's python3 on stdin (`python3 -`); stdlib and torch only. Asks torch for its NCCL (which loads the
library), then reads the libnccl file mapped into this process (/proc/self/maps), its version from the library itself
(ctypes ncclGetVersion: major*10000 + minor*100 + patch since 2.9) and its GNU build id (the ELF note, read here: no
readelf needed). Prints one JSON line: path, version, version_code, build_id, torch, torch_nccl (torch's own idea),
env_nccl_version (the image's NCCL_VERSION variable, which can be stale). A torch with no NCCL (a CPU build) prints
{"nccl": null, "reason": ...}; NCCL linked into torch statically prints "static": true and no path.
"""

import ctypes
import json
import mmap
import os
import struct
import sys


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
                desc_at = pos + 12 + ((namesz + 3) & ~3)
                if ntype == 3 and elf[pos + 12:pos + 12 + namesz] == b"GNU\x00":
                    return elf[desc_at:desc_at + descsz].hex()
                pos = desc_at + ((descsz + 3) & ~3)
    return None


def mapped(word: str) -> list[str]:
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if word in line and "/" in line})


def main() -> int:
    env = os.environ.get("NCCL_VERSION")
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        print(json.dumps({"nccl": None, "reason": f"cannot import torch: {type(exc).__name__}: {exc}", "env_nccl_version": env}))
        return 0
    out = {"torch": torch.__version__, "env_nccl_version": env}
    try:
        import torch.distributed as dist

        has_nccl = dist.is_available() and dist.is_nccl_available()
    except Exception:  # noqa: BLE001
        has_nccl = False
    if not has_nccl or torch.version.cuda is None:
        print(json.dumps({**out, "nccl": None, "reason": f"torch {torch.__version__} has no NCCL (a CPU build)"}))
        return 0
    torch_nccl = torch.cuda.nccl.version()
    out["torch_nccl"] = ".".join(map(str, torch_nccl)) if isinstance(torch_nccl, tuple) else str(torch_nccl)
    paths = mapped("libnccl")
    if not paths:
        print(json.dumps({**out, "nccl": out["torch_nccl"], "static": True, "path": None, "version": out["torch_nccl"],
                          "build_id": None, "torch_libs": mapped("libtorch_cuda")}))
        return 0
    lib = ctypes.CDLL(paths[0])
    code = ctypes.c_int()
    rc = lib.ncclGetVersion(ctypes.byref(code))
    v = code.value
    version = f"{v // 10000}.{v % 10000 // 100}.{v % 100}" if v >= 20900 else f"{v // 1000}.{v % 1000 // 100}.{v % 100}"
    print(json.dumps({**out, "nccl": version, "static": False, "path": os.path.realpath(paths[0]), "mapped": paths,
                      "version": version if rc == 0 else None, "version_code": v, "ncclGetVersion_rc": rc,
                      "build_id": gnu_build_id(paths[0])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
