"""Facts asserted for the captures of ibdev2netdev/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "ibdev2netdev/dgxspark-playbook-spark1-port0-up.txt": (
        "ibdev2netdev", {
            "#": 4,
            "0.rdma_device": "rocep1s0f0",
            "0.netdev": "enp1s0f0np0",
            "0.state": "up",
            "1.state": "down",
            "2.rdma_device": "roceP2p1s0f0",
            "2.netdev": "enP2p1s0f0np0",
            "2.state": "up",
            "3.state": "down",
        }),
    "ibdev2netdev/dgxspark-playbook-spark2-port0-up.txt": (
        "ibdev2netdev", {
            "#": 4,
            "0.rdma_device": "rocep1s0f0",
            "0.netdev": "enp1s0f0np0",
            "0.state": "up",
            "1.state": "down",
            "2.rdma_device": "roceP2p1s0f0",
            "2.netdev": "enP2p1s0f0np0",
            "2.state": "up",
            "3.state": "down",
        }),
    "ibdev2netdev/gb10-blog-port0-up.txt": (
        "ibdev2netdev", {
            "#": 4,
            "0.rdma_device": "rocep1s0f0",
            "0.netdev": "enp1s0f0np0",
            "0.state": "up",
            "1.state": "down",
            "2.rdma_device": "roceP2p1s0f0",
            "2.netdev": "enP2p1s0f0np0",
            "2.state": "up",
            "3.state": "down",
        }),
    "ibdev2netdev/dgxspark-playbook-switch-port1-up.txt": (
        "ibdev2netdev", {
            "#": 4,
            "0.state": "down",
            "1.netdev": "enp1s0f1np1",
            "1.state": "up",
            "3.rdma_device": "roceP2p1s0f1",
            "3.state": "up",
        }),
    "ibdev2netdev/spark-vllm-docker-networking-port1-up.txt": (
        "ibdev2netdev", {
            "#": 4,
            "0.state": "down",
            "1.netdev": "enp1s0f1np1",
            "1.state": "up",
            "3.rdma_device": "roceP2p1s0f1",
            "3.state": "up",
        }),
    "ibdev2netdev/igx-orin-cx7-mlx5-eth-names-holoscan-docs.txt": (
        "ibdev2netdev", {
            "#": 2,
            "0.rdma_device": "mlx5_0",
            "0.netdev": "eth2",
            "0.state": "down",
            "1.netdev": "eth3",
            "1.state": "up",
        }),
    "ibdev2netdev/h100-leaf-12hca-cx7-ib-and-cx6-eth-piped-through-column-t-author-comments-appended-imbue-cluster-health-issue4.txt": (
        "ibdev2netdev", {
            "#": 12,
            "0.rdma_device": "mlx5_0",
            "0.port": 1,
            "0.netdev": "ibp26s0",
            "0.state": "down",
            "0.link_state": "Down",
            "1.rdma_device": "mlx5_1",
            "1.netdev": "enp27s0f0np0",
            "1.state": "up",
            "2.rdma_device": "mlx5_10",
            "2.netdev": "ibp204s0",
            "9.rdma_device": "mlx5_7",
            "9.netdev": "enp157s0f0np0",
            "9.state": "up",
            "11.rdma_device": "mlx5_9",
            "11.netdev": "ibp188s0",
            "11.state": "down",
            "11.pci": None,
        }),
    "ibdev2netdev/sriov-ib-vf-in-pod-net1-Down-after-kubectl-exec-prompts-sriov-network-operator-issue382.txt": (
        "ibdev2netdev", {
            "#": 1,
            "0.rdma_device": "mlx5_3",
            "0.port": 1,
            "0.netdev": "net1",
            "0.state": "down",
            "0.port_state": None,
        }),
}
