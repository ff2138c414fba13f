"""Serving: the API is up on rank 0 only, lets us in, serves the configured model, answers, reasons, calls
tools, streams, takes max_num_seqs requests at once, and decodes fast enough.

Pure judges over what gb10check.serving gathered (a `Reply` for a refused or unanswered request, the
completion's or stream's facts from facts.vllm_api, client-side timings) and the cluster's settings.
"""

import json
import statistics
from dataclasses import dataclass

from ..cluster import Deploy, ExpectEngine, Serving
from ..facts.vllm_api import ChatCompletion, ParseError, ToolCall, parse_metrics_info, parse_models
from ..facts.vllm_log import VllmLog
from ..remedies import Code
from ..serving import Level, Reply, Timed
from ..sizing import SizingError, decode_bytes, decode_floor
from ..verdict import Finding

CHAT = "POST /chat/completions"


def judge_refused(where: str, request: str, reply: Reply, model: str, code: Code = Code.API_ERROR,
                  expected: str = "200", **params) -> list[Finding]:
    """A request the server did not answer with 200: no answer in time, the model unknown, or the check's own code."""
    if reply.status is None:
        return [Finding(Code.API_TIMEOUT, where, f"{request} -> {reply.error}", f"{expected} within the timeout",
                        request=request)]
    if reply.status == 404 and model in reply.error:
        return [Finding(Code.MODEL_NOT_SERVED, where, f"{request} -> 404: {reply.error}", f"{expected} for model {model!r}",
                        name=model)]
    return [Finding(code, where, f"{request} -> {reply.status}: {reply.error}", expected,
                    request=request, status=reply.status, **params)]


# ---- up, key, rank 0 only -----------------------------------------------------------------------

def judge_health(where: str, health: Reply | None, unreachable: str | None, port: int) -> list[Finding]:
    if health is None:
        return [Finding(Code.API_DOWN, where, f"no answer: {unreachable}", "GET /health -> 200", port=port)]
    if health.status != 200:
        seen = f"GET /health -> {health.error}" if health.status is None else f"GET /health -> {health.status} {health.text[:200]!r}"
        return [Finding(Code.API_DOWN, where, seen, "GET /health -> 200 (the engine is up)", port=port)]
    return []


def judge_api_key(where: str, models: Reply, key_sent: bool, env: str) -> list[Finding]:
    if models.status in (401, 403):
        sent = "a key from " + env if key_sent else f"no key ({env} is not set)"
        return [Finding(Code.API_KEY, where, f"GET /v1/models -> {models.status} {models.error!r} with {sent}",
                        "200 with the configured key (or no key required)", env=env)]
    return []


def judge_follower_port(node: str, port: int, accepts: bool) -> list[Finding]:
    """Only rank 0 serves: a follower that accepts connections on the API port runs a full engine (no --headless)."""
    if accepts:
        return [Finding(Code.API_ON_FOLLOWER, node, f"port {port} accepts connections", f"port {port} closed on every rank but 0")]
    return []


# ---- the model served ---------------------------------------------------------------------------

def judge_models(where: str, url: str, reply: Reply, deploy: Deploy) -> list[Finding]:
    """GET /v1/models lists the served name, with the configured checkpoint as root and max_model_len (when reported)."""
    if reply.status != 200:
        return judge_refused(where, "GET /v1/models", reply, deploy.served_model_name, expected="200 with the model list")
    try:
        models = parse_models(reply.text)
    except ParseError as exc:
        return [Finding(Code.GARBLED, where, str(exc), "a /v1/models list", command=f"curl -s {url}")]
    mine = [m for m in models if m.id == deploy.served_model_name]
    if not mine:
        return [Finding(Code.MODEL_NOT_SERVED, where, f"models {[m.id for m in models]}", f"{deploy.served_model_name!r} listed",
                        name=deploy.served_model_name)]
    m = mine[0]
    findings = []
    if m.root is not None and m.root != deploy.model_id:
        findings.append(Finding(Code.MODEL_ROOT, where, f"root {m.root!r}", f"root {deploy.model_id!r}", model=deploy.model_id))
    if m.max_model_len is not None and m.max_model_len != deploy.max_model_len:  # None: older vLLM, not reported
        findings.append(Finding(Code.MAX_MODEL_LEN, where, f"max_model_len {m.max_model_len}", f"max_model_len {deploy.max_model_len}",
                                value=deploy.max_model_len))
    return findings


