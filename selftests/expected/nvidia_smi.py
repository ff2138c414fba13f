"""Facts asserted for the captures of nvidia_smi/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "nvidia_smi/gb10-580.126.09-arctictraining-pr345.txt": (
        "nvidia_smi", {
            "driver_version": "580.126.09",
            "cuda_version": "13.0",
            "#gpus": 1,
            "gpus.0.name": "NVIDIA GB10",
            "gpus.0.memory_usage": "Not Supported",
            "#processes": 0,
        }),
    "nvidia_smi/gb10-580.159.03-with-processes-jethac.txt": (
        "nvidia_smi", {
            "driver_version": "580.159.03",
            "gpus.0.bus_id": "0000000F:01:00.0",
            "#processes": 3,
            "processes.2.name": "VLLM::EngineCore",
            "processes.2.used_gib": 87.005,
            "processes.2.type": "C",
        }),
    "nvidia_smi/gb10-query-gpu-memory-NA-nvitop-pr208.txt": (
        "nvidia_smi_query", {
            "#": 1,
            "0.memory_total_gib": None,
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
    "nvidia_smi/nvml-mismatch-lib-580.178-truenas-issue19.txt": (
        "nvml_mismatch", {
            "nvml_mismatch": True,
            "library_version": "580.178",
        }),
    "nvidia_smi/nvml-mismatch-with-lib-version-550.144-intel-llvm-issue17614.txt": (
        "nvml_mismatch", {
            "library_version": "550.144",
        }),
    "nvidia_smi/nvml-mismatch-with-lib-version-570.124-tinygrad-ogkm-issue47.txt": (
        "nvml_mismatch", {
            "library_version": "570.124",
        }),
    "nvidia_smi/gb10-proc-driver-nvidia-version-580.126.09-idx52511083852.txt": (
        "proc_driver_nvidia_version", {
            "version": "580.126.09",
            "flavor": "open",
            "arch": "aarch64",
        }),
    "nvidia_smi/x86_64-proprietary-proc-driver-nvidia-version-580.173.02-truenas-issue19.txt": (
        "proc_driver_nvidia_version", {
            "version": "580.173.02",
            "flavor": "proprietary",
            "arch": "x86_64",
        }),
    "nvidia_smi/x86_64-open-proc-driver-nvidia-version-565.57.01-nixgl-issue186.txt": (
        "proc_driver_nvidia_version", {
            "version": "565.57.01",
            "flavor": "open",
            "arch": "x86_64",
        }),
    "nvidia_smi/jetson-orin-nx-l4t-proc-driver-nvidia-version-35.3.1-nixgl-issue139.txt": (
        "proc_driver_nvidia_version", {
            "version": "35.3.1",
            "gcc": "gcc version 9.3.0 (Buildroot 2020.08)",
        }),
    "nvidia_smi/gb10-nvml-raw-ctypes-meminfo-nvitop-pr208.txt": (
        "meminfo", {
            "mem_total_gib": 121.69,
            "mem_available_gib": 113.074,
        }),
}
