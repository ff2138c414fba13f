"""Facts asserted for the captures of rdma_gids_devinfo/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "rdma_gids_devinfo/gb10-blog-rdma-link.txt": (
        "rdma_link", {
            "#": 4,
            "0.rdma_device": "rocep1s0f0",
            "0.port_state": "ACTIVE",
            "0.phys_state": "LINK_UP",
            "0.netdev": "enp1s0f0np0",
            "1.port_state": "DOWN",
            "1.phys_state": "DISABLED",
            "2.port_state": "ACTIVE",
        }),
    "rdma_gids_devinfo/gb10-blog-show_gids-redacted.txt": (
        "show_gids", {
            "#": 12,
            "3.rdma_device": "rocep1s0f0",
            "3.index": 3,
            "3.type": "RoCE v2",
            "3.ipv4": "192.168.100.10",
            "2.type": "RoCE v1",
            "0.ipv4": None,
            "9.rdma_device": "roceP2p1s0f0",
            "9.ipv4": "192.168.100.14",
            "9.netdev": "enP2p1s0f0np0",
        }),
    "rdma_gids_devinfo/dgxspark-ibv_devinfo-4hca-port1-up-idx53062434312.txt": (
        "ibv_devinfo", {
            "#": 4,
            "0.rdma_device": "rocep1s0f0",
            "0.firmware": "28.45.4028",
            "0.board_id": "NVD0000000087",
            "0.ports.0.port_state": "DOWN",
            "0.ports.0.active_mtu": 1024,
            "1.ports.0.port_state": "ACTIVE",
            "1.ports.0.active_mtu": 4096,
            "1.ports.0.link_layer": "Ethernet",
            "3.rdma_device": "roceP2p1s0f1",
        }),
    "rdma_gids_devinfo/dgxspark-sysfs-state-rate-linklayer-loop-reformatted-idx58010773908.txt": (
        "ib_sysfs", {
            "#": 4,
            "0.port_state": "DOWN",
            "0.rate_gbps": 40.0,
            "1.rdma_device": "rocep1s0f1",
            "1.port_state": "ACTIVE",
            "1.rate_gbps": 200.0,
            "1.rate_width": "2X NDR",
            "1.link_layer": "Ethernet",
        }),
    "rdma_gids_devinfo/hp-zgx-nano-gb10-sysfs-port-rate-state-idx27283978185.txt": (
        "ib_sysfs", {
            "#": 4,
            "1.port_state": "ACTIVE",
            "1.rate_gbps": 200.0,
            "1.rate_width": "4X HDR",
            "2.port_state": "DOWN",
        }),
    "rdma_gids_devinfo/igx-orin-cx7-ibstat-eth-and-ib-holoscan-docs.txt": (
        "ibstat", {
            "#": 2,
            "0.rdma_device": "mlx5_0",
            "0.port_state": "DOWN",
            "0.phys_state": "Disabled",
            "0.link_layer": "Ethernet",
            "1.port_state": "ACTIVE",
            "1.phys_state": "LinkUp",
            "1.rate_gbps": 100.0,
            "1.link_layer": "InfiniBand",
            "1.firmware": "28.37.0190",
        }),
}