def judge_unknown_model(where: str, reply: Reply | None, model: str) -> list[Finding]:
    """A model the server does not serve is a 404 that names it (clients show that message to people)."""
    if reply is None:  # the server answered 200
        return [Finding(Code.ERROR_STATUS, where, f"200 (an answer) for model {model!r}", "404 naming the unknown model", status=200)]
    if reply.status is None:
        return [Finding(Code.API_TIMEOUT, where, f"{CHAT} -> {reply.error}", "404 naming the unknown model", request=CHAT)]
    if reply.status != 404:
        return [Finding(Code.ERROR_STATUS, where, f"{reply.status} {reply.error}", "404 naming the unknown model", status=reply.status)]
    if model not in reply.error:
        return [Finding(Code.ERROR_STATUS, where, f"404 without naming the model: {reply.error!r}", "404 naming the unknown model",
                        status=404)]
    return []


METRIC_NAMES = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")  # current name, older name


def kv_cache_usage(text: str) -> float | None:
    """The KV cache usage gauge (0..1) in a Prometheus /metrics body, under either name; None when absent or unreadable."""
    for line in text.splitlines():
        if line.startswith(METRIC_NAMES):
            try:
                return float(line.rsplit(" ", 1)[1])
            except (IndexError, ValueError):
                return None
    return None


def judge_metrics(where: str, reply: Reply) -> list[Finding]:
    if reply.status != 200:
        seen = f"GET -> {reply.error}" if reply.status is None else f"GET -> {reply.status}"
        return [Finding(Code.METRICS, where, seen, "200 with Prometheus metrics")]
    if kv_cache_usage(reply.text) is None:
        return [Finding(Code.METRICS, where, "no vllm:kv_cache_usage_perc (or vllm:gpu_cache_usage_perc) sample",
                        "the KV cache usage gauge")]
    return []


# ---- answers ------------------------------------------------------------------------------------

def judge_answer(where: str, reply: Reply | None, c: ChatCompletion | None, serving: Serving, model: str) -> list[Finding]:
    if reply is not None:
        return judge_refused(where, CHAT, reply, model)
    if serving.basic_expect not in (c.content or ""):
        return [Finding(Code.ANSWER_WRONG, where, f"{(c.content or '')[:300]!r} to {serving.basic_prompt!r}",
                        f"an answer containing {serving.basic_expect!r}")]
    return []


def judge_reasoning(where: str, reply: Reply | None, c: ChatCompletion | None, parser: str, model: str) -> list[Finding]:
    """With enable_thinking, the reasoning comes apart from the content (`reasoning` or `reasoning_content`)."""
    if reply is not None:
        return judge_refused(where, CHAT, reply, model)
    findings = []
    if not (c.reasoning or "").strip():
        findings.append(Finding(Code.REASONING_MISSING, where, f"no reasoning field; content {(c.content or '')[:200]!r}",
                                "non-empty message.reasoning (or reasoning_content) with enable_thinking", parser=parser))
    if "<think>" in (c.content or "") or "</think>" in (c.content or ""):
        findings.append(Finding(Code.REASONING_MISSING, where, f"think tags in content {(c.content or '')[:200]!r}",
                                "reasoning split out of the content", parser=parser))
    if c.reasoning_tokens is not None and c.reasoning_tokens <= 0 and (c.reasoning or "").strip():
        findings.append(Finding(Code.REASONING_MISSING, where, f"usage reasoning_tokens {c.reasoning_tokens}",
                                "reasoning_tokens > 0", parser=parser))
    return findings


