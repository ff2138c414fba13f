"""Facts asserted for our own captures from a real GPU machine (selftests/captures, see its README.md).

Two NVIDIA H200 (SXM, 143771 MiB each) on the device tool's lent nvidia-h200-x2 machine, driver 580.159.04,
CUDA 13.0, NCCL 2.28.9 (torch 2.11.0+cu130's pip libnccl), nccl-tests 2.19.6 built there against it.
Values are read off the outputs by hand; bandwidth is Gb/s (nccl-tests' GB/s x8), memory GiB (1024^3 bytes).
selftests/captures/raw/ holds outputs that no parse kind reads yet; they are not asserted here.
"""

EXPECTED = {
    # ---- nvidia-smi --------------------------------------------------------------------------------
    "ours/nvidia_smi/h200-nvidia-smi.txt": (
        "nvidia_smi", {
            "smi_version": "580.159.04",
            "driver_version": "580.159.04",
            "cuda_version": "13.0",
            "#gpus": 2,
            "gpus.0.index": 0,
            "gpus.0.name": "NVIDIA H200",
            "gpus.0.persistence_mode": "On",
            "gpus.0.bus_id": "00000000:00:06.0",
            "gpus.0.display_active": "Off",
            "gpus.0.ecc": "0",
            "gpus.0.fan": "N/A",
            "gpus.0.temperature_c": 33.0,
            "gpus.0.perf": "P0",
            "gpus.0.power_draw_w": 79.0,
            "gpus.0.power_cap_w": 700.0,
            "gpus.0.memory_usage": "0MiB / 143771MiB",
            "gpus.0.memory_used_gib": 0.0,
            "gpus.0.memory_total_gib": 140.401,  # 143771 MiB
            "gpus.0.gpu_util_pct": 0.0,
            "gpus.0.compute_mode": "Default",
            "gpus.0.mig_mode": "Disabled",
            "gpus.1.index": 1,
            "gpus.1.name": "NVIDIA H200",
            "gpus.1.bus_id": "00000000:00:07.0",
            "gpus.1.temperature_c": 34.0,
            "gpus.1.memory_total_gib": 140.401,
            "#processes": 0,
            "processes_listed": True,  # "No running processes found"
            "truncated": False,
            "forward_compat": None,
        }),
    "ours/nvidia_smi/h200-query-gpu-csv.txt": (
        "nvidia_smi_query", {
            # queried as clocks.sm and clocks_throttle_reasons.active; nvidia-smi's header names them
            # clocks.current.sm [MHz] and clocks_event_reasons.active
            "#": 2,
            "0.name": "NVIDIA H200",
            "0.driver_version": "580.159.04",
            "0.pci_bus_id": "00000000:00:06.0",
            "0.memory_total_gib": 140.401,
            "0.memory_used_gib": 0.0,
            "0.clocks_current_sm_mhz": 345.0,
            "0.clocks_max_sm_mhz": 1980.0,
            "0.power_draw_w": 79.69,
            "0.temperature_gpu": 33.0,
            "0.clocks_event_reasons_active": "0x0000000000000001",  # GPU idle
            "0.pstate": "P0",
            "1.pci_bus_id": "00000000:00:07.0",
            "1.power_draw_w": 79.72,
            "1.temperature_gpu": 34.0,
        }),
    "ours/nvidia_smi/h200-query-gpu-csv-noheader.txt": (
        "nvidia_smi_query", {
            # the same query with noheader; the first line is the command (see README.md)
            "#": 2,
            "0.name": "NVIDIA H200",
            "0.driver_version": "580.159.04",
            "0.pci_bus_id": "00000000:00:06.0",
            "0.memory_total_gib": 140.401,
            "0.memory_used_gib": 0.0,
            "0.clocks_current_sm_mhz": 345.0,
            "0.clocks_max_sm_mhz": 1980.0,
            "0.power_draw_w": 79.70,
            "0.temperature_gpu": 33.0,
            "0.clocks_event_reasons_active": "0x0000000000000001",
            "0.pstate": "P0",
            "1.pci_bus_id": "00000000:00:07.0",
            "1.power_draw_w": 79.72,
        }),
    "ours/nvidia_smi/h200-query-gpu-csv-noheader-nounits.txt": (
        "nvidia_smi_query", {
            # noheader,nounits: "143771" is MiB, "345" MHz, "79.69" W only because the query says which fields
            "#": 2,
            "0.name": "NVIDIA H200",
            "0.driver_version": "580.159.04",
            "0.pci_bus_id": "00000000:00:06.0",
            "0.memory_total_gib": 140.401,
            "0.memory_used_gib": 0.0,
            "0.clocks_current_sm_mhz": 345.0,
            "0.clocks_max_sm_mhz": 1980.0,
            "0.power_draw_w": 79.69,
            "0.temperature_gpu": 33.0,
            "0.clocks_event_reasons_active": "0x0000000000000001",
            "0.pstate": "P0",
            "1.pci_bus_id": "00000000:00:07.0",
            "1.power_draw_w": 79.70,
        }),
    "ours/nvidia_smi/h200-proc-driver-nvidia-version.txt": (
        "proc_driver_nvidia_version", {
            "version": "580.159.04",
            "flavor": "open",  # "NVIDIA UNIX Open Kernel Module for x86_64"
            "arch": "x86_64",
            "builder": "nixbld@",
            "date": None,  # this build prints no date after "(nixbld@)"
            "gcc": "gcc version 15.3.0 (GCC)",
        }),
    # ---- GPU canary: nvidia-smi sampled every 500 ms around a 10 s bf16 matmul loop on GPU 0 ----------
    "ours/gpu_canary/h200-smi-samples-500ms.txt": (
        "nvidia_smi_query", {
            # 35 samples x 2 GPUs, rows alternate GPU 0 / GPU 1 (the query has no index field)
            "#": 70,
            "0.clocks_current_sm_mhz": 345.0,  # idle before the loop
            "0.clocks_max_sm_mhz": 1980.0,
            "0.clocks_event_reasons_active": "0x0000000000000001",
            "26.clocks_current_sm_mhz": 1485.0,  # GPU 0 under the loop: power-capped
            "26.power_draw_w": 695.46,
            "26.temperature_gpu": 52.0,
            "26.clocks_event_reasons_active": "0x0000000000000004",  # SW power cap
            "27.clocks_current_sm_mhz": 345.0,  # GPU 1 stays idle
            "27.power_draw_w": 79.63,
            "64.clocks_current_sm_mhz": 1980.0,  # GPU 0 just after the loop
            "64.power_draw_w": 306.28,
            "64.clocks_event_reasons_active": "0x0000000000000000",
            "69.temperature_gpu": 36.0,
        }),
    # ---- GPU canary, one-H200 machine: our gb10check/canary/matmul.py (bf16 8192^3, 10 s) with the suite's own sampler ----
    "ours/gpu_canary/h200-1gpu-smi-samples-matmul.txt": (
        "nvidia_smi_query", {
            # noheader,nounits: the field names come from the command line written first (by the run script itself)
            "#": 30,
            "0.clocks_current_sm_mhz": 345.0,  # idle before torch starts
            "0.power_draw_w": 78.89,
            "0.clocks_event_reasons_active": "0x0000000000000001",  # GPU idle
            "8.clocks_current_sm_mhz": 1980.0,  # waking up: no reason active, still 79.51 W
            "8.clocks_event_reasons_active": "0x0000000000000000",
            "11.clocks_current_sm_mhz": 1545.0,  # under the loop: at the 700 W cap
            "11.power_draw_w": 692.13,
            "11.temperature_gpu": 57.0,
            "11.clocks_event_reasons_active": "0x0000000000000004",  # SW power cap
            "12.clocks_current_sm_mhz": 1395.0,  # the lowest clock under load
            "29.clocks_current_sm_mhz": 1965.0,  # the loop ending
            "29.power_draw_w": 491.46,
        }),
    # ---- the same, the second one-H200 run (run_canaries_h200.sh with the kernels canary; the GPU still warm from a run
    # a minute before) ----
    "ours/gpu_canary/h200-1gpu-r2-smi-samples-matmul.txt": (
        "nvidia_smi_query", {
            "#": 28,
            "0.clocks_current_sm_mhz": 345.0,  # idle before torch starts, 40 C
            "0.power_draw_w": 80.24,
            "0.temperature_gpu": 40.0,
            "0.clocks_event_reasons_active": "0x0000000000000001",  # GPU idle
            "7.clocks_current_sm_mhz": 1485.0,  # the loop starting: already power-capped at 215 W
            "7.power_draw_w": 215.32,
            "7.clocks_event_reasons_active": "0x0000000000000004",  # SW power cap
            "20.clocks_current_sm_mhz": 1425.0,  # the lowest clock under load
            "20.power_draw_w": 691.57,
            "20.temperature_gpu": 69.0,  # the highest temperature
            "27.clocks_current_sm_mhz": 1965.0,  # the loop ending
            "27.power_draw_w": 596.82,
        }),
    # ---- memory -------------------------------------------------------------------------------------
    "ours/meminfo/h200-proc-meminfo.txt": (
        "meminfo", {
            "mem_total_gib": 251.751,  # 263980164 kB (Firecracker VM, memory grows as it is used)
            "mem_free_gib": 250.446,  # 262612148 kB
            "mem_available_gib": 251.165,  # 263365404 kB
            "swap_total_gib": 0.0,
            "huge_pages_total": 0,
            "hugepagesize_gib": 0.002,  # 2048 kB
        }),
    "ours/meminfo/h200-free-h.txt": (
        "free", {
            "mem_total_gib": 251.0,  # "251Gi"
            "mem_used_gib": 0.586,  # "600Mi"
            "mem_free_gib": 250.0,
            "mem_shared_gib": 0.008,  # "7.7Mi"
            "mem_buff_cache_gib": 0.931,  # "953Mi"
            "mem_available_gib": 251.0,
            "swap_total_gib": 0.0,  # "0B"
        }),
    "ours/meminfo/h200-free-m.txt": (
        "free", {
            # free -m (the first line is the command, see README.md): MiB
            "mem_total_gib": 251.751,  # 257793 MiB
            "mem_used_gib": 0.586,  # 600 MiB
            "mem_free_gib": 250.445,  # 256456 MiB
            "mem_available_gib": 251.164,  # 257192 MiB
            "swap_total_gib": 0.0,
        }),
    # ---- nccl-tests 2.19.6, one process driving both GPUs (-g 2), NCCL_DEBUG=INFO -------------------
    "ours/nccl_tests/h200x2-all_reduce_perf-8-256M-f4-g2-p2p.txt": (
        "nccl_tests", {
            "collective": "all_reduce_perf",
            "version": "2.19.6",
            "nccl_version": "2.28.9",
            "nccl_cuda": "13.0",
            "#ranks": 2,
            "ranks.0.host": "vm",
            "ranks.0.pid": 1076,
            "ranks.0.device": 0,
            "ranks.0.bus_id": "0000:00:06",
            "ranks.0.device_name": "NVIDIA H200",
            "ranks.1.device": 1,
            "ranks.1.bus_id": "0000:00:07",
            "hosts": ["vm"],
            "#rows": 13,  # 8 B .. 128 MiB by x4 (256M is the bound, 512M would pass it)
            "rows.0.size_bytes": 8,
            "rows.12.size_bytes": 134217728,
            "rows.12.count": 33554432,
            "rows.12.type": "float",
            "rows.12.redop": "sum",
            "rows.12.oop_time_us": 474.44,
            "rows.12.oop_busbw_gbps": 2263.2,  # 282.90 GB/s
            "rows.12.ip_busbw_gbps": 2273.04,  # 284.13 GB/s
            "rows.12.oop_wrong": "0",
            "avg_busbw_gbps": 488.505,  # "# Avg bus bandwidth    : 61.0631"
            "busbw_gbps": 2268.12,
            "max_busbw_gbps": 2273.04,
            "out_of_bounds_ok": True,
            "errors_found": False,
            "complete": True,
            # 48 channel lines "via P2P/direct pointer" (24 channels each way); no SHM, no NET channel lines
            "transports": ["P2P"],
            "net_gdr": None,
            # ... though NCCL 2.28 loads its network plug-in anyway: "NET/IB : No device found.",
            # "NET/Socket : Using [0]eth0:192.0.2.2<0>", "Using network Socket"
            "network": "Socket",
            "net_ib_devices": [],
            "#warnings": 0,
            "error": None,
        }),
    "ours/nccl_tests/h200x2-all_reduce_perf-8-256M-f4-g2-socket.txt": (
        "nccl_tests", {
            # NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: the two GPUs talk through the socket transport
            "collective": "all_reduce_perf",
            "version": "2.19.6",
            "nccl_version": "2.28.9",
            "#ranks": 2,
            "hosts": ["vm"],
            "#rows": 13,
            "rows.12.size_bytes": 134217728,
            "rows.12.oop_time_us": 37334.3,
            "rows.12.oop_busbw_gbps": 28.8,  # 3.60 GB/s
            "rows.12.ip_busbw_gbps": 29.2,  # 3.65 GB/s
            "avg_busbw_gbps": 10.103,  # "# Avg bus bandwidth    : 1.26285"
            "busbw_gbps": 29.0,
            "max_busbw_gbps": 29.2,
            "out_of_bounds_ok": True,
            "errors_found": False,
            "complete": True,
            # 8 channel lines "[send|receive] via NET/Socket/0" (2 channels), "use ring PXN 0 GDR 0"
            "transports": ["NET/Socket"],
            "net_gdr": False,
            "network": "Socket",
            "net_ib_devices": [],
            "#warnings": 0,
            "error": None,
        }),
    "ours/nccl_tests/h200x2-all_gather_perf-1G-g2.txt": (
        "nccl_tests", {
            "collective": "all_gather_perf",
            "version": "2.19.6",
            "nccl_version": "2.28.9",
            "#ranks": 2,
            "ranks.1.device_name": "NVIDIA H200",
            "#rows": 1,
            "rows.0.size_bytes": 1073741824,
            "rows.0.count": 134217728,
            "rows.0.redop": "none",
            "rows.0.oop_time_us": 1995.14,
            "rows.0.oop_algbw_gbps": 4305.44,  # 538.18 GB/s
            "rows.0.oop_busbw_gbps": 2152.72,  # 269.09 GB/s
            "rows.0.ip_busbw_gbps": 2347.44,  # 293.43 GB/s
            "avg_busbw_gbps": 2250.096,  # "# Avg bus bandwidth    : 281.262"
            "busbw_gbps": 2250.08,
            "out_of_bounds_ok": True,
            "errors_found": False,
            "complete": True,
            "transports": ["P2P"],  # 48 lines "via P2P/direct pointer"
            "network": "Socket",
            "net_ib_devices": [],
        }),
}

