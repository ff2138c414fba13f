"""The soak stage's driver: sustained load and one long-context request, with the deployment's memory watchdog and a
watch on every rank armed the whole time. What it records is plain data, judged by gb10check/checks/soak.py.

    result = soak.run(cluster, launcher, api)                 # sustained load for soak.duration_s
    result = soak.long_context(cluster, launcher, api)        # one request at ~90 % of max_model_len, a nonce to find

`launcher` is the deployment's (gb10check.deploy.launch.ComposeLauncher, or anything with its mem_available_gib,
exit_code, log, clock, log_since and stop); `api` is gb10check.serving.Api. Both take `on_tick(elapsed_s, result)`,
called about every TICK_S from the driving thread (a live self-test injects its fault from there or from its own
thread), and `stop` (a threading.Event another thread may set to end the run early, recorded as stopped_by "stop").

What runs:
  - streams: `concurrency` threads, each sending streamed chat completions through the `openai` client (mixed prompt
    lengths, fresh text each, so the prefix cache answers none) one after the other until the duration is over; each
    chunk's arrival is timed (time to first token, inter-token gaps);
  - the stall detector (this thread): a stream with no first token within stall_limit_s (the long-context request:
    prefill_limit_s), or silent for stall_limit_s after a token, ends the run, naming the stream;
  - the watch (its own thread): the rank watch the deploy uses too (gb10check/watch.py) every watchdog.poll_interval_s
    on every node (below the floor: every rank killed, the run ends naming the node); every FULL_CHECK_S each rank's
    container state (an exit ends the run with its last log lines) and its log since the start (vllm_log's errors:
    the hang signatures `No available shared memory broadcast block`, `Watchdog caught collective operation timeout`,
    `RPC call to ... timed out`, and NV_ERR_NO_MEMORY, CUDA OOM, NCCL errors, a dead engine end the run).
After a stall every rank is looked at twice (gb10check/stopped.py: its container, processes, CPU time, log and links),
so the judge names the rank that stopped (gb10check/checks/ranks.py).
A run that ends early returns within about a tick of the cause (a stall: stall_limit_s after the stream's last token,
then the looks' few seconds);
streams still open are closed and their threads left to end on their read timeout.
"""

import itertools
import threading
import time
from dataclasses import dataclass, field

from . import stopped
from .cluster import Cluster
from .prompts import SAFE_CHARS_PER_TOKEN, Sizer, filler, fresh_nonce, nonce_found, user, with_nonce, cut
from .remote import RemoteError
from .serving import Api, ApiUnreachable, Reply, Timed, abort_stream
from .watch import FULL_CHECK_S, Crossing, MemoryWatchdog, exited, read_log

TICK_S = 0.25
READ_GRACE_S = 5.0  # the client's own read timeout, past the stall limit: the detector here names the stall first
JOIN_S = 1.0  # how long a run that ends waits for its stream threads (the rest are daemons, ended by their read timeout)
TEMPLATE_TOKENS = 64  # room for the chat template around a prompt sized by estimate
HANG_SIGNATURES = ("shm_broadcast_stall", "collective_timeout", "rpc_timeout")  # the field's TP=2 hang
MEMORY_SIGNATURES = ("nv_err_no_memory", "cuda_oom")


# ---- settings ----------------------------------------------------------------------------------------------------

@dataclass
class Settings:
    """The soak section with its defaults resolved against the deployment (gb10check.cluster.Soak says what each is)."""
    model: str
    duration_s: float
    concurrency: int
    stall_limit_s: float
    floor_gib: float
    poll_interval_s: float
    prompt_tokens: list[int]
    max_tokens: int
    long_context_tokens: int
    nonce_placement: str
    prefill_limit_s: float
    depths: list[int]
    depths_skipped: list[tuple[int, str]]
    depth_prompt_tokens: int
    depth_gen_tokens: int
    depth_runs: int
    min_pp_tok_s: dict[int, float]
    min_tg_tok_s: dict[int, float]
    max_model_len: int