def judge_tool_call(where: str, reply: Reply | None, finish: str | None, calls: list[ToolCall], parser: str,
                    model: str, streamed: bool = False) -> list[Finding]:
    """One get_weather call with JSON arguments valid for its schema, finish_reason 'tool_calls'."""
    if reply is not None:
        if reply.status is None or (reply.status == 404 and model in reply.error):
            return judge_refused(where, CHAT, reply, model)
        return [Finding(Code.TOOL_CALL_MISSING, where, f"{reply.status}: {reply.error}",
                        "200 with a streamed tool call" if streamed else "200 with a tool call", parser=parser)]
    where = f"{where} (streamed)" if streamed else where
    if finish != "tool_calls" or not calls:
        return [Finding(Code.TOOL_CALL_MISSING, where, f"finish_reason {finish!r}, {len(calls)} tool calls",
                        "finish_reason 'tool_calls' with a get_weather call", parser=parser)]
    call = calls[0]
    if call.name != "get_weather":
        return [Finding(Code.TOOL_CALL_MISSING, where, f"function {call.name!r}", "function 'get_weather'", parser=parser)]
    try:
        args = json.loads(call.arguments)
    except json.JSONDecodeError:
        return [Finding(Code.TOOL_CALL_MISSING, where, f"arguments {call.arguments[:200]!r} (not JSON)",
                        "JSON arguments", parser=parser)]
    if not isinstance(args, dict) or not isinstance(args.get("city"), str):
        return [Finding(Code.TOOL_CALL_MISSING, where, f"arguments {args!r}",
                        "arguments valid for the tool's schema: {'city': <string>}", parser=parser)]
    return []


def judge_stream(where: str, reply: Reply | None, timed: Timed | None, model: str) -> list[Finding]:
    """Several token chunks, a usage chunk (stream_options.include_usage), then [DONE]; no error inside."""
    if reply is not None:
        return judge_refused(where, f"streaming {CHAT}", reply, model)
    problems = []
    if timed.stream.error:
        problems.append(f"an error event in the stream: {timed.stream.error}")
    if timed.broken:
        problems.append(timed.broken)
    if timed.token_chunks < 2:
        problems.append(f"{timed.token_chunks} chunks with tokens (expected several)")
    if not timed.done:
        problems.append("no 'data: [DONE]' at the end")
    if not timed.stream.usage_chunk or not timed.completion_tokens:
        problems.append("no usage chunk although stream_options.include_usage was set")
    if problems:
        return [Finding(Code.STREAM_BROKEN, where, "; ".join(problems), "token chunks, a usage chunk, then [DONE]")]
    return []


def judge_concurrency(where: str, replies: list[Reply | None], model: str) -> list[Finding]:
    """max_num_seqs requests sent at once are all answered (None: answered)."""
    n = len(replies)
    failed = [(i, r) for i, r in enumerate(replies) if r is not None]
    if not failed:
        return []
    first = failed[0][1]
    if len(failed) == n and all(r.status == first.status for _, r in failed) and first.status == 404 and model in first.error:
        return judge_refused(where, CHAT, first, model)  # every request refused alike: one request would be too
    text = "; ".join(f"#{i}: {r.status if r.status is not None else 'no answer'} {r.error}" for i, r in failed)
    return [Finding(Code.CONCURRENCY, where, f"{len(failed)} of {n} failed: {text[:400]}",
                    f"all {n} (max_num_seqs) requests at once answered", value=n)]


def level_problems(level: Level) -> list[str]:
    """What went wrong at one sweep level: each stream refused with 5xx, unanswered, cut or carrying an error event,
    and /health after it (the engine's death shows there even when every stream came back)."""
    problems = []
    for i, (reply, timed) in enumerate(level.results):
        if reply is not None:  # a 5xx, no answer, or a refusal (a 4xx is no answer either)
            problems.append(f"#{i}: {reply.status if reply.status is not None else 'no answer'} {reply.error}")
        elif timed.broken or timed.stream.error or not timed.done:
            problems.append(f"#{i}: " + "; ".join(x for x in (timed.broken, timed.stream.error and f"error event {timed.stream.error}",
                                                               None if timed.done else "no [DONE]") if x))
    if level.health.status != 200:
        problems.append(f"GET /health after the level: {level.health.status if level.health.status is not None else 'no answer'}"
                        f" {level.health.error if level.health.status is not None else level.health.failure or ''}".rstrip())
    return problems


def log_cause(log: VllmLog) -> str | None:
    """The fatal error rank 0's log names (its root cause before a generic 'engine core failed'), shortened; None: none."""
    cause = log.cause
    return None if cause is None else f"{cause.name}: {cause.text[:240]}"


