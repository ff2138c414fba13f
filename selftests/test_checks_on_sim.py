"""Each check proven on the simulated cluster: the healthy pair passes, and each fault scenario fails
exactly the checks that exist to catch it, with the message a user needs.

This is the table scenario -> failing tests. Everything not listed must pass (or skip with a reason). The scenarios that
prove only checks reading facts are judged from their recordings of the live pair (test_scenarios_replayed.py, the same
assertions: judge_exactly, judge_warnings: every warning scenario is one of them); the ones here run live.
"""

import json
import re

import pytest

from gb10check.sim import control, recordings, scenarios
from gb10check.sim.topology import mgmt_ip

from .simbed import judge_scenario, require_sim, run_suite, step

pytestmark = pytest.mark.sim

A, B = "thinkstationpgx-30", "thinkstationpgx-32"
RING = (A, B, "thinkstationpgx-34")  # the ring of three's nodes (its scenarios: topology ring)
L0, L1 = "enp1s0f0np0", "enP2p1s0f0np0"
PF, NW = "tests/preflight", "tests/network"
NCCL = f"{NW}/test_nccl.py::test_nccl_all_gather"
COLLECTIVES = f"{NW}/test_nccl.py::test_nccl_collectives"


def path(src, dst, link):
    return f"{src}:{link}->{dst}:{link}"


def pair(link):
    return f"{A}:{link}--{B}:{link}"


