"""nvidia-smi: the GB10 table (nvidia_smi/gb10-*: the timestamp line padded to 31 columns, the 89-column
boxes, bus id 0000000F:01:00.0, `Not Supported` memory, the Processes box listing this node's GPU processes:
vLLM's `VLLM::` processes with their resident memory), --query-compute-apps (the same processes), -L,
--query-gpu CSV (with or without header/units; the compute canary's clock/power fields from the state's gpu_load,
looping with -lms / -l until killed), and the driver's failures (no driver in a container without --gpus; NVML mismatch)."""

import os
import time

from .common import STATE, state

BUS_ID = "0000000F:01:00.0"
BAR = "+" + "-" * 89 + "+"
COLS = "+-----------------------------------------+------------------------+----------------------+"


def in_container() -> bool:
    """Whether this runs in a container of the node's docker (its own PID namespace), not in the node: the node's PID 1 is
    its init (gb10sim's boot.py, or systemd). /.dockerenv cannot tell: a node's root lies over the machine's, which may
    itself be a container."""
    try:
        with open("/proc/1/cmdline", "rb") as f:
            init = f.read().split(b"\0")[:2]
    except OSError:
        return True
    return not any(word.endswith((b"/boot.py", b"systemd", b"/sbin/init")) for word in init)


def gpu_processes() -> list[tuple[int, str, int]]:
    """(pid, name, MiB) of the processes using the GPU: vLLM names its engine and workers VLLM::..., and on GB10
    their memory is the unified memory they hold: their resident memory here, and what the state's gpu_memory_mib
    gives a name beyond it (a scenario's engine holding device memory this machine cannot give; its meminfo counts it
    with extra_used_kb). A container's own nvidia-smi sees none (other PID namespace)."""
    if in_container():
        return []
    try:
        held = state().get("gpu_memory_mib") or {}
    except (OSError, ValueError):
        held = {}
    found = []
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                name = f.read().split(b"\0")[0].decode(errors="replace").strip()
            with open(f"/proc/{pid}/statm") as f:
                rss_mib = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1048576
        except (OSError, ValueError, IndexError):
            continue
        if name.startswith("VLLM::"):
            found.append((int(pid), name, rss_mib + int(held.get(name, 0))))
    return found


# What the GPU reports under the compute canary's load (simulated figures: the stand-in cannot see the load, so it
# answers as a busy GPU, clock-event reasons 0: not idle). A scenario sets the state's gpu_load to change them.
# tflops: the compute canary's figure (standins/matmul.py), a healthy GB10's bf16 matmul (issue #27's field figure).
BUSY = {"sm_clock_mhz": 2405, "max_sm_clock_mhz": 3003, "power_w": 38.52, "temperature_c": 52, "clock_event_reasons": 0,
        "tflops": 90.0}
ALIASES = {"clocks.sm": "clocks.current.sm", "clocks_throttle_reasons.active": "clocks_event_reasons.active"}  # header names


def load(s: dict) -> dict:
    return {**BUSY, **(s.get("gpu_load") or {})}


def values(s: dict) -> dict[str, tuple[str, str]]:
    """field -> (value as printed with units, the header's unit)."""
    g = load(s)
    return {"name": (s["gpu_name"], ""), "driver_version": (s["user_driver"], ""), "memory.total": ("[N/A]", " [MiB]"),
            "memory.used": ("[N/A]", " [MiB]"), "memory.free": ("[N/A]", " [MiB]"), "utilization.gpu": ("0 %", " [%]"),
            "power.draw": (f"{g['power_w']:.2f} W", " [W]"), "temperature.gpu": (str(g["temperature_c"]), ""),
            "pci.bus_id": (BUS_ID, ""), "uuid": (s["gpu_uuid"], ""), "persistence_mode": ("Enabled", ""),
            "clocks.current.sm": (f"{g['sm_clock_mhz']} MHz", " [MHz]"), "clocks.max.sm": (f"{g['max_sm_clock_mhz']} MHz", " [MHz]"),
            "clocks_event_reasons.active": (f"0x{g['clock_event_reasons']:016x}", "")}


def loop_seconds(args: list[str]) -> float | None:
    """-lms N (milliseconds) or -l N / --loop=N (seconds): sample until killed."""
    for i, a in enumerate(args):
        for flag, scale in (("-lms", 1e-3), ("--loop-ms", 1e-3), ("-l", 1.0), ("--loop", 1.0)):
            if a == flag and i + 1 < len(args):
                return float(args[i + 1]) * scale
            if a.startswith(flag + "="):
                return float(a.split("=", 1)[1]) * scale
    return None


