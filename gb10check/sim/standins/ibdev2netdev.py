"""ibdev2netdev: one line per RDMA device, `DEV port 1 ==> NETDEV (Up|Down)`; `-v` adds PCI address, part,
board, firmware and the port state (format of the GB10 captures, ibdev2netdev/*)."""

from .common import IB, devices, link_up, read, state

PCI = {"rocep1s0f0": "0000:01:00.0", "rocep1s0f1": "0000:01:00.1", "roceP2p1s0f0": "0002:01:00.0", "roceP2p1s0f1": "0002:01:00.1"}


def ibdev2netdev(args: list[str]) -> int:
    s = state()
    for dev, netdev, _ in devices(s):
        up = "Up" if link_up(netdev) else "Down"
        if "-v" in args:
            port_state = (read(f"{IB}/{dev}/ports/1/state") or "1: DOWN").split()[-1]
            print(f"{PCI.get(dev, '0000:00:00.0')} {dev} (MT4129 - {s['board_id']}) fw {s['fw_ver']} port 1 ({port_state}) ==> "
                  f"{netdev} ({up})")
        else:
            print(f"{dev} port 1 ==> {netdev} ({up})")
    return 0
