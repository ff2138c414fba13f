"""Facts asserted for the captures of nccl_tests/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "nccl_tests/dell-promax-gb10-2node-all_gather_perf-16G.txt": (
        "nccl_tests", {
            "collective": "all_gather_perf",
            "version": "2.18.5",
            "nccl_version": "2.28.9",  # nccl-library=22809
            "#ranks": 2,
            "ranks.0.host": "promaxgb10-4c75",
            "ranks.1.host": "promaxgb10-4c99",
            "ranks.1.pid": 30808,
            "ranks.0.device_name": "NVIDIA GB10",
            "ranks.0.bus_id": "000f:01:00",
            "hosts": ["promaxgb10-4c75", "promaxgb10-4c99"],
            "avg_busbw_gbps": 183.689,
            "busbw_gbps": 183.68,
            "#rows": 1,
            "rows.0.size_bytes": 17179869184,
            "rows.0.redop": "none",
            "rows.0.root": -1,
            "rows.0.oop_busbw_gbps": 183.52,
            "rows.0.ip_busbw_gbps": 183.84,
            "rows.0.oop_wrong": "0",
            "out_of_bounds_ok": True,
            "errors_found": False,
            "complete": True,
            "error": None,
        }),
    "nccl_tests/h100-2node-16rank-all_reduce_perf-a3mega.txt": (
        "nccl_tests", {
            "collective": None,
            "#ranks": 16,
            "ranks.15.rank": 15,
            "ranks.15.host": "ztan-mig-gq73",
            "ranks.15.device": 7,
            "hosts": ["ztan-mig-235z", "ztan-mig-gq73"],
            "#rows": 31,
            "rows.0.size_bytes": 8,
            "rows.30.size_bytes": 8589934592,
            "rows.30.oop_time_us": 47535.0,
            "avg_busbw_gbps": 565.936,  # "70.742 " with a trailing space: the sweep's mean
            "busbw_gbps": 2704.68,  # the 8 GiB row: (338.82 + 337.35) / 2 GB/s x8
            "max_busbw_gbps": 2710.56,
            "errors_found": False,
            "complete": True,
        }),
    "nccl_tests/deepops-k8s-sriov-roce-multinode-all_reduce-oldformat-error-col.txt": (
        "nccl_tests", {
            "#rows": 29,
            "#ranks": 0,
            "avg_busbw_gbps": 62.139,
            "busbw_gbps": 183.08,
            "rows.0.oop_wrong": "2e-07",  # the old float "error" column, as printed
            "rows.0.root": None,  # no root column in the old format
            "rows.0.oop_time_us": 2193.5,
            "rows.28.ip_busbw_gbps": 182.8,
            "rows.28.ip_time_us": 176189.0,
            "errors_found": False,  # 5e-07 is a deviation, not a count of wrong elements
            "out_of_bounds_ok": True,
            "complete": True,
        }),
    "nccl_tests/dgxspark-2node-all_gather-2.17.6-nccl-2.28.3-16G-padded-hostname-spark-trailing-spaces-TRUNCATED-before-avg-dgx-spark-playbooks-issue25.txt": (
        "nccl_tests", {
            "collective": "all_gather_perf",
            "version": "2.17.6",
            "nccl_version": "2.28.3",
            "hosts": ["spark", "spark-3995"],  # "on      spark": padding, not part of the name
            "ranks.0.pid": 1935208,
            "#rows": 1,
            "rows.0.oop_busbw_gbps": 151.52,
            "rows.0.ip_busbw_gbps": 167.6,
            "busbw_gbps": 159.56,
            "avg_busbw_gbps": None,  # cut before "# Avg bus bandwidth": not computed in its place
            "complete": False,
            "out_of_bounds_ok": True,
            "errors_found": False,
        }),
    "nccl_tests/dgxspark-pair-nccl-2.30.7-NCCL_DEBUG-lines-GDR-disabled-dlvsym-dmabuf-symmetric-mem-author-selected-no-prefix-idx67223248947.txt": (
        "nccl_tests", {
            "nccl_version": "2.30.7",
            "nccl_cuda": "13.3",
            "net_ib_devices": ["rocep1s0f1:1/RoCE", "roceP2p1s0f1:1/RoCE"],
            "gdr_disabled_hcas": ["rocep1s0f1", "roceP2p1s0f1"],
            "transports": [],  # no channel lines in this selection
            "#rows": 0,
            "avg_busbw_gbps": None,
            "complete": False,
            "warnings": [],
            "error": None,
        }),
    "nccl_tests/t4-single-node-2gpu-all_reduce-nccl-2.8.3-socket-ibverbs-missing-WARN-root-prompt-cmd-TRUNCATED-nccl-issue428.txt": (
        "nccl_tests", {
            "nccl_version": "2.8.3",
            "nccl_cuda": "10.0",
            "#ranks": 2,  # old "#   Rank  0 Pid" lines (no Group), one process driving 2 GPUs (-g 2)
            "ranks.0.group": None,
            "ranks.1.pid": 96540,
            "ranks.1.device": 1,
            "ranks.1.bus_id": "0xaf",
            "ranks.1.device_name": "Tesla T4",
            "hosts": ["ai-vtraining-prd-10-193-84-3"],
            "warnings": ["Failed to open libibverbs.so[.1]"],
            "network": "Socket",  # the plug-in line only
            "transports": [],  # cut before any channel line: nothing says what carried the data
            "#rows": 0,
            "complete": False,
        }),
    "nccl_tests/8gpu-all_reduce-NCCL_DEBUG-info-tail-n-30-P2P-direct-pointer-Connected-all-rings-root-prompt-TRUNCATED-nccl-issue1773.txt": (
        "nccl_tests", {
            "transports": ["P2P"],
            "net_gdr": None,
            "network": None,
            "#rows": 0,
            "#ranks": 0,
            "complete": False,
            "error": None,
        }),
}
