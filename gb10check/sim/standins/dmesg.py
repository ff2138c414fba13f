"""dmesg: the machine's real kernel log, then the node's simulated kernel lines (`kernel_log` in its state: what this
machine's kernel cannot print, a GPU's Xid errors and the NVIDIA driver's NV_ERR_NO_MEMORY) in dmesg's default layout,
`[seconds.micros] message`, each stamped with the seconds since boot it was put there at. Every node shares this
machine's one kernel, so a real Xid or OOM kill here would show on every node and in every later run."""

import subprocess
import sys

from .common import state


def render(s: dict, real: str, args: list[str]) -> str:
    """The real log's text, and the state's lines after it in the default layout (-T, -r, --json ...: the real log only)."""
    if args:
        return real
    return real + "".join(f"[{e['at_s']:12.6f}] {e['message']}\n" for e in s.get("kernel_log", []))


def dmesg(args: list[str]) -> int:
    try:
        real = subprocess.run(["/usr/bin/dmesg", *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"dmesg: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render(state(), real.stdout, args) if real.returncode == 0 else real.stdout)
    sys.stderr.write(real.stderr)
    return real.returncode