def judge_sweep_level(where: str, level: Level, model: str, cause: str | None) -> list[Finding]:
    """Every stream of the level answered (no 5xx, none cut) and the engine alive after it; a failing level names itself,
    what failed and, when rank 0's log says why, the cause from the log."""
    problems = level_problems(level)
    if not problems:
        return []
    first = level.results[0][0]
    if first is not None and all(r is not None and r.status == 404 for r, _ in level.results) and model in first.error:
        return judge_refused(where, CHAT, first, model)  # the model is not served: one request would say so too
    seen = f"level {level.n} ({level.n} streams at once): {len(problems)} problem{'s' if len(problems) != 1 else ''}: "
    seen += "; ".join(problems)[:500]
    if cause:
        seen += f"; rank 0's log: {cause}"
    return [Finding(Code.SWEEP_LEVEL, where, seen, f"every stream of every level answered and /health 200 after it",
                    value=level.n)]


# ---- decode speed -------------------------------------------------------------------------------

def judge_decode_run(where: str, reply: Reply | None, timed: Timed | None, model: str) -> list[Finding]:
    """One throughput run can be timed: answered, streamed tokens, and the server's completion_tokens (usage chunk)."""
    if reply is not None:
        return judge_refused(where, CHAT, reply, model)
    if timed.decode_tok_s is None:
        seen = f"cannot time decoding: {timed.token_chunks} token chunks, completion_tokens {timed.completion_tokens}"
        seen += f" ({timed.broken})" if timed.broken else " (usage chunk missing?)"
        return [Finding(Code.STREAM_BROKEN, where, seen, "token chunks and a usage chunk (stream_options.include_usage)")]
    return []


@dataclass(frozen=True)
class DerivedFloor:
    """The decode floor derived from first principles (sizing.decode_floor), or None and why it cannot be."""
    tok_s: float | None
    how: str  # the arithmetic, or the cause


def derive_floor(sizing_files: tuple[str, str] | None, unread: str | None, tp: int, bandwidth_gbs: float | None,
                 efficiency: float | None, profile: str) -> DerivedFloor:
    """From the model's config.json and safetensors index on rank 0 (None: `unread` says why), TP and the profile's figures."""
    if bandwidth_gbs is None or efficiency is None:
        return DerivedFloor(None, f"profile {profile} gives no expect.memory_bandwidth_gbs / expect.decode_efficiency "
                                  "(null: they do not apply to this hardware)")
    if sizing_files is None:
        return DerivedFloor(None, f"the model's size cannot be read: {unread}")
    try:
        config, index = (json.loads(t) for t in sizing_files)
        per_node = decode_bytes(config, index, tp)
        floor = decode_floor(per_node.per_node_bytes, bandwidth_gbs, efficiency)
    except (SizingError, ValueError, TypeError, AttributeError) as exc:
        return DerivedFloor(None, f"the model's size cannot be read: {exc}")
    return DerivedFloor(floor, f"{bandwidth_gbs:g} GB/s x {efficiency:g} / {per_node.per_node_bytes / 1e9:.2f} GB a token per "
                               f"node ({per_node.how})")


def judge_decode(where: str, runs: list[Timed], minimum: float | None, derived: DerivedFloor) -> list[Finding]:
    """The median decode tok/s of the runs against serving.min_decode_tok_s, else against the derived floor; with
    neither, not checked."""
    rates = [r.decode_tok_s for r in runs if r.decode_tok_s is not None]
    if not rates:
        return [Finding(Code.STREAM_BROKEN, where, f"none of {len(runs)} runs could be timed",
                        "token chunks and a usage chunk (stream_options.include_usage)")]
    decode = statistics.median(rates)
    e2e = statistics.median(r.e2e_tok_s for r in runs if r.decode_tok_s is not None)
    seen = f"decode {decode:.1f} tok/s (median of {len(rates)}; end-to-end {e2e:.1f} tok/s)"
    if minimum is not None:
        if decode < minimum:
            return [Finding(Code.DECODE_SLOW, where, seen, f">= {minimum:g} tok/s (serving.min_decode_tok_s)")]
        return []
    if derived.tok_s is None:
        return [Finding(Code.DECODE_FLOOR_UNKNOWN, where, f"{seen}; no floor to judge it by: {derived.how}",
                        "serving.min_decode_tok_s, or a floor derived from the profile's memory bandwidth and the model's "
                        "weights", why=derived.how)]
    if decode < derived.tok_s:
        return [Finding(Code.DECODE_SLOW, where, f"{seen}, {decode / derived.tok_s:.2f} of the derived floor",
                        f">= {derived.tok_s:.1f} tok/s (derived: {derived.how})")]
    return []


