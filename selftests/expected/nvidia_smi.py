"""Facts asserted for the captures of nvidia_smi/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "nvidia_smi/gb10-580.126.09-arctictraining-pr345.txt": (
        "nvidia_smi", {
            "smi_version": "580.126.09",
            "driver_version": "580.126.09",
            "cuda_version": "13.0",
            "#gpus": 1,
            "gpus.0.index": 0,
            "gpus.0.name": "NVIDIA GB10",
            "gpus.0.persistence_mode": "On",
            "gpus.0.bus_id": "0000000F:01:00.0",
            "gpus.0.memory_usage": "Not Supported",
            "gpus.0.memory_total_gib": None,
            "gpus.0.temperature_c": 36.0,
            "gpus.0.perf": "P8",
            "gpus.0.power_draw_w": 3.0,
            "gpus.0.power_cap_w": None,
            "gpus.0.gpu_util_pct": 0.0,
            "gpus.0.compute_mode": "Default",
            "gpus.0.mig_mode": "N/A",
            "#processes": 0,
            "processes_listed": False,  # the author trimmed the Processes section
            "truncated": False,
            "forward_compat": None,
        }),
    "nvidia_smi/gb10-580.159.03-with-processes-jethac.txt": (
        "nvidia_smi", {
            "driver_version": "580.159.03",
            "cuda_version": "13.0",
            "#gpus": 1,
            "gpus.0.bus_id": "0000000F:01:00.0",
            "gpus.0.memory_usage": "Not Supported",
            "gpus.0.perf": "P0",
            "gpus.0.temperature_c": 46.0,
            "processes_listed": True,
            "#processes": 3,
            "processes.0.pid": 329657,
            "processes.0.type": "G",
            "processes.0.name": "/usr/lib/xorg/Xorg",
            "processes.0.used_gib": 0.042,
            "processes.2.gpu": 0,
            "processes.2.pid": 577729,
            "processes.2.name": "VLLM::EngineCore",
            "processes.2.used_gib": 87.005,
            "processes.2.type": "C",
        }),
    "nvidia_smi/gb10-580.159.03-inside-ngc-sglang-26.05-container-banner-cuda13.2-forward-compat-no-procs-jethac.txt": (
        "nvidia_smi", {
            "driver_version": "580.159.03",  # the kernel driver's, not the compat library's 595.58.03
            "cuda_version": "13.2",
            "forward_compat.cuda_version": "13.2",
            "forward_compat.compat_driver_version": "595.58.03",
            "forward_compat.kernel_driver_version": "580.159.03",
            "#gpus": 1,
            "gpus.0.name": "NVIDIA GB10",
            "gpus.0.memory_usage": "Not Supported",
            "gpus.0.power_draw_w": 11.0,
            "processes_listed": True,
            "#processes": 0,
        }),
    "nvidia_smi/nvidia-smi-331.62-2014-old-table-no-CUDA-version-gtx680-padded-header-user-prompt-TRUNCATED-after-GPU2-cbio-cluster-issue38.txt": (
        "nvidia_smi", {
            "smi_version": "331.62",
            "driver_version": "331.62",
            "cuda_version": None,
            "#gpus": 3,
            "gpus.0.name": "GeForce GTX 680",
            "gpus.0.persistence_mode": "Off",
            "gpus.0.bus_id": "0000:03:00.0",
            "gpus.0.display_active": "N/A",
            "gpus.0.fan": "30%",
            "gpus.0.memory_usage": "9MiB / 4095MiB",
            "gpus.0.memory_used_gib": 0.009,
            "gpus.0.memory_total_gib": 3.999,
            "gpus.0.power_draw_w": None,
            "gpus.0.gpu_util_pct": None,
            "gpus.1.bus_id": "0000:04:00.0",
            "gpus.2.index": 2,
            "gpus.2.bus_id": "0000:83:00.0",
            "gpus.2.temperature_c": 34.0,
            "truncated": True,
            "processes_listed": False,
        }),
    "nvidia_smi/gb10-query-gpu-memory-NA-nvitop-pr208.txt": (
        "nvidia_smi_query", {
            "#": 1,
            "0.memory_total_gib": None,
            "0.memory_used_gib": None,
            "0.memory_free_gib": None,
            "0.utilization_gpu_pct": 0.0,
            "0.power_draw_w": 11.17,
            "0.temperature_gpu": 35.0,
        }),
    "nvidia_smi/gb10-query-gpu-name-driver-noheader-idx69674905226.txt": (
        "nvidia_smi_query", {
            "#": 1,
            "0.name": "NVIDIA GB10",
            "0.driver_version": "580.173.02",
        }),
    "nvidia_smi/query-gpu-csv-header-units-in-values-13-samples-loop-pstate-power-clocks-driver-520-ksysguard-gpu-issue27.txt": (
        "nvidia_smi_query", {
            "#": 13,
            "0.index": 0,
            "0.temperature_gpu": 56.0,
            "0.utilization_gpu_pct": 26.0,
            "0.utilization_memory_pct": 4.0,
            "0.fan_speed_pct": 34.0,
            "0.pstate": "P3",
            "0.power_draw_w": 83.92,
            "0.clocks_current_sm_mhz": 1320.0,
            "0.clocks_current_memory_mhz": 5001.0,
            "0.clocks_current_graphics_mhz": 1320.0,
            "12.utilization_gpu_pct": 25.0,
            "12.power_draw_w": 83.43,
            "12.clocks_current_sm_mhz": 1440.0,
        }),
    "nvidia_smi/nvml-mismatch-lib-580.178-truenas-issue19.txt": (
        "nvml_mismatch", {
            "nvml_mismatch": True,
            "library_version": "580.178",
        }),
    "nvidia_smi/nvml-mismatch-with-lib-version-550.144-intel-llvm-issue17614.txt": (
        "nvml_mismatch", {
            "nvml_mismatch": True,
            "library_version": "550.144",
        }),
    "nvidia_smi/nvml-mismatch-with-lib-version-570.124-tinygrad-ogkm-issue47.txt": (
        "nvml_mismatch", {
            "nvml_mismatch": True,
            "library_version": "570.124",
        }),
    "nvidia_smi/nvml-mismatch-via-docker-hook-nvidia-container-cli-legacy-mode-ERRO-context-canceled-labdao-plex-issue18.txt": (
        "nvml_mismatch", {
            "nvml_mismatch": True,
            "library_version": None,
            "kernel_module_version": None,
        }),
    "nvidia_smi/nvml-mismatch-via-nvidia-docker-prestart-hook-triple-escaped-quotes-2021-nvidia-docker-issue1451.txt": (
        "nvml_mismatch", {
            "nvml_mismatch": True,
            "library_version": None,
        }),
    "nvidia_smi/gb10-proc-driver-nvidia-version-580.126.09-idx52511083852.txt": (
        "proc_driver_nvidia_version", {
            "version": "580.126.09",
            "flavor": "open",
            "arch": "aarch64",
            "builder": "dvs-builder@U22-I3-AF04-07-5",
            "date": "Wed Jan  7 22:35:57 UTC 2026",
            "gcc": "gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04.1)",
        }),
    "nvidia_smi/x86_64-proprietary-proc-driver-nvidia-version-580.173.02-truenas-issue19.txt": (
        "proc_driver_nvidia_version", {
            "version": "580.173.02",
            "flavor": "proprietary",
            "arch": "x86_64",
            "builder": None,
            "date": "Tue Jun 23 08:38:17 UTC 2026",
            "gcc": "gcc version 14.2.0 (Ubuntu 14.2.0-4ubuntu2~24.04.1)",
        }),
    "nvidia_smi/x86_64-open-proc-driver-nvidia-version-565.57.01-nixgl-issue186.txt": (
        "proc_driver_nvidia_version", {
            "version": "565.57.01",
            "flavor": "open",
            "arch": "x86_64",
            "gcc": "gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)",
        }),
    "nvidia_smi/jetson-orin-nx-l4t-proc-driver-nvidia-version-35.3.1-nixgl-issue139.txt": (
        "proc_driver_nvidia_version", {
            "version": "35.3.1",
            "flavor": "open",
            "arch": "aarch64",
            "builder": "buildbrain@mobile-u64-6289-d7000",
            "gcc": "gcc version 9.3.0 (Buildroot 2020.08)",
        }),
    "nvidia_smi/proc-driver-nvidia-version-first-line-ru-locale-date-portage-builder-no-GCC-line-via-hyprctl-systeminfo-hyprland-pr6715.txt": (
        "proc_driver_nvidia_version", {
            "version": "555.58",
            "flavor": "open",
            "arch": "x86_64",
            "builder": "portage@localhost",
            "date": "Сб 29 июн 2024 14:36:22 MSK",
            "gcc": None,
        }),
    "nvidia_smi/gb10-nvml-raw-ctypes-meminfo-nvitop-pr208.txt": (
        "meminfo", {
            "mem_total_gib": 121.69,
            "mem_available_gib": 113.074,
        }),
}
