"""vLLM server logs: startup milestones in order, the version, and the errors that stop a start.

What varies across releases and captures, and is read here:
  - the stamp: `INFO 10-27 16:21:47 llm_engine.py:174]` (0.4-0.6), `INFO 06-08 04:36:12 [api_server.py:123]`
    (0.7+), uvicorn's `INFO:     Application startup complete.`, flashinfer's `2026-06-07 19:51:28,616 - INFO - `;
  - process prefixes: `(APIServer pid=1)`, `(EngineCore_DP0 pid=947639)`, `(VllmWorker TP1 pid=7)`, `(VllmWorker rank=1 pid=7)`,
    `(Worker_TP0 pid=9)`, Ray's `(RayWorkerWrapper pid=5, ip=10.0.0.2)` and `[repeated 3x across cluster]`;
    launcher prefixes: `docker compose logs` (`vllm-1  | `), `docker logs -t` (RFC 3339 stamp), `kubectl logs --prefix`,
    `journalctl -u` / syslog (`Jul 14 09:00:00 host vllm[2201]: `);
  - lines hard-wrapped at a fixed column by a terminal or a paste: a wrapped continuation is joined back to
    its line (milestones are found across the break, and `lines` counts log lines, not fragments);
  - phrasings: `Model loading took X GiB memory and N seconds` / `X GiB and N seconds` / `Loading model weights
    took X GB` (0.4-0.6, the number is GiB), `GPU KV cache size: 147,152 tokens` / `# GPU blocks: N` (V0).
The resolved engine (`engine`, an `Engine`): what the engine's own lines say it runs (attention, MoE and linear
kernels, KV cache dtype, compile and CUDA graph modes, speculative decoding, quantization, max_num_seqs), what the
`non-default args` line asked for, and the variables vLLM warned it does not know (and so ignored).
Errors are named with a hint. `errors` are what stops or kills the engine; request-time errors (a prompt
too long, a bad request) leave the server serving and are kept apart in `request_errors`.
"""

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from ._text import ParseError, parser, strip_ansi

# Process prefixes vLLM (and Ray) put before every line. Only parenthesised text with a pid counts.
# `(VllmWorker rank=1 pid=7)` (0.8-0.9's multiproc workers) carries a key=value word before the pid.
PREFIX = re.compile(r"^\((?P<proc>[\w.:/=-]+(?: [\w.:/=-]+)*?)?\s*pid=(?P<pid>\d+)(?:,\s*ip=[\w.:-]+)?\)\s?")
RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
# Launcher prefixes, stripped only when most lines carry one.
COMPOSE_LOGS = re.compile(r"^(?P<svc>[A-Za-z0-9][\w.-]*)\s*\| ?")
DOCKER_TS = re.compile(r"^\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)\]? ")  # also CI's "[...Z] "
KUBECTL = re.compile(r"^\[pod/[^\]\s]+\] ")
# journalctl -u vllm / a syslog file (short, short-precise, short-iso, short-full): "Jul 14 09:00:00 host vllm[2201]: "
JOURNAL = re.compile(r"^(?:(?:[A-Z][a-z]{2} )?[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|"
                     r"(?:[A-Z][a-z]{2} )?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z| [A-Z]{2,5})?) "
                     r"\S+ [\w.@/-]+(?:\[\d+\])?: ")

LEVELS = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL"
# vLLM's own stamp, with or without brackets around file:line (0.5.x has none) and with an optional year.
STAMP = re.compile(r"^(?P<level>" + LEVELS + r")\s+(?P<time>(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)?\s+"
                   r"\[?[\w./<>-]+\.py:\d+\]")
UVICORN = re.compile(r"^(?P<level>" + LEVELS + r"):\s")
OTHER_STAMP = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]?\d*\s+-?\s*(?P<level>" + LEVELS + r")\b"  # flashinfer, ray
                         r"|^\[rank\d+\]:[WEIF]\d{4} ")  # torch's glog-style lines
