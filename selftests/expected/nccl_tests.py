"""Facts asserted for the captures of nccl_tests/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "nccl_tests/dell-promax-gb10-2node-all_gather_perf-16G.txt": (
        "nccl_tests", {
            "collective": "all_gather_perf",
            "version": "2.18.5",
            "#ranks": 2,
            "ranks.1.host": "promaxgb10-4c99",
            "ranks.0.device_name": "NVIDIA GB10",
            "avg_busbw_gbps": 183.689,
            "#rows": 1,
            "rows.0.oop_busbw_gbps": 183.52,
            "out_of_bounds_ok": True,
            "errors_found": False,
        }),
    "nccl_tests/h100-2node-16rank-all_reduce_perf-a3mega.txt": (
        "nccl_tests", {
            "#ranks": 16,
            "#rows": 31,
            "avg_busbw_gbps": 565.936,
            "max_busbw_gbps": 2710.56,
            "rows.30.size_bytes": 8589934592,
            "errors_found": False,
        }),
    "nccl_tests/deepops-k8s-sriov-roce-multinode-all_reduce-oldformat-error-col.txt": (
        "nccl_tests", {
            "#rows": 29,
            "avg_busbw_gbps": 62.139,
            "rows.0.oop_wrong": "2e-07",
            "rows.28.ip_busbw_gbps": 182.8,
            "errors_found": False,
        }),
}
