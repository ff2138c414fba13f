"""Facts asserted for our own captures from the simulated pair's real tools (selftests/captures/*/sim-*; how each
was made: selftests/captures/README.md). Values read off the files themselves."""

EXPECTED = {
    "ours/ip_ethtool/sim-ip-addr-rank0.txt": (
        "ip_addr", {
            "#": 6,
            "0.name": "lo",
            "1.name": "enP7s7",
            "1.state": "up",
            "1.mtu": 1500,
            "1.addresses.0.address": "198.18.0.10",
            "1.addresses.0.prefixlen": 24,
            "1.addresses.1.scope": "link",
            "2.name": "enp1s0f1np1",
            "2.state": "down",
            "#2.addresses": 0,
            "4.name": "enp1s0f0np0",
            "4.addresses.0.address": "169.254.94.252",
            "4.addresses.0.prefixlen": 16,
            "4.addresses.0.scope": "global",
            "5.name": "enP2p1s0f0np0",
            "5.addresses.0.address": "192.168.101.10",
        }),
    "ours/ip_ethtool/sim-ip-j-addr-rank0.json": (
        "ip_j_addr", {
            "#": 6,
            "1.name": "enP7s7",
            "1.addresses.0.address": "198.18.0.10",
            "3.name": "enP2p1s0f1np1",
            "3.state": "down",
            "4.name": "enp1s0f0np0",
            "4.state": "up",
            "4.addresses.0.address": "169.254.94.252",
            "4.addresses.0.prefixlen": 16,
        }),
    "ours/ip_ethtool/sim-ethtool-mgmt-veth-enP7s7-rank0.txt": (
        "ethtool", {
            "#": 1,
            "0.interface": "enP7s7",
            "0.speed_mbps": 10000,
            "0.duplex": "full",
            "0.link_detected": True,
            "0.port": "Twisted Pair",
            "0.auto_negotiation": False,
        }),
    "ours/ufw/sim-ufw-status-verbose-rank0.txt": (
        "ufw_status", {
            "active": True,
            "default_incoming": "deny",
            "default_outgoing": "allow",
            "default_routed": "disabled",
            "#rules": 6,
            "rules.0.to.port": "22",
            "rules.1.source.address": "169.254.0.0/16",
            "rules.2.source.address": "192.168.101.0/24",
            "rules.3.to.port": "20001",
            "rules.4.to.v6": True,
        }),
    "ours/ufw/sim-ufw-status-numbered-rank0.txt": (
        "ufw_status", {
            "active": True,
            "#rules": 6,
            "rules.0.number": 1,
            "rules.0.to.port": "22",
            "rules.1.source.address": "169.254.0.0/16",
            "rules.5.number": 6,
            "rules.5.to.port": "20001",
            "rules.5.to.v6": True,
        }),
    "ours/ufw/sim-user.rules-rank0.txt": (
        "ufw_user_rules", {
            "#tuples": 4,
            "tuples.0.dport": "22",
            "tuples.0.proto": "tcp",
            "tuples.1.src": "169.254.0.0/16",
            "tuples.2.src": "192.168.101.0/24",
            "tuples.3.dport": "20001",
            "complete": True,
        }),
    "ours/meminfo/sim-proc-meminfo-rank0.txt": (
        "meminfo", {
            "mem_total_gib": 121.69,
            "swap_total_gib": 0.0,
            "huge_pages_total": 0,
            "hugepagesize_kb": 2048,
        }),
    "ours/meminfo/sim-free-m-rank0.txt": (
        "free", {
            "mem_total_gib": 121.689,
            "mem_available_gib": 120.563,
            "swap_total_gib": 0.0,
        }),
    "ours/meminfo/sim-free-h-rank0.txt": (
        "free", {
            "mem_total_gib": 121.0,
            "mem_available_gib": 120.0,
            "mem_shared_gib": 0.55,
            "swap_total_gib": 0.0,
        }),
    "ours/docker/sim-docker-image-inspect-rank0.json": (
        "docker_image_inspect", {
            "tags": ["gb10sim/vllm-cpu:local"],
            "architecture": "amd64",
            "os": "linux",
            "#layers": 1,
        }),
    "ours/docker/sim-compose-config-rank0.txt": (
        "compose_config", {
            "name": "vllm",
            "services.vllm.container_name": "gb10-vllm",
            "services.vllm.environment.NCCL_IB_GID_INDEX": "3",
            "services.vllm.environment.GLOO_SOCKET_IFNAME": "enp1s0f0np0",
            "services.vllm.deploy.resources.reservations.devices.0.driver": "nvidia",
        }),
    "ours/docker/sim-docker-inspect-running-rank0.json": (
        "docker_inspect", {
            "name": "gb10-vllm",
            "image": "gb10sim/vllm-cpu:local",
            "status": "running",
            "running": True,
            "oom_killed": False,
            "memory_limit_gib": 105.0,
            "network_mode": "host",
            "ipc_mode": "host",
        }),
    "ours/docker/sim-compose-ps-rank0.txt": (
        "compose_ps", {
            "#": 1,
            "0.name": "gb10-vllm",
            "0.image": "gb10sim/vllm-cpu:local",
            "0.service": "vllm",
            "0.state": "running",
        }),
    "ours/vllm_logs/sim-vllm-0.32.0-cpu-tp2-rank0.log": (
        "vllm_log", {
            # the compose file asks -cc.cudagraph_mode=FULL_DECODE_ONLY; --enforce-eager makes it NONE (vLLM says so)
            "engine.asked.cudagraph_mode": "FULL_DECODE_ONLY",
            "engine.cudagraph_mode": "NONE",
            "engine.max_num_seqs": 4,
            "version": "0.32.0",
            "tensor_parallel_size": 2,
            "max_model_len": 8192,
            "kv_cache_tokens": 69888,
            "startup_complete": True,
            "startup_failed": False,
            "#errors": 0,
        }),
    "ours/vllm_logs/sim-vllm-0.32.0-cpu-ray-2.60.0-tp2-head-cpu-has-no-ray.log": (
        "vllm_log", {
            "version": "0.32.0",
            "tensor_parallel_size": 2,
            "startup_complete": False,
            "startup_failed": True,
            "#errors": 2,
            "errors.0.name": "engine_core_failed",  # the generic line comes first; the judge's cause is the specific one
            "errors.1.name": "ray_platform_unsupported",
            "errors.1.text": "ERROR 12-01 05:36:38 [core.py:1510] ValueError: current platform cpu does not support ray.",
        }),
    "ours/vllm_logs/sim-vllm-0.32.0-cpu-tp2-rank1-headless.log": (
        "vllm_log", {
            "milestones.0.name": "headless",
            "startup_complete": False,
            "startup_failed": False,
            "#errors": 0,
        }),
    "ours/vllm_logs/sim-vllm-0.32.0-cpu-serve-tp1-eager.log": (
        "vllm_log", {
            "version": "0.32.0",
            "startup_complete": True,
            "#errors": 0,
            "engine.attention": [],  # the CPU build names no attention backend
            "engine.kv_cache_dtype": "auto",
            "engine.enforce_eager": True,
            "engine.cudagraph_mode": "NONE",
            "engine.compile_mode": "NONE",
            "engine.speculative": "none",
            "engine.max_num_seqs": 4,
            "engine.unknown_env": [],
            "engine.asked.enforce_eager": "True",
            "#marks": 0,  # eager: no compile, no capture
        }),
    "ours/vllm_logs/sim-vllm-0.32.0-cpu-serve-unknown-env-VLLM_MXFP4_BACKEND.log": (
        "vllm_log", {
            "version": "0.32.0",
            "startup_complete": True,
            "#errors": 0,  # a warning, not an error: the server starts and serves
            "engine.unknown_env": ["VLLM_MXFP4_BACKEND"],
            "engine.kv_cache_dtype": "auto",
        }),
    "ours/vllm_api/sim-metrics-vllm-0.32.0-cpu.txt": (
        "vllm_metrics_info", {
            "cache_config_info.cache_dtype": "auto",
            "cache_config_info.num_gpu_blocks": "273",
            "cache_config_info.block_size": "128",
        }),
    "ours/vllm_api/sim-v1-models.json": (
        "vllm_models", {
            "#": 1,
            "0.id": "smollm2-135m",
            "0.root": "gb10sim/SmolLM2-135M-Instruct-tp2",
            "0.max_model_len": 8192,
            "0.owned_by": "vllm",
        }),
    "ours/vllm_api/sim-chat-completion.json": (
        "vllm_chat", {
            "model": "smollm2-135m",
            "finish_reason": "stop",
            "content": None,
            "reasoning": "The capital of France is Paris.",
            "reasoning_field": "reasoning",
            "prompt_tokens": 37,
            "completion_tokens": 8,
            "total_tokens": 45,
            "system_fingerprint": "vllm-0.32.0-tp2-a8696401",
        }),
    "ours/vllm_api/sim-chat-stream-include-usage.txt": (
        "vllm_sse", {
            "done": True,
            "first_role": "assistant",
            "content": "",
            "reasoning": "Hello there, welcome to my world!",
            "finish_reason": "length",
            "usage_chunk": True,
            "prompt_tokens": 33,
            "completion_tokens": 8,
            "model": "smollm2-135m",
        }),
    "ours/vllm_api/sim-error-unknown-model.json": (
        "vllm_error", {
            "envelope": "nested",
            "message": "The model `no-such-model` does not exist. Valid aliases: smollm2-135m.",
            "type": "NotFoundError",
            "code": 404,
            "param": "model",
        }),
    "ours/vllm_api/sim-route-unknown.json": (
        "vllm_error", {
            "envelope": "fastapi",
            "message": "Not Found",
        }),
    # A real NetworkManager 1.42.4 in the sim's nodes (scenario nm-dhcp-on-qsfp): gb10check's NM_PROFILES command as the
    # SSH user, and one profile's `nmcli -f ... connection show` without -t and in full.
    "ours/nmcli/sim-nm-1.42.4-gather-profiles-dhcp-rank1.txt": (
        "nmcli_profiles", {
            "networkmanager": "running", "#profiles": 1,
            "profiles.0.uuid": "d51a1679-62b0-436a-ab25-26a551508fe5", "profiles.0.name": "Wired connection 2",
            "profiles.0.type": "802-3-ethernet", "profiles.0.interface": "enp1s0f0np0", "profiles.0.device": None,
            "profiles.0.ipv4_method": "auto", "profiles.0.autoconnect": "yes",
        }),
    "ours/nmcli/sim-nm-1.42.4-gather-profiles-static-rank0.txt": (
        "nmcli_profiles", {
            "#profiles": 1, "profiles.0.name": "cx7-port0", "profiles.0.interface": "enp1s0f0np0",
            "profiles.0.ipv4_method": "manual", "profiles.0.device": None,
        }),
    "ours/nmcli/sim-nm-1.42.4-show-fields-no-t-rank1.txt": (
        "nmcli_profiles", {
            "#profiles": 1, "profiles.0.uuid": "", "profiles.0.name": "Wired connection 2", "profiles.0.interface": "enp1s0f0np0",
            "profiles.0.ipv4_method": "auto", "profiles.0.autoconnect": "yes",
        }),
    "ours/nmcli/sim-nm-1.42.4-connection-show-full-rank1.txt": (
        "nmcli_profiles", {
            "#profiles": 1, "profiles.0.uuid": "d51a1679-62b0-436a-ab25-26a551508fe5", "profiles.0.name": "Wired connection 2",
            "profiles.0.type": "802-3-ethernet", "profiles.0.interface": "enp1s0f0np0", "profiles.0.ipv4_method": "auto",
        }),
}
