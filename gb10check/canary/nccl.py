"""The NCCL that torch in this Python really loads, for gb10check's test_image_nccl.

Fed to the image's python3 on stdin (`python3 -`); stdlib and torch only. Asks torch for its NCCL (which loads the
library), then reads the libnccl file mapped into this process (/proc/self/maps), its version from the library itself
(ctypes ncclGetVersion: major*10000 + minor*100 + patch since 2.9) and its GNU build id (the ELF note, read here: no
readelf needed) and its version banner (read from the file too: a development build's suffix shows only there).
Prints one JSON line: path, version, version_code, build_id, banner (torch's library), torch, torch_nccl (torch's own idea),
libraries (every libnccl mapped: an LD_PRELOAD one sits beside torch's), pynccl (the library vLLM's own communicator
loads: VLLM_NCCL_SO_PATH or `libnccl.so.2`, which an LD_PRELOAD wins), env_nccl_version (the image's NCCL_VERSION
variable, which can be stale), vllm and flashinfer (the installed distributions' versions, None when absent). A torch
with no NCCL (a CPU build) prints {"nccl": null, "reason": ...}; NCCL linked into torch statically prints "static": true
and no path.
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


def version_banner(path: str) -> str | None:
    """The library's own banner, NCCL's VERSION_STRING, which its source keeps whole in the binary so that `strings`
    shows it: "NCCL version 2.28.9+cuda13.0" (a development build's suffix follows X.Y.Z). Other strings start alike
    ("NCCL version 2.28.9 compiled with CUDA 13.0", "NCCL version mismatch ..."): the banner is the one of no space."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = data.find(b"NCCL version ")
        while at != -1:
            end = data.find(b"\0", at, at + 128)
            text = data[at:end].decode("ascii", "replace") if end != -1 else ""
            rest = text[len("NCCL version "):]
            if rest[:1].isdigit() and not any(c.isspace() for c in rest):
                return text
            at = data.find(b"NCCL version ", at + 1)
    return None


def mapped(word: str) -> list[str]:
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if word in line and "/" in line})


def version_text(v: int) -> str:
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}" if v >= 20900 else f"{v // 1000}.{v % 1000 // 100}.{v % 100}"


def library(lib: ctypes.CDLL, path: str) -> dict:
    """One libnccl: its file (real path), version from ncclGetVersion, and GNU build id."""
    code = ctypes.c_int()
    rc = lib.ncclGetVersion(ctypes.byref(code))
    return {"path": os.path.realpath(path), "version": version_text(code.value) if rc == 0 else None,
            "version_code": code.value, "ncclGetVersion_rc": rc, "build_id": gnu_build_id(path),
            "banner": version_banner(path)}


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p)]


def file_of(function) -> str | None:
    """The file a loaded function lives in (dladdr): which library a name such as `libnccl.so.2` resolved to."""
    info = DlInfo()
    found = ctypes.CDLL(None).dladdr(ctypes.cast(function, ctypes.c_void_p), ctypes.byref(info))
    return info.dli_fname.decode() if found and info.dli_fname else None


def global_nccl() -> str | None:
    """The file whose ncclGetVersion the process's global scope finds first: where torch's NCCL calls go (an LD_PRELOAD
    library comes before torch's own there; torch.cuda.nccl.version() keeps naming the version torch was built with,
    as a real H200 showed: it said 2.28.9 while the preloaded 2.28.3 ran the all_reduce)."""
    try:
        return file_of(ctypes.CDLL(None).ncclGetVersion)
    except AttributeError:
        return None


def pynccl() -> dict:
    """What vLLM's own NCCL communicator (pynccl, its tensor-parallel collectives) loads: ctypes.CDLL of VLLM_NCCL_SO_PATH,
    else `libnccl.so.2`, which resolves to a library already loaded under that name (an LD_PRELOAD one first)."""
    so_path = os.environ.get("VLLM_NCCL_SO_PATH") or "libnccl.so.2"
    try:
        lib = ctypes.CDLL(so_path)
        path = file_of(lib.ncclGetVersion) or so_path
        return {"so_path": so_path, **library(lib, path)}
    except (OSError, AttributeError) as exc:
        return {"so_path": so_path, "error": f"{type(exc).__name__}: {exc}"}


def distribution(*names: str) -> str | None:
    """The installed version of the first of these Python distributions found (its metadata: nothing is imported)."""
    from importlib import metadata

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def main() -> int:
    env = os.environ.get("NCCL_VERSION")
    # The serving stack's own versions, for the run history's manifest (flashinfer's wheel was renamed flashinfer-python).
    stack = {"vllm": distribution("vllm"), "flashinfer": distribution("flashinfer-python", "flashinfer")}
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        print(json.dumps({"nccl": None, "reason": f"cannot import torch: {type(exc).__name__}: {exc}", "env_nccl_version": env,
                          **stack}))
        return 0
    out = {"torch": torch.__version__, "env_nccl_version": env, **stack}
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
                          "build_id": None, "torch_libs": mapped("libtorch_cuda"), "pynccl": pynccl()}))
        return 0
    # Every libnccl mapped (an LD_PRELOAD one sits beside torch's own); torch's calls go to the global scope's first.
    libraries = [library(ctypes.CDLL(p), p) for p in paths]
    first = global_nccl()
    torch_lib = next((lib for lib in libraries if first and lib["path"] == os.path.realpath(first)), None)
    chosen_by = "global symbol"
    if torch_lib is None:
        torch_lib = next((lib for lib in libraries if lib["version"] == out["torch_nccl"]), libraries[0])
        chosen_by = "version" if torch_lib["version"] == out["torch_nccl"] else "first mapped"
    print(json.dumps({**out, "nccl": torch_lib["version"], "static": False, **torch_lib, "chosen_by": chosen_by,
                      "mapped": paths, "libraries": libraries, "pynccl": pynccl()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
