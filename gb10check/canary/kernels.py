"""Kernel smoke test: can this Python's torch run a GPU op, and can its Triton compile and run a kernel, for gb10check's
test_image_kernels.

Fed to the image's python3 on stdin (`python3 -`); stdlib, torch and triton only. Images fail on GB10 only when they
build or load a kernel: torch without sm_121 code (`CUDA error: no kernel image is available for execution on the
device`), or Triton's bundled ptxas too old for the GPU (`ptxas fatal : Value 'sm_121a' is not defined for option
'gpu-name'`, Triton issue 8539); `nvidia-smi -L` in the container shows neither. The Triton kernel is written to a
temporary file and imported from there (Triton reads a kernel's source with inspect, which stdin cannot give).
Prints one JSON line: torch, cuda, device, capability (sm_XY), arch_list (what torch was built for), torch_op and
triton ({ok, error, warnings}; error is the exception's type and whole message: the compiler's own words). A torch
without CUDA (a CPU build, the simulation) prints {"gpu": null, "reason": ...}; a torch that cannot be imported prints
{"error": ...} and exits 2.
"""

import importlib.util
import json
import os
import sys
import tempfile
import warnings

TRITON_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
'''


def kernel_module(folder: str):
    """TRITON_KERNEL imported from a file in `folder` (Triton reads a kernel's source with inspect, which stdin cannot give)."""
    path = os.path.join(folder, "gb10check_add_kernel.py")
    with open(path, "w") as f:
        f.write(TRITON_KERNEL)
    spec = importlib.util.spec_from_file_location("gb10check_add_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def failure(exc: BaseException) -> str:
    kind = type(exc).__name__ if type(exc).__module__ == "builtins" else f"{type(exc).__module__}.{type(exc).__name__}"
    return f"{kind}: {exc}".strip()


def torch_op(torch) -> dict:
    """An elementwise op and a small bf16 matmul on the GPU, checked against the CPU."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            a = torch.arange(4096, dtype=torch.float32, device="cuda")
            total = float((a * 2 + 1).sum().item())
            m = torch.randn(128, 128, dtype=torch.bfloat16)
            gpu = (m.cuda() @ m.cuda()).float().cpu()
            torch.cuda.synchronize()
            ok = total == float(4096 * 4096) and torch.allclose(gpu, (m.float() @ m.float()), atol=1.0, rtol=0.05)
            result = {"ok": bool(ok), "error": None if ok else f"wrong result: sum {total}, matmul differs from the CPU's"}
        except Exception as exc:  # noqa: BLE001 - the failure is the answer
            result = {"ok": False, "error": failure(exc)}
    result["warnings"] = [str(w.message) for w in caught][:5]
    return result


def triton_kernel(torch) -> dict:
    try:
        import triton
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "version": None, "error": f"cannot import triton: {failure(exc)}", "warnings": []}
    out = {"version": triton.__version__, "ptxas_path": os.environ.get("TRITON_PTXAS_PATH")}
    with warnings.catch_warnings(record=True) as caught, tempfile.TemporaryDirectory() as d:
        warnings.simplefilter("always")
        try:
            module = kernel_module(d)
            n = 5000
            x = torch.rand(n, device="cuda")
            y = torch.rand(n, device="cuda")
            z = torch.empty_like(x)
            module.add_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)
            torch.cuda.synchronize()
            ok = bool(torch.allclose(z, x + y))
            out.update(ok=ok, error=None if ok else "wrong result: the Triton kernel's sum differs from torch's")
        except Exception as exc:  # noqa: BLE001
            out.update(ok=False, error=failure(exc))
    out["warnings"] = [str(w.message) for w in caught][:5]
    return out


def main() -> int:
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        print(json.dumps({"error": f"cannot import torch: {type(exc).__name__}: {exc}"}))
        return 2
    out = {"torch": torch.__version__, "cuda": torch.version.cuda}
    if not torch.cuda.is_available():
        why = (f"torch {torch.__version__} has no CUDA (a CPU build)" if torch.version.cuda is None
               else f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU")
        print(json.dumps({**out, "gpu": None, "reason": why}))
        return 0
    major, minor = torch.cuda.get_device_capability(0)
    out.update(gpu=0, device=torch.cuda.get_device_name(0), capability=f"sm_{major}{minor}", arch_list=torch.cuda.get_arch_list())
    out["torch_op"] = torch_op(torch)
    out["triton"] = triton_kernel(torch)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
