"""Triton compiling the kernel canary's kernel for an architecture other than the GPU's, on a real NVIDIA machine (not
by CI): the compiler's own message when Triton's ptxas does not know the architecture (GB10's sm_121a: Triton issue 8539).

`python3 selftests/device/triton_arch_probe.py CAPABILITY` (121 for sm_121a), from the repository root, with a fresh
TRITON_CACHE_DIR, two ways: (1) Triton's current target is replaced by GPUTarget("cuda", CAPABILITY, 32) (its driver
object's get_current_target) before gb10check/canary/kernels.py's add kernel is compiled through Triton's own JIT
(JITFunction.warmup: compiled, not launched); (2) the same kernel through triton.compile(ASTSource(...), target=...).
Prints one JSON line: capability, triton (version), target (what the driver then reported), ok and error for (1), and
compile: {ok, error} for (2); an error is the exception's type and whole message, the way kernels.py reports it (the
reproducer Triton prints on a failure, the whole PTX, goes to stderr). One process per capability (Triton keeps a
kernel's target per device). Used by selftests/device/run_canaries_h200.sh.
"""

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from gb10check.canary.kernels import failure, kernel_module  # noqa: E402 - the repository root first


def main() -> int:
    capability = int(sys.argv[1])
    out = {"capability": capability}
    with tempfile.TemporaryDirectory() as d:
        os.environ["TRITON_CACHE_DIR"] = os.path.join(d, "cache")  # nothing compiled before answers from a cache
        try:
            import torch
            import triton
            from triton.backends.compiler import GPUTarget
            from triton.runtime import driver
        except Exception as exc:  # noqa: BLE001 - the failure is the answer
            print(json.dumps({**out, "ok": False, "error": f"cannot import: {failure(exc)}"}))
            return 0
        out["triton"] = triton.__version__
        module = kernel_module(d)
        try:
            target = GPUTarget("cuda", capability, 32)
            driver.active.get_current_target = lambda: target
            out["target"] = repr(driver.active.get_current_target())
            n = 5000
            x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
            with contextlib.redirect_stdout(sys.stderr):  # Triton prints its reproducer (the whole PTX) on a failure
                module.add_kernel.warmup(x, y, torch.empty_like(x), n, BLOCK=1024, grid=(1,))
            out.update(ok=True, error=None)
        except Exception as exc:  # noqa: BLE001
            out.update(ok=False, error=failure(exc))
        try:
            from triton.compiler import ASTSource

            src = ASTSource(fn=module.add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                                             "BLOCK": "constexpr"}, constexprs={"BLOCK": 1024})
            with contextlib.redirect_stdout(sys.stderr):
                triton.compile(src, target=GPUTarget("cuda", capability, 32))
            out["compile"] = {"ok": True, "error": None}
        except Exception as exc:  # noqa: BLE001
            out["compile"] = {"ok": False, "error": failure(exc)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