def _floors(value, depths: list[int]) -> dict[int, float]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return {int(d): float(v) for d, v in value.items()}
    return {d: float(value) for d in depths}


def settings(cluster: Cluster, **override) -> Settings:
    """Resolve cluster.soak: concurrency from deploy.max_num_seqs, the floor from the watchdog's, lengths capped by
    max_model_len (a depth that cannot fit with its prompt and generation is skipped, and said). `override` replaces
    any resolved field (a live self-test's shorter duration)."""
    s, d = cluster.soak, cluster.deploy
    room = d.max_model_len - TEMPLATE_TOKENS
    prompt_tokens = sorted({min(p, room - s.max_tokens) for p in s.prompt_tokens if room - s.max_tokens > 0}) or [16]
    depths, skipped = [], []
    for depth in s.depths:
        need = depth + s.depth_prompt_tokens + s.depth_gen_tokens
        if need > room:
            skipped.append((depth, f"{depth} + {s.depth_prompt_tokens} prompt + {s.depth_gen_tokens} generated tokens "
                                   f"do not fit max_model_len {d.max_model_len}"))
        else:
            depths.append(depth)
    values = dict(
        model=d.served_model_name, duration_s=s.duration_s, concurrency=s.concurrency or d.max_num_seqs,
        stall_limit_s=s.stall_limit_s,
        floor_gib=s.min_mem_available if s.min_mem_available is not None else d.watchdog.min_mem_available,
        poll_interval_s=d.watchdog.poll_interval_s, prompt_tokens=prompt_tokens, max_tokens=s.max_tokens,
        long_context_tokens=int(d.max_model_len * s.long_context_fraction), nonce_placement=s.nonce_placement,
        prefill_limit_s=s.prefill_limit_s, depths=depths, depths_skipped=skipped, depth_prompt_tokens=s.depth_prompt_tokens,
        depth_gen_tokens=s.depth_gen_tokens, depth_runs=s.depth_runs, min_pp_tok_s=_floors(s.min_pp_tok_s, s.depths),
        min_tg_tok_s=_floors(s.min_tg_tok_s, s.depths), max_model_len=d.max_model_len)
    values.update(override)
    return Settings(**values)


# ---- what a run records --------------------------------------------------------------------------------------------

@dataclass
class StreamRecord:
    """One stream of the run: when it ran and how it ended. Its timings are the client's record of the stream
    (serving.Timed, every time in seconds), read through the properties below."""
    index: int
    prompt_tokens: int  # asked for (approximate)
    started_s: float  # seconds into the run
    ended_s: float | None = None
    tokens: int = 0  # token chunks while it runs (the stall detector's count); at its end the server's count if it gave one
    error: str | None = None  # why it failed: the server's refusal, no answer, a broken stream, an error event
    aborted: bool = False  # closed by the run itself (it was ending)
    timed: Timed | None = None  # None: nothing came back to time

    @property
    def ttft_s(self) -> float | None:
        return self.timed.ttft_s if self.timed else None

    @property
    def gaps(self) -> list[float]:
        """Inter-token gaps (s)."""
        return self.timed.gaps if self.timed else []

    @property
    def prompt_tokens_served(self) -> int | None:
        """usage.prompt_tokens."""
        return self.timed.stream.prompt_tokens if self.timed else None

    @property
    def content(self) -> str:
        return (self.timed.stream.content or "") if self.timed else ""

    @property
    def reasoning(self) -> str:
        return (self.timed.stream.reasoning or "") if self.timed else ""


@dataclass
class Stall:
    stream: int
    prompt_tokens: int
    silent_s: float
    at_s: float  # seconds into the run when it was named
    tokens: int  # token chunks the stream had before it went silent
    waiting_for: str  # "its first token" | "its next token"
    limit_s: float


@dataclass
class RankExit:
    node: str
    rank: int
    code: int
    at_s: float
    last_lines: list[str]
    cause: str | None = None  # the log's known cause, with its hint


@dataclass
class Signature:
    node: str
    rank: int
    name: str  # vllm_log's error name (shm_broadcast_stall, collective_timeout, rpc_timeout, nv_err_no_memory ...)
    line: str
    hint: str
    at_s: float


