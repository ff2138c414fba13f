"""The cluster definition (cluster.yaml): nodes, links, expectations, deploy and serving settings.

Validated with pydantic; a bad file becomes a ClusterError with a line per mistake naming the field and the reason
(gb10check/cluster_errors.py).
Memory sizes accept docker/human forms ("105G", "119 GiB", "5 GiB", "512M") and are held in GiB.
"""

import difflib
import functools
import hashlib
import ipaddress
import itertools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal

from dataclasses import dataclass

import yaml
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo, field_validator,
                      model_validator)

from . import cluster_errors
from .remedies import Code

UNITS_GIB = {"": 1.0, "b": 1 / 2**30, "k": 1 / 2**20, "m": 1 / 2**10, "g": 1.0, "t": 2**10}


def gib(value) -> float:
    """'105G' -> 105.0, '119 GiB' -> 119.0, '512M' -> 0.5, 7 -> 7.0 (a bare number is GiB)."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as '105G' or '119 GiB'")
    if isinstance(value, (int, float)):
        return float(value)
    m = re.fullmatch(r"\s*([\d.]+)\s*([bkmgtBKMGT]?)(?:i?[bB])?\s*", str(value))
    if not m:
        raise ValueError(f"expected a size such as '105G' or '119 GiB', got {value!r}")
    return float(m[1]) * UNITS_GIB[m[2].lower()]


GiB = Annotated[float, BeforeValidator(gib), Field(gt=0)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Ssh(Strict):
    user: str
    port: int = Field(22, ge=1, le=65535)
    identity_file: str = "~/.ssh/id_ed25519"
    known_hosts: str = "~/.ssh/known_hosts"
    cluster_key: str = "~/.ssh/id_ed25519_shared"  # the one key nodes use to reach each other (gb10check ssh-keys)
    connect_timeout_s: float = Field(10, gt=0)
    command_timeout_s: float = Field(60, gt=0)

    def resolved(self, base: Path) -> "Ssh":
        """Key and known_hosts paths made absolute: ~ expanded, relative to the cluster file."""
        def absolute(value: str) -> str:
            p = Path(os.path.expanduser(value))
            return str(p if p.is_absolute() else (base / p).resolve())
        return self.model_copy(update={"identity_file": absolute(self.identity_file), "known_hosts": absolute(self.known_hosts),
                                       "cluster_key": absolute(self.cluster_key)})


class Peer(Strict):
    """The port a link's cable (or switch path) must reach: a node of the cluster and its netdev."""

    node: str
    netdev: str


class Link(Strict):
    netdev: str
    rdma_device: str | None = None
    address: ipaddress.IPv4Interface  # "169.254.94.252/16"
    mtu: int | None = None
    peer: Peer | None = None  # null: the topology's rule says which port the link reaches (Cluster.expected_peers)

    @field_validator("address", mode="before")
    @classmethod
    def needs_prefix(cls, v):
        if isinstance(v, str) and "/" not in v:
            raise ValueError(f"expected an IPv4 address with its prefix length, e.g. '{v}/24'")
        return v

    @property
    def ip(self) -> str:
        return str(self.address.ip)