# A line that starts a log record (so it is never a wrapped continuation).
RECORD_START = re.compile(r"^(?:\(|\[|" + LEVELS + r"|Traceback |\s*File \"|\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt)\b|"
                          r"\d{4}-\d\d-\d\d|Loading |Capturing |Process |During handling|The above exception|\*\*|NCCL |"
                          r"[\w.-]+:\d+:\d+ \[\d+\] NCCL)")

# name, pattern; the order is the order a healthy start goes through.
MILESTONES = [
    ("headless", re.compile(r"Launching .*headless|'headless': True|\bheadless=True", re.I)),
    ("distributed_init", re.compile(r"world_size=(?P<world_size>\d+) rank=(?P<rank>\d+).*backend=(?P<backend>\w+)")),
    ("tp_rank", re.compile(r"rank (?P<rank>\d+) in world size (?P<world_size>\d+) is assigned as .*?TP rank (?P<tp_rank>\d+)")),
    ("loading", re.compile(r"Starting to load model|Loading weights took (?P<seconds>[\d.]+) ?s|Loading safetensors checkpoint shards")),
    ("model_loaded", re.compile(r"(?:Model loading|Loading model weights) took (?P<gib>[\d.]+) ?Gi?B(?: memory)?"
                                r"(?:,? and (?P<seconds>[\d.]+) ?s(?:ec(?:ond)?s?)?\b)?")),
    ("kv_cache", re.compile(r"(?:GPU |CPU )?KV cache size: (?P<tokens>[\d,]+) tokens|# (?:GPU|cuda) blocks: (?P<gpu_blocks>\d+)", re.I)),
    ("graph_capture", re.compile(r"Graph capturing finished in (?P<seconds>[\d.]+) secs?(?:, took (?P<gib>[\d.]+) GiB)?")),
    ("api_server", re.compile(r"Starting vLLM (?:API )?server(?: \d+)? on (?P<url>\S+)|Uvicorn running on (?P<uvicorn_url>\S+)")),
    ("startup_complete", re.compile(r"Application startup complete")),
]

# Lines that open or close a startup phase without being a milestone of their own (deploy/phases.py reads both):
# torch.compile's first line and its total (absent when the engine runs eager), and CUDA graph capture's first line.
MARKS = [
    ("compile", re.compile(r"Dynamo bytecode transform time|for vLLM's torch\.compile|Compiling a graph for")),
    ("compiled", re.compile(r"torch\.compile take?s? (?P<seconds>[\d.]+) ?s in total|torch\.compile took (?P<took>[\d.]+) ?s")),
    ("capturing", re.compile(r"Capturing (?:CUDA graphs?|cudagraphs)")),
]

GENERIC = ("engine_core_failed", "worker_died")  # say that the engine died; the cause is another error