EXPECTED: dict[str, dict[str, str]] = {
    "healthy": {},
    "docker-group-missing": {
        f"{PF}/test_container.py::test_container_runtime[{B}]":
            rf"\[docker-unreachable\] {B}: saw permission denied while trying to connect to the Docker daemon socket.*"
            r"expected the docker daemon reachable by lenovo\n  fix: .*sudo usermod -aG docker lenovo",
    },
    "compose-v1-only": {
        f"{PF}/test_container.py::test_container_runtime[{B}]":
            rf"\[compose-v2-missing\] {B}: saw `docker compose version`: .*(unknown command: docker compose|'compose' is not a docker command).*expected compose v2",
    },
    "image-layers-differ": {
        f"{PF}/test_container.py::test_image_same_as_head[{B}]":
            rf"\[image-layers-differ\] {B}: saw gb10sim/vllm-cpu:local: 2 RootFS layers, first difference at layer 1 .*"
            rf"expected the 1 layers of {A}.*\n  fix: copy the image from {A}",
    },
    "shard-truncated": {  # also a deploy fault: test_deploy_run shows the rank dying while loading it
        f"{PF}/test_model.py::test_model_same_as_head[{B}]":
            rf"\[model-differs\] {B}: saw 1 files differ from {A}, e.g\. model-00001-of-00003\.safetensors: \d+ bytes vs \d+",
    },
    "image-missing": {
        f"{PF}/test_container.py::test_image[{B}]": rf"\[image-missing\] {B}: saw no image gb10sim/vllm-cpu:local \(.*No such image",
    },
    "gpu-not-in-container": {
        f"{PF}/test_container.py::test_gpu_in_container[{B}]":
            rf"\[container-no-gpu\] {B}: saw `docker run --rm --pull never --gpus all .*` exit 125: .*"
            r"could not select device driver \"\" with capabilities: \[\[gpu\]\].*\n  fix: install and configure the NVIDIA container toolkit",
    },
    "cdi-spec-stale": {
        f"{PF}/test_toolkit.py::test_cdi_spec[{B}]":
            rf"\[cdi-spec-stale\] {B}: saw /etc/cdi/nvidia\.yaml generated for driver 580\.126\.09 "
            r"\(/usr/lib/aarch64-linux-gnu/libEGL_nvidia\.so\.580\.126\.09\); expected the CDI spec of the loaded driver "
            r"580\.173\.02\n  fix: generate the CDI spec again for the loaded driver on \S+: sudo nvidia-ctk cdi generate "
            r"--output=/etc/cdi/nvidia\.yaml",
    },
    "nccl-2.30.4-nvls": {
        f"{PF}/test_gpu.py::test_image_nccl[{n}]":
            rf"\[known-bad-version\] {n}: saw NCCL 2\.30\.4, no NCCL_NVLS_ENABLE in the serving environment \[nccl-2\.30\.4-nvls: "
            r"loading a mixture-of-experts model's weights hangs in NCCL's NVLS set-up\]; expected not NCCL 2\.30\.4 without "
            r"NCCL_NVLS_ENABLE=0\n  fix: set NCCL_NVLS_ENABLE: \"0\" in the serving container's environment "
            r"\(deploy\.extra_environment\), or use another NCCL release \(source: https://github\.com/NVIDIA/nccl/issues/2167\)"
        for n in (A, B)
    },
    "toolkit-1.19.1": {
        f"{PF}/test_toolkit.py::test_container_toolkit[{n}]":
            rf"\[known-bad-version\] {n}: saw nvidia-ctk 1\.19\.1 \[toolkit-1\.19\.1-cuda-init: after the upgrade from "
            r"1\.19\.0, containers started with --gpus fail CUDA initialization.*\n  fix: install toolkit 1\.19\.0 on every "
            r"node .*\(source: https://github\.com/NVIDIA/nvidia-container-toolkit/issues/1967\)"
        for n in (A, B)
    },
    "toolkit-mode-differs": {
        f"{PF}/test_toolkit.py::test_toolkit_same_as_head[{B}]":
            rf"\[toolkit-differs\] {B}: saw runtime mode \(config\.toml\) 'cdi'; expected 'auto' as on {A}\n"
            r"  fix: run the same NVIDIA Container Toolkit, configured the same way, on every node",
    },
    "stale-container": {
        f"{PF}/test_container.py::test_no_serving_container_left[{A}]":
            rf"\[stale-container\] {A}: saw container gb10-vllm \(gb10sim/vllm-cpu:local\) Up .*, using 1\.0\d*GiB.*"
            rf"\n  fix: stop it before deploying: on {A} run `docker compose down` in /home/lenovo/vllm",
    },
    "driver-mismatch": {
        f"{PF}/test_driver.py::test_driver_parity[{B}]":
            rf"\[nvml-mismatch\] {B}: saw nvidia-smi: 'Driver/library version mismatch' .*kernel module 580\.159\.03.*\n  fix: reboot {B}",
    },
    "driver-differs": {
        f"{PF}/test_driver.py::test_driver_same_as_head[{B}]":
            rf"\[driver-differs\] {B}: saw driver 580\.126\.09; expected driver 580\.173\.02 as on {A}",
    },
    "ufw-no-qsfp-rules": {
        f"{PF}/test_firewall.py::test_firewall[{B}]": r"no rule allowing 169\.254\.0\.0/16.*\n  fix: sudo ufw allow from 169\.254\.0\.0/16",
        **{f"{NW}/test_reachability.py::test_port_open[{path(A, B, l)}-port{p}]":
           rf"\[port-blocked\] {B}:{p}/tcp: saw connection from {A} \(\S+\) to \S+:{p} dropped \(a firewall\) after 3 s.*\n"
           rf"  fix: on {B}: sudo ufw allow from \S+ to any port {p} proto tcp"
           for l in (L0, L1) for p in (29501, 18515)},
        **{f"{NW}/test_bandwidth.py::test_ib_write_bw[{pair(l)}]": r"\[rdma-run\] .*Couldn't connect to" for l in (L0, L1)},
        NCCL: r"\[nccl-run\] .*remote process exited or there was a network error.*Connect to 169\.254\.159\.206<29600> failed : timed out",
    },
    "ufw-not-persisted": {
        f"{PF}/test_firewall.py::test_firewall[{B}]": r"\[ufw-not-persisted\] .*169\.254\.0\.0/16 accepted only by a hand-made iptables rule",
    },
    "link2-down": {
        **{f"{NW}/test_cabling.py::test_cabling[{n}:{L1}]": rf"\[cable-nothing\] {n}:{L1}: saw its cable reaches nothing; "
           rf"expected {m} {L1} \(topology: pair\)" for n, m in ((A, B), (B, A))},
        **{f"{NW}/test_links.py::test_rdma_link_up[{n}:{L1}]": rf"\[link-down\] {n}:{L1}: saw roceP2p1s0f0 port 1 ==> {L1} \(Down\)"
           for n in (A, B)},
        **{f"{NW}/test_links.py::test_rdma_port_active[{n}:{L1}]": r"\[port-not-active\] .*state DOWN, phys_state Disabled"
           for n in (A, B)},
        **{f"{NW}/test_links.py::test_link_speed[{n}:{L1}]": r"\[link-down\] .*Speed: Unknown!" for n in (A, B)},
        **{f"{NW}/test_reachability.py::test_ping[{path(s, d, L1)}]": r"\[ping\] .*saw no reply" for s, d in ((A, B), (B, A))},
        **{f"{NW}/test_reachability.py::test_ssh_mesh[{path(s, d, L1)}]": r"\[ssh-mesh\] .*(No route|unreachable)"
           for s, d in ((A, B), (B, A))},
        f"{NW}/test_addressing.py::test_route_to_peer[{path(B, A, L1)}]": r"\[route-wrong-dev\] .*Network is unreachable",
        f"{NW}/test_bandwidth.py::test_ib_write_bw[{pair(L1)}]": r"\[rdma-run\] .*Port number 1 state is Down",
        **{f"{PF}/test_compose.py::test_compose_lint[{n}]": r"\[compose-env\] .*NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0: roceP2p1s0f0 is "
           r"not an ACTIVE RDMA device here" for n in (A, B)},
        NCCL: r"\[nccl-socket-fallback\] .*NET/Socket.*\n.*\n\[nccl-bandwidth\] .*bus bandwidth 20\.0 Gb/s \(2\.50 GB/s\)",
    },
    "gid-moved": {
        f"{NW}/test_roce.py::test_roce_gid[{B}:{l}]":
            rf"\[gid-not-roce-v2\] {B}:{d}: saw GID 3 is RoCE v1 {ip}; RoCE v2 with {ip} is at index 5.*\n"
            rf"  fix: use NCCL_IB_GID_INDEX=5 for {d} on {B}"
        for l, d, ip in ((L0, "rocep1s0f0", r"169\.254\.159\.206"), (L1, "roceP2p1s0f0", r"192\.168\.101\.11"))
    } | {
        f"{PF}/test_compose.py::test_compose_lint[{B}]": r"\[compose-env\] .*NCCL_IB_GID_INDEX=3; rocep1s0f0 has RoCE v2 at 5.*\n"
                                                        r"  fix: set NCCL_IB_GID_INDEX=5",
        NCCL: r"\[nccl-socket-fallback\]",
    },
    "low-bandwidth": {
        f"{NW}/test_bandwidth.py::test_ib_write_bw[{pair(L1)}]": r"\[rdma-bandwidth\] .*saw 41\.30 Gb/s; expected >= 90 Gb/s",
    },
    "link-speed-100g": {},  # a warning, not a failure: see test_link_speed_warning
    "ssh-not-passwordless": {
        **{f"{NW}/test_reachability.py::test_ssh_mesh[{path(A, B, l)}]": r"\[ssh-mesh\] .*Permission denied \(publickey\)" for l in (L0, L1)},
        NCCL: r"\[nccl-run\] .*ORTE was unable to reliably start one or more daemons",
    },
    "netplan-644": {
        f"{NW}/test_addressing.py::test_netplan_file[{A}]": r"\[netplan-mode\] .*mode 644; expected mode 600\n  fix: sudo chmod 600",
    },
    "bf16-checkpoint": {
        f"{PF}/test_model.py::test_memory_fit[{n}]":
            r"\[model-wedge\] .*Qwen/Qwen3\.8-Flash-Next: 167\.6 GiB of weights per rank; expected at most 119 GiB of unified memory; "
            r"loading would exhaust unified memory and can wedge the driver\n  fix: use the FP8 checkpoint"
        for n in (A, B)
    },
    "hf-cache-600": {
        f"{PF}/test_model.py::test_model_artifacts[{B}]": r"\[model-unreadable\] .*mode 600.*\n  fix: sudo chmod -R a\+rX",
    },
    "hf-cache-incomplete": {
        f"{PF}/test_model.py::test_model_artifacts[{B}]": r"\[model-incomplete\] .*missing model-00002-of-00003\.safetensors",
        f"{PF}/test_model.py::test_model_same_as_head[{B}]": r"\[model-differs\] .*model-00002-of-00003\.safetensors: None bytes",
    },
    "hf-cache-dereferenced": {
        f"{PF}/test_model.py::test_model_artifacts[{B}]": r"\[model-dereferenced\] .*2 regular files in snapshots/.*\n  fix: .*rsync -a \(no -L\)",
    },
    "low-memavailable": {
        f"{PF}/test_model.py::test_memory_available[{B}]": r"\[memory-low\] .*saw MemAvailable [56]\.\d GiB; expected at least 9\.\d GiB",
    },
    "page-cache": {  # and a warning: see test_page_cache_warning
        f"{PF}/test_gpu.py::test_start_memory[{A}]":
            rf"\[start-memory-page-cache\] {A}: saw CUDA reports \d+\.\d\d GiB free of 121\.69 on device 0 \(NVIDIA GB10\), \d+\.\d\d GiB short; the page cache holds 4\d\.\d\d GiB \(unified memory: CUDA "
            r"counts it as used\); expected at least 99\.35 GiB free: gpu_memory_utilization 0\.8 x 121\.69 GiB = 97\.35 GiB \(what vLLM asks for at start\) \+ margin 2 GiB\n  fix: drop the page cache on "
            rf"{A} \(4\d\.\d\d GiB; \d+\.\d\d GiB short\): sync; echo 3",
    },
    "orphaned-engine-core": {
        f"{PF}/test_gpu.py::test_no_gpu_process_left[{B}]":
            rf"\[gpu-process-left\] {B}: saw pid \d+ VLLM::EngineCore \(on the host, parent \d+, running 0h0\dm\) holding "
            r"80\.\d GiB; expected no GPU compute process before deploy\n  fix: stop it on .* \(kill \d+\)",
        f"{PF}/test_gpu.py::test_start_memory[{B}]":
            rf"\[start-memory-process\] {B}: saw CUDA reports \d+\.\d\d GiB free of 121\.69 on device 0 \(NVIDIA GB10\), \d+\.\d\d GiB short: pid \d+ VLLM::EngineCore \(on the host, parent \d+, running 0h0\dm\) "
            rf"holding 80\.\d GiB; expected at least 99\.35 GiB free: gpu_memory_utilization 0\.8 x 121\.69 GiB = 97\.35 GiB \(what vLLM asks for at start\) \+ margin 2 GiB\n  fix: a GPU process holds the memory on {B}",
    },
    "memory-held-no-process": {
        f"{PF}/test_gpu.py::test_start_memory[{B}]":
            rf"\[start-memory-reboot\] {B}: saw CUDA reports \d+\.\d\d GiB free of 121\.69 on device 0 \(NVIDIA GB10\), \d+\.\d\d GiB short; no GPU process and \d+\.\d\d GiB of page cache: \d+\.\d\d GiB with the "
            rf"cache dropped, under the idle floor 100 GiB \(expect\.idle_free_floor_gib\); expected at least 99\.35 GiB free: gpu_memory_utilization 0\.8 x 121\.69 GiB = 97\.35 GiB \(what vLLM asks for at start\) \+ margin 2 GiB\n  fix: reboot {B}",
    },
    "os-differs": {
        f"{PF}/test_identity.py::test_os_parity[{B}]": rf"\[os-parity\] {B}: saw OS image 'Ubuntu 22\.04\.5 LTS'; expected '.*' as on {A}",
    },
    "gpu-not-gb10": {
        f"{PF}/test_identity.py::test_gpu_name[{B}]": rf"\[gpu-name\] {B}: saw GPU NVIDIA GH200 480GB; expected NVIDIA GB10",
    },
    "mtu-mismatch": {
        f"{NW}/test_addressing.py::test_mtu_equal[{pair(L0)}]": rf"\[mtu-mismatch\] {A}:{L0}: saw {A}:{L0} MTU 1500, {B}:{L0} MTU 9000",
        f"{NW}/test_path_mtu.py::test_path_mtu[{path(B, A, L0)}]":
            rf"\[path-mtu\] {B}:{L0}->{A}:{L0}: saw no reply to a 8972-byte don't-fragment ping to 169\.254\.94\.252 \(MTU 9000 "
            r"less 28 bytes of headers",
    },
    "firmware-differs": {
        f"{PF}/test_platform.py::test_versions_same_as_head[{B}]":
            rf"\[version-differs\] {B}: saw ConnectX firmware of {L0} '28\.44\.1036'; expected '28\.45\.4028' as on {A}",
    },
    # Warnings (degraded but usable) are proven by judge_warnings below, each from its recording.
    "default-route-qsfp": {
        f"{NW}/test_addressing.py::test_no_default_route_on_qsfp[{B}]": rf"\[default-route-qsfp\] {B}: saw default via 169\.254\.94\.252 "
                                                                       rf"dev {L0}",
    },
    "netplan-missing-link": {
        f"{NW}/test_addressing.py::test_netplan_file[{A}]": rf"\[netplan-content\] {A}: saw /etc/netplan/40-cx7\.yaml does not mention {L1}",
    },
    "nccl-hca-own-rank": {  # rank 0's environment for every rank (the old mpirun -x) would have passed
        f"{PF}/test_compose.py::test_compose_same_as_head[{B}]": rf"\[compose-differs\] {B}: saw /home/lenovo/vllm/compose\.yml ",
        f"{PF}/test_compose.py::test_compose_lint[{B}]": r"\[compose-env\] .*NCCL_IB_HCA==rocep1s0f1: rocep1s0f1 is not an ACTIVE "
                                                        r"RDMA device here",
        NCCL: rf"\[nccl-socket-fallback\] .*NET/Socket.*\n.*{B}: =rocep1s0f1.*\n\[nccl-bandwidth\] .*bus bandwidth 20\.0 Gb/s",
        COLLECTIVES: rf"\[nccl-socket-fallback\] {B} \(rank 1\): saw 4 channel line\(s\) via NET/Socket \(socket fallback\); "
                     rf"NCCL found no IB device \(NET/IB : No device found\); its NCCL_IB_HCA==rocep1s0f1",
    },
    "nccl-hca-crossed": {
        f"{PF}/test_compose.py::test_compose_same_as_head[{B}]": rf"\[compose-differs\] {B}: saw /home/lenovo/vllm/compose\.yml ",
        COLLECTIVES: rf"\[nccl-channel-map\] {A} \(rank 0\) -> {B} \(rank 1\): saw channel 00 sends on {A}'s rocep1s0f0 "
                     rf"\(169\.254\.0\.0/16\) and is received on {B}'s roceP2p1s0f0 \(192\.168\.101\.0/24\)",
    },
    "nccl-slow": {
        NCCL: r"\[nccl-bandwidth\] .*bus bandwidth 60\.0 Gb/s",
        COLLECTIVES: r"\[nccl-collectives-bandwidth\] .*all_reduce bus bandwidth 59\.9 Gb/s \(7\.48 GB/s\) at 268435456 bytes",
    },
    "compose-differs": {
        f"{PF}/test_compose.py::test_compose_same_as_head[{B}]": rf"\[compose-differs\] {B}: saw /home/lenovo/vllm/compose\.yml "
                                                               rf"sha256 \w+; expected sha256 \w+ as on {A}",
    },
    "env-dup-rank": {
        f"{PF}/test_compose.py::test_env_file[{B}]": rf"\[env-file\] {B}: saw NODE_RANK=0 \(the rank of {A}: two nodes would start "
                                                    rf"as rank 0\); expected NODE_RANK=1",
    },
    "no-headless": {
        f"{PF}/test_compose.py::test_compose_lint[{B}]": r"\[compose-headless\] .*rank 1 starts `vllm serve .*` without --headless.*\n"
                                                        r"  fix: rank 1 must have --headless \(seed: collective_rpc should not be called",
    },
    "cudagraph-hyphen": {
        f"{PF}/test_compose.py::test_compose_lint[{n}]": r"\[compose-cudagraph-hyphen\] .*-cc\.cudagraph-mode \(hyphen\)" for n in (A, B)
    },
    "no-memory-limit": {
        f"{PF}/test_compose.py::test_compose_lint[{n}]": r"\[compose-no-memory-limit\] .*saw no memory limit; expected a limit between "
                                                        r"the GPU budget 95 GiB and 119 GiB" for n in (A, B)
    },
    "compose-no-offline": {
        f"{PF}/test_compose.py::test_compose_offline[{n}]":
            rf"\[compose-no-offline\] {n}:vllm: saw no HF_HUB_OFFLINE in the service's environment; expected HF_HUB_OFFLINE=1 "
            rf"\(the model is complete on every node\)\n  fix: set HF_HUB_OFFLINE: \"1\" in the compose environment on {n}"
        for n in (A, B)
    },
    "gpu-stuck-low-power": {
        f"{PF}/test_gpu.py::test_gpu_compute[{B}]":
            rf"\[gpu-clock-low\] {B}: saw SM clock 801 MHz under load \(median of \d+ samples, max 3003\.0 MHz\), 19\.6 W, "
            rf"reasons none; expected >= 1200 MHz \(expect\.min_sm_clock_mhz\)\n  fix: power {B} off at the wall",
    },
    # The stand-in's figures (sim/standins/matmul.py): 36 TFLOP/s against rank 0's 90, under the floor of 60.
    "gpu-compute-slow": {
        f"{PF}/test_gpu.py::test_gpu_compute[{B}]":
            rf"\[gpu-compute-low\] {B}: saw 36 TFLOP/s \(bfloat16 8192\^3 matmul on NVIDIA GB10, cuda\); expected >= 60 TFLOP/s "
            rf"\(expect\.min_tflops\)(.|\n)*"
            rf"\[gpu-compute-spread\] {B}: saw 36 TFLOP/s, 60% slower than {A} \(90 TFLOP/s\); expected within 15% "
            rf"of the fastest node \(expect\.max_compute_spread\)\n  fix: power {B} off at the wall",
    },
    "nccl-corrupt": {
        NCCL: r"\[nccl-wrong-values\] .*: saw wrong values in 1 row\(s\) of the result table \(#wrong > 0 at 1073741824 bytes\); "
              r"expected 0 wrong values at every size\n  fix: data arrived corrupted: read the RDMA error counters",
    },
    # NCCL's configuration (checks/nccl_config.py): a file disagreeing with the compose environment fails; a silent key and
    # an external net plugin warn (ALSO_WARNS), beside the locally changed image they come in
    "nccl-conf-host-conflict": {
        f"{PF}/test_nccl_config.py::test_nccl_config[{B}]":
            rf"\[nccl-conf-conflict\] {B}:host /etc/nccl\.conf: saw NCCL_SOCKET_IFNAME=eth0 in /etc/nccl\.conf \(host\), the "
            rf"compose environment sets NCCL_SOCKET_IFNAME={L0}; expected one value of NCCL_SOCKET_IFNAME: the compose "
            rf"environment's .*\n  fix: give NCCL_SOCKET_IFNAME one value: delete it from /etc/nccl\.conf \(host on {B}",
    },
    "nccl-conf-image-silent": {
        f"{PF}/test_container.py::test_image_same_as_head[{B}]": rf"\[image-layers-differ\] {B}: saw gb10sim/vllm-cpu:local: 2 RootFS",
    },
    # The NCCL environment a ring needs (the ring of three: judged from its recording): every node's compose file, one
    # failure each, naming the variable and the value NVIDIA's launch.sh --topology ring sets
    **{name: {f"{PF}/test_nccl_config.py::test_nccl_topology_env[{n}]":
              rf"\[nccl-ring-env\] {n}:vllm: saw {seen} on a ring of 3; expected {var}={want} \(each port reaches one "
              rf"neighbour: NCCL's own IB transport, routed by subnet\)\n  fix: set {var}={want} in the compose environment"
              for n in RING}
       for name, seen, var, want in (("ring-nccl-no-routing", "NCCL_IB_SUBNET_AWARE_ROUTING unset", "NCCL_IB_SUBNET_AWARE_ROUTING", "1"),
                                     ("ring-nccl-plugin", r"NCCL_NET_PLUGIN=libnccl-net\.so", "NCCL_NET_PLUGIN", "none"))},
    "nccl-net-plugin-image": {
        f"{PF}/test_container.py::test_image_same_as_head[{B}]": rf"\[image-layers-differ\] {B}: saw gb10sim/vllm-cpu:local: 2 RootFS",
    },
    "nm-dhcp-on-qsfp": {  # a real NetworkManager's profiles (rank 0's static one passes)
        f"{NW}/test_netpath.py::test_no_dhcp_on_qsfp[{B}]":
            rf"\[nm-dhcp-qsfp\] {B}:{L0}: saw NetworkManager profile 'Wired connection 2' \([0-9a-f-]{{36}}\) with ipv4\.method "
            rf"auto \(DHCP\) on {L0} \(autoconnect on\).*\n  fix: scripts/nm-release-qsfp --node {B}",
    },
    "pcie-gen5-x2": {
        f"{PF}/test_platform.py::test_pcie_link[{B}]":
            rf"\[pcie-degraded\] {B}:0002:01:00\.0: saw 0002:01:00\.0 \({L1}\) Mellanox Technologies MT2910 Family \[ConnectX-7\]: LnkSta 32GT/s x2 "
            r"\(downgraded\), LnkCap 32GT/s x4 \(width below\); expected LnkSta Speed 32GT/s, Width x4 .*\n  fix: update the BIOS "
            rf"of {B}.*\n\[pcie-degraded\] {B}:0002:01:00\.1: saw 0002:01:00\.1 Mellanox Technologies MT2910",
    },
    "same-subnet": {
        **{f"{NW}/test_addressing.py::test_links_on_distinct_subnets[{n}]": r"\[same-subnet\] .*overlap" for n in (A, B)},
        **{f"{NW}/test_addressing.py::test_link_address[{n}:{L1}]": r"\[address-missing\] .*expected 192\.168\.101\.1\d/24"
           for n in (A, B)},
        **{f"{NW}/test_addressing.py::test_route_to_peer[{path(s, d, L1)}]": r"\[route-wrong-dev\]" for s, d in ((A, B), (B, A))},
        **{f"{NW}/test_reachability.py::test_ping[{path(s, d, L1)}]": r"\[ping\]" for s, d in ((A, B), (B, A))},
        **{f"{NW}/test_reachability.py::test_ssh_mesh[{path(s, d, L1)}]": r"\[ssh-mesh\]" for s, d in ((A, B), (B, A))},
        **{f"{NW}/test_roce.py::test_roce_gid[{n}:{L1}]": r"\[gid-not-roce-v2\] .*no RoCE v2 GID holds 192\.168\.101" for n in (A, B)},
        f"{NW}/test_bandwidth.py::test_ib_write_bw[{pair(L1)}]": r"\[rdma-run\]",
    },
    # The kernel log's failures (selftests/test_judges_platform.py judges every sign's line; these prove the node's log)
    "cx7-pcie-fatal": {
        f"{PF}/test_platform.py::test_kernel_log[{B}]":
            rf"\[kernel-pcie-fatal\] {B}: saw 2 PCIe AER fatal error line\(s\) in the kernel log since boot \(dmesg\): "
            r"\[ 8812\.402661\] pcieport 0002:00:00\.0: AER: Uncorrected \(Fatal\) error message received from 0002:01:00\.0 \| "
            rf".*expected no PCIe AER fatal error since boot\n  fix: power {B} off at the wall and on(.|\n)*"
            rf"\[kernel-nic-reset\] {B}: saw 2 mlx5 PCI error recovery line\(s\) .*mlx5_pci_slot_reset Device state = 2",
    },
    "cpu-soft-lockup": {
        f"{PF}/test_platform.py::test_kernel_log[{B}]":
            rf"\[kernel-lockup\] {B}: saw 1 CPU lockup line\(s\) in the kernel log since boot \(dmesg\): \[ 6120\.884512\] "
            r"watchdog: BUG: soft lockup - CPU#7 stuck for 26s! \[python3:20417\]; expected no CPU lockup since boot\n"
            rf"  fix: reboot {B} before deploying",
    },
    "overheated": {
        f"{PF}/test_platform.py::test_kernel_log[{B}]":
            rf"\[kernel-thermal\] {B}: saw 2 critical temperature line\(s\) in the kernel log since boot \(dmesg\): "
            r"\[ 9301\.118007\] thermal thermal_zone0: acpitz: critical temperature reached \| .*HARDWARE PROTECTION shutdown"
            rf".*\n  fix: check the cooling of {B}",
    },
}


