"""Which stand-in a name runs: the node's /usr/local/bin/<tool> links all lead to __main__.py, whose argv[0] picks."""

import importlib

# name -> (module, function): imported only for the tool asked for (a node's gather runs a few dozen stand-ins, each a
# fresh interpreter: importing all ten modules every time was a third of each one's start-up).
COMMANDS = {"nvidia-smi": ("nvidia_smi", "nvidia_smi"), "nvidia-container-runtime-hook": ("oci_hook", "nvidia_container_runtime_hook"),
            "nvidia-ctk": ("nvidia_ctk", "nvidia_ctk"),
            "ibdev2netdev": ("ibdev2netdev", "ibdev2netdev"), "show_gids": ("show_gids", "show_gids"),
            "ibv_devinfo": ("ibv_devinfo", "ibv_devinfo"), "ethtool": ("ethtool", "ethtool"), "ib_write_bw": ("ib_write_bw", "ib_write_bw"),
            "mpirun": ("nccl", "mpirun"), "all_gather_perf": ("nccl", "all_gather_perf"), "lspci": ("lspci", "lspci"),
            "dmesg": ("dmesg", "dmesg"), "dd": ("dd", "dd"), "python3": ("image_python", "python3"),
            "refresh-loop": ("state_sync", "refresh_loop")}


def command(name: str):
    module, function = COMMANDS[name]
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)


# What a node gets in /usr/local/bin (refresh-loop is the state syncer's unit, not a tool; python3 is the image's, in
# IMAGE_BIN, first on the image's PATH: the node's own python3 stays the node's).
TOOLS = [name for name in COMMANDS if name not in ("refresh-loop", "python3")]
IMAGE_BIN = "/usr/local/lib/gb10sim/image-bin"
IMAGE_TOOLS = ["python3"]


def main(argv: list[str]) -> int:
    import os
    import sys

    name = os.path.basename(argv[0])
    if name in COMMANDS:
        return command(name)(argv[1:])
    if len(argv) > 1 and argv[1] in COMMANDS:
        return command(argv[1])(argv[2:])
    print(f"usage: {name} {{{','.join(COMMANDS)}}} ARGS", file=sys.stderr)
    return 2
