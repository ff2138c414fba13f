"""show_gids: the GID table of every port as the MLNX script prints it from sysfs, tab-separated
(format of rdma_gids_devinfo/*show_gids*: the tab-only header, IPv4 rows `GID<TAB>IPv4  <TAB>VER`,
rows without an address `GID<TAB><TAB><TAB>VER`, the n_gids_found count)."""

from .common import devices, sysfs_gids, state

HEADER = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV"
RULE = "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---"
EMPTY = {"0000:0000:0000:0000:0000:0000:0000:0000", "fe80:0000:0000:0000:0000:0000:0000:0000"}


def ipv4_of_gid(gid: str) -> str | None:
    """The script's own test: a GID whose first group is 0000 carries an IPv4 address in its last four bytes."""
    if not gid.startswith("0000"):
        return None
    h = gid.replace(":", "")
    return ".".join(str(int(h[i:i + 2], 16)) for i in range(24, 32, 2))


def show_gids(args: list[str]) -> int:
    print(HEADER)
    print(RULE)
    n = 0
    for dev, _, _ in devices(state()):
        if args and args[0] != dev:
            continue
        for index, gid, kind, ndev in sysfs_gids(dev):
            if gid in EMPTY:
                continue
            ver = kind[kind.find("v"):] if "v" in kind else kind
            ipv4 = ipv4_of_gid(gid)
            print(f"{dev}\t1\t{index}\t{gid}\t{ipv4}  \t{ver}\t{ndev}" if ipv4 else f"{dev}\t1\t{index}\t{gid}\t\t\t{ver}\t{ndev}")
            n += 1
    print(f"n_gids_found={n}")
    return 0
