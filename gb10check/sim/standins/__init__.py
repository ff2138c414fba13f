"""Stand-ins for the GB10 hardware tools, run inside simulated nodes (stdlib only: the node's /usr/bin/python3).

One module per tool: nvidia_smi, ibdev2netdev, show_gids, ibv_devinfo, ethtool, ib_write_bw, nccl (mpirun and
all_gather_perf), oci_hook (nvidia-container-runtime-hook), nvidia_ctk (nvidia-ctk: its version and the CDI spec); state_sync keeps /sys/class/infiniband, /proc/meminfo and
/proc/driver/nvidia/version in step with the node; files makes the files a scenario puts into a node; common holds the
node's state and the GID table. Each tool prints the real tool's format, generated from the node's state
(/etc/gb10sim/state.json) and from the real interfaces: a veth that is down is a port that is down, a ufw drop on the
perftest port is a connection that fails.

The package is copied whole into each node (/usr/local/lib/gb10sim/standins); the node's /usr/local/bin/<tool> links
lead to its __main__.py, whose argv[0] picks the tool (see tools.py).
"""

__all__ = ["make_file", "refresh", "state"]


def __getattr__(name: str):
    """make_file, refresh and state on first use: every tool imports this package, and a stand-in starts once per command
    (files and state_sync bring shutil, bz2, lzma and platform: half of a tool's start-up)."""
    if name == "make_file":
        from .files import make_file

        return make_file
    if name == "refresh":
        from .state_sync import refresh

        return refresh
    if name == "state":
        from .common import state

        return state
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
