"""Parsers: text in, typed facts out, no I/O. One module per tool; this registry names them all.

`gb10check parse KIND FILE` and the self-tests both walk KINDS, so a parser added here is
reachable from the command line and must have captures that exercise it.
"""

import dataclasses
from typing import Any, Callable, NamedTuple

from . import apt, collectives, dd, df, docker, ethtool, ibdev2netdev, ip, kmsg, lspci, meminfo, nccl, nccl_conf, nmcli, nvidia, nvidia_ctk, perftest, procfs, ray, rdma, ss, ufw, vllm_api, vllm_log
from ._text import ParseError


class Kind(NamedTuple):
    parse: Callable[[str], Any]
    what: str


KINDS: dict[str, Kind] = {
    "ibdev2netdev": Kind(ibdev2netdev.parse, "ibdev2netdev [-v]"),
    "rdma_link": Kind(rdma.parse_rdma_link, "rdma link"),
    "show_gids": Kind(rdma.parse_show_gids, "show_gids"),
    "ib_sysfs": Kind(rdma.parse_sysfs, "grep -H . /sys/class/infiniband/*/ports/*/... (state, rate, GIDs, GID types)"),
    "ibv_devinfo": Kind(rdma.parse_ibv_devinfo, "ibv_devinfo"),
    "ibstat": Kind(rdma.parse_ibstat, "ibstat"),
    "perftest": Kind(perftest.parse, "ib_write_bw / ib_read_bw / ib_send_bw / ib_*_lat client or server output"),
    "nccl_tests": Kind(nccl.parse, "nccl-tests *_perf output"),
    "nccl_conf_probe": Kind(nccl_conf.parse_probe, "the NCCL configuration probe (gather.NCCL_CONF_IMAGE / NCCL_CONF_HOST)"),
    "nccl_net_plugin": Kind(nccl_conf.parse_net_plugin, "an NCCL_DEBUG=INFO log's net plugin lines"),
    "nccl_collectives": Kind(collectives.parse, "one rank of gb10check's collectives canary (gb10check/canary/collectives.py), "
                                                "NCCL_DEBUG=INFO lines included"),
    "ufw_status": Kind(ufw.parse_status, "ufw status [verbose|numbered]"),
    "ufw_user_rules": Kind(ufw.parse_user_rules, "/etc/ufw/user.rules"),
    "nvidia_smi": Kind(nvidia.parse_smi, "nvidia-smi (default table)"),
    "nvidia_smi_query": Kind(nvidia.parse_query, "nvidia-smi --query-gpu=... --format=csv[,noheader]"),
    "nvidia_compute_apps": Kind(nvidia.parse_compute_apps, "nvidia-smi --query-compute-apps=pid,process_name,used_memory "
                                                           "--format=csv, then `-- ps --` and CONTAINER PID PPID ETIMES ARGS"),
    "nvml_mismatch": Kind(nvidia.parse_nvml_mismatch, "nvidia-smi failing with 'Driver/library version mismatch'"),
    "proc_driver_nvidia_version": Kind(nvidia.parse_proc_version, "/proc/driver/nvidia/version"),
    "nvidia_ctk_version": Kind(nvidia_ctk.parse_version, "nvidia-ctk --version"),
    "cdi_spec": Kind(nvidia_ctk.parse_cdi_specs, "the CDI specs, each after a `-- PATH --` line (/etc/cdi/nvidia.yaml, "
                                                 "/var/run/cdi/nvidia.yaml; gather.CDI_SPECS)"),
    "nvidia_runtime_config": Kind(nvidia_ctk.parse_runtime_config, "/etc/nvidia-container-runtime/config.toml and "
                                                                   "/etc/docker/daemon.json, each after a `-- PATH --` line"),
    "ip_addr": Kind(ip.parse_text, "ip addr [show IFACE]"),
    "ip_j_addr": Kind(ip.parse_json, "ip -j addr"),
    "port_peers": Kind(ip.parse_port_peers, "disable_ipv6 line, then ping -6 -n -c 2 -i 1 -w 2 -I PORT ff02::1 2>&1"),
    "ethtool": Kind(ethtool.parse, "ethtool IFACE"),
    "meminfo": Kind(meminfo.parse_meminfo, "/proc/meminfo"),
    "free": Kind(meminfo.parse_free, "free [-b|-k|-m|-g|-h]"),
    "vllm_log": Kind(vllm_log.parse, "vLLM server log (docker logs)"),
    "vllm_models": Kind(vllm_api.parse_models, "GET /v1/models body"),
    "vllm_chat": Kind(vllm_api.parse_chat, "POST /v1/chat/completions body"),
    "vllm_sse": Kind(vllm_api.parse_sse, "POST /v1/chat/completions stream=true (SSE)"),
    "vllm_error": Kind(vllm_api.parse_error, "vLLM / FastAPI error body"),
    "vllm_metrics_info": Kind(vllm_api.parse_metrics_info, "GET /metrics (Prometheus text): the vllm:*_info gauges"),
    "docker_inspect": Kind(docker.parse_container, "docker inspect CONTAINER"),
    "docker_health": Kind(docker.parse_health, "docker inspect --format '{{json .State.Health}}'"),
    "docker_image_inspect": Kind(docker.parse_image, "docker image inspect IMAGE"),
    "compose_ps": Kind(docker.parse_compose_ps, "docker compose ps"),
    "compose_config": Kind(docker.parse_compose_config, "docker compose config"),
    "dpkg_query": Kind(apt.parse_dpkg_query, "dpkg-query -W -f='${Package} ${Status}\\n' PATTERN..."),
    "unattended_upgrades": Kind(apt.parse_unattended_upgrades, "/etc/apt/apt.conf.d/50unattended-upgrades"),
    "kernel_log": Kind(kmsg.parse, "journalctl -k -b [-o short-monotonic] or dmesg [-T]"),
    "df": Kind(df.parse, "df [-h|-B1] [--output=target,avail] [PATH...]"),
    "dd": Kind(dd.parse, "dd if=FILE of=/dev/null ... (its summary on stderr: N bytes (...) copied, S s, R GB/s)"),
    "lspci": Kind(lspci.parse, "lspci -vv [-nn] [-D] [-d 15b3:] [-s BDF] (as root: the capability blocks)"),
    "nmcli_profiles": Kind(nmcli.parse, "nmcli -t -f connection.id,connection.type,connection.interface-name,"
                                        "connection.autoconnect,ipv4.method connection show UUID, per profile (gather.NM_PROFILES)"),
    "ray_version": Kind(ray.parse_version, "ray --version, then python3 -c 'import ray; print(\"ray.__version__=\" + ray.__version__)'"),
    "ray_status": Kind(ray.parse_status, "ray status [-v]"),
    "ss": Kind(ss.parse, "ss -tanp[H] (iproute2; -p as root names each socket's processes)"),
    "ray_nodes": Kind(ray.parse_nodes, "ray.nodes() as JSON (gather.RAY_NODES), or ray list nodes --format json"),
}


def parse(kind: str, text: str) -> Any:
    if kind not in KINDS:
        raise KeyError(f"unknown parse kind {kind!r}; known: {', '.join(sorted(KINDS))}")
    return KINDS[kind].parse(text)


def to_jsonable(facts: Any) -> Any:
    if dataclasses.is_dataclass(facts) and not isinstance(facts, type):
        return {f.name: to_jsonable(getattr(facts, f.name)) for f in dataclasses.fields(facts)}
    if isinstance(facts, (list, tuple)):
        return [to_jsonable(x) for x in facts]
    if isinstance(facts, dict):
        return {str(k): to_jsonable(v) for k, v in facts.items()}
    return facts


__all__ = ["KINDS", "Kind", "ParseError", "parse", "to_jsonable"]