@pytest.fixture(scope="module")
def bed():
    require_sim()
    yield
    control.down(quiet=True)


# The checks marked slow: measurements, and the container canaries (a torch import in a container on every node of this
# 2-core machine; on the sim's CPU torch the two image canaries skip: no NCCL to identify, no CUDA kernel to build).
SLOW = {"test_ib_write_bw", "test_nccl_all_gather", "test_nccl_link_pair", "test_nccl_collectives", "test_gpu_compute", "test_image_nccl", "test_image_kernels",
        "test_start_memory", "test_no_gpu_process_left"}


def selection_for(name: str) -> list[str]:
    """The healthy pair runs every check; a fault scenario runs only the slow ones it proves (a link fault cannot move a
    TFLOP/s figure, nor a GPU fault a bandwidth; those runs cost most of a scenario's time)."""
    proves = {p.split(":")[0] for p in scenarios.SCENARIOS[name].proves}
    if name == "healthy":
        return ["-m", "preflight or network"]
    if not proves & SLOW:
        return ["-m", "(preflight or network) and not slow"]
    return with_slow(proves & SLOW)


def with_slow(wanted: set[str]) -> list[str]:
    """Every check but the slow ones not `wanted`."""
    return ["-m", "preflight or network", "-k", " and ".join(f"not {t}" for t in sorted(SLOW - wanted))]