# ---- the engine as it resolved ------------------------------------------------------------------------------------

# serving.expect_engine field -> (what it is, how to ask vLLM for it)
ENGINE_FIELDS = {
    "attention_backend": ("attention backend", "start vLLM with --attention-backend {v} (VLLM_ATTENTION_BACKEND={v} before 0.11)"),
    "moe_backend": ("MoE backend", "start vLLM with --moe-backend {v}"),
    "linear_kernel": ("linear kernel", "serve a checkpoint and image whose quantization runs on {v} on this GPU "
                                       "(--linear-backend on recent vLLM)"),
    "kv_cache_dtype": ("KV cache dtype", "start vLLM with --kv-cache-dtype {v}"),
    "cudagraph_mode": ("cudagraph mode", "start vLLM with -cc.cudagraph_mode={v} (underscore) and without --enforce-eager"),
    "speculative": ("speculative decoding", "start vLLM with --speculative-config whose method is {v} (none: without it)"),
    "quantization": ("quantization", "start vLLM with --quantization {v}, or serve a checkpoint quantized so"),
}
ASKED_FLAGS = {"kv_cache_dtype": "--kv-cache-dtype", "cudagraph_mode": "-cc.cudagraph_mode", "quantization": "--quantization",
               "max_model_len": "--max-model-len", "enforce_eager": "--enforce-eager", "max_num_seqs": "--max-num-seqs"}


def metrics_info(reply: Reply | None) -> dict:
    """The /metrics info gauges, or {} when /metrics did not answer or holds none (the log says the rest)."""
    if reply is None or reply.status != 200:
        return {}
    try:
        return parse_metrics_info(reply.text)
    except ParseError:
        return {}


def resolved_engine(log: VllmLog, info: dict) -> dict[str, list[str]]:
    """serving.expect_engine field -> what the engine chose, first the served model's (a drafter's may follow)."""
    e = log.engine
    kv = e.kv_cache_dtype or info.get("cache_config_info", {}).get("cache_dtype")
    one = lambda v: [v] if v is not None else []  # noqa: E731
    return {"attention_backend": e.attention, "moe_backend": e.moe, "linear_kernel": e.linear, "kv_cache_dtype": one(kv),
            "cudagraph_mode": one(e.cudagraph_mode), "speculative": one(e.speculative), "quantization": one(e.quantization)}


def _same(a, b) -> bool:
    """One value as vLLM writes it in different places: case aside, and fp8 is its default fp8 format (fp8_e4m3)."""
    a, b = str(a).casefold(), str(b).casefold()
    return a == b or {a, b} & {"fp8"} and (a.startswith("fp8_") or b.startswith("fp8_"))