# name, pattern, hint. Matched on records that are not INFO/DEBUG (a warning, an error, a traceback line).
ERRORS = [
    ("follower_collective_rpc", re.compile(r"collective_rpc should not be called on follower node"),
     "rank 1+ started without --headless"),
    ("cudagraph_mode_hyphen", re.compile(r"cudagraph-mode\s*$|cudagraph-mode.*Unexpected keyword argument|argument --compilation-config/-cc: .*validation error"),
     "use -cc.cudagraph_mode (underscore), not -cc.cudagraph-mode"),
    ("triton_ptxas_sm121a", re.compile(r"Value 'sm_121a?' is not defined for option 'gpu-name'|ptxas.*sm_121a?\b.*(?:returned non-zero exit status|fatal)|"
                                       r"sm_121a?.*is not defined|ptxas fatal.*sm_12\d"),
     "Triton's bundled ptxas does not know the GB10's sm_121a: use a vLLM image built for GB10 (CUDA 12.9+/13), or point "
     "TRITON_PTXAS_PATH at the CUDA toolkit's ptxas (TRITON_PTXAS_BLACKWELL_PATH when the message names ptxas-blackwell)"),
    ("torch_arch_unsupported", re.compile(r"sm_12\d is not compatible with the current PyTorch installation|"
                                          r"no kernel image is available for execution on the device"),
     "this PyTorch/vLLM build has no kernels for the GB10 (sm_121): use an image built for it (aarch64, CUDA 12.9+/13)"),
    ("ibv_retry_exceeded", re.compile(r"IBV_WC_RETRY_EXC_ERR|transport retry counter exceeded"), "the peer's NCCL went away or the RoCE link dropped"),
    ("collective_timeout", re.compile(r"Watchdog caught collective operation timeout"),
     "a NCCL collective timed out: another rank died or hung, or the link between the nodes dropped; read the other ranks' logs"),
    ("nccl_error", re.compile(r"NCCL error[: ].*(?:unhandled system error|unhandled cuda error|internal error|remote process exited|"
                              r"invalid usage|invalid argument)|ncclSystemError|ncclInternalError|ncclRemoteError|ncclUnhandledCudaError|"
                              r"ncclInvalidUsage|ncclInvalidArgument"),
     "NCCL failed between the ranks: check NCCL_SOCKET_IFNAME / NCCL_IB_HCA, the RoCE link and the firewall; rerun with NCCL_DEBUG=INFO"),
    # torch's TCPStore rendezvous (MASTER_ADDR:port) before NCCL and Gloo: the other ranks never joined, or this one never reached it.
    ("dist_store_timeout", re.compile(r"DistStoreError|DistNetworkError: The client socket has (?:timed out|failed to connect)|"
                                      r"Timed out after \d+ seconds waiting for clients|The client socket has timed out after"),
     "torch.distributed's rendezvous timed out: a rank never joined (not started, or started with another --master-addr/port, "
     "world size or rank), or the port is blocked between the nodes (ufw); read every rank's log"),
    ("ray_placement_timeout", re.compile(r"Cannot provide a placement group"),
     "Ray never found the GPUs vLLM asked for: check `ray status` (every node joined, with its GPU) and that VLLM_HOST_IP "
     "on each node is the address Ray registered it under"),
    ("hf_offline", re.compile(r"OfflineModeIsEnabled|LocalEntryNotFoundError|outgoing traffic has been disabled|"
                              r"^(?=.*huggingface\.co).*(?:couldn't connect|Max retries exceeded|Failed to resolve|name resolution)|"
                              r"is not a local folder and is not a valid model identifier|GatedRepoError|Cannot access gated repo|"
                              r"RepositoryNotFoundError|Invalid repository ID or local directory"),
     "the model is neither on this node's disk nor reachable on the Hub (offline, no token, or a wrong name): give "
     "--model a local path that exists on every node, or fill the HF cache there (gb10check sync)"),
    ("gloo_timeout", re.compile(r"[Gg]loo.*(?:[Tt]imed out|timeout|Connection refused)|Timed out.*[Gg]loo|connectFullMesh failed"),
     "Gloo rendezvous failed: check ufw, GLOO_SOCKET_IFNAME and IPv4-only settings"),
    ("shm_broadcast_stall", re.compile(r"No available shared memory broadcast block"),
     "the workers took no work for a minute: a worker is hung or waits on a dead rank (or a long compile is running)"),
    ("rpc_timeout", re.compile(r"RPC call to (?P<method>\w+) timed out"),
     "a worker did not answer the engine in time: a rank is hung or dead; read every rank's log"),
    ("nv_err_no_memory", re.compile(r"NV_ERR_NO_MEMORY"),
     "the driver could not allocate memory: unified memory is exhausted; lower --gpu-memory-utilization, drop the page cache"),
    ("free_memory_below_utilization", re.compile(r"Free memory on device.*?is less than desired GPU memory utilization"),
     "less memory was free at start than --gpu-memory-utilization asks for (on the GB10 the OS, the page cache and other "
     "processes share it): lower --gpu-memory-utilization, or stop what holds memory and drop the page cache"),
    ("cuda_oom", re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|cudaErrorMemoryAllocation"),
     "lower --max-model-len or --gpu-memory-utilization"),
    ("insufficient_kv", re.compile(r"larger than the available KV cache|No available memory for the cache blocks|"
                                   r"larger than the maximum number of tokens that can be stored in KV cache|max_model_len.*KV cache"),
     "lower --max-model-len"),
    ("mamba_cache", re.compile(r"[Mm]amba cache"), "raise --max-num-seqs"),
    ("checkpoint_damaged", re.compile(r"SafetensorError|Error while deserializing header|file not fully covered"),
     "a checkpoint file on this node is damaged or cut short: compare it with rank 0 (test_model_same_as_head) and copy "
     "the cache again (gb10check sync)"),
    ("port_in_use", re.compile(r"\[Errno 98\]|[Aa]ddress already in use"), "another process holds the server's port"),
    ("no_gpu", re.compile(r"No CUDA GPUs are available|Failed to infer device type|Found no NVIDIA driver"),
     "the container sees no GPU: give it the GPU (--gpus all, or deploy.resources.reservations.devices in compose)"),
    ("ray_platform_unsupported", re.compile(r"current platform \S+ does not support ray"),
     "this vLLM build cannot run the Ray executor on its platform (vLLM for CPU has no Ray device key): use "
     "deploy.executor: mp (--distributed-executor-backend mp), or a CUDA build of vLLM with Ray in the image"),
    ("engine_core_failed", re.compile(r"EngineCore failed to start|Engine core initialization failed|Engine process failed to start"),
     "the engine core died while starting: its cause is the error logged before this one"),
    ("worker_died", re.compile(r"AsyncEngineDeadError|EngineDeadError|Engine core proc \S+ died unexpectedly|"
                               r"RayWorkerWrapper.*died|Worker proc \S+ died unexpectedly|WorkerProc.*(?:died|failed to start)|"
                               r"ActorDiedError|RayActorError|The actor died unexpectedly"),
     "the engine or a worker process died: its cause is the error logged before this one"),
]