def outcomes_under(name: str, selection: list[str] | None = None):
    path = control.up(2, quiet=True)
    if name != "healthy":
        scenarios.apply(name)
    rank, command, expected = VISIBLE[name]  # the fault is really there, seen with a plain command on the node
    out = control.node_exec(control.nodes()[rank], command, check=False)
    assert expected in out.stdout + out.stderr, f"{name}: {command!r} printed {out.stdout + out.stderr!r}"
    assert json.loads((control.state_dir() / "sim.json").read_text())["scenarios"] == ([] if name == "healthy" else [name])
    return run_suite(path, *(selection or selection_for(name)))


# A plain command on the node shows each scenario took effect (outcomes_under looks before it runs the suite).
VISIBLE = {
    "driver-mismatch": (1, "nvidia-smi; cat /proc/driver/nvidia/version", "Driver/library version mismatch"),
    "driver-differs": (1, "nvidia-smi --query-gpu=driver_version --format=csv,noheader", "580.126.09"),
    "ufw-no-qsfp-rules": (1, "ufw status", "Status: active"),
    "ufw-not-persisted": (1, "iptables -S ufw-user-input | grep 169.254.0.0/16 && ! grep -q 169.254.0.0/16 /etc/ufw/user.rules && echo live-only", "live-only"),
    "link2-down": (1, "ibdev2netdev", "roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)"),
    "gid-moved": (1, "cat /sys/class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/3 /sys/class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/5", "IB/RoCE v1\nRoCE v2"),
    "low-bandwidth": (1, "cat /etc/gb10sim/state.json", '"bandwidth_gbps": 41.3'),
    "link-speed-100g": (1, "ethtool enp1s0f0np0", "Speed: 100000Mb/s"),
    "different-usernames": (1, "getent passwd nvidia; getent passwd lenovo || echo no-lenovo", "no-lenovo"),
    "ssh-blocked": (1, "ufw status", "22/tcp on enP7s7"),
    "host-key-changed": (1, "cat /etc/ssh/ssh_host_ed25519_key.pub", " reinstalled"),  # served: the step waits for it
    "sudo-password": (1, "cat /etc/sudoers.d/gb10sim", "lenovo ALL=(ALL) ALL"),
    "ssh-not-passwordless": (1, "grep -c gb10sim-shared-cluster-key /home/nvidia/.ssh/authorized_keys /home/lenovo/.ssh/authorized_keys 2>/dev/null; true", ":0"),
    "netplan-644": (0, "stat -c %a /etc/netplan/40-cx7.yaml", "644"),
    "same-subnet": (0, "ip -br -4 addr show enP2p1s0f0np0", "169.254.94.253/16"),
    "healthy": (0, "ufw status", "Status: active"),
    "os-differs": (1, "grep PRETTY_NAME /etc/os-release", "Ubuntu 22.04.5 LTS"),
    "gpu-not-gb10": (1, "nvidia-smi -L", "NVIDIA GH200 480GB"),
    "mtu-mismatch": (1, "cat /sys/class/net/enp1s0f0np0/mtu", "9000"),
    "roce-mtu-stuck": (1, "ibv_devinfo -d rocep1s0f0 | grep active_mtu", "1024 (3)"),
    "bios-before-april-2026": (0, "cat /sys/class/dmi/id/bios_date", "01/20/2026"),
    "firmware-differs": (1, "ethtool -i enp1s0f0np0", "28.44.1036"),
    "pcie-gen5-x2": (1, "lspci -vv -s 0002:01:00.0 | grep LnkSta:", "Width x2 (downgraded)"),
    "compose-no-offline": (1, "grep -c HF_HUB_OFFLINE /home/lenovo/vllm/compose.yml", "0"),
    "compose-cache-not-mounted": (1, "grep -c /root/.triton /home/lenovo/vllm/compose.yml", "0"),
    "gpu-stuck-low-power": (1, "nvidia-smi -i 0 --query-gpu=clocks.sm,power.draw --format=csv,noheader", "801 MHz, 19.60 W"),
    "disk-slow": (1, "cat /etc/gb10sim/state.json", '"disk_read_bytes_s": 109143442.'),
    "disk-low": (1, "df /home/lenovo/vllm/huggingface", "/dev/loop"),
    "nm-dhcp-on-qsfp": (1, "nmcli -t -f NAME,TYPE,DEVICE connection show", "Wired connection 2:802-3-ethernet:"),
    "nccl-corrupt": (1, "cat /etc/gb10sim/state.json", '"nccl_wrong": 12'),
    "gpu-xid": (1, "dmesg | tail -n 2", "[ 4021.118204] NVRM: Xid (PCI:000f:01:00): 31, pid=20417"),
    "cx7-pcie-fatal": (1, "dmesg | tail -n 5", "AER: Uncorrected (Fatal) error message received from 0002:01:00.0"),
    "cpu-soft-lockup": (1, "dmesg | tail -n 3", "watchdog: BUG: soft lockup - CPU#7 stuck for 26s! [python3:20417]"),
    "overheated": (1, "dmesg | tail -n 3", "thermal thermal_zone0: acpitz: critical temperature reached"),
    "gpu-compute-slow": (1, "cat /etc/gb10sim/state.json", '"tflops": 36.0'),
    "rdma-port-errors": (1, "cat /sys/class/infiniband/rocep1s0f0/ports/1/counters/symbol_error", "12"),
    "reboot-pending": (1, "cat /var/run/reboot-required", "System restart required"),
    "driver-unheld": (1, "dpkg-query -W -f='${Package} ${Status}\\n' 'nvidia-driver-*'", "nvidia-driver-580-open install ok installed"),
    "default-route-qsfp": (1, "ip route show default", "dev enp1s0f0np0"),
    "netplan-missing-link": (0, "grep -c enP2p1s0f0np0 /etc/netplan/40-cx7.yaml", "0"),
    "nccl-absent": (0, "command -v mpirun all_gather_perf || echo none", "none"),
    "nccl-hca-own-rank": (1, "grep NCCL_IB_HCA /home/lenovo/vllm/compose.yml", "NCCL_IB_HCA: =rocep1s0f1"),
    "nccl-hca-crossed": (1, "grep NCCL_IB_HCA /home/lenovo/vllm/compose.yml", "NCCL_IB_HCA: =roceP2p1s0f0,rocep1s0f0"),
    "nccl-slow": (1, "cat /etc/gb10sim/state.json", '"nccl_small_latency_us": 80.0'),
    "compose-differs": (1, "grep NCCL_DEBUG /home/lenovo/vllm/compose.yml", "NCCL_DEBUG: INFO"),
    "env-dup-rank": (1, "cat /home/lenovo/vllm/.env", "NODE_RANK=0"),
    "no-headless": (1, "grep -c 'args+=(--headless)' /home/lenovo/vllm/compose.yml", "0"),
    "cudagraph-hyphen": (0, "grep -o -- '-cc.cudagraph-mode' /home/lenovo/vllm/compose.yml", "-cc.cudagraph-mode"),
    "no-memory-limit": (0, "grep -c 'memory: 105G' /home/lenovo/vllm/compose.yml", "0"),
    "bf16-checkpoint": (1, "ls /home/lenovo/vllm/huggingface/hub/; "
                           "cat /home/lenovo/vllm/huggingface/hub/models--Qwen--Qwen3.8-Flash-Next/snapshots/*/model.safetensors.index.json",
                        '"total_size": 360004158750'),
    "hf-cache-600": (1, "find /home/lenovo/vllm/huggingface -perm 600", "/blobs/"),
    "hf-cache-incomplete": (1, "ls /home/lenovo/vllm/huggingface/hub/*/snapshots/*/ | grep -c safetensors$", "2"),
    "hf-cache-dereferenced": (1, "find /home/lenovo/vllm/huggingface/hub/*/snapshots -type f", "config.json"),
    "low-memavailable": (1, "grep MemAvailable /proc/meminfo", "MemAvailable:"),
    "docker-group-missing": (1, "id -nG lenovo | grep -qw docker || echo not-in-docker-group", "not-in-docker-group"),
    "compose-v1-only": (1, "docker compose version || echo no-compose-v2", "no-compose-v2"),
    "image-layers-differ": (1, "docker history -q gb10sim/vllm-cpu:local | wc -l", "2"),
    "shard-truncated": (1, "f=$(ls /home/lenovo/vllm/huggingface/hub/*/snapshots/*/model-00001-of-00003.safetensors); "
                           "[ $(stat -L -c %s $f) -lt 60000000 ] && echo cut-short", "cut-short"),
    "image-missing": (1, "docker images -q gb10sim/vllm-cpu:local | wc -l", "0"),
    "gpu-not-in-container": (1, "docker run --rm --gpus all gb10sim/vllm-cpu:local true", 'could not select device driver ""'),
    "stale-container": (0, "docker ps --format '{{.Names}} {{.State}}'", "gb10-vllm running"),
    "cdi-spec-stale": (1, "grep -c 'hostPath: .*libcuda.so.580.126.09' /etc/cdi/nvidia.yaml", "1"),
    "nccl-2.30.4-nvls": (0, "docker image inspect --format '{{json .Config.Env}}' gb10sim/vllm-cpu:local | grep -o cuda-torch/bin && "
                            f"ls {scenarios.CUDA_TORCH_BIN}/../lib/python3*/site-packages | grep nvidia_nccl",
                         "cuda-torch/bin\nnvidia_nccl_cu13-2.30.4.dist-info"),
    "toolkit-1.19.1": (0, "nvidia-ctk --version", "NVIDIA Container Toolkit CLI version 1.19.1"),
    "toolkit-mode-differs": (1, "grep ^mode /etc/nvidia-container-runtime/config.toml", 'mode = "cdi"'),
    "ngc-entrypoint-overridden": (1, "docker image inspect --format '{{json .Config.Entrypoint}}' gb10sim/vllm-cpu:local",
                                  '["/opt/nvidia/nvidia_entrypoint.sh"]'),
    "image-tag-unpinned": (1, "docker image inspect --format '{{json .RepoDigests}}' gb10sim/vllm-cpu:local",
                           "gb10sim/vllm-cpu@sha256:5eb5a1c0"),
    "page-cache": (0, "free -g | awk '/Mem:/ {print \"cache\", $6}'", "cache 4"),
    "orphaned-engine-core": (1, "pgrep -a -f '^VLLM::EngineCore'", "VLLM::EngineCore"),
    "memory-held-no-process": (1, "grep MemAvailable /proc/meminfo", "MemAvailable:"),
    "nccl-conf-host-conflict": (1, "cat /etc/nccl.conf", "NCCL_SOCKET_IFNAME=eth0"),
    "nccl-conf-image-silent": (1, "docker run --rm --network host -v /usr:/usr:ro --entrypoint cat gb10sim/vllm-cpu:local /root/.nccl.conf", "NCCL_PROTO=Simple"),
    "nccl-net-plugin-image": (1, "docker run --rm --network host -v /usr:/usr:ro --entrypoint sh gb10sim/vllm-cpu:local -c 'ls $LD_LIBRARY_PATH'",
                              "libnccl-net.so"),
}



