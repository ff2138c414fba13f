"""Matrix-multiply timing: how fast this machine's torch multiplies, for gb10check's test_gpu_compute.

Fed to the image's python3 on stdin (`python3 - [--seconds S] [--n N]`); stdlib and torch only. On CUDA: n x n x n bf16
products in batches, each batch timed with CUDA events, for about --seconds; without CUDA the same loop on the CPU in
float32 (CPU torch has no fast bf16 path everywhere), and the line says so ("backend": "cpu").
Prints one JSON line: tflops (2*n^3 per product, over the timed batches), tflops_median (per batch), iterations,
seconds, device, dtype, backend, n, torch. A torch that cannot be imported prints {"error": ...} and exits 2.
"""

import argparse
import json
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--n", type=int, default=0, help="matrix size (default: 8192 on CUDA, 1024 on the CPU)")
    args = ap.parse_args()
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure is the answer
        print(json.dumps({"error": f"cannot import torch: {type(exc).__name__}: {exc}"}))
        return 2
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda:0" if cuda else "cpu")
    dtype = torch.bfloat16 if cuda else torch.float32
    n = args.n or (8192 if cuda else 1024)
    a, b = torch.randn(n, n, device=dev, dtype=dtype), torch.randn(n, n, device=dev, dtype=dtype)
    c = torch.empty(n, n, device=dev, dtype=dtype)
    for _ in range(2):  # warm-up: kernel selection, clocks up
        torch.matmul(a, b, out=c)
    if cuda:
        torch.cuda.synchronize()
    batch = 10 if cuda else 1
    rates, elapsed, done, start = [], 0.0, 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(batch):
                torch.matmul(a, b, out=c)
            e.record()
            e.synchronize()
            took = s.elapsed_time(e) / 1e3
        else:
            t0 = time.perf_counter()
            torch.matmul(a, b, out=c)
            took = time.perf_counter() - t0
        elapsed += took
        done += batch
        rates.append(2.0 * n ** 3 * batch / took / 1e12)
    print(json.dumps({
        "tflops": round(2.0 * n ** 3 * done / elapsed / 1e12, 4), "tflops_median": round(statistics.median(rates), 4),
        "iterations": done, "seconds": round(time.perf_counter() - start, 3),
        "device": torch.cuda.get_device_name(0) if cuda else "cpu", "backend": "cuda" if cuda else "cpu",
        "dtype": str(dtype).removeprefix("torch."), "n": n, "torch": torch.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