# Errors one request meets; the server keeps serving.
REQUEST_ERRORS = [
    ("context_length", re.compile(r"maximum context length is \d+|max_tokens'? (?:or 'max_completion_tokens' )?is too large|"
                                  r"longer than the maximum model length|Input prompt \(\d+ tokens\) is too long|"
                                  r"prompt \(length \d+\) is longer than the maximum"),
     "the request asks for more tokens than --max-model-len: shorten the prompt or max_tokens"),
    ("request_preprocess", re.compile(r"Error in preprocessing prompt inputs"),
     "one request's prompt could not be tokenised or rendered (often too long for the context); the server keeps serving"),
    ("request_stream", re.compile(r"Error in chat completion stream generator|Error in completion stream generator"),
     "one streamed request failed; the server keeps serving"),
]

VERSION = [
    re.compile(r"Initializing an? (?:V\d )?LLM engine \(v(?P<v>[^)\s]+)\)"),
    re.compile(r"vLLM API server version (?P<v>\S+)"),
    re.compile(r"[█▀▄]\s+version (?P<v>\d+\.\d+\S*)"),  # the start banner (0.11+); not "NCCL version 2.21.5"
    re.compile(r"^vLLM version (?P<v>\d+\.\d+\S*)"),
]
NCCL_VERSION = re.compile(r"vLLM is using nccl==(?P<v>\S+)")
CONFIG = {  # read from the engine's config line
    "model": re.compile(r"with config: model='(?P<v>[^']*)'"),
    "tensor_parallel_size": re.compile(r"\btensor_parallel_size=(?P<v>\d+)"),
    "max_model_len": re.compile(r"\bmax_seq_len=(?P<v>\d+)|Using max model len (?P<w>\d+)"),
}
# The same, from lines printed before the engine's (a log cut before it, or a rank that failed first): the start banner
# (0.11+), `non-default args: {...}` (0.9+) and `args: Namespace(...)` (0.4-0.8). Used only where CONFIG found nothing.
ARGS = {
    "model": re.compile(r"[█▀▄]\s+model\s+(?P<v>\S+)\s*$|non-default args: \{.*?'model': '(?P<w>[^']*)'|"
                        r"\bargs: Namespace\(.*?\bmodel='(?P<x>[^']*)'"),
    "tensor_parallel_size": re.compile(r"non-default args: \{.*?'tensor_parallel_size': (?P<v>\d+)"),
    "max_model_len": re.compile(r"non-default args: \{.*?'max_model_len': (?P<v>\d+)\b|"
                                r"\bargs: Namespace\(.*?\bmax_model_len=(?P<w>\d+)"),
}
# The engine's choices, line by line (0.6-0.8 name attention backends in words, 0.9+ in capitals).
ATTENTION = re.compile(r"Using (?:AttentionBackendEnum\.)?(?P<b>[A-Z][A-Z0-9_]+) (?:attention )?backend\b|"
                       r"Using (?P<w>Flash Attention|FlashInfer|XFormers|Torch SDPA|FlexAttention|Triton) backend\b")
