"""Facts asserted for the captures of meminfo/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "meminfo/dgxspark-proc-meminfo-partial-author-selected-idx68529745704.txt": (
        "meminfo", {
            "mem_total_gib": 121.69,
            "mem_available_gib": 38.313,
            "cached_gib": 35.948,
            "huge_pages_total": 0,
        }),
    "meminfo/generic-x86-proc-meminfo-full-2016-node-procfs-stats-issue9.txt": (
        "meminfo", {
            "mem_total_gib": 0.972,
            "mem_available_gib": 0.677,
            "hugepagesize_gib": 0.002,
        }),
    "meminfo/dgxspark-free-g-head2-idx69674905226.txt": (
        "free", {
            "mem_total_gib": 121.0,
            "mem_used_gib": 95.0,
            "mem_buff_cache_gib": 14.0,
            "mem_available_gib": 25.0,
        }),
}