def test_every_scenario_has_a_visibility_check():
    # Serving scenarios restart the head's real vLLM another way: test_serving_on_sim shows each through the API.
    serving = {s.name for s in scenarios.SCENARIOS.values() if any(step.serve is not None for step in s.steps)}
    # Ray scenarios apply to a Ray pair only: test_ray_on_sim shows each through the checks it fails.
    ray = {s.name for s in scenarios.SCENARIOS.values() if s.executor == "ray"}
    # A ring's or a switch's scenarios move cables: test_cabling_on_sim shows each through the cabling check.
    cabling = {s.name for s in scenarios.SCENARIOS.values() if s.topology != "pair"}
    assert set(VISIBLE) == set(scenarios.SCENARIOS) - serving - ray - cabling


# Judged from their recordings (test_scenarios_replayed.py): the rest run live here.
LIVE = [n for n in EXPECTED if not recordings.replayed(n)]


@pytest.mark.parametrize("name", LIVE)
def test_scenario_fails_exactly_its_checks(bed, name):
    judge_exactly(name, outcomes_under(name))


# Scenarios of EXPECTED that also warn: (check, text of its warning), asserted by judge_exactly.
ALSO_WARNS = {
    "nccl-conf-image-silent": [(f"{PF}/test_nccl_config.py::test_nccl_config[{B}]",
                                f"Degraded: [nccl-conf-silent] {B}:image gb10sim/vllm-cpu:local /root/.nccl.conf: saw "
                                "NCCL_PROTO=Simple set only in /root/.nccl.conf (image gb10sim/vllm-cpu:local): the rank gets "
                                "it; the compose environment does not show it")],
    "nccl-net-plugin-image": [(f"{PF}/test_nccl_config.py::test_nccl_config[{B}]",
                               f"Degraded: [nccl-net-plugin] {B}:image gb10sim/vllm-cpu:local: saw NCCL loads the external "
                               "net plugin /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so (NCCL_NET_PLUGIN unset: "
                               "libnccl-net.so found through LD_LIBRARY_PATH) ahead of its own IB transport")],
}


