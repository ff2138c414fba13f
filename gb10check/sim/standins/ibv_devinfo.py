"""ibv_devinfo: one block per device, tab-indented as rdma-core prints it (format of
rdma_gids_devinfo/dgxspark-ibv_devinfo-*: `hca_id:<TAB>dev`, key/value lines padded with tabs, the port block,
a blank line after each device). node_guid comes from the port's MAC as mlx5 derives it; active_mtu from the
netdev's MTU (RoCE: the largest IB MTU that fits beside the headers), unless the scenario's link state holds a
`roce_active_mtu` (a port that did not follow its netdev's MTU)."""

from .common import IB, active_mtu, devices, mac_of, node_guid, read, state

def ibv_devinfo(args: list[str]) -> int:
    s = state()
    wanted = args[args.index("-d") + 1] if "-d" in args and args.index("-d") + 1 < len(args) else None
    devs = devices(s)
    if wanted and wanted not in {d for d, _, _ in devs}:
        print(f"IB device '{wanted}' wasn't found")
        return 255
    first_guid = node_guid(mac_of(devs[0][1])) if devs else ""
    for dev, netdev, _ in devs:
        if wanted and wanted != dev:
            continue
        active = (read(f"{IB}/{dev}/ports/1/state") or "").endswith("ACTIVE")
        print(f"hca_id:\t{dev}")
        for key, tabs, value in [("transport", 3, "InfiniBand (0)"), ("fw_ver", 4, s["fw_ver"]), ("node_guid", 3, node_guid(mac_of(netdev))),
                                 ("sys_image_guid", 3, first_guid), ("vendor_id", 3, "0x02c9"), ("vendor_part_id", 3, "4129"),
                                 ("hw_ver", 4, "0x0"), ("board_id", 3, s["board_id"]), ("phys_port_cnt", 3, "1")]:
            print(f"\t{key}:" + "\t" * tabs + value)
        print("\t\tport:\t1")
        print("\t\t\tstate:\t\t\t" + ("PORT_ACTIVE (4)" if active else "PORT_DOWN (1)"))
        print("\t\t\tmax_mtu:\t\t4096 (5)")
        stuck = s["links"].get(netdev, {}).get("roce_active_mtu")  # a scenario's RDMA port that did not follow its netdev
        mtu = active_mtu(netdev) if stuck is None else (stuck, {4096: 5, 2048: 4, 1024: 3, 512: 2, 256: 1}[stuck])
        print("\t\t\tactive_mtu:\t\t{} ({})".format(*mtu))
        print("\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t0\n\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tEthernet")
        print()
    return 0
