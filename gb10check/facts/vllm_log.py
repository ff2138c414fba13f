"""vLLM server logs: startup milestones in order, and the errors the field report met.

Lines carry ANSI colour and process prefixes ("(APIServer pid=1)", "(EngineCore_DP0 pid=9)",
"(Worker_TP1 pid=7)"); both are stripped before matching.
"""

import re
from dataclasses import dataclass, field
from datetime import datetime

from ._text import ParseError, parser, strip_ansi

PREFIX = re.compile(r"^\((?P<proc>[^)]*?)(?:\s+pid=(?P<pid>\d+))?\)\s*")
STAMP = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(?P<time>\d\d-\d\d \d\d:\d\d:\d\d)")

# name, pattern; the order is the order a healthy start goes through.
MILESTONES = [
    ("headless", re.compile(r"Launching .*headless|'headless': True", re.I)),
    ("distributed_init", re.compile(r"world_size=(?P<world_size>\d+) rank=(?P<rank>\d+).*backend=(?P<backend>\w+)")),
    ("tp_rank", re.compile(r"rank (?P<rank>\d+) in world size (?P<world_size>\d+) is assigned as .*?TP rank (?P<tp_rank>\d+)")),
    ("loading", re.compile(r"Starting to load model|Loading weights took (?P<seconds>[\d.]+) seconds|Loading safetensors checkpoint shards")),
    ("model_loaded", re.compile(r"Model loading took (?P<gib>[\d.]+) ?GiB(?: memory)? and (?P<seconds>[\d.]+) seconds")),
    ("kv_cache", re.compile(r"(?:GPU |CPU )?KV cache size: (?P<tokens>[\d,]+) tokens")),
    ("graph_capture", re.compile(r"Graph capturing finished in (?P<seconds>[\d.]+) secs?(?:, took (?P<gib>[\d.]+) GiB)?")),
    ("api_server", re.compile(r"Starting vLLM (?:API )?server on (?P<url>\S+)")),
    ("startup_complete", re.compile(r"Application startup complete")),
]

ERRORS = [
    ("follower_collective_rpc", re.compile(r"collective_rpc should not be called on follower node"),
     "rank 1+ started without --headless"),
    ("cudagraph_mode_hyphen", re.compile(r"cudagraph-mode\s*$|cudagraph-mode.*Unexpected keyword argument|argument --compilation-config/-cc: .*validation error"),
     "use -cc.cudagraph_mode (underscore), not -cc.cudagraph-mode"),
    ("ibv_retry_exceeded", re.compile(r"IBV_WC_RETRY_EXC_ERR"), "the peer's NCCL went away or the RoCE link dropped"),
    ("gloo_timeout", re.compile(r"[Gg]loo.*(?:[Tt]imed out|timeout|Connection refused)|Timed out.*[Gg]loo|connectFullMesh failed"),
     "Gloo rendezvous failed: check ufw, GLOO_SOCKET_IFNAME and IPv4-only settings"),
    ("cuda_oom", re.compile(r"CUDA out of memory|torch\.OutOfMemoryError"), "lower --max-model-len or --gpu-memory-utilization"),
    ("insufficient_kv", re.compile(r"(?:larger than the available KV cache|No available memory for the cache blocks|max_model_len.*KV cache)"),
     "lower --max-model-len"),
    ("mamba_cache", re.compile(r"[Mm]amba cache"), "raise --max-num-seqs"),
    ("checkpoint_damaged", re.compile(r"SafetensorError|Error while deserializing header|file not fully covered"),
     "a checkpoint file on this node is damaged or cut short: compare it with rank 0 (test_model_same_as_head) and copy "
     "the cache again (gb10check sync)"),
]


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


@dataclass
class VllmLog:
    milestones: list[Milestone] = field(default_factory=list)
    errors: list[LogError] = field(default_factory=list)
    lines: int = 0
    model_gib: float | None = None
    kv_cache_tokens: int | None = None
    startup_complete: bool = False

    @property
    def last_milestone(self) -> str | None:
        return self.milestones[-1].name if self.milestones else None


def _stamp(t: str) -> datetime:
    return datetime.strptime(f"2000-{t}", "%Y-%m-%d %H:%M:%S")


@parser
def parse(text: str) -> VllmLog:
    log = VllmLog()
    seen: set[str] = set()
    first: datetime | None = None
    last_time: str | None = None
    for n, raw in enumerate(strip_ansi(text).splitlines(), 1):
        log.lines = n
        line = PREFIX.sub("", raw.strip())
        if (s := STAMP.match(line)):
            last_time = s["time"]
            first = first or _stamp(last_time)
        for name, pattern in MILESTONES:
            if name in seen:
                continue
            m = pattern.search(line)
            if m:
                seen.add(name)
                values = {k: v for k, v in m.groupdict().items() if v is not None}
                # Lines without a stamp (uvicorn's "Application startup complete.") take the last one seen.
                t_s = (_stamp(last_time) - first).total_seconds() if (last_time and first) else None
                log.milestones.append(Milestone(name, n, last_time, t_s, values))
                break
        for name, pattern, hint in ERRORS:
            if pattern.search(line):
                log.errors.append(LogError(name, n, line[:300], hint))
                break
    if not log.lines:
        raise ParseError("vllm_log", "vLLM server log lines", text)
    for m in log.milestones:
        if m.name == "model_loaded":
            log.model_gib = float(m.values["gib"])
        elif m.name == "kv_cache":
            log.kv_cache_tokens = int(m.values["tokens"].replace(",", ""))
        elif m.name == "startup_complete":
            log.startup_complete = True
    if not log.milestones and not log.errors and "vllm" not in text.lower() and "INFO" not in text:
        raise ParseError("vllm_log", "vLLM log lines (INFO/WARNING/ERROR with timestamps, or a known vLLM error)", text)
    return log