def judge_exactly(name: str, run) -> None:
    """The scenario failed exactly its EXPECTED checks with their messages, nothing could not look, and it showed every
    code it declares (a failure, or a warning in the run's summary)."""
    judge_scenario(name, EXPECTED[name], run.results, set(re.findall(r"Degraded: \[([a-z0-9-]+)\]", run.stdout)))
    for test_id, text in ALSO_WARNS.get(name, []):
        assert run.results[test_id].outcome == "passed" and text in run.stdout, (test_id, run.results[test_id],
                                                                                 run.stdout[-3000:])


def test_different_usernames_fails_that_node_and_only_it(bed):
    results = outcomes_under("different-usernames").results
    for test_id, outcome in results.items():
        if outcome.outcome == "failed":  # every failure is that node's, and says why
            assert re.search(rf"\[ssh-key-refused\] {B}: saw node {B} at {re.escape(mgmt_ip(1))}: login as 'lenovo' with "
                             rf"\S+ refused \(Authentication failed\)|\[ssh-mesh\] {A}->{B}: .*Permission denied|"
                             rf"\[nccl-run\] .*ORTE was unable",
                             outcome.message), outcome.message
        if re.search(rf"\[{B}[\]:]", test_id) and "test_ssh_user" not in test_id:  # its other checks could not look
            if outcome.outcome == "skipped" and "unreachable" not in outcome.message:
                continue  # skipped before looking at any node (the profile asks nothing of it, e.g. no driver_version)
            assert outcome.outcome == "not checked", (test_id, outcome)
            assert re.match(rf"\[ssh-key-refused\] {B}: could not check: node {B} at {re.escape(mgmt_ip(1))}: login as "
                            rf"'lenovo' with \S+ refused \(Authentication failed\)", outcome.message), outcome.message
        if B not in test_id and "test_nccl" not in test_id:  # no check that does not touch it (NCCL runs on all nodes)
            if "test_cabling" in test_id and outcome.outcome == "not checked":  # who answered: every node's addresses
                assert outcome.message.startswith(f"[ssh-key-refused] {B}: could not check: "), (test_id, outcome.message)
                continue
            assert outcome.outcome in ("passed", "skipped"), (test_id, outcome.message)
    assert results[f"{PF}/test_identity.py::test_ssh_user[{B}]"].outcome == "failed"  # its one failure
    user = results[f"{PF}/test_identity.py::test_ssh_user[{B}]"].message
    assert re.search(rf"fix: {B} refused lenovo with the runner's key \(\S+\): the account lenovo must exist on {B} "
                     r"\(NVIDIA's cluster scripts need the same user name on every node\)", user), user