ATTENTION_WORDS = {"Flash Attention": "FLASH_ATTN", "FlashInfer": "FLASHINFER", "XFormers": "XFORMERS", "Torch SDPA": "TORCH_SDPA",
                   "FlexAttention": "FLEX_ATTENTION", "Triton": "TRITON_ATTN"}
MOE = re.compile(r"Using '?(?P<b>[A-Z][A-Z0-9_]+)'? (?:\w+ )?MoE backend")  # "Using 'VLLM_CUTLASS' NvFp4 MoE backend out of ..."
LINEAR = re.compile(r"(?:Selected|Using) (?P<k>\w*LinearKernel)\b")
MARLIN_FALLBACK = re.compile(r"Weight-only (?P<q>\w+) compression will be used leveraging the Marlin kernel")
UNKNOWN_ENV = re.compile(r"Unknown vLLM environment variable detected: (?P<v>[A-Za-z_][A-Za-z0-9_]*)")
KV_DTYPE_LINE = re.compile(r"Using (?P<v>\w+) data type to store kv cache")
# In the engine's config line (resolved) and in `non-default args` (asked); values as Python prints them.
RESOLVED = {
    "kv_cache_dtype": re.compile(r"\bkv_cache_dtype=(?P<v>[\w.]+)"),
    "quantization": re.compile(r"\bquantization=(?P<v>[\w.-]+)"),
    "enforce_eager": re.compile(r"\benforce_eager=(?P<v>True|False)"),
    "cudagraph_mode": re.compile(r"'cudagraph_mode': (?:<CUDAGraphMode\.(?P<v>\w+)|'(?P<w>\w+)')"),
    "compile_mode": re.compile(r"'mode': (?:<CompilationMode\.(?P<v>\w+)|(?P<w>\d))|'level': (?P<x>\d)"),
    "speculative": re.compile(r"\bspeculative_config=(?:(?P<v>None)|SpeculativeConfig\((?:method='(?P<w>[\w-]+)')?)"),
    "max_num_seqs": re.compile(r"\bmax_num_seqs=(?P<v>\d+)"),
}
ASKED = {
    "kv_cache_dtype": re.compile(r"'kv_cache_dtype': '(?P<v>[\w.]+)'"),
    "quantization": re.compile(r"'quantization': '(?P<v>[\w.-]+)'"),
    "enforce_eager": re.compile(r"'enforce_eager': (?P<v>True|False)"),
    "cudagraph_mode": RESOLVED["cudagraph_mode"],
    "max_num_seqs": re.compile(r"'max_num_seqs': (?P<v>\d+)"),
    "max_model_len": re.compile(r"'max_model_len': (?P<v>\d+)"),
}
COMPILE_LEVELS = {"0": "NONE", "1": "STOCK_TORCH_COMPILE", "2": "DYNAMO_TRACE_ONCE", "3": "VLLM_COMPILE"}
MAX_CONCURRENCY = re.compile(r"Maximum concurrency for (?P<tokens>[\d,]+) tokens per request: (?P<x>[\d.]+)x")


