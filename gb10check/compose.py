"""The multi-node compose stack: render it from the cluster definition, and read one back.

Rendering reproduces the field report's design, and what its later failures taught: one compose file, identical on
every node, that never reaches the Hub (HF_HUB_OFFLINE=1: the model is copied, never downloaded per node) and keeps
the vLLM, flashinfer and Triton compile caches on the host (deploy.compile_cache); a
`.env` per node with NODE_RANK, VLLM_HOST_IP and MODEL_ID; host network and IPC; the RDMA devices;
IPC_LOCK and unlimited memlock; a memory limit so an overrun kills the container, not the machine;
`restart: "no"`; NCCL/Gloo pinned to IPv4 on the control interface with libuv off; and a bash
entrypoint that adds `--headless` on every rank but 0 (a follower without it dies with
"collective_rpc should not be called on follower node" while rank 0 hangs).

With `deploy.executor: ray` the file follows NVIDIA's two-node vLLM playbook and vLLM's
examples/online_serving/run_cluster.sh instead (`render_ray`): one service per node, `gb10-ray`, running
`ray start --block`: rank 0 `--head --node-ip-address=<its QSFP address> --port=6379`, every other rank
`--address=<rank 0's QSFP address>:6379 --node-ip-address=<its own QSFP address>`, every port a node opens to the
others pinned (deploy.ray), the dashboard off unless asked for, `RAY_memory_monitor_refresh_ms=0` (Ray's memory
monitor kills workers while the model loads) and the playbook's interface variables. `vllm serve ...
--distributed-executor-backend ray` runs in rank 0's Ray container, as the playbook runs it (`docker exec` into the
head container): its script is the service's `x-gb10check-serve` field, which `serve_exec_command` wraps for
`docker exec` and the lint dry-runs like the mp command.

Reading back: `interpolate` applies compose's ${VAR} substitution with a node's .env, and
`dry_run_command` builds a shell command that runs the service's command ON THE NODE with a stub
`vllm` first on PATH, to learn the exact arguments each rank would start with (an empty
environment, a temporary folder, at most 5 seconds; the stub prints its arguments and stops).
Nothing read from a node is ever executed on the runner: the runner only builds the command from
parsed data (every word quoted) and reads the JSON line the stub prints (`parse_dry_run`).
"""

import json
import os
import re
import shlex

import yaml

from .cluster import Cluster, Node


CONTAINER_NAME = "gb10-vllm"
# Where vLLM, flashinfer and Triton write their compiled kernels in the container (its HOME is /root), and the
# folder under deploy.compile_cache each is kept in on the host: without them every start compiles again.
CACHE_MOUNTS = (("vllm", "/root/.cache/vllm"), ("flashinfer", "/root/.cache/flashinfer"), ("triton", "/root/.triton"))
RAY_CONTAINER_NAME = "gb10-ray"  # with deploy.executor: ray, the Ray head (rank 0) or worker of each node
SERVE_FIELD = "x-gb10check-serve"  # the Ray service's `vllm serve` script, run in rank 0's container with docker exec
SERVE_PID, SERVE_RC = "/tmp/gb10check-serve.pid", "/tmp/gb10check-serve.rc"  # in rank 0's Ray container


def env_file(cluster: Cluster, node: Node) -> str:
    return (f"MODEL_ID={cluster.deploy.model_id}\nNODE_RANK={node.rank}\nVLLM_HOST_IP={node.links[0].ip}\n"
            f"MASTER_ADDR={cluster.rendezvous_addr(node)}\n")


