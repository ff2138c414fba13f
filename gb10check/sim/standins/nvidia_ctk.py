"""nvidia-ctk: the NVIDIA Container Toolkit's CLI, as far as the checks ask it: `--version` (the release from the node's
state, toolkit_version) and `cdi generate --output=PATH`, which writes the CDI spec for the driver the node runs now
(user_driver) in the layout the real generator writes (the driver's libraries with their version suffix, the
enable-cuda-compat hook with --host-driver-version). The sim writes the spec once at boot (sim/boot.py): a later driver
change leaves it behind, as on a real machine."""

import os
import sys

from .common import state

VERSION = "1.18.1"  # the toolkit release of a healthy node, unless the state names another
COMMIT = "efe99418ef87500dbe059cadc9ab418b2815b9d5"  # the sim's own build: a fixed commit line
SPEC = "/etc/cdi/nvidia.yaml"
LIBDIR = "/usr/lib/aarch64-linux-gnu"
LIBRARIES = ("libEGL_nvidia.so", "libGLESv2_nvidia.so", "libcuda.so", "libcudadebugger.so", "libnvidia-eglcore.so",
             "libnvidia-glcore.so", "libnvidia-ml.so", "libnvidia-nvvm.so", "libnvidia-ptxjitcompiler.so")
DEVICE_NODES = ("/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl")


def spec_text(s: dict) -> str:
    """The CDI spec of the node's driver now, as `nvidia-ctk cdi generate` lays it out."""
    driver = s["user_driver"]
    mounts = [f"{LIBDIR}/{lib}.{driver}" for lib in LIBRARIES] + ["/usr/bin/nvidia-smi", "/usr/bin/nvidia-debugdump"]
    lines = ["---", "cdiVersion: 0.5.0", "containerEdits:", "  deviceNodes:"]
    lines += [f"  - path: {d}" for d in DEVICE_NODES]
    lines += ["  env:", "  - NVIDIA_VISIBLE_DEVICES=void", "  hooks:",
              "  - args:", "    - nvidia-cdi-hook", "    - enable-cuda-compat", f"    - --host-driver-version={driver}",
              "    env:", "    - NVIDIA_CTK_DEBUG=false", "    hookName: createContainer", "    path: /usr/bin/nvidia-cdi-hook",
              "  - args:", "    - nvidia-cdi-hook", "    - update-ldcache", "    - --folder", f"    - {LIBDIR}",
              "    env:", "    - NVIDIA_CTK_DEBUG=false", "    hookName: createContainer", "    path: /usr/bin/nvidia-cdi-hook",
              "  mounts:"]
    for path in mounts:
        lines += [f"  - containerPath: {path}", f"    hostPath: {path}", "    options:", "    - ro", "    - nosuid",
                  "    - nodev", "    - rbind", "    - rprivate"]
    lines += ["devices:"]
    for name in ("0", s.get("gpu_uuid", "GPU-0"), "all"):
        lines += ["- containerEdits:", "    deviceNodes:", "    - path: /dev/nvidia0", f"  name: {name!r}" if name == "0" else f"  name: {name}"]
    lines += ["kind: nvidia.com/gpu"]
    return "\n".join(lines) + "\n"


def nvidia_ctk(args: list[str]) -> int:
    s = state()
    if args[:1] in (["--version"], ["-v"], ["version"]):
        print(f"NVIDIA Container Toolkit CLI version {s.get('toolkit_version', VERSION)}\ncommit: {COMMIT}")
        return 0
    if args[:2] == ["cdi", "generate"]:
        output = next((a.split("=", 1)[1] for a in args if a.startswith("--output=")), None)
        if output is None and "--output" in args and args.index("--output") + 1 < len(args):
            output = args[args.index("--output") + 1]
        text = spec_text(s)
        print('level=info msg="Auto-detected mode as \'nvml\'"', file=sys.stderr)
        print(f'level=info msg="Using driver version {s["user_driver"]}"', file=sys.stderr)
        if output is None:
            sys.stdout.write(text)
            return 0
        os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
        with open(output, "w") as f:
            f.write(text)
        print(f'level=info msg="Generated CDI spec with version 0.5.0"', file=sys.stderr)
        return 0
    print("NAME:\n   NVIDIA Container Toolkit CLI - Tools to configure the NVIDIA Container Toolkit\n\nUSAGE:\n"
          "   nvidia-ctk [global options] command [command options]", file=sys.stderr)
    return 1
