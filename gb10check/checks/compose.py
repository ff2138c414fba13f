"""Compose and .env lint, on the files actually on a node, against the cluster and the node's real state."""

import hashlib
import ipaddress
import re
import shlex

from .. import compose
from ..cluster import Cluster, Node, gib
from ..facts.ip import Interface
from ..facts.rdma import IbPort
from ..remedies import Code
from ..verdict import Finding
from . import ray
from .links import roce_gid_indexes

# A flag whose value is the .env's variable of this name: a wrong value there is test_env_file's finding (said once).
FROM_ENV_FILE = {"--master-addr": "MASTER_ADDR"}


def _limit_gib(svc: dict) -> float | None:
    """The container's memory limit. In a compose file a bare number is bytes (and `docker compose config` writes bytes)."""
    raw = (((svc.get("deploy") or {}).get("resources") or {}).get("limits") or {}).get("memory") or svc.get("mem_limit")
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)) or re.fullmatch(r"\s*\d+\s*", str(raw)):
        return float(raw) / 2**30
    try:
        return gib(raw)
    except ValueError:
        return None


def _memlock_unlimited(svc: dict) -> bool:
    memlock = (svc.get("ulimits") or {}).get("memlock")
    if isinstance(memlock, dict):
        return str(memlock.get("soft")) == "-1" and str(memlock.get("hard")) == "-1"
    return str(memlock) == "-1"


def judge_same_as_head(node: str, head: str, path: str, mine: str, heads: str) -> list[Finding]:
    h = lambda t: hashlib.sha256(t.encode()).hexdigest()[:12]  # noqa: E731
    return [] if mine == heads else [Finding(Code.COMPOSE_DIFFERS, node, f"{path} sha256 {h(mine)}",
                                             f"sha256 {h(heads)} as on {head}", head=head)]


def judge_files(node: str, compose_path: str, env_path: str, text: str | None, env: str | None) -> list[Finding]:
    """Both files are there (None: `cat` failed)."""
    missing = compose_path if text is None else env_path if env is None else None
    return [Finding(Code.COMPOSE_MISSING, node, f"no {missing}", "the compose file and .env", path=missing)] if missing else []


