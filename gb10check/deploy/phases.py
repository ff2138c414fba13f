"""A vLLM rank's startup phases, read from its log: which phase it is in now, and each phase's budget.

A start goes through these phases in order, each closed by its own line (vllm_log's milestones and marks):
  weights        opened by "Starting to load model" / "Loading safetensors checkpoint shards", closed by "Model loading took";
  compile        "Dynamo bytecode transform time" ... "torch.compile took N s in total" (V1, not eager);
  kv_cache       memory profiling and the KV cache, closed by "GPU KV cache size" (V1) / "# GPU blocks" (V0);
  graph_capture  "Capturing CUDA graphs" ... "Graph capturing finished" (not eager, cudagraph_mode not NONE);
  api            "Starting vLLM API server" ... "Application startup complete" (rank 0 only: a headless rank waits for it).
The rank is in the latest phase its log has shown a line of, until that phase's closing line; then in the next phase
the engine runs (its config line says whether it compiles and captures graphs). Before its first weights line (process
start, the rendezvous, the engine's config) it is in no phase: the deploy's stall limit covers that time.
Rank 0's log is read for phases: its engine core logs every phase, where a follower's worker logs only some (the
sim's headless rank stops at its weights line), and a follower that stalls holds rank 0 in the same phase.
Pure: the deploy watch (deploy/run.py) times each phase on its own clock and fails one that outlives its budget.
"""

from ..cluster import STARTUP_PHASES, Cluster, load_profile
from ..facts.vllm_log import Engine, VllmLog

# phase -> (the lines that open it, the lines that close it), by milestone or mark name
LINES = {
    "weights": (("loading",), ("model_loaded",)),
    "compile": (("compile",), ("compiled",)),
    "kv_cache": ((), ("kv_cache",)),
    "graph_capture": (("capturing",), ("graph_capture",)),
    "api": (("api_server",), ("startup_complete",)),
}
assert tuple(LINES) == STARTUP_PHASES

WHAT = {"weights": "loading the weights", "compile": "torch.compile", "kv_cache": "memory profiling and the KV cache",
        "graph_capture": "CUDA graph capture", "api": "the API server's start"}
LIKELY = {
    "weights": "a slow or network disk under the HF cache (gb10check's disk check), a page cache filling unified memory "
               "(drop it), a checkpoint bigger than memory paging in; read the node's MemAvailable and the disk's rate; or a rank "
               "waiting at a collective for a peer that never answers (NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME, a firewall "
               "dropping the master port or the NCCL ports between the nodes): read every rank's log",
    "compile": "a cold torch.compile cache (mount ~/.cache/vllm from the host so the next start reuses it), Triton or "
               "inductor compiling for a GPU its ptxas does not know; rerun with -cc.mode=0 or --enforce-eager to confirm",
    "kv_cache": "the profiling run hung: a rank that died or waits at a collective (read every rank's log), memory "
                "exhausted during profiling (lower --gpu-memory-utilization)",
    "graph_capture": "capture of many batch sizes or a kernel that hangs in capture: lower -cc.max_cudagraph_capture_size, "
                     "-cc.cudagraph_mode=PIECEWISE, or --enforce-eager to confirm; a rank waiting at a collective",
    "api": "the API server waiting for the engine: a follower that never joined or died after the engine started "
           "(read its log), the tokenizer or chat template failing to load",
}


def _skipped(phase: str, engine: Engine, headless: bool) -> bool:
    """A phase this engine does not go through (when its log has shown no line of it)."""
    if phase == "compile":
        return engine.enforce_eager is True or engine.compile_mode in (None, "NONE")
    if phase == "graph_capture":
        return engine.enforce_eager is True or engine.cudagraph_mode == "NONE"
    return phase == "api" and headless


def current(log: VllmLog) -> str | None:
    """The phase the rank is in now; None before its first weights line, and once rank 0 (or a headless rank's last
    phase) is done."""
    seen = {m.name for m in log.milestones} | {m.name for m in log.marks}
    if "startup_complete" in seen:
        return None
    shown = [i for i, (opens, closes) in enumerate(LINES.values()) if seen & {*opens, *closes}]
    if not shown:
        return None
    phase = STARTUP_PHASES[shown[-1]]
    if not seen & set(LINES[phase][1]):
        return phase
    headless = "headless" in seen
    return next((p for p in STARTUP_PHASES[shown[-1] + 1:] if not _skipped(p, log.engine, headless)), None)


def budget(cluster: Cluster, phase: str) -> tuple[float, str]:
    """(seconds, where the figure comes from) of a phase's budget: the cluster file's or its profile's."""
    seconds = cluster.expect.startup_phase_budgets_s[phase]
    profile = cluster.expect.profile
    try:
        theirs = load_profile(profile).values["startup_phase_budgets_s"].get(phase)
    except ValueError:
        theirs = None
    if theirs == seconds:
        return seconds, f"expect.startup_phase_budgets_s.{phase} of profile {profile}"
    return seconds, f"expect.startup_phase_budgets_s.{phase} in the cluster file"