def serve_args(cluster: Cluster, node_rank: str | None = None) -> list[str]:
    """The `vllm serve MODEL` arguments of the deployment: the one place both the compose file and the
    simulated head's own server (node_rank None: one node, no distributed flags) take them from."""
    d = cluster.deploy
    if node_rank is None:
        args = ["--served-model-name", d.served_model_name, "--tensor-parallel-size", "1"]
    else:
        args = ["--served-model-name", d.served_model_name, "--tensor-parallel-size", str(d.tensor_parallel_size),
                "--nnodes", str(len(cluster.nodes)), "--node-rank", node_rank, "--master-addr", "${MASTER_ADDR}",
                "--master-port", str(d.master_port), "--distributed-executor-backend", "mp",
                "-cc.mode=0", "-cc.cudagraph_mode=FULL_DECODE_ONLY",
                "--gpu-memory-utilization", f"{d.gpu_memory_utilization:.2f}", "--distributed-timeout-seconds", str(d.distributed_timeout_s)]
    args += ["--max-model-len", str(d.max_model_len), "--max-num-seqs", str(d.max_num_seqs), "--enable-prefix-caching"]
    if d.reasoning_parser:
        args += ["--reasoning-parser", d.reasoning_parser]
    if d.tool_call_parser:
        args += ["--enable-auto-tool-choice", "--tool-call-parser", d.tool_call_parser]
    return args + ["--host", "0.0.0.0", "--port", str(d.api_port)] + list(d.extra_args)


def ray_serve_args(cluster: Cluster) -> list[str]:
    """`vllm serve MODEL` on the Ray head: the Ray cluster places one worker per GPU, so no --nnodes, --node-rank,
    --master-addr or --headless (those are the mp executor's)."""
    args = serve_args(cluster, node_rank="0")
    drop = {"--nnodes", "--node-rank", "--master-addr", "--master-port"}
    kept = [a for i, a in enumerate(args) if a not in drop and (i == 0 or args[i - 1] not in drop)]
    i = kept.index("--distributed-executor-backend")
    kept[i + 1] = "ray"
    return kept


def ray_start_args(cluster: Cluster, head: bool, node_ip: str, gcs_host: str = "${MASTER_ADDR}") -> list[str]:
    """`ray start` of one node, as run_cluster.sh builds it (--block: the container lives as long as Ray does), with the
    ports the other nodes connect to pinned (deploy.ray); a worker joins the head's GCS at gcs_host (in the compose
    file each node's MASTER_ADDR from its .env: Cluster.rendezvous_addr)."""
    r = cluster.deploy.ray
    role = (["--head", f"--node-ip-address={node_ip}", f"--port={r.port}"] if head
            else [f"--address={gcs_host}:{r.port}", f"--node-ip-address={node_ip}"])
    if head:
        role += ["--dashboard-host=127.0.0.1", f"--dashboard-port={r.dashboard_port}"] if r.dashboard else ["--include-dashboard=false"]
    gpus = [f"--num-gpus={r.num_gpus}"] if r.num_gpus is not None else []
    return ["start", "--block", *role, *ray_port_args(cluster), *gpus, "--disable-usage-stats"]


def ray_port_args(cluster: Cluster) -> list[str]:
    r = cluster.deploy.ray
    return [f"--node-manager-port={r.node_manager_port}", f"--object-manager-port={r.object_manager_port}",
            f"--runtime-env-agent-port={r.runtime_env_agent_port}", f"--dashboard-agent-grpc-port={r.dashboard_agent_grpc_port}",
            f"--dashboard-agent-listen-port={r.dashboard_agent_listen_port}", f"--metrics-export-port={r.metrics_export_port}",
            f"--min-worker-port={r.min_worker_port}", f"--max-worker-port={r.max_worker_port}"]


def _memory_limit(cluster: Cluster) -> str:
    d = cluster.deploy
    return f"{int(d.container_memory_limit)}G" if d.container_memory_limit == int(d.container_memory_limit) \
        else f"{int(d.container_memory_limit * 1024)}M"


def _service(cluster: Cluster, container_name: str, environment: dict, script: str) -> dict:
    """What every node's container needs, whichever executor: host network and IPC, the HF cache, the RDMA devices,
    IPC_LOCK and memlock, a memory limit, the GPU reservation, restart "no"."""
    d = cluster.deploy
    return {
        "image": d.image, "container_name": container_name, "network_mode": "host", "ipc": "host", "restart": "no",
        "volumes": [f"{d.hf_cache}:/root/.cache/huggingface", *(f"{d.compile_cache}/{name}:{target}" for name, target in CACHE_MOUNTS),
                    "/etc/localtime:/etc/localtime:ro", *d.extra_volumes],
        **({"devices": ["/dev/infiniband:/dev/infiniband"]} if d.map_infiniband else {}),
        "cap_add": ["IPC_LOCK", "SYS_PTRACE"], "security_opt": ["seccomp:unconfined"],
        "ulimits": {**({"memlock": -1} if d.memlock_unlimited else {}), "stack": 67108864},
        "deploy": {"resources": {"limits": {"memory": _memory_limit(cluster)},
                                 "reservations": {"devices": [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]}}},
        "environment": environment,
        "entrypoint": [*d.image_entrypoint, "/bin/bash", "-lc"],
        "command": [script],
    }