def judge(cluster: Cluster, node: Node, config: dict, env: dict[str, str], ifaces: list[Interface], ports: list[IbPort],
          args: list[str] | None, ray_args: list[str] | None = None) -> list[Finding]:
    """config: the compose file as YAML, not yet interpolated; env: the node's .env; args: what the service's command gave
    `vllm` in a dry run on the node (None: it never called vllm). With deploy.executor ray, args are what the service's
    serve script (x-gb10check-serve) gives `vllm`, and ray_args what its command gives `ray` (the Ray design is judged
    instead of --headless)."""
    where = node.name
    found = compose.vllm_service(config)
    if found is None:
        return [Finding(Code.COMPOSE_NO_VLLM, where, "no service running vllm in the compose file", "a vllm service")]
    name, raw = found
    svc = compose.interpolate(raw, env)
    f: list[Finding] = []

    def bad(code, seen, expected, **kw):
        f.append(Finding(code, f"{where}:{name}", seen, expected, node=node.name, **kw))

    for key, want in (("network_mode", "host"), ("ipc", "host")):
        if svc.get(key) != want:
            bad(Code.COMPOSE_SETTING, f"{key}: {svc[key]!r}" if key in svc else f"no {key}", f"{key}: {want}", setting=f"{key}: {want}")
    if str(svc.get("restart", "no")) not in ("no", "False", "false"):
        bad(Code.COMPOSE_SETTING, f"restart: {svc.get('restart')!r}", 'restart: "no"', setting='restart: "no"')
    if cluster.deploy.map_infiniband and not any(str(d).split(":")[0] == "/dev/infiniband" for d in svc.get("devices") or []):
        bad(Code.COMPOSE_SETTING, "no /dev/infiniband in devices", "/dev/infiniband:/dev/infiniband",
            setting="devices: [/dev/infiniband:/dev/infiniband]")
    if "IPC_LOCK" not in (svc.get("cap_add") or []):
        bad(Code.COMPOSE_SETTING, "IPC_LOCK not in cap_add", "cap_add: [IPC_LOCK]", setting="cap_add: [IPC_LOCK]")
    if cluster.deploy.memlock_unlimited and not _memlock_unlimited(svc):
        bad(Code.COMPOSE_SETTING, f"ulimits.memlock {(svc.get('ulimits') or {}).get('memlock')!r}", "memlock: -1",
            setting="ulimits: {memlock: -1}")
    limit = _limit_gib(svc)
    budget = cluster.deploy.gpu_memory_utilization * cluster.expect.memory_gib
    if limit is None:
        bad(Code.COMPOSE_NO_MEMORY_LIMIT, "no memory limit", f"a limit between the GPU budget {budget:.0f} GiB and "
            f"{cluster.expect.memory_gib:.0f} GiB")
    elif not budget < limit < cluster.expect.memory_gib:
        bad(Code.COMPOSE_NO_MEMORY_LIMIT, f"memory limit {limit:.0f} GiB", f"between the GPU budget {budget:.0f} GiB and "
            f"{cluster.expect.memory_gib:.0f} GiB")

    environment = svc.get("environment") or {}
    if isinstance(environment, list):
        environment = dict(e.split("=", 1) for e in environment if "=" in e)
    environment = {k: str(v) for k, v in environment.items()}
    f += _judge_env_vars(cluster, node, name, environment, ifaces, ports, env)
    rank_from_env = env.get("NODE_RANK") == str(node.rank)  # a wrong .env rank is test_env_file's finding, not the command's

    if cluster.uses_ray:
        f += ray.judge_memory_monitor(f"{where}:{name}", node.name, environment)
        f += ray.judge_start_args(cluster, node, f"{where}:{name}", ray_args, rank_from_env, env)
        f += ray.judge_serve_args(cluster, node, f"{where}:{name}", args)
        if args is not None and any(a.startswith(("-cc.cudagraph-mode", "--compilation-config.cudagraph-mode")) for a in args):
            bad(Code.COMPOSE_CUDAGRAPH_HYPHEN, "-cc.cudagraph-mode (hyphen)", "-cc.cudagraph_mode (underscore)")
        return f

    if args is None:
        bad(Code.COMPOSE_NO_VLLM, "the command never runs `vllm` (dry run with a stub vllm)", "vllm serve ...")
        return f
    if any(a.startswith("-cc.cudagraph-mode") or a.startswith("--compilation-config.cudagraph-mode") for a in args):
        bad(Code.COMPOSE_CUDAGRAPH_HYPHEN, "-cc.cudagraph-mode (hyphen)", "-cc.cudagraph_mode (underscore)")
    headless = "--headless" in args
    if rank_from_env and node.rank == 0 and headless:
        bad(Code.COMPOSE_HEADLESS, "rank 0 starts with --headless (no API server)", "rank 0 without --headless")
    elif rank_from_env and node.rank != 0 and not headless:
        bad(Code.COMPOSE_HEADLESS, f"rank {node.rank} starts `vllm {' '.join(args[:2])} ...` without --headless",
            "--headless on every rank but 0")
    d = cluster.deploy
    expected = {**({"--node-rank": str(node.rank)} if rank_from_env else {}), "--nnodes": str(len(cluster.nodes)), "--master-addr": cluster.rendezvous_addr(node),
                "--master-port": str(d.master_port), "--tensor-parallel-size": str(d.tensor_parallel_size),
                "--max-model-len": str(d.max_model_len), "--served-model-name": d.served_model_name}
    if node.rank == 0:
        expected["--port"] = str(d.api_port)
    for name_, want in expected.items():
        have = compose.flag(args, name_)
        if name_ in FROM_ENV_FILE and compose.from_env_file(env, FROM_ENV_FILE[name_], have):
            continue
        if have != want:
            bad(Code.COMPOSE_ARG, f"{name_} {have}" if have is not None else f"no {name_}", f"{name_} {want}", arg=name_, value=want)
    timeout = compose.flag(args, "--distributed-timeout-seconds")
    if timeout is None or not timeout.isdigit() or int(timeout) < d.distributed_timeout_s:
        bad(Code.COMPOSE_ARG, f"--distributed-timeout-seconds {timeout}" if timeout is not None else "no --distributed-timeout-seconds",
            f">= {d.distributed_timeout_s} (the load skew between "
            "nodes: seed 341 s vs 831 s)", arg="--distributed-timeout-seconds", value=str(d.distributed_timeout_s))
    return f