@dataclass
class Watched:
    """What the watch saw: memory per node, the floor crossed, ranks that exited, signatures in their logs."""
    floor_gib: float
    memory: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # node -> [(s into the run, GiB)]
    crossing: Crossing | None = None
    crossing_at_s: float | None = None
    exits: list[RankExit] = field(default_factory=list)
    signatures: list[Signature] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # "node: what could not be read" (not checked, not a fault)

    def min_memory(self) -> dict[str, float]:
        return {n: min(g for _, g in samples) for n, samples in self.memory.items() if samples}

    def cause_at(self) -> float | None:
        times = [e.at_s for e in self.exits] + [s.at_s for s in self.signatures]
        times += [self.crossing_at_s] if self.crossing_at_s is not None else []
        return min(times) if times else None


@dataclass
class SoakResult:
    planned_s: float
    concurrency: int
    stall_limit_s: float
    watched: Watched
    elapsed_s: float = 0.0
    streams: list[StreamRecord] = field(default_factory=list)
    stalls: list[Stall] = field(default_factory=list)
    stopped_by: str | None = None  # what ended the run early: "stall", "memory floor", "rank exited", "signature", "stop"
    rank_looks: list | None = None  # after a stall: two looks at every rank (gb10check/stopped.py), to name the one that stopped

    def cause_at(self) -> float | None:
        times = [s.at_s for s in self.stalls] + ([self.watched.cause_at()] if self.watched.cause_at() is not None else [])
        return min(times) if times else None

    def failed(self) -> list[StreamRecord]:
        """Requests that failed before anything else went wrong (after a cause, failures are its consequence)."""
        cause = self.cause_at()
        return [s for s in self.streams if s.error and not s.aborted
                and (cause is None or s.ended_s is None or s.ended_s < cause - FULL_CHECK_S - TICK_S)]

    def figures(self) -> dict[str, float]:
        return figures(self)


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default), q in 0..100."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def figures(result: SoakResult) -> dict[str, float]:
    """requests done, p50/p99 inter-token latency (ms), p50/p99 TTFT (s), aggregate output tok/s, and each node's lowest
    MemAvailable (GiB, keyed "min_mem_available NODE")."""
    done = [s for s in result.streams if s.error is None and not s.aborted and s.ended_s is not None]
    gaps = [g for s in result.streams for g in s.gaps]
    ttfts = [s.ttft_s for s in result.streams if s.ttft_s is not None]
    out = {"requests_done": float(len(done)), "requests_failed": float(len(result.failed())),
           "output_tok_s": sum(s.tokens for s in result.streams) / result.elapsed_s if result.elapsed_s > 0 else 0.0}
    for name, values, q, scale in (("itl_p50_ms", gaps, 50, 1000), ("itl_p99_ms", gaps, 99, 1000),
                                   ("ttft_p50_s", ttfts, 50, 1), ("ttft_p99_s", ttfts, 99, 1)):
        p = percentile(values, q)
        if p is not None:
            out[name] = p * scale
    for node, gib in result.watched.min_memory().items():
        out[f"min_mem_available {node}"] = gib
    return out


# ---- the watch (its own thread) ----------------------------------------------------------------------------------