def _environment(cluster: Cluster, extra: dict | None = None) -> dict:
    """NCCL and Gloo on the head's first link and HCAs: the same names on every node (one file everywhere; with Ray the
    head's variables also travel to the workers)."""
    d = cluster.deploy
    head = cluster.head
    first = head.links[0].netdev
    hcas = ",".join(l.rdma_device for l in head.links if l.rdma_device)
    return {
        "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "MODEL_ID": "${MODEL_ID}", "NODE_RANK": "${NODE_RANK}", "VLLM_HOST_IP": "${VLLM_HOST_IP}",
        "MASTER_ADDR": "${MASTER_ADDR}", "NCCL_IB_HCA": f"={hcas}", "NCCL_IB_DISABLE": "0",
        "NCCL_IB_GID_INDEX": str(cluster.expect.roce_gid_index), "NCCL_IB_MERGE_NICS": "1", "NCCL_SOCKET_IFNAME": first,
        "NCCL_SOCKET_FAMILY": "AF_INET", "GLOO_SOCKET_IFNAME": first, "GLOO_SOCKET_FAMILY": "AF_INET", "GLOO_USE_LIBUV": "0",
        "TORCH_GLOO_USE_LIBUV": "0", "TP_SOCKET_IFNAME": first, "NCCL_NET_PLUGIN": "none", "NCCL_IB_ROCE_VERSION_NUM": "2",
        "NCCL_CUMEM_ENABLE": "0", "NCCL_DEBUG": "WARN", **_topology_environment(cluster), **(extra or {}),
        **d.extra_environment,
    }


def _topology_environment(cluster: Cluster) -> dict:
    """What the cabling adds (checks/nccl_config.judge_topology_env has the rules and sources): a ring NCCL's subnet-aware
    routing; a ring of four also the Ring algorithm and the patched NCCL's opt-in (the image must carry that NCCL)."""
    if cluster.cabling != "ring":
        return {}
    ring = {"NCCL_IB_SUBNET_AWARE_ROUTING": "1"}
    if len(cluster.nodes) >= 4:
        ring |= {"NCCL_ALGO": "Ring", "NCCL_SWITCHLESS_RING_ONLY": "1"}
    return ring


def _bash_array(name: str, args: list[str]) -> str:
    return f"{name}=(" + " ".join(shlex.quote(a) if "$" not in a else f'"{a}"' for a in args) + ")"


def render(cluster: Cluster) -> str:
    """The compose file (deploy.map_infiniband false leaves /dev/infiniband out: the simulation has none)."""
    if cluster.uses_ray:
        return render_ray(cluster)
    d = cluster.deploy
    args = serve_args(cluster, node_rank="${NODE_RANK}")
    script = "\n".join([
        "set -euo pipefail",
        _bash_array("args", args),
        "# Every rank but 0 runs headless (workers only): a full engine on a follower fails with",
        "# AssertionError: collective_rpc should not be called on follower node",
        'if [ "${NODE_RANK}" != "0" ]; then args+=(--headless); fi',
        'exec vllm serve "${MODEL_ID}" "$${args[@]}"',
    ]) + "\n"
    service = _service(cluster, CONTAINER_NAME, _environment(cluster), script)
    header = (f"# Multi-node TP={d.tensor_parallel_size} for {d.model_id} across {len(cluster.nodes)} GB10 machines.\n"
              "# Rendered by gb10check from the cluster definition. The same file on every node;\n"
              "# NODE_RANK / VLLM_HOST_IP / MODEL_ID come from each node's .env.\n")
    return header + yaml.safe_dump({"services": {"vllm": service}}, sort_keys=False, width=200)


