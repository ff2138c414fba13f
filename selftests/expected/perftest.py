"""Facts asserted for the captures of perftest/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "perftest/dgxspark-playbook-ib_write_bw-rocep1s0f0-infinite.txt": (
        "perftest", {
            "test": "RDMA_Write BW Test",
            "device": "rocep1s0f0",
            "gid_index": 3,
            "link_type": "Ethernet",
            "qps": 1,
            "unit": "Gb/sec",
            "bw_bytes": 65536,
            "bw_average_gbps": 92.568,  # infinite run: the mean of its rows, all of one size
            "bw_peak_gbps": None,  # "BW peak won't be measured": the 0.00 column is no measurement
            "#bw_rows": 5,
            "bw_rows.3.bw_average_gbps": 92.56,
            "local_ipv4": "192.168.200.13",
            "remote_ipv4": "192.168.200.12",
            "#addresses": 2,
            "complete": False,  # infinite runs are stopped, never closed
            "error": None,
            "warnings": ["BW peak won't be measured in this run."],
        }),
    "perftest/dgxspark-playbook-ib_write_bw-roceP2p1s0f0-infinite.txt": (
        "perftest", {
            "device": "roceP2p1s0f0",
            "qps": 1,
            "gid_index": 3,
            "bw_average_gbps": 97.282,
            "#bw_rows": 6,
            "bw_rows.0.iterations": 927940,
            "mtu_bytes": 1024,
            "local_ipv4": "192.168.201.13",
            "remote_ipv4": "192.168.201.12",
            "addresses.1.psn": "0x8ab8e7",
            "error": None,
        }),
    "perftest/gb10-blog-ib_write_bw-D10-cpu_util-redacted.txt": (
        "perftest", {
            "device": "roceP2p1s0f0",
            "qps": 1,
            "bw_average_gbps": 92.57,
            "bw_peak_gbps": None,  # -D: peak not measured (0.00)
            "bw_rows.0.cpu_util_pct": 5.07,
            "bw_rows.0.iterations": 1059332,
            "bw_rows.0.msg_rate_mpps": 0.176557,
            "local_ipv4": "192.168.100.15",
            "remote_ipv4": "192.168.100.10",
            "addresses.0.qpn": "0xxxxx",  # redacted by the author, kept as printed
            "complete": True,
            "error": None,
        }),
    "perftest/spark-vllm-docker-ib_write_bw-q4-rdma_cm-forcelinkIB.txt": (
        "perftest", {
            "device": "rocep1s0f1",
            "qps": 4,
            "link_type": "IB",
            "gid_index": None,
            "connection": "rdma_cm",
            "connection_type": "RC",
            "bw_average_gbps": 111.71,
            "bw_peak_gbps": 111.72,
            "#addresses": 8,
            "addresses.3.side": "local",
            "addresses.4.side": "remote",
            "addresses.4.qpn": "0x03eb",
            "addresses.4.gid": None,  # rdma_cm prints no GID lines
            "local_ipv4": None,
            "remote_ipv4": None,
            "complete": True,
            "error": None,
        }),
    "perftest/dell-promax-gb10-ib_write_bw-q4-rdma_cm.txt": (
        "perftest", {
            "device": "rocep1s0f0",
            "qps": 4,
            "connection": "rdma_cm",
            "bw_average_gbps": 111.61,
            "bw_peak_gbps": 111.62,
            "bw_rows.0.bytes": 65536,
            "bw_rows.0.iterations": 20000,
            "#addresses": 8,
            "addresses.7.qpn": "0x0132",
            "error": None,
        }),
    "perftest/spark-vllm-docker-ib_write_lat-rdma_cm.txt": (
        "perftest", {
            "test": "RDMA_Write Latency Test",
            "device": "rocep1s0f1",
            "qps": 1,
            "#lat_rows": 1,
            "lat_rows.0.bytes": 2,
            "lat_rows.0.t_min_us": 1.42,
            "lat_rows.0.t_typical_us": 1.47,
            "lat_rows.0.p99_us": 1.57,
            "lat_rows.0.p99_9_us": 1.93,
            "bw_average_gbps": None,
            "#bw_rows": 0,
            "complete": True,
            "error": None,
        }),
    "perftest/ib_write_lat-a-IB-cx6-root-prompt-2-cpufreq-warnings-before-every-row-tabs-trailing-spaces-idx60859828466.txt": (
        "perftest", {
            "test": "RDMA_Write Latency Test",
            "device": "mlx5_0",  # "Dual-port : OFF\t\tDevice : mlx5_0"
            "qps": 1,  # "Number of qps : 1\t\tTransport type : IB"
            "connection_type": "RC",
            "link_type": "IB",
            "mtu_bytes": 4096,
            "#lat_rows": 23,
            "lat_rows.0.bytes": 2,
            "lat_rows.0.t_typical_us": 1.87,
            "lat_rows.0.t_stdev_us": 0.18,
            "lat_rows.0.p99_9_us": 5.41,
            "lat_rows.22.bytes": 8388608,
            "lat_rows.22.t_avg_us": 348.34,
            "lat_rows.22.p99_us": 441.71,
            "addresses.0.lid": "0x40",
            "addresses.1.lid": "0x6e",
            "local_ipv4": None,  # InfiniBand: no GID lines
            "warnings": ["Conflicting CPU frequency values detected: 3393.693000 != 1500.000000. CPU Frequency is not max."],
            "complete": True,
            "error": None,  # the cpufreq lines are warnings, not failures
        }),
    "perftest/ib_send_bw-b-bidir-q8-a-numactl-cmdline-72dash-first-separator-GID-per-QP-sweep-cut-at-16K-idx51871324810.txt": (
        "perftest", {
            "test": "Send Bidirectional BW Test",
            "bidirectional": True,
            "device": "mlx5_1",
            "qps": 8,
            "gid_index": 3,
            "mtu_bytes": 4096,
            "#addresses": 16,
            "addresses.7.side": "local",
            "addresses.7.ipv4": "10.22.116.220",
            "addresses.8.side": "remote",
            "addresses.8.ipv4": "10.22.116.221",
            "local_ipv4": "10.22.116.220",
            "remote_ipv4": "10.22.116.221",  # the GID after the remote address line, not the second GID printed
            "#bw_rows": 14,
            "bw_rows.0.bytes": 2,
            "bw_rows.0.bw_peak_gbps": 0.120775,
            "bw_rows.13.bytes": 16384,
            "bw_bytes": 16384,
            "bw_average_gbps": 194.33,  # the largest size's row, not the sweep's mean (52.6)
            "bw_peak_gbps": 194.36,
            "complete": False,  # the paste stops after the 16384-byte row
            "error": None,
        }),
    "perftest/fail-couldnt-connect-perftest-pr228.txt": (
        "perftest", {
            "error": "Couldn't connect to 192.168.125.211:18515",
            "errors.1": "Unable to open file descriptor for socket connection Unable to init the socket connection",
            "#bw_rows": 0,
            "bw_average_gbps": None,
        }),
    "perftest/fail-bw-completion-with-error-at-client-status-4-syndrom-0x51-scnt-ccnt-run_iter_bw-gpu-pcie-perftest-issue173.txt": (
        "perftest", {
            "error": "Completion with error at client: Failed status 4: wr_id 0 syndrom 0x51",
            "errors": ["Completion with error at client", "Failed status 4: wr_id 0 syndrom 0x51",
                       "Failed to complete run_iter_bw function successfully"],
            "bw_average_gbps": None,
        }),
    "perftest/fail-ib_send_lat-UD-client-side-Unable-to-create-QP-trailing-period-efa-perftest-issue105.txt": (
        "perftest", {
            "error": "Unable to create QP.",
            "errors": ["Unable to create QP.", "Failed to create QP.", "Couldn't create IB resources."],
            "waiting": False,
            "#lat_rows": 0,
        }),
    "perftest/fail-ib_send_lat-UD-server-side-banner-then-Unable-to-create-QP-efa-perftest-issue105.txt": (
        "perftest", {
            "error": "Unable to create QP.",
            "errors.2": "Couldn't create IB resources",
            "waiting": True,
            "#lat_rows": 0,
        }),
    "perftest/fail-ib_send_lat-port-state-Down-Couldnt-set-link-layer-quoted-with-gt-markers-lsgunth-perftest-issue1.txt": (
        "perftest", {
            "error": "Port number 1 state is Down",  # the cause, not the "Couldn't set the link layer" that follows
            "errors": ["Port number 1 state is Down", "Couldn't set the link layer", "Couldn't get context for the device"],
            "#lat_rows": 0,
        }),
}
