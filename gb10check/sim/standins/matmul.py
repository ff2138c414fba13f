"""The GPU's matmul in a container given the GPU (`docker run --gpus`). The simulation has no GPU, so the compute canary
(gb10check/canary/matmul.py, fed on stdin as `python3 - --seconds S`) is answered here (through image_python.py): its
JSON line as the program prints it on CUDA, with the state's figure (gpu_load.tflops), after the program's --seconds
(nvidia-smi samples the GPU meanwhile)."""

import json
import os

from . import common
from .nvidia_smi import load

# How the compute canary's text begins (selftests/test_standins_render.py holds it to gb10check/canary/matmul.py).
MATMUL = b'"""Matrix-multiply timing:'


def real_python() -> str:
    """The first python3 on the PATH that is not a link to the stand-ins' entry point (this one)."""
    me = os.path.join(os.path.dirname(os.path.realpath(__file__)), "__main__.py")
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(folder, "python3")
        if folder and os.access(path, os.X_OK) and os.path.realpath(path) != me:
            return path
    return "/usr/bin/python3"


def torch_version(python: str) -> str | None:
    """The real torch's version beside that python (its dist-info), without importing it."""
    import glob

    prefix = os.path.dirname(os.path.dirname(python))
    found = sorted(glob.glob(f"{prefix}/lib/python3*/site-packages/torch-*.dist-info"))
    return os.path.basename(found[0])[len("torch-"):-len(".dist-info")] if found else None


def answer(args: list[str], python: str) -> int:
    import time

    seconds, n = 10.0, 8192
    for i, a in enumerate(args[:-1]):
        if a == "--seconds":
            seconds = float(args[i + 1])
        elif a == "--n":
            n = int(args[i + 1]) or n
    s = common.state()
    tflops = float(load(s)["tflops"])
    time.sleep(seconds)
    iterations = max(1, round(tflops * 1e12 * seconds / (2.0 * n ** 3) / 10) * 10)  # batches of 10, as on CUDA
    print(json.dumps({"tflops": round(tflops, 4), "tflops_median": round(tflops, 4), "iterations": iterations,
                      "seconds": round(seconds, 3), "device": s["gpu_name"], "backend": "cuda", "dtype": "bfloat16", "n": n,
                      "torch": torch_version(python)}))
    return 0