def render_ray(cluster: Cluster) -> str:
    """NVIDIA's two-node playbook as one compose file: a Ray head on rank 0, a Ray worker on every other rank."""
    d = cluster.deploy
    head_ip = cluster.head.links[0].ip
    first = cluster.head.links[0].netdev
    head_args = [a.replace(f"--node-ip-address={head_ip}", "--node-ip-address=${VLLM_HOST_IP}")
                 for a in ray_start_args(cluster, True, head_ip)]
    worker_args = [a.replace("--node-ip-address=X", "--node-ip-address=${VLLM_HOST_IP}")
                   for a in ray_start_args(cluster, False, "X")]
    script = "\n".join([
        "set -euo pipefail",
        "# NVIDIA's two-node vLLM playbook (vLLM's run_cluster.sh): a Ray head on rank 0, a Ray worker on every other rank,",
        "# each at its own QSFP address: a node that registers at its LAN or Wi-Fi address never gets its GPU placed.",
        'if [ "${NODE_RANK}" = "0" ]; then',
        "  " + _bash_array("args", head_args),
        "else",
        "  " + _bash_array("args", worker_args),
        "fi",
        'exec ray "$${args[@]}"',
    ]) + "\n"
    serve = "\n".join([
        "set -euo pipefail",
        "# Run in rank 0's Ray container (docker exec), as the playbook does: Ray places one worker per GPU.",
        _bash_array("args", ray_serve_args(cluster)),
        'exec vllm serve "${MODEL_ID}" "$${args[@]}"',
    ]) + "\n"
    extra = {"UCX_NET_DEVICES": first, "OMPI_MCA_btl_tcp_if_include": first,
             # Ray's memory monitor kills workers while the model loads (OutOfMemoryError: 1 worker(s) were killed ...).
             "RAY_memory_monitor_refresh_ms": "0"}
    service = _service(cluster, RAY_CONTAINER_NAME, _environment(cluster, extra), script)
    service[SERVE_FIELD] = serve
    header = (f"# Multi-node TP={d.tensor_parallel_size} for {d.model_id} across {len(cluster.nodes)} GB10 machines, through Ray.\n"
              "# Rendered by gb10check from the cluster definition (deploy.executor: ray). The same file on every node;\n"
              "# NODE_RANK / VLLM_HOST_IP / MODEL_ID come from each node's .env. Rank 0 runs the Ray head, the others\n"
              f"# Ray workers; `vllm serve` ({SERVE_FIELD}) runs in rank 0's container: gb10check deploy starts it.\n")
    return header + yaml.safe_dump({"services": {"ray": service}}, sort_keys=False, width=200)


def serve_script(service: dict) -> str | None:
    """The Ray service's `vllm serve` script (x-gb10check-serve), None when the service has none."""
    script = service.get(SERVE_FIELD)
    return script if isinstance(script, str) and script.strip() else None


def serve_service(service: dict) -> dict | None:
    """The service as it runs `vllm serve`: the Ray service with its serve script as the command (what `docker exec`
    runs in rank 0's container), for the dry run; None when it has no serve script."""
    script = serve_script(service)
    return None if script is None else {**service, "entrypoint": ["/bin/bash", "-lc"], "command": [script]}


def serve_exec_command(cluster: Cluster) -> str:
    """What the deploy runs on rank 0 to start vLLM in the Ray head's container: detached, its output written to the
    container's own stdout and stderr, so `docker logs gb10-ray` shows vLLM's milestones as with mp."""
    config = yaml.safe_load(render_ray(cluster))
    # Compose's $$ is a literal $; ${MODEL_ID} is left to the container's shell (its environment has it).
    script = config["services"]["ray"][SERVE_FIELD].replace("$$", "$")
    # Its pid (what `scripts/down` stops first) and its exit status (what the deploy's watcher reads: the container
    # outlives vLLM, Ray keeps it up) are left in the container's /tmp.
    inner = (f"/bin/bash -c {shlex.quote(script.rstrip())} >/proc/1/fd/1 2>/proc/1/fd/2 & echo $! > {SERVE_PID}; wait $!; "
             f"echo $? > {SERVE_RC}")
    return f"docker exec -d {RAY_CONTAINER_NAME} /bin/bash -c {shlex.quote(inner)}"