class Watch(threading.Thread):
    """Side sampler: the deployment's MemoryWatchdog on every node the whole time; every FULL_CHECK_S each rank's
    container state and new log lines. Sets `fired` when something ends the run."""

    def __init__(self, cluster: Cluster, launcher, floor_gib: float, poll_s: float, t0: float, clock=time.monotonic, sleep=None):
        """`clock` and `sleep` are the watch's time (a self-test scripts both); `sleep` defaults to a wait that stop() ends."""
        super().__init__(daemon=True, name="gb10check-soak-watch")
        self.cluster, self.launcher, self.poll_s, self.t0, self.clock = cluster, launcher, poll_s, t0, clock
        self.order = [n.name for n in cluster.by_rank()]
        self.watchdog = MemoryWatchdog(launcher, self.order, floor_gib, clock=clock)
        self.seen = Watched(floor_gib)
        self.fired = threading.Event()
        self.done = threading.Event()
        self.since: dict[str, float | None] = {}
        self.cause: str | None = None
        self.sleep = sleep or self.done.wait

    def start_logs(self) -> None:
        """Each node's clock now: its log is read from here on (what was logged before the run is not the run's)."""
        for n in self.order:
            try:
                self.since[n] = self.launcher.clock(n)
            except (RemoteError, ValueError) as exc:
                self.since[n] = None
                self._unreadable(n, f"its clock (date +%s.%N): {exc}")

    def _unreadable(self, node: str, what: str) -> None:
        text = f"{node}: {what}"
        if text not in self.seen.unreadable:
            self.seen.unreadable.append(text)

    def _at(self) -> float:
        return round(self.clock() - self.t0, 2)

    def _fire(self, cause: str) -> None:
        if self.cause is None:
            self.cause = cause
        self.fired.set()

    def memory(self) -> None:
        try:
            crossing = self.watchdog.check()
        except RemoteError as exc:
            self._unreadable(exc.node.name if exc.node is not None else "a node", f"MemAvailable: {exc}")
            return
        finally:
            for t, n, gib in self.watchdog.samples:
                self.seen.memory.setdefault(n, []).append((round(t - self.t0, 2), gib))
            self.watchdog.samples.clear()
        if crossing is not None:
            self.seen.crossing = crossing
            self.seen.crossing_at_s = min((t for t, g in self.seen.memory.get(crossing.node, []) if g == crossing.gib),
                                          default=self._at())
            self._fire("memory floor")

    def ranks(self) -> None:
        for n in self.order:
            rank = self.cluster.node(n).rank
            try:
                gone = exited(self.launcher, n)
                if gone is not None:
                    self.seen.exits.append(RankExit(n, rank, gone.code, self._at(), gone.last_lines, gone.cause))
                    self._fire("rank exited")
                    continue
                if self.since.get(n) is None:
                    continue
                now, text = self.launcher.log_since(n, self.since[n] - 1.0)  # a second of overlap: nothing falls between
                self.since[n] = now
            except (RemoteError, ValueError) as exc:
                self._unreadable(n, f"container state or log: {exc}")
                continue
            if not text.strip():
                continue
            known = {(s.node, s.name) for s in self.seen.signatures}
            for e in read_log(text).errors:
                if (n, e.name) not in known:
                    self.seen.signatures.append(Signature(n, rank, e.name, e.text.strip()[:300], e.hint, self._at()))
                    self._fire("signature")

    def run(self) -> None:
        last_full = float("-inf")
        while not self.done.is_set() and not self.fired.is_set():
            self.memory()
            if self.fired.is_set():
                break
            if self.clock() - last_full >= FULL_CHECK_S:
                last_full = self.clock()
                self.ranks()
            self.sleep(self.poll_s)

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=self.poll_s + 5)


# ---- streams and the stall detector ------------------------------------------------------------------------------

@dataclass
class _Active:
    record: StreamRecord
    started: float
    last: float
    first_limit_s: float
    stream: object | None = None


def load_request(model: str, content: str, max_tokens: int, **extra) -> dict:
    return {"model": model, "messages": user(content), "temperature": 0, "max_tokens": max_tokens,
            "chat_template_kwargs": {"enable_thinking": False}, "stream_options": {"include_usage": True}, **extra}


