"""Every captured real output is parsed and its facts asserted (values, not "no exception").

Paths index the JSON form of the facts: "0.netdev" is facts[0]["netdev"]; "#" is len(facts);
"#rows" is len(facts["rows"]).
"""

import pytest

from gb10check.facts import parse, to_jsonable

from .conftest import read_capture

GB10_PORT0_UP = {"#": 4, "0.rdma_device": "rocep1s0f0", "0.netdev": "enp1s0f0np0", "0.state": "up", "1.state": "down",
                 "2.rdma_device": "roceP2p1s0f0", "2.netdev": "enP2p1s0f0np0", "2.state": "up", "3.state": "down"}
PORT1_UP = {"#": 4, "0.state": "down", "1.netdev": "enp1s0f1np1", "1.state": "up", "3.rdma_device": "roceP2p1s0f1", "3.state": "up"}

EXPECTED = {
    "ibdev2netdev/dgxspark-playbook-spark1-port0-up.txt": ("ibdev2netdev", GB10_PORT0_UP),
    "ibdev2netdev/dgxspark-playbook-spark2-port0-up.txt": ("ibdev2netdev", GB10_PORT0_UP),
    "ibdev2netdev/gb10-blog-port0-up.txt": ("ibdev2netdev", GB10_PORT0_UP),
    "ibdev2netdev/dgxspark-playbook-switch-port1-up.txt": ("ibdev2netdev", PORT1_UP),
    "ibdev2netdev/spark-vllm-docker-networking-port1-up.txt": ("ibdev2netdev", PORT1_UP),
    "ibdev2netdev/igx-orin-cx7-mlx5-eth-names-holoscan-docs.txt": (
        "ibdev2netdev", {"#": 2, "0.rdma_device": "mlx5_0", "0.netdev": "eth2", "0.state": "down", "1.netdev": "eth3", "1.state": "up"}),
    "rdma_gids_devinfo/gb10-blog-rdma-link.txt": (
        "rdma_link", {"#": 4, "0.rdma_device": "rocep1s0f0", "0.port_state": "ACTIVE", "0.phys_state": "LINK_UP",
                      "0.netdev": "enp1s0f0np0", "1.port_state": "DOWN", "1.phys_state": "DISABLED", "2.port_state": "ACTIVE"}),
    "rdma_gids_devinfo/gb10-blog-show_gids-redacted.txt": (
        "show_gids", {"#": 12, "3.rdma_device": "rocep1s0f0", "3.index": 3, "3.type": "RoCE v2", "3.ipv4": "192.168.100.10",
                      "2.type": "RoCE v1", "0.ipv4": None, "9.rdma_device": "roceP2p1s0f0", "9.ipv4": "192.168.100.14",
                      "9.netdev": "enP2p1s0f0np0"}),
    "rdma_gids_devinfo/dgxspark-ibv_devinfo-4hca-port1-up-idx53062434312.txt": (
        "ibv_devinfo", {"#": 4, "0.rdma_device": "rocep1s0f0", "0.firmware": "28.45.4028", "0.board_id": "NVD0000000087",
                        "0.ports.0.port_state": "DOWN", "0.ports.0.active_mtu": 1024, "1.ports.0.port_state": "ACTIVE",
                        "1.ports.0.active_mtu": 4096, "1.ports.0.link_layer": "Ethernet", "3.rdma_device": "roceP2p1s0f1"}),
    "rdma_gids_devinfo/dgxspark-sysfs-state-rate-linklayer-loop-reformatted-idx58010773908.txt": (
        "ib_sysfs", {"#": 4, "0.port_state": "DOWN", "0.rate_gbps": 40.0, "1.rdma_device": "rocep1s0f1", "1.port_state": "ACTIVE",
                     "1.rate_gbps": 200.0, "1.rate_width": "2X NDR", "1.link_layer": "Ethernet"}),
    "rdma_gids_devinfo/hp-zgx-nano-gb10-sysfs-port-rate-state-idx27283978185.txt": (
        "ib_sysfs", {"#": 4, "1.port_state": "ACTIVE", "1.rate_gbps": 200.0, "1.rate_width": "4X HDR", "2.port_state": "DOWN"}),
    "rdma_gids_devinfo/igx-orin-cx7-ibstat-eth-and-ib-holoscan-docs.txt": (
        "ibstat", {"#": 2, "0.rdma_device": "mlx5_0", "0.port_state": "DOWN", "0.phys_state": "Disabled", "0.link_layer": "Ethernet",
                   "1.port_state": "ACTIVE", "1.phys_state": "LinkUp", "1.rate_gbps": 100.0, "1.link_layer": "InfiniBand",
                   "1.firmware": "28.37.0190"}),
    "perftest/dgxspark-playbook-ib_write_bw-rocep1s0f0-infinite.txt": (
        "perftest", {"device": "rocep1s0f0", "gid_index": 3, "link_type": "Ethernet", "qps": 1, "bw_average_gbps": 92.568,
                     "#bw_rows": 5, "local_ipv4": "192.168.200.13", "remote_ipv4": "192.168.200.12", "error": None,
                     "warnings.0": "BW peak won't be measured in this run."}),
    "perftest/dgxspark-playbook-ib_write_bw-roceP2p1s0f0-infinite.txt": (
        "perftest", {"device": "roceP2p1s0f0", "gid_index": 3, "bw_average_gbps": 97.282, "#bw_rows": 6, "mtu_bytes": 1024}),
    "perftest/gb10-blog-ib_write_bw-D10-cpu_util-redacted.txt": (
        "perftest", {"device": "roceP2p1s0f0", "bw_average_gbps": 92.57, "bw_rows.0.cpu_util_pct": 5.07,
                     "bw_rows.0.iterations": 1059332, "remote_ipv4": "192.168.100.10"}),
    "perftest/spark-vllm-docker-ib_write_bw-q4-rdma_cm-forcelinkIB.txt": (
        "perftest", {"device": "rocep1s0f1", "qps": 4, "link_type": "IB", "gid_index": None, "connection": "rdma_cm",
                     "bw_average_gbps": 111.71, "bw_peak_gbps": 111.72}),
    "perftest/dell-promax-gb10-ib_write_bw-q4-rdma_cm.txt": (
        "perftest", {"device": "rocep1s0f0", "qps": 4, "bw_average_gbps": 111.61, "bw_rows.0.bytes": 65536}),
    "perftest/spark-vllm-docker-ib_write_lat-rdma_cm.txt": (
        "perftest", {"test": "RDMA_Write Latency Test", "#lat_rows": 1, "lat_rows.0.t_typical_us": 1.47,
                     "lat_rows.0.p99_9_us": 1.93, "bw_average_gbps": None}),
    "perftest/fail-couldnt-connect-perftest-pr228.txt": (
        "perftest", {"error": "Couldn't connect to 192.168.125.211:18515", "#bw_rows": 0}),
    "nccl_tests/dell-promax-gb10-2node-all_gather_perf-16G.txt": (
        "nccl_tests", {"collective": "all_gather_perf", "version": "2.18.5", "#ranks": 2, "ranks.1.host": "promaxgb10-4c99",
                       "ranks.0.device_name": "NVIDIA GB10", "avg_busbw_gbps": 183.689, "#rows": 1,
                       "rows.0.oop_busbw_gbps": 183.52, "out_of_bounds_ok": True, "errors_found": False}),
    "nccl_tests/h100-2node-16rank-all_reduce_perf-a3mega.txt": (
        "nccl_tests", {"#ranks": 16, "#rows": 31, "avg_busbw_gbps": 565.936, "max_busbw_gbps": 2710.56,
                       "rows.30.size_bytes": 8589934592, "errors_found": False}),
    "nccl_tests/deepops-k8s-sriov-roce-multinode-all_reduce-oldformat-error-col.txt": (
        "nccl_tests", {"#rows": 29, "avg_busbw_gbps": 62.139, "rows.0.oop_wrong": "2e-07", "rows.28.ip_busbw_gbps": 182.8,
                       "errors_found": False}),
    "ufw/ufw-status-verbose-ufw-docker-issue21.txt": (
        "ufw_status", {"active": True, "default_incoming": "deny", "default_routed": "deny", "#rules": 6,
                       "rules.0.to.port": "22", "rules.0.to.app": "OpenSSH", "rules.1.to.v6": True, "rules.2.direction": "FWD"}),
    "ufw/ufw-upstream-testsuite-status-plain-padded.txt": (
        "ufw_status", {"active": True, "#rules": 17, "rules.4.to.address": "192.168.0.1", "rules.4.source.address": "10.0.0.0/8",
                       "rules.4.action": "DENY", "rules.9.source.port": "5469", "rules.10.action": "LIMIT",
                       "rules.16.to.address": "2001:db8:3:4:5:6:7:8"}),
    "ufw/ufw-upstream-testsuite-status-verbose-app-profiles-padded.txt": (
        "ufw_status", {"#rules": 29, "default_routed": "disabled", "rules.1.to.port": "137,138", "rules.1.to.proto": "udp",
                       "rules.1.to.app": "Samba", "rules.20.to.address": "2001:db8::/32"}),
    "ufw/user.rules-as-printed-by-ufw-dry-run-upstream-testsuite.txt": (
        "ufw_user_rules", {"#tuples": 1, "tuples.0.action": "allow", "tuples.0.dst": "96.0.0.0/4", "tuples.0.src": "0.0.0.0/0",
                           "tuples.0.direction": "in", "iptables_rules": 8}),
    "ufw/user.rules-fresh-install-template-ufw-conf.txt": ("ufw_user_rules", {"#tuples": 0, "iptables_rules": 3}),
    "nvidia_smi/gb10-580.126.09-arctictraining-pr345.txt": (
        "nvidia_smi", {"driver_version": "580.126.09", "cuda_version": "13.0", "#gpus": 1, "gpus.0.name": "NVIDIA GB10",
                       "gpus.0.memory_usage": "Not Supported", "#processes": 0}),
    "nvidia_smi/gb10-580.159.03-with-processes-jethac.txt": (
        "nvidia_smi", {"driver_version": "580.159.03", "gpus.0.bus_id": "0000000F:01:00.0", "#processes": 3,
                       "processes.2.name": "VLLM::EngineCore", "processes.2.used_gib": 87.005, "processes.2.type": "C"}),
    "nvidia_smi/gb10-query-gpu-memory-NA-nvitop-pr208.txt": (
        "nvidia_smi_query", {"#": 1, "0.memory_total_gib": None, "0.utilization_gpu_pct": 0.0, "0.power_draw_w": 11.17,
                             "0.temperature_gpu": 35.0}),
    "nvidia_smi/gb10-query-gpu-name-driver-noheader-idx69674905226.txt": (
        "nvidia_smi_query", {"#": 1, "0.name": "NVIDIA GB10", "0.driver_version": "580.173.02"}),
    "nvidia_smi/nvml-mismatch-lib-580.178-truenas-issue19.txt": ("nvml_mismatch", {"nvml_mismatch": True, "library_version": "580.178"}),
    "nvidia_smi/nvml-mismatch-with-lib-version-550.144-intel-llvm-issue17614.txt": ("nvml_mismatch", {"library_version": "550.144"}),
    "nvidia_smi/nvml-mismatch-with-lib-version-570.124-tinygrad-ogkm-issue47.txt": ("nvml_mismatch", {"library_version": "570.124"}),
    "nvidia_smi/gb10-proc-driver-nvidia-version-580.126.09-idx52511083852.txt": (
        "proc_driver_nvidia_version", {"version": "580.126.09", "flavor": "open", "arch": "aarch64"}),
    "nvidia_smi/x86_64-proprietary-proc-driver-nvidia-version-580.173.02-truenas-issue19.txt": (
        "proc_driver_nvidia_version", {"version": "580.173.02", "flavor": "proprietary", "arch": "x86_64"}),
    "nvidia_smi/x86_64-open-proc-driver-nvidia-version-565.57.01-nixgl-issue186.txt": (
        "proc_driver_nvidia_version", {"version": "565.57.01", "flavor": "open", "arch": "x86_64"}),
    "nvidia_smi/jetson-orin-nx-l4t-proc-driver-nvidia-version-35.3.1-nixgl-issue139.txt": (
        "proc_driver_nvidia_version", {"version": "35.3.1", "gcc": "gcc version 9.3.0 (Buildroot 2020.08)"}),
    "nvidia_smi/gb10-nvml-raw-ctypes-meminfo-nvitop-pr208.txt": ("meminfo", {"mem_total_gib": 121.69, "mem_available_gib": 113.074}),
    "ip_ethtool/dgxspark-playbook-nccl-ip-addr-show-linklocal.txt": (
        "ip_addr", {"#": 1, "0.name": "enp1s0f1np1", "0.state": "up", "0.mtu": 1500, "0.addresses.0.address": "169.254.35.62",
                    "0.addresses.0.prefixlen": 16, "0.addresses.0.scope": "link", "0.addresses.1.family": "inet6"}),
    "ip_ethtool/ip-j-addr-wlan0-169.254-scope-global-noprefixroute-nix_stat-reformatted.json": (
        "ip_j_addr", {"#": 4, "1.name": "end0", "1.state": "down", "2.addresses.1.address": "169.254.11.146",
                      "2.addresses.1.scope": "global", "3.mtu": 1280}),
    "ip_ethtool/dgxspark-playbook-switch-ethtool-speed-grep-100G.txt": (
        "ethtool", {"#": 2, "0.interface": "enp1s0f1np1", "0.speed_mbps": 100000, "1.interface": "enP2p1s0f1np1"}),
    "ip_ethtool/dgxspark-playbook-switch-ethtool-speed-grep-200G.txt": ("ethtool", {"#": 2, "0.speed_mbps": 200000, "1.speed_mbps": 200000}),
    "ip_ethtool/ethtool-cx4lx-mlx5-10G-up-lanes-idx71571650010.txt": (
        "ethtool", {"#": 1, "0.interface": "nic_pve02_stor", "0.speed_mbps": 10000, "0.lanes": 1, "0.link_detected": True,
                    "0.duplex": "full"}),
    "meminfo/dgxspark-proc-meminfo-partial-author-selected-idx68529745704.txt": (
        "meminfo", {"mem_total_gib": 121.69, "mem_available_gib": 38.313, "cached_gib": 35.948, "huge_pages_total": 0}),
    "meminfo/generic-x86-proc-meminfo-full-2016-node-procfs-stats-issue9.txt": (
        "meminfo", {"mem_total_gib": 0.972, "mem_available_gib": 0.677, "hugepagesize_gib": 0.002}),
    "meminfo/dgxspark-free-g-head2-idx69674905226.txt": (
        "free", {"mem_total_gib": 121.0, "mem_used_gib": 95.0, "mem_buff_cache_gib": 14.0, "mem_available_gib": 25.0}),
    "vllm_logs/vllm-gb10-single-node-startup-jethac-server.log": (
        "vllm_log", {"lines": 218, "model_gib": 17.17, "kv_cache_tokens": 519920, "startup_complete": True, "#errors": 0,
                     "milestones.1.name": "tp_rank", "milestones.1.values.tp_rank": "0", "milestones.4.name": "kv_cache",
                     "milestones.5.name": "graph_capture", "milestones.5.values.gib": "1.64",
                     "milestones.6.values.url": "http://0.0.0.0:8000", "milestones.7.name": "startup_complete",
                     "milestones.7.t_s": 279.0}),
    "vllm_logs/vllm-0.13.0-gb10-offline-LLM-ansi-prefix-kvcache-chunk-elizabetht-spark.log": (
        "vllm_log", {"model_gib": 14.9889, "kv_cache_tokens": 147152, "startup_complete": False, "#milestones": 3,
                     "milestones.1.values.seconds": "107.781408"}),
    "vllm_logs/follower-collective_rpc-assertion-vllm-pr36875.txt": (
        "vllm_log", {"#errors": 1, "errors.0.name": "follower_collective_rpc", "errors.0.hint": "rank 1+ started without --headless"}),
    "vllm_api/v1-models-3-served-names-gb10-jethac.json": (
        "vllm_models", {"#": 3, "0.id": "gemma4-aeon-uncensored", "2.id": "gemma4-deep", "0.root": "/models/target",
                        "0.max_model_len": 262144}),
    "vllm_api/v1-models-apertus-gh200-clariden-idx62004564966.txt": (
        "vllm_models", {"#": 1, "0.id": "swiss-ai/Apertus-8B-Instruct-2509", "0.max_model_len": 65536}),
    "vllm_api/chat-completion-stop-harness-wrapped-jethac.json": (
        "vllm_chat", {"finish_reason": "stop", "content": "spark-ok", "reasoning": None, "completion_tokens": 4}),
    "vllm_api/chat-completion-reasoning-length-harness-wrapped-jethac.json": (
        "vllm_chat", {"finish_reason": "length", "content": None, "reasoning": "Thinking Process:\n1.  **",
                      "reasoning_field": "reasoning", "prompt_tokens": 18}),
    "vllm_api/error-404-model-not-found-nested-envelope-llm-d-dgxspark-idx61634039117.json": (
        "vllm_error", {"envelope": "nested", "code": 404, "type": "NotFoundError", "param": "model",
                       "message": "The model `does-not-exist-model` does not exist."}),
    "vllm_api/error-400-bad-request-flat-legacy-envelope-vllm-docs-matryoshka.json": (
        "vllm_error", {"envelope": "flat", "code": 400, "type": "BadRequestError"}),
    "vllm_api/route-404-fastapi-detail-not-found-vllm-0.17.1-gb10-idx52511083852.json": (
        "vllm_error", {"envelope": "fastapi", "message": "Not Found", "code": None}),
    "vllm_api/sse-tool_calls-stream-2-tools-qwen3-coder-next-usage-DONE-idx51976516683.txt": (
        "vllm_sse", {"done": True, "chunks": 11, "finish_reason": "tool_calls", "#tool_calls": 2, "tool_calls.0.name": "write",
                     "tool_calls.0.arguments": '{"content": "123", "filePath": "/home/chju/dev/rndsoft/1/123"}',
                     "tool_calls.1.id": "call_0061065f43604133aff0488e", "usage_chunk": True, "completion_tokens": 79}),
    "vllm_api/sse-stream-tail-stop-usage-only-chunk-DONE-vllm-omni-pr2313.txt": (
        "vllm_sse", {"done": True, "chunks": 4, "content": " scale.", "finish_reason": "stop", "usage_chunk": True,
                     "completion_tokens": 113}),
    "vllm_api/sse-stream-head-3-events-TRUNCATED-vllm-issue35705.txt": (
        "vllm_sse", {"done": False, "chunks": 3, "first_role": "assistant", "content": " .<think>", "finish_reason": None}),
    "docker/docker-inspect-vllm-container-running-jethac.json": (
        "docker_inspect", {"status": "running", "running": True, "oom_killed": False, "network_mode": "host", "ipc_mode": "host",
                           "restart_policy": "no", "memory_limit_gib": None, "command.0": "vllm", "command.1": "serve"}),
    "docker/docker-image-inspect-rootfs-jethac.json": (
        "docker_image_inspect", {"architecture": "arm64", "os": "linux", "#layers": 27,
                                 "id": "sha256:5f55c2af45936fd3e2ace1b779a19a972b469f750048c8ff58ddea48633ed1f8"}),
    "docker/docker-inspect-State.Health-healthy-jq-idx52801479953.json": (
        "docker_health", {"status": "healthy", "failing_streak": 0, "last_exit_code": 0}),
    "docker/compose-ps-healthy-ipv6-colon-ports-idx17127618458.txt": (
        "compose_ps", {"#": 2, "0.name": "auth_api_app", "0.state": "running", "0.health": None, "1.health": "healthy",
                       "0.ports": "0.0.0.0:80->80/tcp, :::80->80/tcp"}),
    "docker/compose-ps-sha256-image-weeks-uptime-idx67010038943.txt": (
        "compose_ps", {"#": 2, "1.status": "Up 2 weeks (healthy)", "0.service": "api", "0.ports": "127.0.0.1:8787->8000/tcp"}),
    "docker/compose-config-include-3svc-default-null-idx41743795395.txt": (
        "compose_config", {"name": "compose", "services.A.image": "nginx", "services.C.networks.default": None}),
    "docker/compose-config-ports-ingress-healthcheck-no-default-net-idx56630107744.txt": (
        "compose_config", {"services.postgres.ports.0.published": "5432", "services.postgres.healthcheck.retries": 10}),
}


def dig(facts, path: str):
    if path.startswith("#"):
        target = dig(facts, path[1:]) if path[1:] else facts
        return len(target)
    for part in path.split("."):
        facts = facts[int(part)] if isinstance(facts, list) else facts[part]
    return facts


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_facts(name):
    kind, expected = EXPECTED[name]
    facts = to_jsonable(parse(kind, read_capture(name)))
    seen = {path: dig(facts, path) for path in expected}
    assert seen == expected


def test_every_capture_is_asserted(captures):
    on_disk = {str(p.relative_to(captures)) for p in captures.rglob("*") if p.is_file() and p.name != "SOURCES.md"}
    assert on_disk - set(EXPECTED) == set(), "captures without asserted facts"