def _judge_env_vars(cluster: Cluster, node: Node, service: str, env: dict[str, str], ifaces: list[Interface],
                    ports: list[IbPort], env_file: dict[str, str]) -> list[Finding]:
    where = f"{node.name}:{service}"
    f = []
    own_ips = {l.ip for l in node.links}
    by_name = {i.name: i for i in ifaces}
    # With Ray the playbook's other interface variables travel to the workers too: each, when set, must name it as well.
    extra = [v for v in ("UCX_NET_DEVICES", "TP_SOCKET_IFNAME", "OMPI_MCA_btl_tcp_if_include") if v in env] if cluster.uses_ray else []
    for var in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", *extra):
        ifname = env.get(var)
        iface = by_name.get(ifname or "")
        has_own = iface is not None and any(str(ipaddress.ip_interface(a).ip) in own_ips for a in iface.ipv4)
        if not has_own:
            f.append(Finding(Code.COMPOSE_ENV, where, f"{var}={ifname}" + ("" if iface else " (no such interface)"),
                             f"{var} naming the interface that holds {node.links[0].ip}", var=var, value=node.links[0].netdev))
    hca = env.get("NCCL_IB_HCA", "")
    active = {p.rdma_device for p in ports if p.port_state == "ACTIVE"}
    names = [h.split(":")[0] for h in hca.lstrip("=^").split(",") if h]
    exact = hca.startswith("=")
    for name in names:
        matches = {name} & active if exact else {d for d in active if d.startswith(name)}
        if not matches:
            f.append(Finding(Code.COMPOSE_ENV, where, f"NCCL_IB_HCA={hca}: {name} is not an ACTIVE RDMA device here "
                             f"(active: {', '.join(sorted(active)) or 'none'})", "active devices only", var="NCCL_IB_HCA",
                             value="=" + ",".join(sorted(active))))
    gid = env.get("NCCL_IB_GID_INDEX")
    if gid is not None:
        wrong = []
        for link in node.links:
            right = roce_gid_indexes(ports, link, cluster.expect.roce_gid_type)
            if right and str(right[0]) != gid:
                wrong.append(f"{link.rdma_device} has RoCE v2 at {right[0]}")
        if wrong:
            f.append(Finding(Code.COMPOSE_ENV, where, f"NCCL_IB_GID_INDEX={gid}; {'; '.join(wrong)}", "the RoCE v2 index",
                             var="NCCL_IB_GID_INDEX", value=wrong[0].rsplit(" ", 1)[-1]))
    for var, want in (("NCCL_SOCKET_FAMILY", "AF_INET"), ("GLOO_USE_LIBUV", "0"), ("TORCH_GLOO_USE_LIBUV", "0")):
        if env.get(var) != want:
            f.append(Finding(Code.COMPOSE_ENV, where, f"{var}={env.get(var)}", f"{var}={want} (Gloo/NCCL on IPv4, libuv off; "
                             "seed: stuck on IPv6 / Gloo timeout otherwise)", var=var, value=want))
    rendezvous = cluster.rendezvous_addr(node)
    if env.get("MASTER_ADDR") not in (None, rendezvous) and not compose.from_env_file(env_file, "MASTER_ADDR", env["MASTER_ADDR"]):
        f.append(Finding(Code.COMPOSE_ENV, where, f"MASTER_ADDR={env['MASTER_ADDR']}", f"rank 0's address as {node.name} "
                         f"reaches it, {rendezvous}", var="MASTER_ADDR", value=rendezvous))
    return f