# ---- reading back ----------------------------------------------------------------------


def parse_env(text: str) -> dict[str, str]:
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.removeprefix("export ").strip()] = value
    return env


VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _substitute(m: re.Match, env: dict[str, str]) -> str:
    if m.group(0) == "$$":
        return "$"
    name, op, default = m[1] or m[4], m[2], m[3] or ""
    if op == ":-":  # unset or empty
        return env.get(name) or default
    if op == "-":  # unset only
        return env[name] if name in env else default
    return env.get(name, "")


def interpolate(value, env: dict[str, str]):
    """Compose's substitution: ${VAR}, ${VAR:-default}, $VAR, and $$ for a literal $."""
    if isinstance(value, str):
        return VAR.sub(lambda m: _substitute(m, env), value)
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


def vllm_service(config: dict) -> tuple[str, dict] | None:
    services = config.get("services") or {}
    for name, svc in services.items():
        if isinstance(svc, dict) and "vllm" in json.dumps([svc.get("command"), svc.get("entrypoint"), svc.get("image"),
                                                            svc.get(SERVE_FIELD)]):
            return name, svc
    return None


STUB = "#!/bin/sh\nexec python3 -c 'import json,sys; print(\"GB10CHECK_ARGS \" + json.dumps(sys.argv[1:]))' \"$@\"\n"
DRY_RUN_MARK = "GB10CHECK_ARGS "
DRY_RUN_TIMEOUT_S = 5
DRY_RUN_CANNOT_RUN = (124, 126, 127)  # timeout(1) fired, or the shell/interpreter is missing: no verdict on the file


def dry_run_command(service: dict, timeout_s: int = DRY_RUN_TIMEOUT_S, program: str = "vllm") -> str | None:
    """A command to run on the node: the service's command (interpolated already) with a stub `vllm` (or `ray`, for the
    Ray service's `ray start`) first on PATH.

    None if the service has no command. Every word is quoted; the environment is the service's own, nothing else."""
    def as_list(v):
        return [] if v is None else shlex.split(v) if isinstance(v, str) else [str(x) for x in v]

    argv = as_list(service.get("entrypoint")) + as_list(service.get("command"))
    if not argv:
        return None
    if os.path.basename(argv[0]) in ("bash", "sh") and len(argv) > 2 and argv[1] in ("-c", "-lc", "-cl"):
        argv = ["bash", "-c", *argv[2:]]  # not a login shell: no profile scripts
    raw_env = service.get("environment")
    if isinstance(raw_env, list):
        raw_env = dict(e.split("=", 1) for e in raw_env if "=" in e)
    env = {k: str(v) for k, v in (raw_env or {}).items() if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k))}
    assignments = " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
    if program not in ("vllm", "ray"):
        raise ValueError(f"no stub for {program!r}")
    return ('d=$(mktemp -d) || exit 126; printf %s ' + shlex.quote(STUB) + f' > "$d/{program}" && chmod +x "$d/{program}" && cd "$d" && '
            f'env -i PATH="$d:/usr/bin:/bin" HOME="$d" {assignments} timeout {int(timeout_s)} '
            + " ".join(shlex.quote(a) for a in argv) + '; rc=$?; rm -rf "$d"; exit $rc')


def parse_dry_run(stdout: str) -> list[str] | None:
    """The arguments the stub `vllm` printed, or None if the command never called it."""
    for line in stdout.splitlines():
        if line.startswith(DRY_RUN_MARK):
            try:
                args = json.loads(line[len(DRY_RUN_MARK):])
            except ValueError:
                return None
            return [str(a) for a in args] if isinstance(args, list) else None
    return None


def from_env_file(env_file: dict[str, str], var: str, value: str | None) -> bool:
    """The value is the one the node's .env sets for var (VLLM_HOST_IP, MASTER_ADDR; the rank has its own rule,
    rank_from_env): a wrong one there is test_env_file's finding, said once, not the compose file's too."""
    return var in env_file and value == env_file[var]


def flag(args: list[str], name: str) -> str | None:
    """The value of --name in either `--name value` or `--name=value` form."""
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None
