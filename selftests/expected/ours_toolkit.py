"""Facts asserted for our own captures of the NVIDIA Container Toolkit's outputs on the simulated pair (the nvidia-ctk
stand-in, the CDI spec and the runtime's config.toml the sim writes; selftests/captures/README.md says how each was
made), and of the image as an NGC one and as a pulled one (docker image inspect). Values read off the files themselves."""

LIBDIR = "/usr/lib/aarch64-linux-gnu"

EXPECTED = {
    "ours/toolkit/sim-nvidia-ctk-version.txt": (
        "nvidia_ctk_version", {"version": "1.18.1"}),
    "ours/toolkit/sim-nvidia-ctk-version-1.19.1.txt": ("nvidia_ctk_version", {"version": "1.19.1"}),
    "ours/toolkit/sim-cdi-specs-rank0.txt": (
        "cdi_spec", {"#": 1, "0.path": "/etc/cdi/nvidia.yaml", "0.kind": "nvidia.com/gpu", "0.cdi_version": "0.5.0",
                     "0.driver_versions": ["580.173.02"], "0.libraries": {"580.173.02": f"{LIBDIR}/libEGL_nvidia.so.580.173.02"}}),
    "ours/toolkit/sim-cdi-specs-stale-rank1.txt": (
        "cdi_spec", {"#": 1, "0.driver_versions": ["580.126.09"],
                     "0.libraries": {"580.126.09": f"{LIBDIR}/libEGL_nvidia.so.580.126.09"}}),
    "ours/toolkit/sim-runtime-config-rank0.txt": (
        "nvidia_runtime_config", {"mode": "auto", "docker_runtimes": [], "docker_default_runtime": None, "docker_cdi": None}),
    "ours/toolkit/sim-runtime-config-cdi-rank1.txt": ("nvidia_runtime_config", {"mode": "cdi", "docker_cdi": None}),
    "ours/docker/sim-docker-image-inspect-ngc-entrypoint-rank1.json": (
        "docker_image_inspect", {"entrypoint": ["/opt/nvidia/nvidia_entrypoint.sh"], "#layers": 2, "digests": []}),
    "ours/docker/sim-docker-image-inspect-pulled-rank1.json": (
        "docker_image_inspect", {"entrypoint": [], "digests": [f"gb10sim/vllm-cpu@sha256:{'5eb5a1c0' * 8}"],
                                 "tags": ["gb10sim/vllm-cpu:local"]}),
}
