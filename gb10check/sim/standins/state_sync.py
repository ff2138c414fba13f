"""Keeps the node's stand-in files in step with its state and its real interfaces (the node's init or the
gb10sim-standins unit calls refresh every 0.5 s): /sys/class/infiniband (with each port's error counters),
/sys/class/dmi/id/bios_{version,date}, /proc/meminfo (and its copy /etc/gb10sim/meminfo), /proc/driver/nvidia/version."""

import os
import platform
import sys
import time

from .common import IB, devices, gid_table, link_up, read, state


def write_if_changed(path: str, text: str) -> None:
    if read(path, None) != text.strip():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")


def port_rate(up: bool, speed_mbps: int) -> str:
    """sysfs ports/1/rate as mlx5 reports an Ethernet port (a port without link reads 40 Gb/sec (4X QDR))."""
    if not up:
        return "40 Gb/sec (4X QDR)"
    return "200 Gb/sec (2X NDR)" if speed_mbps >= 200000 else f"{speed_mbps // 1000} Gb/sec (2X HDR)"


def refresh(s: dict) -> None:
    for dev, netdev, link in devices(s):
        port = f"{IB}/{dev}/ports/1"
        up = link_up(netdev)
        write_if_changed(f"{port}/state", "4: ACTIVE" if up else "1: DOWN")
        write_if_changed(f"{port}/phys_state", "5: LinkUp" if up else "3: Disabled")
        write_if_changed(f"{port}/rate", port_rate(up, link["speed_mbps"]))
        write_if_changed(f"{port}/link_layer", "Ethernet")
        write_if_changed(f"{IB}/{dev}/fw_ver", s["fw_ver"])
        for counter in ("link_downed", "symbol_error", "port_rcv_errors"):  # a scenario's errors, else none since boot
            write_if_changed(f"{port}/counters/{counter}", str(link.get("counters", {}).get(counter, 0)))
        write_if_changed(f"{IB}/{dev}/board_id", s["board_id"])
        os.makedirs(f"{IB}/{dev}/device/net/{netdev}", exist_ok=True)
        table = gid_table(netdev, s.get("gid_layout", "standard"), up)
        wanted = {str(i) for i in range(len(table))}
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            os.makedirs(f"{port}/{sub}", exist_ok=True)
            for stale in set(os.listdir(f"{port}/{sub}")) - wanted:
                os.unlink(f"{port}/{sub}/{stale}")
        for i, (gid, kind) in enumerate(table):
            write_if_changed(f"{port}/gids/{i}", gid)
            write_if_changed(f"{port}/gid_attrs/types/{i}", kind)
            write_if_changed(f"{port}/gid_attrs/ndevs/{i}", netdev)
    for key in ("bios_version", "bios_date"):  # the DMI table a GB10's firmware gives (/sys/class is the node's tmpfs)
        if s.get(key):
            write_if_changed(f"/sys/class/dmi/id/{key}", s[key])
    write_meminfo(s)
    # The open kernel module's two lines (GCC's ends in a space, as the driver writes it).
    write_if_changed("/proc/driver/nvidia/version",
                     f"NVRM version: NVIDIA UNIX Open Kernel Module for {platform.machine()}  {s['kernel_module']}  Release Build  "
                     f"(dvs-builder@gb10sim)  Wed Jan  7 22:35:57 UTC 2026\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04.1) ")


OS_BASELINE_KB = 1024 * 1024  # what an idle GB10's own services hold, beside the node's processes


def node_rss_kb() -> int:
    """Resident memory of this node's own processes (its /proc shows only its PID namespace)."""
    total = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
            except (OSError, ValueError, IndexError):
                pass
    return total


def meminfo_line(key: str, value: int, unit: bool = True) -> str:
    """The kernel's layout: the name and colon padded to 16 columns, the value right-aligned in 8, " kB"
    (HugePages_* and the like: no unit)."""
    return f"{key + ':':<16}{value:>8} kB" if unit else f"{key + ':':<16}{value:>8}"


def write_meminfo(s: dict) -> None:
    """A GB10's 119 GiB of unified memory, with every other line of the host's own /proc/meminfo (in its order);
    what this node's processes really hold (a loading vLLM rank or a memory hog, this node's only: each GB10 has
    its own memory) and the scenario's `extra_used_kb` are taken from it."""
    host: list[tuple[str, int, bool]] = []
    for line in (read("/etc/gb10sim/host-meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if key and fields and fields[0].isdigit():
            host.append((key, int(fields[0]), len(fields) > 1))
    values = {k: v for k, v, _ in host}
    if not values.get("MemTotal"):
        return
    total = s.get("mem_total_kb", 127600816)
    used = OS_BASELINE_KB + node_rss_kb() + s.get("extra_used_kb", 0)
    available = max(0, total - used)
    cached = min(values.get("Cached", 0) + s.get("extra_cached_kb", 0), available)
    ours = {"MemTotal": total, "MemFree": max(0, available - cached), "MemAvailable": available, "Cached": cached,
            "SwapCached": 0, "SwapTotal": 0, "SwapFree": 0}
    text = "\n".join(meminfo_line(k, ours.get(k, v), unit) for k, v, unit in host) + "\n"
    global _meminfo_written
    now = time.monotonic()
    if _meminfo_written[0] == tuple(ours.items()) and now - _meminfo_written[1] < 10:
        return  # the GB10 figures did not move: leave the host's other lines as they were, readers see no rewrite
    # In place (the file is bind-mounted over /proc/meminfo), in one write and then cut to length: never an empty
    # file between a truncation and the write, which a concurrent `cat /proc/meminfo` would read as garbled.
    data = text.encode()
    fd = os.open("/proc/meminfo", os.O_WRONLY)
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
    # The same figures where a container given the GPU finds them (the NVIDIA hook's stand-in binds /etc/gb10sim; a
    # container's own /proc is the machine's): the CUDA driver's stand-in (libcuda.c) reads its memory from here.
    # A temporary file of this process's own: the init's loop and a refresh asked for from outside can write at once.
    staged = f"/etc/gb10sim/meminfo.{os.getpid()}.new"
    with open(staged, "w") as f:
        f.write(text)
    os.replace(staged, "/etc/gb10sim/meminfo")
    _meminfo_written = (tuple(ours.items()), now)


_meminfo_written: tuple = ((), 0.0)


def refresh_loop(args: list[str]) -> int:
    """What the plain init does between reaping children; a unit of its own in systemd mode."""
    while True:
        try:
            refresh(state())
        except Exception as exc:  # keep going; the journal says what broke
            print(f"refresh failed: {exc!r}", file=sys.stderr, flush=True)
        time.sleep(0.5)