@dataclass
class Milestone:
    name: str
    line: int
    time: str | None  # "MM-DD HH:MM:SS" as vLLM prints it (the last stamp seen, for lines without one)
    t_s: float | None  # seconds since the first timestamped line
    values: dict = field(default_factory=dict)


@dataclass
class LogError:
    name: str
    line: int
    text: str
    hint: str
    count: int = 1  # records that matched (a traceback repeats its message)


@dataclass
class Engine:
    """What the engine runs, as its own lines say (None / empty: the log does not say)."""
    attention: list[str] = field(default_factory=list)  # backends chosen, in order (a drafter may add another)
    moe: list[str] = field(default_factory=list)  # MoE backends chosen ("VLLM_CUTLASS", "MARLIN" ...)
    linear: list[str] = field(default_factory=list)  # linear (GEMM) kernels chosen ("MarlinLinearKernel" ...)
    marlin_fallback: list[str] = field(default_factory=list)  # "FP4", "FP8": weights-only through Marlin, vLLM's warning
    kv_cache_dtype: str | None = None
    quantization: str | None = None  # "None" when the config line says so
    enforce_eager: bool | None = None
    cudagraph_mode: str | None = None  # "NONE", "PIECEWISE", "FULL_AND_PIECEWISE" ...
    compile_mode: str | None = None  # "NONE", "VLLM_COMPILE" ...
    speculative: str | None = None  # "none", a method ("mtp", "eagle3", "dflash"), or "draft" (a draft model, no method)
    max_num_seqs: int | None = None
    unknown_env: list[str] = field(default_factory=list)  # variables vLLM warned it does not know (ignored)
    asked: dict = field(default_factory=dict)  # what `non-default args` asked: kv_cache_dtype, cudagraph_mode ...
    config_line: bool = False  # the engine's config line was read


def _first(m: re.Match) -> str | None:
    return next((v for v in m.groups() if v is not None), None)


def _engine_line(engine: Engine, line: str) -> None:
    """One record's contribution to what the engine resolved."""
    if (m := ATTENTION.search(line)) and "MoE" not in line:
        name = m["b"] or ATTENTION_WORDS[m["w"]]
        if name not in engine.attention:
            engine.attention.append(name)
    if (m := MOE.search(line)) and m["b"] not in engine.moe:
        engine.moe.append(m["b"])
    if (m := LINEAR.search(line)) and m["k"] not in engine.linear:
        engine.linear.append(m["k"])
    if (m := MARLIN_FALLBACK.search(line)) and m["q"] not in engine.marlin_fallback:
        engine.marlin_fallback.append(m["q"])
    if (m := UNKNOWN_ENV.search(line)) and m["v"] not in engine.unknown_env:
        engine.unknown_env.append(m["v"])
    if (m := KV_DTYPE_LINE.search(line)) and engine.kv_cache_dtype in (None, "auto"):
        engine.kv_cache_dtype = m["v"]
    if "non-default args:" in line:
        for key, pattern in ASKED.items():
            if (m := pattern.search(line)):
                engine.asked[key] = _first(m)
    elif "with config:" in line and not engine.config_line:
        engine.config_line = True
        for key, pattern in RESOLVED.items():
            if not (m := pattern.search(line)):
                continue
            value = _first(m)
            if key == "enforce_eager":
                engine.enforce_eager = value == "True"
            elif key == "max_num_seqs":
                engine.max_num_seqs = int(value)
            elif key == "compile_mode":
                engine.compile_mode = COMPILE_LEVELS.get(value, value)
            elif key == "speculative":
                engine.speculative = "none" if m["v"] else (m["w"] or "draft")
            elif key == "kv_cache_dtype" and engine.kv_cache_dtype not in (None, "auto"):
                continue  # the dtype line said more than "auto"
            else:
                setattr(engine, key, value)