def judge_env_file(cluster: Cluster, node: Node, env: dict[str, str]) -> list[Finding]:
    f = []
    rank = env.get("NODE_RANK")
    if rank != str(node.rank):
        other = next((n.name for n in cluster.nodes if str(n.rank) == rank and n.name != node.name), None)
        f.append(Finding(Code.ENV_FILE, node.name, f"NODE_RANK={rank}" + (f" (the rank of {other}: two nodes would start as "
                         f"rank {rank})" if other else ""), f"NODE_RANK={node.rank}", var="NODE_RANK", value=str(node.rank)))
    if env.get("VLLM_HOST_IP") not in {l.ip for l in node.links}:
        f.append(Finding(Code.ENV_FILE, node.name, f"VLLM_HOST_IP={env.get('VLLM_HOST_IP')}", f"this node's own address "
                         f"{node.links[0].ip}", var="VLLM_HOST_IP", value=node.links[0].ip))
    rendezvous = cluster.rendezvous_addr(node)
    if env.get("MASTER_ADDR", rendezvous) != rendezvous:
        f.append(Finding(Code.ENV_FILE, node.name, f"MASTER_ADDR={env['MASTER_ADDR']}", f"rank 0's address as {node.name} "
                         f"reaches it, {rendezvous}", var="MASTER_ADDR", value=rendezvous))
    if env.get("MODEL_ID") != cluster.deploy.model_id:
        f.append(Finding(Code.ENV_FILE, node.name, f"MODEL_ID={env.get('MODEL_ID')}", f"MODEL_ID={cluster.deploy.model_id} "
                         "(the same on every node)", var="MODEL_ID", value=cluster.deploy.model_id))
    return f


# ---- the Hub and the compile caches --------------------------------------------------------------

OFFLINE_TRUE = {"1", "ON", "YES", "TRUE"}  # what huggingface_hub reads as true


def service_environment(svc: dict) -> dict[str, str]:
    """The (interpolated) service's environment as a dict, from either of compose's forms."""
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env if "=" in e)
    return {str(k): str(v) for k, v in env.items() if v is not None}


def judge_offline(node: str, service: str, env: dict[str, str]) -> list[Finding]:
    """HF_HUB_OFFLINE=1 once the model is complete on every node (the test skips while it is not): otherwise each rank
    asks the Hub at start-up, and a follower downloads the model itself, or a newer revision of it."""
    value = env.get("HF_HUB_OFFLINE")
    if value is not None and value.strip().upper() in OFFLINE_TRUE:
        return []
    seen = f"HF_HUB_OFFLINE={value}" if value is not None else "no HF_HUB_OFFLINE in the service's environment"
    return [Finding(Code.COMPOSE_NO_OFFLINE, f"{node}:{service}", seen, "HF_HUB_OFFLINE=1 (the model is complete on every node)")]


def cache_paths(env: dict[str, str]) -> dict[str, str]:
    """Where each compiler writes in the container, from its own variables (HOME /root unless the service sets one)."""
    home = (env.get("HOME") or "/root").rstrip("/")
    xdg = (env.get("XDG_CACHE_HOME") or f"{home}/.cache").rstrip("/")
    return {"vLLM": env.get("VLLM_CACHE_ROOT") or f"{xdg}/vllm",
            "flashinfer": f"{(env.get('FLASHINFER_WORKSPACE_BASE') or home).rstrip('/')}/.cache/flashinfer",
            "Triton": env.get("TRITON_CACHE_DIR") or f"{(env.get('TRITON_HOME') or home).rstrip('/')}/.triton/cache"}


def persistent_mounts(svc: dict) -> list[tuple[str, str]]:
    """(source, target) of the service's bind mounts and named volumes (both outlive the container; anonymous volumes
    and tmpfs do not), from the short (`SRC:DST[:MODE]`) and the long (`{type, source, target}`) syntax."""
    found = []
    for v in svc.get("volumes") or []:
        if isinstance(v, str):
            parts = v.split(":")
            if len(parts) >= 2 and parts[0]:
                found.append((parts[0], parts[1]))
        elif isinstance(v, dict) and v.get("type", "volume") in ("bind", "volume") and v.get("source") and v.get("target"):
            found.append((str(v["source"]), str(v["target"])))
    return found


def cache_mounts(svc: dict) -> dict[str, tuple[str, str | None]]:
    """tool -> (its cache path in the container, the host source of the mount that holds it, or None)."""
    mounts = persistent_mounts(svc)
    out = {}
    for tool, path in cache_paths(service_environment(svc)).items():
        holding = [(src, dst.rstrip("/") or "/") for src, dst in mounts
                   if path == dst.rstrip("/") or path.startswith(dst.rstrip("/") + "/")]
        holding = [(src, dst) for src, dst in holding if dst != "/"]
        if holding:
            src, dst = max(holding, key=lambda m: len(m[1]))
            out[tool] = (path, src + path[len(dst):])
        else:
            out[tool] = (path, None)
    return out