class _Driver:
    """Streams from `concurrency` threads (bodies from `next_body`), the stall detector and the watch, until the
    duration is over (or the bodies run out) and every stream has ended, or something ends the run."""

    def __init__(self, cluster, launcher, api: Api, cfg: Settings, next_body, concurrency: int, duration_s: float,
                 first_limit_s: float, on_tick, stop: threading.Event | None, clock=time.monotonic):
        self.api, self.cfg, self.next_body, self.clock = api, cfg, next_body, clock
        self.cluster, self.launcher = cluster, launcher
        api.client  # made (openai imported) before the clock starts: that second is not the server's to answer
        self.concurrency, self.duration_s, self.first_limit_s, self.on_tick = concurrency, duration_s, first_limit_s, on_tick
        self.stop = stop or threading.Event()
        self.ending = threading.Event()
        self.lock = threading.Lock()
        self.active: dict[int, _Active] = {}
        self.t0 = clock()
        self.watch = Watch(cluster, launcher, cfg.floor_gib, cfg.poll_interval_s, self.t0, clock) if launcher is not None else None
        self.result = SoakResult(duration_s, concurrency, cfg.stall_limit_s, self.watch.seen if self.watch else Watched(cfg.floor_gib))
        self.counter = itertools.count()

    def _one(self, body: dict, prompt_tokens: int) -> None:
        now = self.clock()
        rec = StreamRecord(next(self.counter), prompt_tokens, round(now - self.t0, 2))
        act = _Active(rec, now, now, self.first_limit_s)
        with self.lock:
            self.result.streams.append(rec)
            self.active[rec.index] = act

        def opened(stream) -> None:
            act.stream = stream

        def chunk(_t: float, token: bool) -> None:
            act.last = self.clock()
            if token:
                rec.tokens += 1

        try:
            reply, timed = self.api.stream(body, read_timeout_s=self.first_limit_s + READ_GRACE_S, on_open=opened,
                                           on_chunk=chunk)
        except ApiUnreachable as exc:
            reply, timed = Reply(None, "", str(exc)), None
        with self.lock:
            self.active.pop(rec.index, None)
            rec.ended_s = round(self.clock() - self.t0, 2)
            rec.aborted = self.ending.is_set()
        if reply is not None:
            rec.error = f"{reply.status}: {reply.error}" if reply.status is not None else reply.error
            return
        rec.timed = timed
        rec.tokens = timed.completion_tokens or timed.token_chunks
        problems = [p for p in (timed.stream.error and f"error event: {timed.stream.error}", timed.broken) if p]
        if problems:
            rec.error = "; ".join(problems)

    def _worker(self) -> None:
        while not self.stop.is_set() and self.clock() - self.t0 < self.duration_s:
            with self.lock:
                nxt = self.next_body()
            if nxt is None:
                return
            self._one(*nxt)

    def _stalls(self) -> None:
        now = self.clock()
        with self.lock:
            active = list(self.active.values())
        for a in active:
            rec = a.record
            if rec.tokens == 0 and now - a.started > a.first_limit_s:
                silent, waiting, limit = now - a.started, "its first token", a.first_limit_s
            elif rec.tokens > 0 and now - a.last > self.cfg.stall_limit_s:
                silent, waiting, limit = now - a.last, "its next token", self.cfg.stall_limit_s
            else:
                continue
            if all(s.stream != rec.index for s in self.result.stalls):
                self.result.stalls.append(Stall(rec.index, rec.prompt_tokens, round(silent, 1), round(now - self.t0, 2),
                                                rec.tokens, waiting, limit))

    def _abort(self) -> None:
        self.ending.set()
        with self.lock:
            active = list(self.active.values())
        for a in active:
            try:
                if a.stream is not None:
                    abort_stream(a.stream)
            except Exception:  # best effort: the thread also ends on its read timeout
                pass

    def run(self) -> SoakResult:
        if self.watch is not None:
            self.watch.start_logs()
            self.watch.start()
        threads = [threading.Thread(target=self._worker, daemon=True, name=f"gb10check-soak-{i}")
                   for i in range(self.concurrency)]
        for t in threads:
            t.start()
        try:
            while True:
                time.sleep(TICK_S)
                self._stalls()
                if self.on_tick is not None:
                    self.result.elapsed_s = round(self.clock() - self.t0, 2)
                    self.on_tick(self.result.elapsed_s, self.result)
                if self.result.stalls:
                    self.result.stopped_by = "stall"
                    break
                if self.watch is not None and self.watch.fired.is_set():
                    self.result.stopped_by = self.watch.cause
                    break
                if self.stop.is_set():
                    self.result.stopped_by = "stop"
                    break
                if not any(t.is_alive() for t in threads):
                    break
        finally:
            self.stop.set()
            self._abort()
            deadline = time.monotonic() + JOIN_S  # a stream blocked in a read ends on its own read timeout, later
            for t in threads:
                t.join(timeout=max(0.0, deadline - time.monotonic()))
            if self.watch is not None:
                self.watch.stop()
            self.result.elapsed_s = round(self.clock() - self.t0, 2)
        if self.result.stopped_by == "stall" and getattr(self.launcher, "nodes", None):
            self.result.rank_looks = stopped.looks(self.cluster, self.launcher.nodes)  # over the launcher's connections
        return self.result