def query_rows(s: dict, args: list[str], fields_arg: str) -> tuple[list[str], int]:
    """The lines of one query (the header first unless noheader), and the exit status."""
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv")
    known = values(s)
    fields = [ALIASES.get(f, f) for f in fields_arg.split(",")]
    unknown = [f for f, name in zip(fields_arg.split(","), fields) if name not in known]
    if unknown:
        return [f'Field "{unknown[0]}" is not a valid field to query.', ""], 2
    lines = [] if "noheader" in fmt else [", ".join(f + ("" if "nounits" in fmt else known[f][1]) for f in fields)]
    cells = [known[f][0] for f in fields]
    if "nounits" in fmt:
        cells = [c.rsplit(" ", 1)[0] if c.endswith((" %", " W", " MHz")) else c for c in cells]
    return lines + [", ".join(cells)], 0


def query(s: dict, args: list[str], fields_arg: str) -> int:
    lines, rc = query_rows(s, args, fields_arg)
    print("\n".join(lines), flush=True)
    every = loop_seconds(args)
    if rc or every is None:
        return rc
    while True:  # the real tool samples until it is killed; each sample reads the node's state again
        time.sleep(every)
        print(query_rows(state(), args, fields_arg)[0][-1], flush=True)


def table(s: dict) -> None:
    v, cuda = s["user_driver"], s["cuda_version"]
    procs = gpu_processes()
    busy = bool(procs)
    lines = [f"{time.strftime('%a %b %e %H:%M:%S %Y'):<31}", BAR,
             f"| NVIDIA-SMI {v:<23}Driver Version: {v:<15}CUDA Version: {cuda:<9}|", COLS,
             "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
             "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
             "|                                         |                        |               MIG M. |",
             "|=========================================+========================+======================|",
             f"|   0  {s['gpu_name']:<31}On  |   {BUS_ID} Off |                  N/A |",
             f"| N/A   {'46C    P0' if busy else '36C    P8'}             {'10W' if busy else ' 3W'} /  N/A  | Not Supported          |"
             f"      {'0%':>2}      Default |",
             "|                                         |                        |                  N/A |", COLS, "", BAR,
             f"| {'Processes:':<88}|",
             "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
             "|        ID   ID                                                               Usage      |",
             "|" + "=" * 89 + "|"]
    if procs:
        for pid, name, mib in procs:
            name = name if len(name) <= 36 else "..." + name[-33:]
            lines.append(f"|  {0:>3}   {'N/A':>3}  {'N/A':>3}  {pid:>14}  {'C':>5}   {name:<36}{str(mib) + 'MiB':>10} |")
    else:
        lines.append(f"|  {'No running processes found':<87}|")
    lines.append(BAR)
    print("\n".join(lines))


APPS_FIELDS = {"pid": ("pid", ""), "process_name": ("process_name", ""), "name": ("process_name", ""),
               "used_memory": ("used_gpu_memory", " [MiB]"), "used_gpu_memory": ("used_gpu_memory", " [MiB]")}


def compute_apps(args: list[str], fields_arg: str) -> int:
    """--query-compute-apps: one line per GPU process (this node's VLLM:: processes, as the table lists them); the
    header alone, or nothing with noheader, when there is none."""
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv")
    fields = fields_arg.split(",")
    unknown = [f for f in fields if f not in APPS_FIELDS]
    if unknown:
        print(f'Field "{unknown[0]}" is not a valid field to query.\n')
        return 2
    lines = [] if "noheader" in fmt else [", ".join(APPS_FIELDS[f][0] + ("" if "nounits" in fmt else APPS_FIELDS[f][1])
                                                    for f in fields)]
    for pid, name, mib in gpu_processes():
        cell = {"pid": str(pid), "process_name": name, "used_gpu_memory": f"{mib}" + ("" if "nounits" in fmt else " MiB")}
        lines.append(", ".join(cell[APPS_FIELDS[f][0]] for f in fields))
    print("\n".join(lines))
    return 0


def nvidia_smi(args: list[str]) -> int:
    if not os.path.exists(STATE):  # in a container the GPU was not given to (no --gpus / no toolkit)
        print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.\n")
        return 9
    s = state()
    if s["kernel_module"] != s["user_driver"]:
        print("Failed to initialize NVML: Driver/library version mismatch")
        print(f"NVML library version: {s['user_driver']}")
        return 18
    apps = next((a.split("=", 1)[1] for a in args if a.startswith("--query-compute-apps=")), None)
    if apps is not None:
        return compute_apps(args, apps)
    fields = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
    if fields is not None:
        return query(s, args, fields)
    if "-L" in args:
        print(f"GPU 0: {s['gpu_name']} (UUID: {s['gpu_uuid']})")
        return 0
    table(s)
    return 0
