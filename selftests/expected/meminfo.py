"""Facts asserted for the captures of meminfo/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "meminfo/dgxspark-proc-meminfo-partial-author-selected-idx68529745704.txt": (
        "meminfo", {
            "mem_total_gib": 121.69,
            "mem_free_gib": 2.994,
            "mem_available_gib": 38.313,
            "buffers_gib": 0.013,
            "cached_gib": 35.948,
            "kreclaimable_gib": 0.455,
            "cma_total_gib": 0.125,
            "huge_pages_total": 0,
            "hugetlb_gib": 0.0,
            "mem_available_estimate_gib": "<missing>",  # MemAvailable is there: no estimate
        }),
    "meminfo/generic-x86-proc-meminfo-full-2016-node-procfs-stats-issue9.txt": (
        "meminfo", {
            "mem_total_gib": 0.972,
            "mem_available_gib": 0.677,
            "active_file_gib": 0.301,
            "sreclaimable_gib": 0.135,
            "committed_as_gib": 0.89,
            "huge_pages_total": 0,
            "huge_pages_free": 0,
            "hugepagesize_gib": 0.002,
            "hugepagesize_kb": 2048,
            "huge_pages_total_gib": 0.0,
            "direct_map_2m_gib": 0.938,
        }),
    "meminfo/openwrt-arm-128M-proc-meminfo-no-MemAvailable-old-kernel-sysinfo-issue164.txt": (
        "meminfo", {
            "mem_total_gib": 0.119,
            "mem_free_gib": 0.077,
            "mem_available_gib": None,  # the kernel prints none; not MemFree
            "mem_available_estimate_gib": 0.105,  # 80288 + 14576 + 9360 + 6144 kB
            "cached_gib": 0.021,
            "vmalloc_chunk_gib": 0.791,
        }),
    "meminfo/dgxspark-free-g-head2-idx69674905226.txt": (
        "free", {
            "unit_from": "command",
            "mem_total_gib": 121.0,
            "mem_used_gib": 95.0,
            "mem_free_gib": 12.0,
            "mem_shared_gib": 0.0,
            "mem_buff_cache_gib": 14.0,
            "mem_available_gib": 25.0,
            "mem_available_estimated": False,
            "swap_total_gib": "<missing>",  # head -2 cut the Swap line
        }),
    "meminfo/free-h-procps-3.3.10-G-M-suffixes-not-Gi-swap-0B-root-prompt-cloudera-prereq-checks-pr35.txt": (
        "free", {
            "unit_from": "suffix",
            "mem_total_gib": 3.6,
            "mem_used_gib": 0.14,  # 143M
            "mem_free_gib": 3.3,
            "mem_shared_gib": 0.008,  # 8.2M
            "mem_buff_cache_gib": 0.165,  # 169M
            "mem_available_gib": 3.3,
            "mem_available_estimated": False,
            "swap_total_gib": 0.0,
            "swap_free_gib": 0.0,
        }),
    "meminfo/free-m-old-procps-buffers-cached-columns-plus-minus-buffers-cache-line-header-indent-lost-eventsim-issue4.txt": (
        "free", {
            "unit_from": "magnitude",  # no command line, bare numbers: 7983 is MiB by the documented rule
            "unit_inferred": "MiB",
            "mem_total_gib": 7.796,
            "mem_used_gib": 6.93,
            "mem_free_gib": 0.866,
            "mem_buffers_gib": 0.181,
            "mem_cached_gib": 1.242,
            "mem_buff_cache_gib": 1.423,
            "buffers_cache_used_gib": 5.506,
            "buffers_cache_free_gib": 2.29,
            "mem_available_gib": 2.29,  # the -/+ buffers/cache line's free
            "mem_available_estimated": True,
            "swap_total_gib": 0.0,
        }),
}