@dataclass
class VllmLog:
    milestones: list[Milestone] = field(default_factory=list)
    errors: list[LogError] = field(default_factory=list)  # what stops the start or kills the engine
    request_errors: list[LogError] = field(default_factory=list)  # one request failed; the server keeps serving
    lines: int = 0  # log lines (a hard-wrapped line counts once; blank lines do not count)
    version: str | None = None  # vLLM's own version: "0.5.4", "0.20.1", "0.1.dev1+gda1daf40b"
    nccl_version: str | None = None
    model: str | None = None
    tensor_parallel_size: int | None = None
    max_model_len: int | None = None
    model_gib: float | None = None
    kv_cache_tokens: int | None = None
    gpu_blocks: int | None = None  # V0 engines report blocks, not tokens
    max_concurrency: float | None = None
    startup_complete: bool = False
    startup_failed: bool = False  # the engine said it failed to start
    wrapped_at: int | None = None  # the column the text was hard-wrapped at, if it was
    engine: Engine = field(default_factory=Engine)
    marks: list[Milestone] = field(default_factory=list)  # MARKS seen, in order (first of each)

    @property
    def last_milestone(self) -> str | None:
        return self.milestones[-1].name if self.milestones else None

    @property
    def cause(self) -> LogError | None:
        """The most specific fatal error: the root cause before a generic 'engine core failed'."""
        specific = [e for e in self.errors if e.name not in GENERIC]
        return (specific or self.errors or [None])[0]


def _stamp(t: str) -> datetime:
    return datetime.strptime(t if len(t) > 14 else f"2000-{t}", "%Y-%m-%d %H:%M:%S")


def _launcher_prefixes(lines: list[str]) -> list[str]:
    body = [line for line in lines if line.strip()]
    services = Counter(m["svc"] for line in body if (m := COMPOSE_LOGS.match(line)))
    if body and services and sum(services.values()) * 2 > len(body) and len(services) * 4 <= sum(services.values()) + 3:
        lines = [COMPOSE_LOGS.sub("", line, count=1) if (m := COMPOSE_LOGS.match(line)) and m["svc"] in services else line
                 for line in lines]
        body = [line for line in lines if line.strip()]
    for pattern in (JOURNAL, DOCKER_TS, KUBECTL):
        if body and sum(bool(pattern.match(line)) for line in body) * 2 > len(body):
            lines = [pattern.sub("", line, count=1) for line in lines]
            body = [line for line in lines if line.strip()]
    return lines


def _wrap_width(lines: list[str]) -> int | None:
    """The column the text was hard-wrapped at: the longest length, shared by 2+ lines each followed by a fragment."""
    lengths = Counter(len(line) for line in lines if len(line) >= 60)
    if not lengths:
        return None
    width = max(lengths)
    if lengths[width] < 2:
        return None
    follows = [lines[i + 1] for i, line in enumerate(lines[:-1]) if len(line) == width]
    fragments = [nxt for nxt in follows if nxt.strip() and not RECORD_START.match(nxt) and not PREFIX.match(nxt)]
    return width if len(fragments) * 2 >= len(follows) and len(fragments) >= 2 else None


def _records(text: str) -> tuple[list[str], int | None]:
    lines = _launcher_prefixes([line.rstrip() for line in strip_ansi(text).split("\n")])
    width = _wrap_width(lines)
    records: list[str] = []
    joinable = False
    for line in lines:
        if not line.strip():
            joinable = False
            continue
        if joinable and not RECORD_START.match(line) and not PREFIX.match(line):
            records[-1] += line
        else:
            records.append(line)
        joinable = width is not None and len(line) == width
    return records, width


def _message(record: str) -> tuple[str, str | None, str | None]:
    """(the record without process prefixes, its level, its vLLM time stamp)."""
    line = record.strip()
    while (m := PREFIX.match(line)):
        line = line[m.end():].lstrip()
    line = RAY_REPEATED.sub("", line)
    if (s := STAMP.match(line)):
        return line, s["level"], s["time"]
    if (s := UVICORN.match(line)) or (s := OTHER_STAMP.match(line)):
        return line, s["level"], None
    return line, None, None


