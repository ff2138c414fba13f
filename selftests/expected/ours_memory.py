"""Facts asserted for our captures of the start memory gate's outputs on one NVIDIA H200 (selftests/captures/memory/,
see its README.md): the suite's own GPU_PROCESSES command and nvidia-smi, idle, with a python3 named VLLM::EngineCore
holding 20 GiB, and after it was killed. Values read off the outputs by hand; memory GiB (1024^3 bytes)."""

D = "ours/memory/h200-"

EXPECTED = {
    D + "gpu-processes-idle.txt": ("nvidia_compute_apps", {"#": 0}),
    D + "gpu-processes-after.txt": ("nvidia_compute_apps", {"#": 0}),
    D + "gpu-processes-holding.txt": ("nvidia_compute_apps", {
        "#": 1, "0.pid": 987, "0.name": "VLLM::EngineCore", "0.used_gib": 20.506,  # 20998 MiB
        "0.container": None, "0.ppid": 911, "0.elapsed_s": 6, "0.args": "VLLM::EngineCore /tmp/holder.py"}),
    D + "nvidia-smi-holding.txt": ("nvidia_smi", {
        "driver_version": "580.159.04", "cuda_version": "13.0", "#gpus": 1, "gpus.0.name": "NVIDIA H200",
        "gpus.0.memory_used_gib": 20.515,  # 21007 MiB
        "gpus.0.memory_total_gib": 140.401,  # 143771 MiB
        "#processes": 1, "processes.0.pid": 987, "processes.0.type": "C", "processes.0.name": "VLLM::EngineCore",
        "processes.0.used_gib": 20.506}),
}