# Node B cannot be reached, each way on the pair's real sshd: (its code, what test_ssh_user saw, a piece of its fix).
UNREACHABLE = {
    "ssh-blocked": ("ssh-timeout", lambda ip: rf"node {B} unreachable at {re.escape(ip)}: no answer within 5 s \(connect timed out\)",
                    lambda ip: rf"fix: nothing came back from {re.escape(ip)}:22 within ssh\.connect_timeout_s: a firewall on {B}"),
    "host-key-changed": ("host-key-changed",
                         lambda ip: rf"node {B} at {re.escape(ip)}: host key CHANGED: \S+known_hosts holds ssh-ed25519 SHA256:\S+ "
                                    rf"for {re.escape(ip)}, the node offers ssh-ed25519 SHA256:\S+",
                         lambda ip: rf"fix: {B} offers another host key than \S+known_hosts holds for {re.escape(ip)}: "
                                    rf"verify it first .* remove the old key \(ssh-keygen -f \S+known_hosts -R '{re.escape(ip)}'\)"
                                    r".* Never turn host key checking off"),
}


@pytest.mark.parametrize("name", list(UNREACHABLE))
def test_a_node_that_cannot_be_reached_fails_once_with_its_own_fix(bed, name):
    code, seen, fix = UNREACHABLE[name]
    ip = mgmt_ip(1)
    results = outcomes_under(name).results
    user = f"{PF}/test_identity.py::test_ssh_user[{B}]"
    failed = {k: v.message for k, v in results.items() if v.outcome in ("failed", "error")}
    assert user in failed, sorted(failed)
    assert re.search(rf"\[{code}\] {B}: saw {seen(ip)}; expected an SSH session as lenovo\n  {fix(ip)}", failed[user], re.S), failed[user]
    for test_id, message in failed.items():  # its one failure, and the mesh into it when its key changed
        assert test_id == user or (code == "host-key-changed" and re.search(rf"test_ssh_mesh\[{A}:\S+->{B}:", test_id)
                                   and "Host key verification failed" in message), (test_id, message)
    for test_id, outcome in results.items():
        if f"[{B}" in test_id and test_id != user and outcome.outcome != "skipped":  # B's own checks could not look
            assert outcome.outcome == "not checked", (test_id, outcome)
            assert outcome.message.startswith(f"[{code}] {B}: could not check: "), (test_id, outcome.message)
        elif B in test_id and outcome.outcome == "not checked":  # a check from A that needs B (its listener)
            assert outcome.message.startswith(f"[{code}] {B}: could not check: "), (test_id, outcome.message)
        elif "test_cabling" in test_id and outcome.outcome == "not checked":  # who answered: every node's addresses
            assert outcome.message.startswith(f"[{code}] {B}: could not check: "), (test_id, outcome.message)
        elif B not in test_id and "test_nccl" not in test_id:
            assert outcome.outcome in ("passed", "skipped"), (test_id, outcome.message)


def test_sudo_asking_for_a_password_is_not_checked_and_its_line_fixes_it(bed):
    run = outcomes_under("sudo-password")
    assert not [k for k, v in run.results.items() if v.outcome in ("failed", "error")], run.stdout[-3000:]
    unchecked = {k: v.message for k, v in run.results.items() if v.outcome == "not checked"}
    assert unchecked and all(f"[{B}" in k for k in unchecked), sorted(unchecked)
    for test_id, message in unchecked.items():
        assert re.match(rf"\[sudo-refused\] {B}: could not check: sudo -n asked for a password to run `", message), message
    line = re.search(rf"check by hand: let lenovo run sudo without a password on {B}: sudo visudo -f (/etc/sudoers\.d/zz-gb10check) "
                     r"and write the line `([^`]+)`", next(iter(unchecked.values())))
    assert line and line[2] == "lenovo ALL=(ALL) NOPASSWD: ALL", unchecked
    # The line, written where the fix says (after the drop-in that asks for the password): the same checks now look, and pass.
    control.node_exec(control.nodes()[1], f"cat > {line[1]} && chmod 440 {line[1]} && visudo -cf {line[1]}", input=line[2] + "\n")
    names = sorted({k.split("::")[1].split("[")[0] for k in unchecked})
    again = run_suite(control.state_dir() / "cluster.yaml", "-m", "preflight or network", "-k", " or ".join(names))
    assert all(again.results[k].outcome == "passed" for k in unchecked), {k: again.results[k] for k in unchecked}


def judge_link_speed_warning(run) -> None:
    assert run.results[f"{NW}/test_links.py::test_link_speed[{B}:{L0}]"].outcome == "passed"
    assert f"Degraded: [link-speed] {B}:{L0}: saw 100000 Mb/s; expected 200000 Mb/s" in run.stdout
    assert f"fix: check the QSFP cable (200G rated) and, behind a switch, the switch port speed setting for {B} {L0}" in run.stdout


def judge_page_cache_warning(run) -> None:
    assert run.results[f"{PF}/test_model.py::test_memory_available[{A}]"].outcome == "passed"
    assert f"Degraded: [page-cache] {A}: saw page cache 4" in run.stdout
    assert "fix: drop the page cache on thinkstationpgx-30 before loading" in run.stdout


def test_nccl_absent_is_not_checked_with_the_tools_to_install(bed):
    # The NCCL check is a slow one: run it, and none of the other slow ones (nothing of theirs changed)
    run = outcomes_under("nccl-absent", with_slow({"test_nccl_all_gather"}))
    outcome = run.results[NCCL]
    assert outcome.outcome == "not checked"  # never a pass: the gate wants it measured, or waived in the cluster file
    assert f"[tool-missing] {A}: could not check: `mpirun` and `all_gather_perf` not on PATH" in outcome.message
    assert "install MPI (openmpi-bin) and NVIDIA's nccl-tests built with MPI=1 on" in outcome.message
    assert not [k for k, v in run.results.items() if v.outcome == "failed"]


def test_every_scenario_is_proven():
    serving = {s.name for s in scenarios.SCENARIOS.values() if any(step.serve is not None for step in s.steps)}
    ray = {s.name for s in scenarios.SCENARIOS.values() if s.executor == "ray"}  # on the Ray stack: test_ray_on_sim
    cabling = {s.name for s in scenarios.SCENARIOS.values() if s.topology != "pair"}  # test_cabling_on_sim
    assert set(EXPECTED) | set(WARNINGS) | {"different-usernames", "nccl-absent", "sudo-password"} | set(UNREACHABLE) | serving | ray | cabling \
        == set(scenarios.SCENARIOS)  # serving: test_serving_on_sim


def test_slow_checks_are_the_slow_marked_ones():
    """SLOW above names exactly the checks marked slow, so selection_for() skips nothing a scenario proves."""
    import ast
    from pathlib import Path

    marked = set()
    for path in (Path(__file__).resolve().parent.parent / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text())
        module_slow = "mark.slow" in path.read_text().split("def ", 1)[0]
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                if module_slow or any("slow" in ast.unparse(d) for d in node.decorator_list):
                    marked.add(node.name)
    assert marked == SLOW


