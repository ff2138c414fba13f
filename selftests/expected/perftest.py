"""Facts asserted for the captures of perftest/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "perftest/dgxspark-playbook-ib_write_bw-rocep1s0f0-infinite.txt": (
        "perftest", {
            "device": "rocep1s0f0",
            "gid_index": 3,
            "link_type": "Ethernet",
            "qps": 1,
            "bw_average_gbps": 92.568,
            "#bw_rows": 5,
            "local_ipv4": "192.168.200.13",
            "remote_ipv4": "192.168.200.12",
            "error": None,
            "warnings.0": "BW peak won't be measured in this run.",
        }),
    "perftest/dgxspark-playbook-ib_write_bw-roceP2p1s0f0-infinite.txt": (
        "perftest", {
            "device": "roceP2p1s0f0",
            "gid_index": 3,
            "bw_average_gbps": 97.282,
            "#bw_rows": 6,
            "mtu_bytes": 1024,
        }),
    "perftest/gb10-blog-ib_write_bw-D10-cpu_util-redacted.txt": (
        "perftest", {
            "device": "roceP2p1s0f0",
            "bw_average_gbps": 92.57,
            "bw_rows.0.cpu_util_pct": 5.07,
            "bw_rows.0.iterations": 1059332,
            "remote_ipv4": "192.168.100.10",
        }),
    "perftest/spark-vllm-docker-ib_write_bw-q4-rdma_cm-forcelinkIB.txt": (
        "perftest", {
            "device": "rocep1s0f1",
            "qps": 4,
            "link_type": "IB",
            "gid_index": None,
            "connection": "rdma_cm",
            "bw_average_gbps": 111.71,
            "bw_peak_gbps": 111.72,
        }),
    "perftest/dell-promax-gb10-ib_write_bw-q4-rdma_cm.txt": (
        "perftest", {
            "device": "rocep1s0f0",
            "qps": 4,
            "bw_average_gbps": 111.61,
            "bw_rows.0.bytes": 65536,
        }),
    "perftest/spark-vllm-docker-ib_write_lat-rdma_cm.txt": (
        "perftest", {
            "test": "RDMA_Write Latency Test",
            "#lat_rows": 1,
            "lat_rows.0.t_typical_us": 1.47,
            "lat_rows.0.p99_9_us": 1.93,
            "bw_average_gbps": None,
        }),
    "perftest/fail-couldnt-connect-perftest-pr228.txt": (
        "perftest", {
            "error": "Couldn't connect to 192.168.125.211:18515",
            "#bw_rows": 0,
        }),
}