def run(cluster: Cluster, launcher, api: Api, config: Settings | None = None, on_tick=None,
        stop: threading.Event | None = None) -> SoakResult:
    """Sustained load for config.duration_s at config.concurrency, watched; see the module's docstring."""
    cfg = config or settings(cluster)
    sizer = Sizer(api, cfg.model)
    chars_per_token = sizer.chars_per_token() * 0.97 if sizer.count(user("ready?")) else SAFE_CHARS_PER_TOKEN
    seeds = itertools.count(int(time.time() * 1000) % 10**9)
    lengths = itertools.cycle(cfg.prompt_tokens)

    def next_body():
        tokens = next(lengths)
        text = cut(filler(int(tokens * chars_per_token) + 200, next(seeds)), int(tokens * chars_per_token))
        return load_request(cfg.model, text + "\n\nWrite a short story that uses some of the words above.",
                            cfg.max_tokens), tokens

    return _Driver(cluster, launcher, api, cfg, next_body, cfg.concurrency, cfg.duration_s, cfg.stall_limit_s,
                   on_tick, stop).run()


# ---- the long-context request ------------------------------------------------------------------------------------

@dataclass
class LongContext:
    target_tokens: int
    sized_by: str
    nonce: str
    placement: str
    soak: SoakResult  # its one stream, stall and watch
    max_model_len: int

    @property
    def stream(self) -> StreamRecord | None:
        return self.soak.streams[0] if self.soak.streams else None

    @property
    def prompt_tokens(self) -> int | None:
        s = self.stream
        return s.prompt_tokens_served if s and s.prompt_tokens_served else None

    @property
    def found(self) -> bool:
        s = self.stream
        return bool(s) and nonce_found(self.nonce, s.content, s.reasoning)

    @property
    def prompt_tok_s(self) -> float | None:
        s = self.stream
        if not s or not s.ttft_s or s.ttft_s <= 0:
            return None
        return (self.prompt_tokens or self.target_tokens) / s.ttft_s


def long_context(cluster: Cluster, launcher, api: Api, config: Settings | None = None, on_tick=None,
                 stop: threading.Event | None = None, nonce: str | None = None, target_tokens: int | None = None) -> LongContext:
    """One request at config.long_context_tokens (about 90 % of max_model_len), fresh text around a fresh nonce at
    config.nonce_placement, asking for the nonce; the first token may take config.prefill_limit_s (the prefill), the
    next ones config.stall_limit_s each; the watch armed. `target_tokens` overrides the size (a prompt larger than the
    server accepts, on purpose)."""
    cfg = config or settings(cluster)
    nonce = nonce or fresh_nonce()
    target = target_tokens or cfg.long_context_tokens
    seed = int(nonce)
    text = filler(int(target * 6) + 1000, seed)
    sized = Sizer(api, cfg.model).fit(lambda chars: user(with_nonce(cut(text, chars), nonce, cfg.nonce_placement)), target)
    bodies = iter([(load_request(cfg.model, sized.messages[0]["content"], 32), sized.tokens)])
    result = _Driver(cluster, launcher, api, cfg, lambda: next(bodies, None), 1, cfg.prefill_limit_s + cfg.stall_limit_s,
                     cfg.prefill_limit_s, on_tick, stop).run()
    return LongContext(target, sized.how, nonce, cfg.nonce_placement, result, cfg.max_model_len)
