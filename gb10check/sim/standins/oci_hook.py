"""nvidia-container-runtime-hook: the OCI prestart hook docker runs for `--gpus`."""

import json
import os
import subprocess
import sys


def nvidia_container_runtime_hook(args: list[str]) -> int:
    """dockerd registers its "nvidia" device driver only when this hook is on its PATH, as with the real toolkit.
    Gives the container what the driver stand-ins read, as the real hook bind-mounts the driver's libraries and
    nvidia-smi. Runs before pivot_root, in the runtime's namespaces."""
    if not args or args[0] != "prestart":
        return 0
    container = json.load(sys.stdin)
    with open(os.path.join(container["bundle"], "config.json")) as f:
        rootfs = json.load(f)["root"]["path"]
    rootfs = rootfs if os.path.isabs(rootfs) else os.path.join(container["bundle"], rootfs)
    script = (f"mkdir -p {rootfs}/etc/gb10sim && mount --bind /etc/gb10sim {rootfs}/etc/gb10sim "
              f"&& mount -o remount,bind,ro {rootfs}/etc/gb10sim")
    done = subprocess.run(["nsenter", "-t", str(container["pid"]), "-m", "-r", "/bin/sh", "-c", script], capture_output=True, text=True,
                          timeout=30)
    if done.returncode != 0:
        print(f"nvidia-container-cli: mount error: {done.stderr.strip()}", file=sys.stderr)
    return done.returncode