WARNINGS = {  # scenario -> (check that must pass, the warning it prints)
    "ngc-entrypoint-overridden": [(f"{PF}/test_compose.py::test_compose_image[{n}]",
                                   f"Degraded: [compose-entrypoint] {n}:vllm: saw entrypoint: /bin/bash -lc replaces the image's "
                                   "/opt/nvidia/nvidia_entrypoint.sh (its CUDA forward-compatibility set-up is skipped: "
                                   "cudaErrorUnsupportedPtxVersion") for n in (A, B)],
    "image-tag-unpinned": [(f"{PF}/test_compose.py::test_compose_image[{n}]",
                            f"Degraded: [compose-image-unpinned] {n}:vllm: saw image: gb10sim/vllm-cpu:local, a tag (now "
                            f"sha256:{'5eb5a1c0' * 8}, id sha256:") for n in (A, B)],
    "roce-mtu-stuck": [(f"{NW}/test_netpath.py::test_roce_mtu[{B}:{L0}]",
                        f"Degraded: [roce-mtu] {B}:rocep1s0f0: saw RoCE active_mtu 1024 with enp1s0f0np0 MTU 9000; "
                        "expected active_mtu 4096")],
    "bios-before-april-2026": [(f"{PF}/test_platform.py::test_advisories[{n}]",
                                f"Degraded: [known-bad-version] {n}: saw BIOS 5.36_0ACUM009 dated 01/20/2026 [bios-cx7-gen5-x2:")
                               for n in (A, B)],
    "compose-cache-not-mounted": [(f"{PF}/test_compose.py::test_compose_caches[{n}]",
                                   f"Degraded: [compose-cache-not-mounted] {n}:vllm: saw no host mount holds the Triton cache "
                                   "/root/.triton/cache (compiled again at every start)") for n in (A, B)],
    "rdma-port-errors": [(f"{NW}/test_rdma_counters.py::test_rdma_error_counters[{B}]",
                          f"Degraded: [rdma-error-counters] {B}:rocep1s0f0: saw port 1: link_downed 1, symbol_error 12; "
                          "expected 0 link_downed, symbol_error and port_rcv_errors since boot")],
    # the throttle is a ceiling: beside the other worker's load the read can come in under 10 MB/s, never over it
    "disk-slow": [(f"{PF}/test_disk.py::test_shard_read_rate[{B}]", f"Degraded: [disk-slow] {B}: saw 109 MB/s "
                   f"reading a shard (direct I/O), 2.8x slower than {A} (309 MB/s)")],
    "disk-low": [(f"{PF}/test_disk.py::test_disk_space[{B}]", f"Degraded: [disk-low] {B}: saw 0."),
                 (f"{PF}/test_disk.py::test_disk_space[{B}]", " GiB free on /home/lenovo/vllm/huggingface (the Hugging Face cache)")],
    "gpu-xid": [(f"{PF}/test_platform.py::test_kernel_log[{B}]", f"Degraded: [kernel-log] {B}: saw 1 GPU Xid error line(s) in the "
                 "kernel log since boot (dmesg): [ 4021.118204] NVRM: Xid (PCI:000f:01:00): 31, pid=20417"),
                (f"{PF}/test_platform.py::test_kernel_log[{B}]", f"Degraded: [kernel-log] {B}: saw 1 NV_ERR_NO_MEMORY line(s)")],
    "reboot-pending": [(f"{PF}/test_platform.py::test_reboot_required[{B}]",
                        f"Degraded: [reboot-required] {B}: saw /var/run/reboot-required (for linux-image-6.17.0-1014-nvidia, "
                        "nvidia-dkms-580-open); expected no reboot pending")],
    "driver-unheld": [(f"{PF}/test_platform.py::test_driver_packages_held[{B}]",
                       f"Degraded: [driver-not-held] {B}: saw nvidia-driver-580-open neither held nor in unattended-upgrades' "
                       "Package-Blacklist"), (f"{PF}/test_platform.py::test_driver_packages_held[{B}]",
                                              f"fix: scripts/hold-driver --node {B}"),
                      (f"{PF}/test_platform.py::test_driver_packages_held[{B}]", "sudo apt-mark hold nvidia-driver-580-open")],
}


def judge_warnings(name: str, run) -> None:
    """Degraded but usable: nothing failed, each declared warning was printed, with its text, on a passing check."""
    bad = {k: v.outcome for k, v in run.results.items() if v.outcome in ("failed", "error", "not checked")}
    assert bad == {}, bad  # degraded but usable: nothing fails
    warned = set(re.findall(r"Degraded: \[([a-z0-9-]+)\]", run.stdout))
    said = "\n".join(line for line in run.stdout.splitlines() if "Degraded: [" in line)
    shown = {test_id: run.results[test_id] for test_id, _ in WARNINGS[name]}
    assert {p.split(":")[1] for p in scenarios.SCENARIOS[name].proves} <= warned, f"{warned}\n{said}\n{shown}"
    for test_id, text in WARNINGS[name]:
        assert run.results[test_id].outcome == "passed", (test_id, run.results[test_id])
        found = text.search(run.stdout) if isinstance(text, re.Pattern) else text in run.stdout
        assert found, f"{name}: {getattr(text, 'pattern', text)!r} not in the run's warnings:\n{said}"


def test_hold_driver_script_clears_the_driver_unheld_warning(bed):
    """The check's mechanical fix, as a helper: scripts/hold-driver shows the change (--check exits 1), holds the package
    for real (apt-mark in the node), finds nothing more to do, and the warning is gone."""
    path = control.up(2, quiet=True)
    scenarios.apply("driver-unheld")

    def hold(*args):
        return step("hold-driver", path, *args, timeout=300)

    check = hold("--check")
    said = check.stdout + check.stderr  # rich's console: stderr
    assert check.returncode == 1 and "sudo apt-mark hold nvidia-driver-580-open" in said, said
    assert "nvidia-driver-580-open" not in control.node_exec(B, "apt-mark showhold").stdout.split(), "--check changed nothing"
    done = hold("--override", "self-test: the driver-unheld scenario, no stage run")  # a changing step asks the gate
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nvidia-driver-580-open" in control.node_exec(B, "apt-mark showhold").stdout.split()
    assert hold("--check").returncode == 0, "a second run finds nothing to change"
    run = run_suite(path, "-m", "preflight", "-k", "test_driver_packages_held")
    assert {v.outcome for v in run.results.values()} == {"passed"} and "driver-not-held" not in run.stdout, run.stdout[-2000:]


def test_nm_release_script_releases_a_real_networkmanager_profile(bed):
    """The check's mechanical fix, as a helper, on a real NetworkManager: scripts/nm-release-qsfp shows the change (--check
    exits 1 and changes nothing), turns the DHCP profile's autoconnect off through nmcli in the node, then finds nothing
    more to do, and test_no_dhcp_on_qsfp passes; rank 0's static profile is left alone."""
    path = control.up(2, quiet=True)
    scenarios.apply("nm-dhcp-on-qsfp")

    def release(*args):
        return step("nm-release-qsfp", path, *args, timeout=300)

    def autoconnect(node, name):
        return control.node_exec(node, f"nmcli -g connection.autoconnect connection show '{name}'").stdout.strip()

    check = release("--check")
    said = check.stdout + check.stderr
    assert check.returncode == 1 and f"would change {B}: NetworkManager profile 'Wired connection 2'" in said, said
    assert f"would change {A}" not in said, said
    assert autoconnect(B, "Wired connection 2") == "yes", "--check changed nothing"
    done = release("--override", "self-test: the nm-dhcp-on-qsfp scenario, no stage run")  # a changing step asks the gate
    assert done.returncode == 0, done.stdout + done.stderr
    assert autoconnect(B, "Wired connection 2") == "no" and autoconnect(A, "cx7-port0") == "yes"
    assert release("--check").returncode == 0, "a second run finds nothing to change"
    run = run_suite(path, "-m", "network", "-k", "test_no_dhcp_on_qsfp")
    assert {v.outcome for v in run.results.values()} == {"passed"}, run.stdout[-2000:]