def _add(found: list[LogError], name: str, n: int, line: str, hint: str) -> None:
    for e in found:
        if e.name == name:
            e.count += 1
            return
    found.append(LogError(name, n, line[:300], hint))


@parser
def parse(text: str) -> VllmLog:
    log = VllmLog()
    records, log.wrapped_at = _records(text)
    seen: set[str] = set()
    first: datetime | None = None
    last_time: str | None = None
    recognised = 0
    from_args: dict = {}
    for n, record in enumerate(records, 1):
        line, level, time = _message(record)
        recognised += bool(level or time) or line != record.strip()
        if time:
            last_time = time
            first = first or _stamp(time)
        for name, pattern in MILESTONES:
            if name in seen:
                continue
            m = pattern.search(line)
            if m:
                seen.add(name)
                values = {k: v for k, v in m.groupdict().items() if v is not None}
                if "uvicorn_url" in values:
                    values["url"] = values.pop("uvicorn_url")
                # Lines without a stamp (uvicorn's "Application startup complete.") take the last one seen.
                t_s = (_stamp(last_time) - first).total_seconds() if (last_time and first) else None
                log.milestones.append(Milestone(name, n, last_time, t_s, values))
                break
        if log.version is None:
            log.version = next((m["v"] for p in VERSION if (m := p.search(line))), None)
        if log.nccl_version is None and (m := NCCL_VERSION.search(line)):
            log.nccl_version = m["v"]
        for key, pattern in CONFIG.items():
            if getattr(log, key) is None and (m := pattern.search(line)):
                value = m["v"] if m["v"] is not None else m.groupdict().get("w")
                setattr(log, key, value if key == "model" else int(value))
        for key, pattern in ARGS.items():
            if key not in from_args and (m := pattern.search(line)):
                value = next(v for v in m.groups() if v is not None)
                from_args[key] = value if key == "model" else int(value)
        _engine_line(log.engine, line)
        for name, pattern in MARKS:
            if name not in seen and (m := pattern.search(line)):
                seen.add(name)
                t_s = (_stamp(last_time) - first).total_seconds() if (last_time and first) else None
                log.marks.append(Milestone(name, n, last_time, t_s, {k: v for k, v in m.groupdict().items() if v is not None}))
        if (m := MAX_CONCURRENCY.search(line)) and log.max_concurrency is None:
            log.max_concurrency = float(m["x"])
        if level in ("INFO", "DEBUG"):
            continue  # an INFO line that mentions an error's words is not that error
        for name, pattern, hint in REQUEST_ERRORS:
            if pattern.search(line):
                _add(log.request_errors, name, n, line, hint)
                break
        else:
            for name, pattern, hint in ERRORS:
                if pattern.search(line):
                    _add(log.errors, name, n, line, hint)
                    break
    for key, value in from_args.items():
        if getattr(log, key) is None:
            setattr(log, key, value)
    if log.engine.max_num_seqs is None and "max_num_seqs" in log.engine.asked:
        log.engine.max_num_seqs = int(log.engine.asked["max_num_seqs"])  # asked and not contradicted: the config line omits it
    log.lines = len(records)
    if not records:
        raise ParseError("vllm_log", "vLLM server log lines", text)
    for m in log.milestones:
        if m.name == "model_loaded":
            log.model_gib = float(m.values["gib"])
        elif m.name == "kv_cache":
            if "tokens" in m.values:
                log.kv_cache_tokens = int(m.values["tokens"].replace(",", ""))
            if "gpu_blocks" in m.values:
                log.gpu_blocks = int(m.values["gpu_blocks"])
        elif m.name == "startup_complete":
            log.startup_complete = True
    log.startup_failed = any(e.name == "engine_core_failed" for e in log.errors)
    if not log.milestones and not log.errors and not log.request_errors and not log.version and not log.nccl_version \
            and not recognised:
        raise ParseError("vllm_log", "vLLM log lines (LEVEL MM-DD HH:MM:SS [file.py:N] ..., process prefixes, or a known vLLM error)", text)
    return log