def judge_caches(node: str, service: str, mine: dict[str, tuple[str, str | None]], head: str | None = None,
                 heads: dict[str, tuple[str, str | None]] | None = None) -> list[Finding]:
    """The vLLM, flashinfer and Triton caches on the host (a warning each: every start compiles again without them),
    and from the same host folder as on rank 0."""
    found = []
    for tool, (path, source) in mine.items():
        if source is None:
            found.append(Finding(Code.COMPOSE_CACHE_NOT_MOUNTED, f"{node}:{service}", f"no host mount holds the {tool} cache "
                                 f"{path} (compiled again at every start)", f"{path} (or a folder above it) mounted from the host",
                                 warning=True, tool=tool, path=path))
        elif heads is not None and head is not None and heads.get(tool, (None, None))[1] not in (None, source):
            found.append(Finding(Code.COMPOSE_CACHE_NOT_MOUNTED, f"{node}:{service}", f"the {tool} cache {path} from {source}",
                                 f"from {heads[tool][1]} as on {head}", warning=True, tool=tool, path=path))
    return found


# An NGC image's own entrypoint: it sets up CUDA forward compatibility (the compat libraries for a driver older than the
# image's CUDA) and then runs the command. A service that replaces it skips that set-up (cudaErrorUnsupportedPtxVersion).
NGC_ENTRYPOINT = "/opt/nvidia/nvidia_entrypoint.sh"


def entrypoint_words(value) -> list[str] | None:
    """The compose service's `entrypoint:` as words; None when the service does not set one."""
    if value is None:
        return None
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def judge_entrypoint(node: str, service: str, svc: dict, image_entrypoint: list[str]) -> list[Finding]:
    """An `entrypoint:` that does not start with the image's own, on an image whose entrypoint is NGC's: a warning."""
    override = entrypoint_words(svc.get("entrypoint"))
    if override is None or not image_entrypoint or image_entrypoint[0] != NGC_ENTRYPOINT:
        return []
    if override[:len(image_entrypoint)] == image_entrypoint:
        return []
    shown = " ".join(override) or "an empty entrypoint"
    return [Finding(Code.COMPOSE_ENTRYPOINT, f"{node}:{service}", f"entrypoint: {shown} replaces the image's "
                    f"{' '.join(image_entrypoint)} (its CUDA forward-compatibility set-up is skipped: "
                    "cudaErrorUnsupportedPtxVersion where the image's CUDA is newer than the driver)",
                    f"the image's entrypoint {image_entrypoint[0]} first", warning=True, image_entrypoint=image_entrypoint[0],
                    override=", ".join(f'"{w}"' for w in override))]


DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def image_digest(image) -> tuple[str | None, str]:
    """(the registry digest the image was pulled by, or None for an image built or loaded here; its image id)."""
    digest = next((d.split("@", 1)[1] for d in image.digests if "@sha256:" in d), None)
    return digest, image.id


def judge_image_pinned(node: str, service: str, svc: dict, image) -> list[Finding]:
    """The service's image pinned by digest (name@sha256:...), or else one that no pull can replace: an image pulled from a
    registry (it has a registry digest) under a tag warns, naming the digest it has now. A run history that could tell the
    digest unchanged since the last passing run would let a tag pass; the suite keeps none yet."""
    ref = str(svc.get("image") or "")
    if DIGEST.search(ref):
        return []
    digest, _ = image_digest(image)
    if digest is None:
        return []  # built or loaded on the node: no registry to pull another one under its tag
    name = ref.rsplit(":", 1)[0] if ":" in ref.rsplit("/", 1)[-1] else ref
    return [Finding(Code.COMPOSE_IMAGE_UNPINNED, f"{node}:{service}", f"image: {ref}, a tag (now {digest}, id {image.id[:19]}): "
                    "an unattended pull can replace it under the same tag", "the image pinned by digest (name@sha256:...)",
                    warning=True, name=name, digest=digest)]
