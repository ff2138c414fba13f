"""Which stand-in a name runs: the node's /usr/local/bin/<tool> links all lead to __main__.py, whose argv[0] picks."""

from .ethtool import ethtool
from .ib_write_bw import ib_write_bw
from .ibdev2netdev import ibdev2netdev
from .ibv_devinfo import ibv_devinfo
from .lspci import lspci
from .nccl import all_gather_perf, mpirun
from .nvidia_smi import nvidia_smi
from .oci_hook import nvidia_container_runtime_hook
from .show_gids import show_gids
from .state_sync import refresh_loop

COMMANDS = {"nvidia-smi": nvidia_smi, "nvidia-container-runtime-hook": nvidia_container_runtime_hook, "ibdev2netdev": ibdev2netdev,
            "show_gids": show_gids, "ibv_devinfo": ibv_devinfo, "ethtool": ethtool, "ib_write_bw": ib_write_bw, "mpirun": mpirun,
            "all_gather_perf": all_gather_perf, "lspci": lspci, "refresh-loop": refresh_loop}

# What a node gets in /usr/local/bin (refresh-loop is the state syncer's unit, not a tool).
TOOLS = [name for name in COMMANDS if name != "refresh-loop"]


def main(argv: list[str]) -> int:
    import os
    import sys

    name = os.path.basename(argv[0])
    if name in COMMANDS:
        return COMMANDS[name](argv[1:])
    if len(argv) > 1 and argv[1] in COMMANDS:
        return COMMANDS[argv[1]](argv[2:])
    print(f"usage: {name} {{{','.join(COMMANDS)}}} ARGS", file=sys.stderr)
    return 2