class Node(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    address: str  # management address: where the runner reaches the node (host name or IP)
    rank: int = Field(ge=0)
    ssh_port: int | None = Field(None, ge=1, le=65535)
    # ssh: reached over SSH as ssh.user; local: the machine the suite runs on (a runner on rank 0, a single GB10),
    # its commands run here as the user running the suite, with the same timeouts and `sudo -n`.
    connection: str = "ssh"
    links: list[Link] = Field(min_length=1)

    @field_validator("connection")
    @classmethod
    def known_connection(cls, v):
        if v not in ("ssh", "local"):
            raise ValueError(f"expected 'ssh' (reach the node over SSH) or 'local' (the machine the suite runs on), got {v!r}")
        return v

    @model_validator(mode="after")
    def links_on_distinct_subnets(self):
        for a, b in itertools.combinations(self.links, 2):
            if a.netdev == b.netdev:
                raise ValueError(f"netdev {a.netdev} is listed twice")
            if a.address.network.overlaps(b.address.network):
                raise ValueError(
                    f"links {a.netdev} ({a.address}) and {b.netdev} ({b.address}) are on one subnet; "
                    "each logical link needs its own subnet or the kernel routes both through one interface"
                )
        return self


class Firewall(Strict):
    sources: list[ipaddress.IPv4Network] = [ipaddress.IPv4Network("169.254.0.0/16"), ipaddress.IPv4Network("192.168.101.0/24")]
    ports: list[str] = ["20001/tcp"]

    @field_validator("ports")
    @classmethod
    def port_proto(cls, v):
        for p in v:
            if not re.fullmatch(r"\d{1,5}/(tcp|udp)", p):
                raise ValueError(f"expected 'PORT/tcp' or 'PORT/udp', got {p!r}")
        return v


PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
DEFAULT_PROFILE = "gb10"  # the product's hardware; the simulation names its own (sim)
PROFILE_CONTEXT = "profile_base"  # validation context: the folder a relative profile path is read from
_RAW = "profile_resolved"  # validation context: the values are a profile's own, resolve nothing


def known_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


@dataclass(frozen=True)
class Profile:
    """A hardware profile file: every field of `Expect` that has no default, each with its value and its source."""

    name: str  # as the cluster file names it: a shipped profile's name or a path
    path: Path
    about: str
    values: Mapping  # field -> value, validated
    sources: Mapping  # field -> where the figure comes from


def profile_path(ref: str, base: Path | None = None) -> Path:
    """A shipped profile's file (a bare name: gb10, sim, h200), or a profile file's path (relative to `base`)."""
    if not isinstance(ref, str) or not ref.strip():
        raise ValueError(f"profile: expected a profile's name ({', '.join(known_profiles())}) or a path to a profile file, "
                         f"got {ref!r}")
    if "/" not in ref and not ref.endswith((".yaml", ".yml")):
        path = PROFILES_DIR / f"{ref}.yaml"
        if not path.is_file():
            raise ValueError(f"profile {ref!r} is not a known profile: the known ones are {', '.join(known_profiles())} "
                             "(gb10check/profiles/), or give a path to a profile file (`gb10check profile snapshot` writes one)")
        return path
    path = Path(os.path.expanduser(ref))
    return path if path.is_absolute() else (base or Path.cwd()) / path


def load_profile(ref: str, base: Path | None = None) -> Profile:
    """Read and validate a profile: `about`, and `expect` with {value, source} for every field the profile owns."""
    path = profile_path(ref, base)
    if path.parent == PROFILES_DIR and path.stem == ref:
        return _shipped(ref)
    return _read_profile(ref, path)


@functools.lru_cache(maxsize=None)
def _shipped(name: str) -> Profile:
    return _read_profile(name, PROFILES_DIR / f"{name}.yaml")


def _read_profile(ref: str, path: Path) -> Profile:
    where = f"profile {ref}" + (f" ({path})" if str(path) != ref else "")
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ValueError(f"{where}: cannot read the profile file: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict) or set(data) != {"about", "expect"} or not isinstance(data["expect"], dict):
        raise ValueError(f"{where}: expected a mapping with `about` (one line) and `expect` "
                         f"({{field: {{value: ..., source: ...}}}}); got {sorted(data) if isinstance(data, dict) else type(data).__name__}")
    owned = profile_fields()
    values, sources = {}, {}
    for field, entry in data["expect"].items():
        if field not in owned:
            raise ValueError(f"{where}: {field} is not a profile field; the fields are {', '.join(owned)}")
        if not isinstance(entry, dict) or set(entry) != {"value", "source"} or not isinstance(entry["source"], str) \
                or not entry["source"].strip():
            raise ValueError(f"{where}: {field}: expected {{value: ..., source: \"where the figure comes from\"}}, got {entry!r}")
        values[field], sources[field] = entry["value"], entry["source"].strip()
    missing = [f for f in owned if f not in values]
    if missing:
        raise ValueError(f"{where}: no {', '.join(missing)}: a profile names every field of the hardware, with its source")
    try:
        values = check_values(values)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return Profile(ref, path, str(data["about"]), MappingProxyType(values), MappingProxyType(sources))


def check_values(values: dict) -> dict:
    """A profile's values validated as `Expect` validates them (sizes in GiB ...); a bad one: ValueError naming the field."""
    try:
        resolved = Expect.model_validate(values, context={_RAW: True})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{'.'.join(map(str, err['loc']))}: {err['msg'].removeprefix('Value error, ')}") from None
    return {f: getattr(resolved, f) for f in profile_fields()}


def profile_fields() -> list[str]:
    """The fields a profile owns: `Expect`'s fields without a default (the hardware's figures)."""
    return [name for name, info in Expect.model_fields.items() if info.is_required()]


STARTUP_PHASES = ("weights", "compile", "kv_cache", "graph_capture", "api")


def phase_budgets(value):
    """{phase: seconds} for every startup phase (deploy/phases.py), each a number > 0."""
    if not isinstance(value, dict):
        raise ValueError(f"expected {{phase: seconds}} for {', '.join(STARTUP_PHASES)}; got {value!r}")
    unknown = [k for k in value if k not in STARTUP_PHASES]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a startup phase; the phases are {', '.join(STARTUP_PHASES)}")
    missing = [k for k in STARTUP_PHASES if k not in value]
    if missing:
        raise ValueError(f"no budget for {', '.join(missing)}: give every phase ({', '.join(STARTUP_PHASES)}) its seconds")
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ValueError(f"{k}: expected seconds (a number > 0); got {v!r}")
    return {k: float(value[k]) for k in STARTUP_PHASES}


class Expect(Strict):
    """What the checks expect of the hardware and the site. The hardware's figures (the fields without a default) come
    from a profile (gb10check/profiles/, each figure with its source) that `profile` names; the cluster file's own
    `expect` keys override any of them."""

    profile: str = DEFAULT_PROFILE  # a shipped profile's name (gb10, h200, sim) or a profile file's path
    memory_gib: GiB
    gpu_name: str
    driver_version: str | None = Field(pattern=r"^\d+(\.\d+)+$")  # the NVIDIA driver the profile names (null: any)
    link_speed_mbps: int = Field(gt=0)
    roce_gid_type: Literal["RoCE v2", "RoCE v1"]
    roce_gid_index: int = Field(ge=0)
    min_ib_write_bw_gbps: float = Field(gt=0)  # per logical link, ib_write_bw one link at a time
    min_nccl_busbw_gbps: float = Field(gt=0)  # all_gather_perf across the nodes, bus bandwidth (a pair, a switch)
    min_nccl_ring_busbw_gbps: float = Field(gt=0)  # the same run across a ring (no switch: each step one cable)
    min_nccl_link_busbw_gbps: float = Field(gt=0)  # all_gather_perf over one link pair, one HCA at each end
    # test_nccl_collectives (gb10check/canary/collectives.py): the bus bandwidth of its largest size (256 MB) of
    # all_reduce and all_gather, and the time of one 8 KB all_reduce (a warning above it).
    min_collective_busbw_gbps: float = Field(gt=0)
    max_collective_8k_latency_us: float = Field(gt=0)
    # test_gpu_compute: bf16 matmul in the image (gb10check/canary/matmul.py), nvidia-smi sampling under it.
    min_tflops: float = Field(ge=0)
    min_sm_clock_mhz: float = Field(ge=0)  # median SM clock of the samples under load
    max_compute_spread: float = Field(ge=0, lt=1)  # a node slower than the fastest by more than this fails
    max_drop_from_baseline: float = Field(gt=0, lt=1)  # a figure this much worse than its history's median warns
    compute_seconds: float = Field(gt=0, le=300)  # how long the timing program multiplies on each node
    # test_start_memory (checks/memory.py): the margin beyond what vLLM asks for at start, and the free memory CUDA shows on
    # an idle node with the page cache dropped (under it, with no GPU process: memory only a reboot frees).
    start_memory_margin_gib: GiB
    idle_free_floor_gib: GiB
    ib_write_bw_duration_s: int = Field(ge=1, le=60)  # -D of each ib_write_bw run (one link at a time)
    # The PCIe link each ConnectX-7 function must negotiate (lspci LnkSta); null: what the function says it can do (LnkCap).
    pcie_speed_gts: float | None = Field(gt=0)
    pcie_width: int | None = Field(ge=1, le=32)
    firewall: Firewall = Firewall()
    reachable_ports: list[int] = [29501, 20001, 18515]
    perftest_port: int = 18515
    netplan_file: str = "/etc/netplan/40-cx7.yaml"
    max_clock_skew_s: float = 1.0
    memory_margin_gib: GiB = 5.0
    # The kernels that, chosen by the engine, are a silent fallback on this hardware (MoE or GEMM on MARLIN where native
    # FP4/FP8 kernels exist): test_engine_config warns by name (fails where serving.expect_engine names another).
    engine_fallbacks: list[str]
    # The deploy watch's budget for each startup phase (deploy/phases.py), seconds: a phase over it fails by name.
    startup_phase_budgets_s: Annotated[dict, BeforeValidator(phase_budgets)]
    # test_decode_throughput's derived floor (sizing.decode_floor), where serving.min_decode_tok_s is not given: a node's
    # memory bandwidth (GB/s) over the weight bytes it reads per token, times the share of it a healthy engine reaches.
    # null: the figure does not apply to this hardware, and no floor is derived.
    memory_bandwidth_gbs: float | None = Field(gt=0)
    decode_efficiency: float | None = Field(gt=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def from_profile(cls, data, info: ValidationInfo):
        """The named profile's figures, under the keys given here: Expect() is the gb10 profile, Expect(profile="sim",
        min_tflops=0.02) the sim profile with one override."""
        context = info.context or {}
        if context.get(_RAW) or not isinstance(data, dict):
            return data
        ref = data.get("profile", DEFAULT_PROFILE)
        return {**load_profile(ref, context.get(PROFILE_CONTEXT)).values, **data, "profile": ref}


class Watchdog(Strict):
    min_mem_available: GiB = 5.0
    # MemAvailable is read on every node this often (a small file over the open SSH connection: about 2 ms a node).
    # bench/watchdog_reaction.py: 1.96 s from crossing to every rank stopped at 2 s, 0.87 s at 0.5 s.
    poll_interval_s: float = Field(0.5, gt=0)
    stall_timeout_s: float = Field(900.0, gt=0)


class NcclPin(Strict):
    """The NCCL library the image's torch must load: the version ncclGetVersion reports, and optionally its GNU build id
    (two builds of one version differ: the pip wheel's and the DGX OS package's 2.28.9)."""

    version: str | None = Field(None, pattern=r"^\d+\.\d+\.\d+$")
    build_id: str | None = Field(None, pattern=r"^[0-9a-f]{16,64}$")


class RaySettings(Strict):
    """The Ray cluster of `deploy.executor: ray` (NVIDIA's two-node vLLM playbook, vLLM's run_cluster.sh): every port a
    node opens to the others is pinned, so ufw can allow exactly these and the checks can name them."""

    port: int = Field(6379, ge=1, le=65535)  # GCS on the head: `ray start --head --port=6379`, workers --address=HEAD:6379
    node_manager_port: int = Field(6700, ge=1, le=65535)  # raylet; Ray's default is a random port
    object_manager_port: int = Field(6701, ge=1, le=65535)  # object transfers between nodes; random by default
    runtime_env_agent_port: int = Field(6702, ge=1, le=65535)
    dashboard_agent_grpc_port: int = Field(6703, ge=1, le=65535)
    metrics_export_port: int = Field(6704, ge=1, le=65535)
    dashboard_agent_listen_port: int = Field(52365, ge=1, le=65535)  # Ray's default
    min_worker_port: int = Field(10002, ge=1, le=65535)  # Ray's default lower bound
    max_worker_port: int = Field(10101, ge=1, le=65535)  # Ray's default is 19999: a hundred ports are plenty for TP
    # The GPUs each node declares to Ray (`ray start --num-gpus=N`); None: Ray counts them itself through NVML (a GB10: 1).
    # The simulated nodes declare their stand-in GB10 with 1 (there is no NVML on the machine the simulation runs on).
    num_gpus: int | None = Field(None, ge=0, le=8)
    dashboard: bool = False  # true: the dashboard on the head, bound to 127.0.0.1:dashboard_port (ssh -L to see it)
    dashboard_port: int = Field(8265, ge=1, le=65535)

    @model_validator(mode="after")
    def worker_range(self):
        if self.min_worker_port > self.max_worker_port:
            raise ValueError(f"min_worker_port {self.min_worker_port} is above max_worker_port {self.max_worker_port}")
        fixed = {"port": self.port, "node_manager_port": self.node_manager_port, "object_manager_port": self.object_manager_port,
                 "runtime_env_agent_port": self.runtime_env_agent_port, "dashboard_agent_grpc_port": self.dashboard_agent_grpc_port,
                 "metrics_export_port": self.metrics_export_port, "dashboard_agent_listen_port": self.dashboard_agent_listen_port}
        seen: dict[int, str] = {}
        for name, port in fixed.items():
            if port in seen:
                raise ValueError(f"{name} and {seen[port]} are both {port}")
            if self.min_worker_port <= port <= self.max_worker_port:
                raise ValueError(f"{name} {port} is inside the worker port range {self.min_worker_port}-{self.max_worker_port}")
            seen[port] = name
        return self

    def cross_node_ports(self, head: bool) -> dict[str, int]:
        """The ports the other nodes connect to on this node (the GCS only on the head); the worker range is apart."""
        return {**({"port": self.port} if head else {}), "node_manager_port": self.node_manager_port,
                "object_manager_port": self.object_manager_port}


EXECUTORS = {"mp": "vLLM's multiprocess executor with --headless followers, the field report's",
             "ray": "a Ray head and a Ray worker per node with --distributed-executor-backend ray, NVIDIA's two-node playbook"}


class Deploy(Strict):
    workdir: str = "~/vllm"
    compose_file: str = "compose.yml"
    image: str
    model_id: str
    served_model_name: str
    tensor_parallel_size: int = Field(ge=1)
    max_model_len: int = Field(gt=0, examples=[32768])
    max_num_seqs: int = Field(8, gt=0)
    gpu_memory_utilization: float = Field(0.8, gt=0, le=1)
    container_memory_limit: GiB
    master_port: int = Field(29501, ge=1, le=65535)
    api_port: int = Field(20001, ge=1, le=65535)
    hf_cache: str = "~/.cache/huggingface"
    # Host folder whose vllm/, flashinfer/ and triton/ hold the compile caches the container writes (mounted at
    # /root/.cache/vllm, /root/.cache/flashinfer, /root/.triton); null: <workdir>/cache. The same on every node.
    cache_dir: str | None = None
    distributed_timeout_s: int = Field(3600, gt=0)
    reasoning_parser: str | None = "qwen3"  # vLLM --reasoning-parser; null: the model does not reason
    tool_call_parser: str | None = "qwen3_xml"  # vLLM --tool-call-parser (with --enable-auto-tool-choice); null: no tools
    extra_args: list[str] = []  # appended to `vllm serve` on every rank
    extra_volumes: list[str] = []  # more "host:container[:ro]" mounts for the service (a local model folder ...)
    extra_environment: dict[str, str] = {}  # more environment for the service (compose ${VAR} from .env allowed)
    # Words the rendered service's entrypoint starts with, before its `/bin/bash -lc`: the image's own entrypoint where it
    # must run first (an NGC image's /opt/nvidia/nvidia_entrypoint.sh sets up CUDA forward compatibility, then execs the rest).
    image_entrypoint: list[str] = []
    map_infiniband: bool = True  # false only where /dev/infiniband cannot exist (the simulation); the lint follows it
    memlock_unlimited: bool = True  # false only where the hard memlock limit cannot be raised (the simulation's machine)
    watchdog: Watchdog = Watchdog()
    # Run the suite's canary programs (test_gpu_compute, test_image_nccl) with this Python on the node instead of in the
    # image (a machine without docker; its own torch is then what is measured). null: in the image, with --gpus all.
    canary_python: str | None = None
    nccl: "NcclPin | None" = None  # the libnccl torch in the image must load (test_image_nccl); null: equal to rank 0's only
    executor: str = "mp"  # mp | ray (see EXECUTORS); docs/ray.md
    ray: RaySettings = RaySettings()  # used with executor: ray

    @field_validator("executor")
    @classmethod
    def known_executor(cls, v):
        if v not in EXECUTORS:
            raise ValueError("expected " + " or ".join(f"'{k}' ({what})" for k, what in EXECUTORS.items()) + f", got {v!r}")
        return v

    @property
    def compile_cache(self) -> str:
        return self.cache_dir or f"{self.workdir}/cache"


class ExpectEngine(Strict):
    """What the engine must resolve (test_engine_config reads its log and /metrics); null: not judged. Names as vLLM
    logs them, case aside: attention FLASHINFER / FLASH_ATTN / TRITON_ATTN, MoE VLLM_CUTLASS / FLASHINFER_CUTLASS /
    MARLIN, linear kernels by class (CutlassFP8ScaledMMLinearKernel), KV cache dtype auto / fp8 / fp8_e4m3, cudagraph
    mode NONE / PIECEWISE / FULL_DECODE_ONLY / FULL_AND_PIECEWISE, speculative 'none' or its method (mtp, eagle3)."""
    attention_backend: str | None = None
    moe_backend: str | None = None
    linear_kernel: str | None = None
    kv_cache_dtype: str | None = None
    cudagraph_mode: str | None = None
    speculative: str | None = None
    quantization: str | None = None


class Serving(Strict):
    base_url: str | None = None  # default: http://<rank 0 address>:<api_port>/v1
    api_key_env: str | None = None
    expect_reasoning: bool = True
    expect_tool_calls: bool = True
    # null: test_decode_throughput judges against the floor derived from the profile's memory bandwidth and the model's
    # weights (expect.memory_bandwidth_gbs, expect.decode_efficiency); either way the derived figure is reported.
    min_decode_tok_s: float | None = Field(None, gt=0)
    basic_prompt: str = "Answer in one sentence: what is the factorial of 3?"
    basic_expect: str = "6"
    repetitions: int = Field(3, ge=1)
    decode_max_tokens: int = Field(400, ge=16)  # tokens each throughput run asks for (the seed counted to 80: ~400)
    # The concurrency sweep (test_concurrency_sweep): 1, 2, 4 ... streams at once up to this (null: deploy.max_num_seqs),
    # each stream asking for sweep_max_tokens.
    sweep_max_concurrency: int | None = Field(None, gt=0)
    sweep_max_tokens: int = Field(32, ge=2)
    # How the serving stage reads rank 0's server log on the head (default: `docker logs` of the deployment's container).
    log_command: str | None = None
    expect_engine: ExpectEngine = ExpectEngine()


def tok_s_floors(value):
    """A floor for every depth (a number of tok/s) or one per depth ({depth: tok/s}); null: none."""
    def rate(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ValueError(f"expected tok/s (a number > 0) for every depth, or {{depth: tok/s}}; got {v!r}")
        return float(v)
    if value is None:
        return None
    if isinstance(value, dict):
        out = {}
        for depth, v in value.items():
            if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
                raise ValueError(f"expected depths (tokens >= 0) as keys; got {depth!r}")
            out[depth] = rate(v)
        return out
    return rate(value)


Floors = Annotated[object, BeforeValidator(tok_s_floors)]


class Soak(Strict):
    """`pytest -m soak`: sustained load, one long-context request and a depth sweep (gb10check/soak.py, gb10check/depth.py).

    Defaults suit a GB10 pair: the field's TP=2 hang comes after 20-26 minutes of concurrent load, so the load runs
    30 minutes; a short rehearsal (the simulation) sets about 60 s."""

    duration_s: float = Field(1800.0, gt=0)  # how long the sustained load runs
    concurrency: int | None = Field(None, gt=0)  # streams at once; null: deploy.max_num_seqs
    stall_limit_s: float = Field(60.0, gt=0)  # a stream silent longer than this (no first token, no next token) is a stall
    min_mem_available: GiB | None = None  # GiB on every node the whole time; null: deploy.watchdog.min_mem_available
    prompt_tokens: list[Annotated[int, Field(gt=0)]] = Field([64, 512, 2048], min_length=1)  # the load's prompt lengths, in turn
    max_tokens: int = Field(256, gt=0)  # tokens each load request asks for
    long_context_fraction: float = Field(0.9, gt=0, lt=1)  # the long-context prompt, as a fraction of max_model_len
    nonce_placement: Literal["start", "middle", "end"] = "middle"  # where in the long prompt the nonce sits
    prefill_limit_s: float = Field(900.0, gt=0)  # the long-context request's wait for its first token (its prefill)
    depths: list[Annotated[int, Field(ge=0)]] = Field([0, 4096, 16384], min_length=1)  # context tokens before the prompt
    depth_prompt_tokens: int = Field(2048, gt=0)  # "pp" of each depth (llama-benchy's --pp default)
    depth_gen_tokens: int = Field(32, gt=1)  # "tg" of each depth (llama-benchy's --tg default)
    depth_runs: int = Field(3, ge=1)  # runs per depth (llama-benchy's --runs default)
    # Floors per profile (null: reported, not judged): one number for every depth, or {depth: tok/s}.
    min_pp_tok_s: Floors = None
    min_tg_tok_s: Floors = None

    @field_validator("depths")
    @classmethod
    def distinct_depths(cls, v):
        if len(set(v)) != len(v):
            raise ValueError(f"each depth once; got {v}")
        return v


class Watch(Strict):
    """`gb10check watch`: one tick every every_s against the deployed cluster (gb10check/watch_tick.py): one short streamed
    request timed against its budgets, each node's memory, GPU temperature and clock-event reasons, reboots, and each
    rank's container, processes and log."""

    every_s: float = Field(600.0, gt=0)  # between ticks (--every overrides it)
    prompt: str = "Count from 1 to 20, separated by spaces."  # the one small request of a tick
    max_tokens: int = Field(16, gt=1, le=256)
    ttft_budget_s: float = Field(10.0, gt=0)  # its first token within this; a rank that stopped never answers
    itl_budget_ms: float = Field(1000.0, gt=0)  # no gap between two of its tokens longer than this
    max_temperature_c: float = Field(90.0, gt=0)  # a GPU at or above this is a warning (the SoC's own limits are higher)
    min_mem_available: GiB | None = None  # GiB on every node; null: deploy.watchdog.min_mem_available


class Waiver(Strict):
    """Not checked findings of this code do not close the gate; the reason is shown at the gate. A failure is never
    waived."""

    code: Code
    reason: Annotated[str, Field(pattern=r"\S")]  # written: not empty, not blank


class GateSettings(Strict):
    waive: list[Waiver] = []


TOPOLOGIES = {"pair": "two nodes joined by direct cables, each link's peer on its subnet",
              "ring": "three or more nodes, NVIDIA's ring wiring: each node's port 0 to the next node's port 1",
              "switch": "every node's links through a switch, each link reaching every node on its subnet"}
PORT = re.compile(r"^(?P<stem>.+)f(?P<port>\d+)(?:np\d+)?$")  # enp1s0f0np0: port 0 of the enp1s0 half


def port_of(netdev: str) -> tuple[str, int] | None:
    """(the half of the adapter, the port index) of a ConnectX netdev name: enP2p1s0f1np1 -> ("enP2p1s0", 1)."""
    m = PORT.match(netdev)
    return (m["stem"], int(m["port"])) if m else None


class Cluster(Strict):
    name: str = "gb10"
    ssh: Ssh
    nodes: list[Node] = Field(min_length=1)
    # pair | ring | switch (TOPOLOGIES); null: a pair for two nodes, nothing to cable for one, an error for more.
    topology: str | None = None
    expect: Expect = Expect()
    deploy: Deploy
    serving: Serving = Serving()
    soak: Soak = Soak()
    watch: Watch = Watch()
    gate: GateSettings = GateSettings()

    @model_validator(mode="after")
    def consistent(self):
        ranks = sorted(n.rank for n in self.nodes)
        if ranks != list(range(len(self.nodes))):
            raise ValueError(f"ranks must be 0..{len(self.nodes) - 1}, each exactly once; got {ranks}")
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"node names must be unique; got {names}")
        seen: dict[str, str] = {}
        for n in self.nodes:
            for where, addr in [(f"{n.name} management", n.address)] + [(f"{n.name} {l.netdev}", l.ip) for l in n.links]:
                if addr in seen:
                    raise ValueError(f"address {addr} is used twice: {seen[addr]} and {where}")
                seen[addr] = where
        local = [n.name for n in self.nodes if n.connection == "local"]
        if len(local) > 1:
            raise ValueError(f"only one node can be the machine the suite runs on (connection: local); got {', '.join(local)}")
        for n in self.nodes:
            for link in n.links:
                if len(self.nodes) > 1 and not self.peers_of(n, link):
                    raise ValueError(f"{n.name} {link.netdev} ({link.address}) has no peer link on another node in "
                                     f"{link.address.network}; check the cabling plan or the address")
        self.check_topology()
        if self.deploy.tensor_parallel_size % len(self.nodes):
            raise ValueError(f"deploy.tensor_parallel_size {self.deploy.tensor_parallel_size} is not a multiple of "
                             f"the {len(self.nodes)} nodes")
        return self

    @field_validator("topology")
    @classmethod
    def known_topology(cls, v):
        if v is not None and v not in TOPOLOGIES:
            close = difflib.get_close_matches(str(v), TOPOLOGIES, n=1)
            raise ValueError(f"got {v!r}{f' (did you mean {close[0]!r}?)' if close else ''}; expected one of: "
                             + "; ".join(f"{k!r} ({what})" for k, what in TOPOLOGIES.items()))
        return v

    def check_topology(self) -> None:
        n = len(self.nodes)
        if self.topology is None and n > 2:
            raise ValueError(f"topology: a cluster of {n} nodes needs its cabling named: `topology: ring` "
                             f"({TOPOLOGIES['ring']}) or `topology: switch` ({TOPOLOGIES['switch']})")
        if self.topology == "pair" and n != 2:
            raise ValueError(f"topology: 'pair' joins two nodes; this cluster has {n}: use 'ring' or 'switch'")
        if self.topology == "ring" and n < 3:
            raise ValueError(f"topology: 'ring' needs three nodes or more; this cluster has {n}: use 'pair'")
        names = {m.name: m for m in self.nodes}
        for node in self.nodes:
            for link in node.links:
                where = f"nodes[{node.name}].links[{link.netdev}].peer"
                if link.peer is not None:
                    other = names.get(link.peer.node)
                    if other is None or other.name == node.name:
                        raise ValueError(f"{where}.node: {link.peer.node!r} is not another node of the cluster "
                                         f"({', '.join(m for m in names if m != node.name)})")
                    if link.peer.netdev not in {l.netdev for l in other.links}:
                        raise ValueError(f"{where}.netdev: {other.name} has no link {link.peer.netdev!r} "
                                         f"(its links: {', '.join(l.netdev for l in other.links)})")
                elif self.topology == "ring" and port_of(link.netdev) is None:
                    raise ValueError(f"{where}: the ring's rule cannot tell the port index of {link.netdev} (it reads "
                                     "names such as enp1s0f0np0, port 0): state `peer: {node: ..., netdev: ...}` on this link")
                for other, ol in self.expected_peers(node, link):
                    if ol.address.network != link.address.network:
                        raise ValueError(f"{where}: {node.name} {link.netdev} ({link.address}) must reach {other.name} "
                                         f"{ol.netdev} ({ol.address}), on another subnet: a link and its peer share one subnet")
                if self.topology == "ring" and not self.expected_peers(node, link):
                    raise ValueError(f"{where}: by the ring's rule {node.name} {link.netdev} reaches no link of its "
                                     "neighbour; state `peer:` on it or fix the netdev")

    @property
    def cabling(self) -> str | None:
        """The topology the checks judge: the one given, a pair for two nodes, None for one node (no cables)."""
        return self.topology or ("pair" if len(self.nodes) == 2 else None)

    def expected_peers(self, node: Node, link: Link) -> list[tuple[Node, Link]]:
        """The ports the link must reach: its stated peer, else the topology's rule. pair and switch: every other node's
        link on its subnet; ring (nodes in rank order): port 0 reaches the next node's port 1 of the same adapter half,
        port 1 the previous node's port 0 (NVIDIA's ring wiring)."""
        if link.peer is not None:
            other = next(m for m in self.nodes if m.name == link.peer.node)
            return [(other, next(l for l in other.links if l.netdev == link.peer.netdev))]
        if self.cabling != "ring":
            return self.peers_of(node, link)
        ring, me = self.by_rank(), port_of(link.netdev)
        if me is None or me[1] not in (0, 1):
            return []
        stem, port = me
        at = [m.name for m in ring].index(node.name)
        other = ring[(at + (1 if port == 0 else -1)) % len(ring)]
        return [(other, ol) for ol in other.links if port_of(ol.netdev) == (stem, 1 - port)]

    # ---- views used by the fixtures -------------------------------------------------

    @property
    def head(self) -> Node:
        return next(n for n in self.nodes if n.rank == 0)

    @property
    def followers(self) -> list[Node]:
        return self.by_rank()[1:]

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def peers_of(self, node: Node, link: Link) -> list[tuple[Node, Link]]:
        return [(other, ol) for other in self.nodes if other.name != node.name for ol in other.links
                if ol.address.network == link.address.network]

    def by_rank(self) -> list[Node]:
        """The nodes in rank order: rank 0 (the head) first."""
        return sorted(self.nodes, key=lambda n: n.rank)

    def link_pairs(self) -> list["LinkPair"]:
        """Every cable (or switch path): one pair per two nodes sharing a link subnet, lower rank first."""
        pairs = []
        for a, b in itertools.combinations(self.by_rank(), 2):
            for la in a.links:
                for lb in b.links:
                    if la.address.network == lb.address.network:
                        pairs.append(LinkPair(a, la, b, lb))
        return pairs

    @property
    def base_url(self) -> str:
        return self.serving.base_url or f"http://{self.head.address}:{self.deploy.api_port}/v1"

    @property
    def uses_ray(self) -> bool:
        """The deployment forms a Ray cluster (deploy.executor: ray) instead of vLLM's multiprocess ranks."""
        return self.deploy.executor == "ray"

    def required_ports(self) -> list[int]:
        """The ports the reachability probes open and connect to over every link: the profile's, and with Ray the ports
        nodes connect to each other on (GCS, node manager, object manager, both ends of the worker range)."""
        ports = list(self.expect.reachable_ports)
        if self.uses_ray:
            r = self.deploy.ray
            ports += [p for p in (r.port, r.node_manager_port, r.object_manager_port, r.min_worker_port, r.max_worker_port)
                      if p not in ports]
        return ports

    @property
    def nccl_floor_gbps(self) -> float:
        """The all-node all_gather's floor for this cabling: a ring's own, else the pair's and switch's."""
        return self.expect.min_nccl_ring_busbw_gbps if self.cabling == "ring" else self.expect.min_nccl_busbw_gbps

    def reached_from_head(self, node: Node) -> tuple[str, Link | None]:
        """(the address rank 0 reaches the node by, the node's link that holds it): its first link on a subnet one of
        rank 0's links shares (a pair, a switch, a ring neighbour), else its management address (a ring's far node)."""
        head = self.head
        if node.name == head.name:
            return head.links[0].ip, head.links[0]
        link = self.link_toward(node, head)
        return (link.ip, link) if link is not None else (node.address, None)

    @staticmethod
    def link_toward(node: Node, other: Node) -> Link | None:
        """node's first link on a subnet one of other's links shares (the cable or switch between them), if any."""
        nets = {l.address.network for l in other.links}
        return next((l for l in node.links if l.address.network in nets), None)

    @property
    def history_name(self) -> str:
        """The cluster as the run history keeps it: its name and its nodes in rank order (`gb10[spark-a+spark-b]`), so a
        baseline, a trend and the last green run are always of the same machines, never of another cluster under the
        same (or the default) name."""
        return f"{self.name}[{'+'.join(n.name for n in self.by_rank())}]"

    def rendezvous_addr(self, node: Node) -> str:
        """The address of rank 0 that `node` rendezvous with (MASTER_ADDR, --master-addr, the canary's store, Ray's GCS):
        rank 0's own first link for rank 0; else rank 0's address on a subnet one of the node's links shares (a pair, a
        switch, a ring neighbour: on a ring each neighbour meets rank 0 on its own cable); else rank 0's management
        address (a ring's far node, which no cable joins to rank 0)."""
        head = self.head
        if node.name == head.name:
            return head.links[0].ip
        link = self.link_toward(head, node)
        return link.ip if link is not None else head.address


@dataclass(frozen=True)
class LinkPair:
    a: Node
    a_link: Link
    b: Node
    b_link: Link

    @property
    def id(self) -> str:
        return f"{self.a.name}:{self.a_link.netdev}--{self.b.name}:{self.b_link.netdev}"


class ClusterError(Exception):
    """A cluster file that cannot be used: a line per mistake (where, what, why), the one to fix first on the first."""


def parse_cluster(text: str, source: str = "cluster.yaml", base: Path | None = None) -> Cluster:
    """`base`: the folder a relative `expect.profile` path is read from (the cluster file's; default the working one)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}:" if mark else ""
        raise ClusterError(f"{source}:{at} not valid YAML: {getattr(exc, 'problem', exc)}") from None
    return cluster_from_data(data, source, base)


def cluster_from_data(data: Any, source: str = "cluster.yaml", base: Path | None = None) -> Cluster:
    """A cluster file's content already read (a recording keeps it as data), held to the same rules as the file."""
    if not isinstance(data, dict):
        raise ClusterError(f"{source}: expected a mapping with ssh, nodes, expect, deploy, serving; got {type(data).__name__}")
    try:
        return Cluster.model_validate(data, context={PROFILE_CONTEXT: base})
    except ValidationError as exc:
        raise ClusterError("\n".join(cluster_errors.lines(exc, data, Cluster, source, _known))) from None


def _known(model: type, name: str):
    """A right value of a field without a default, for an error's example: the default profile's hardware figure."""
    return _shipped(DEFAULT_PROFILE).values.get(name) if model is Expect else None


DEFAULT_FILE = "cluster.yaml"


def cluster_file_path(given: str | os.PathLike | None = None) -> Path:
    """The one lookup of the cluster file: the given path, else $GB10CHECK_CLUSTER, else ./cluster.yaml."""
    return Path(given or os.environ.get("GB10CHECK_CLUSTER") or DEFAULT_FILE)


def runner_problems(ssh: Ssh, over_ssh: bool = True) -> list[str]:
    """What on the runner itself would fail every check of every node: say it once, before any test, with the fix.

    `over_ssh` False (every node is `connection: local`): nothing here is needed, known_hosts and keys included."""
    problems = []
    if not over_ssh:
        return problems
    kh = Path(ssh.known_hosts)
    if not kh.is_file():
        problems.append(f"known_hosts file {kh} (ssh.known_hosts) does not exist, so no host key can be verified: create it "
                        f"with the nodes' keys (ssh-keyscan -p PORT NODE >> {kh}, after checking each fingerprint)")
    elif not os.access(kh, os.R_OK):
        problems.append(f"known_hosts file {kh} (ssh.known_hosts) is not readable by this user: chmod 644 {kh} or run as its owner")
    key = Path(ssh.identity_file)
    if key.exists() and not os.access(key, os.R_OK):
        problems.append(f"key file {key} (ssh.identity_file) is not readable by this user: run as its owner (keep it mode 600)")
    elif not key.exists() and not os.environ.get("SSH_AUTH_SOCK"):
        problems.append(f"key file {key} (ssh.identity_file) does not exist and no ssh-agent is running: point ssh.identity_file "
                        "at the runner's private key, or start ssh-agent and add it")
    return problems


def load_cluster(path: str | Path) -> Cluster:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClusterError(f"{path}: cannot read the cluster file: {exc.strerror}") from None
    cluster = parse_cluster(text, str(path), path.parent)
    return cluster.model_copy(update={"ssh": cluster.ssh.resolved(path.parent)})


def cluster_hash(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