def judge_engine(where: str, log: VllmLog, info: dict, expect: ExpectEngine, deploy: Deploy, fallbacks: list[str],
                 profile: str, command: str) -> list[Finding]:
    """What the engine runs against what the cluster file expects (serving.expect_engine, deploy.max_num_seqs), what its
    own `non-default args` asked, and the profile's fallback kernels; variables vLLM does not know, by name."""
    e = log.engine
    if not e.config_line:
        return [Finding(Code.ENGINE_CONFIG, where, "no engine config line ('Initializing a V1 LLM engine (vX) with config: "
                        "...') in rank 0's log", "the engine's resolved configuration", unchecked=True,
                        how="read the whole log by hand", log=command)]
    findings = []
    resolved = resolved_engine(log, info)
    for name, (what, how) in ENGINE_FIELDS.items():
        wanted = getattr(expect, name)
        if wanted is None:
            continue
        chose = resolved[name]
        if not chose:
            findings.append(Finding(Code.ENGINE_CONFIG, where, f"the log names no {what}",
                                    f"{what} {wanted} (serving.expect_engine.{name})", unchecked=True,
                                    how=how.format(v=wanted), log=command))
        elif not _same(chose[0], wanted):
            also = f" (then {', '.join(chose[1:])})" if len(chose) > 1 else ""
            findings.append(Finding(Code.ENGINE_CONFIG, where, f"{what} {chose[0]}{also}",
                                    f"{what} {wanted} (serving.expect_engine.{name})", how=how.format(v=wanted), log=command))
    if e.max_num_seqs is None:
        findings.append(Finding(Code.ENGINE_CONFIG, where, "the log states no max_num_seqs (neither asked nor in the config line)",
                                f"max_num_seqs {deploy.max_num_seqs} (deploy.max_num_seqs)", unchecked=True,
                                how=f"start vLLM with --max-num-seqs {deploy.max_num_seqs}", log=command))
    elif e.max_num_seqs != deploy.max_num_seqs:
        findings.append(Finding(Code.ENGINE_CONFIG, where, f"max_num_seqs {e.max_num_seqs}",
                                f"max_num_seqs {deploy.max_num_seqs} (deploy.max_num_seqs)",
                                how=f"start vLLM with --max-num-seqs {deploy.max_num_seqs}", log=command))
    engine_has = {"kv_cache_dtype": e.kv_cache_dtype, "cudagraph_mode": e.cudagraph_mode, "quantization": e.quantization,
                  "max_model_len": log.max_model_len, "enforce_eager": e.enforce_eager}
    for key, asked in e.asked.items():
        got = engine_has.get(key)
        if got is None or _same(asked, got) or (key == "cudagraph_mode" and e.enforce_eager):
            continue  # eager turns CUDA graphs off, and vLLM says so
        arg = f"{ASKED_FLAGS[key]} {asked}"
        findings.append(Finding(Code.ENGINE_ARG_IGNORED, where, f"asked {key} {asked} (non-default args); the engine resolved {got}",
                                f"the engine runs what it was asked ({arg})", arg=arg, log=command))
    # A kernel the cluster file names is judged above (meant, or failed there): its fallback is not said twice.
    fell, kernels = [], []
    for kind, chosen, named in (("MoE backend", e.moe, expect.moe_backend), ("linear kernel", e.linear, expect.linear_kernel)):
        for k in chosen:
            if _fallback(k, fallbacks) and named is None:
                fell.append(f"{kind} {k}")
                kernels.append(k)
    if expect.moe_backend is None and expect.linear_kernel is None and _fallback("MARLIN", fallbacks):
        for q in e.marlin_fallback:
            fell.append(f"vLLM's warning: weights-only {q} through the Marlin kernel")
            kernels.append("MARLIN")
    if fell:
        findings.append(Finding(Code.ENGINE_FALLBACK, where, "; ".join(fell),
                                f"native kernels (profile {profile}: {', '.join(fallbacks)} are fallbacks)", warning=True,
                                kernel=kernels[0], profile=profile, fallbacks=", ".join(fallbacks)))
    for variable in e.unknown_env:
        findings.append(Finding(Code.ENGINE_UNKNOWN_ENV, where, f"vLLM warned: unknown environment variable {variable} (ignored)",
                                "only variables this vLLM reads", warning=True, variable=variable))
    return findings


def _fallback(kernel: str, fallbacks: list[str]) -> bool:
    return any(f.casefold() in kernel.casefold() for f in fallbacks)


def engine_summary(log: VllmLog, info: dict) -> str:
    """One line of what the engine runs, for the run's output."""
    r = resolved_engine(log, info)
    shown = {"attention": r["attention_backend"], "MoE": r["moe_backend"], "linear": r["linear_kernel"],
             "KV cache": r["kv_cache_dtype"], "cudagraph": r["cudagraph_mode"], "speculative": r["speculative"],
             "quantization": r["quantization"]}
    text = ", ".join(f"{k} {'/'.join(v) if v else 'not stated'}" for k, v in shown.items())
    return f"vLLM {log.version or '?'}: {text}, max_model_len {log.max_model_len}, max_num_seqs {log.engine.max_num_seqs}"
