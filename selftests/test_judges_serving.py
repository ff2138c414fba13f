"""The serving judges (gb10check/checks/serving.py), pure: facts in, findings out; real captured API bodies
where we have them (../shared/captures/vllm_api), else what vLLM sends. No server, milliseconds each."""

import json

import pytest

from gb10check.checks import serving as sv
from gb10check.cluster import Serving, load_cluster
from gb10check.facts.vllm_api import ToolCall, parse_chat, parse_sse, reassemble
from gb10check.remedies import Code
from gb10check.serving import Reply, Timed
from gb10check.sim import model_files

from .conftest import REPO, read_capture

HEAD = "thinkstationpgx-30"
MODEL = "smollm2-135m"


def deploy(**over):
    return load_cluster(REPO / "cluster.example.yaml").deploy.model_copy(update=over)


def codes(findings):
    return [(f.code, f.warning) for f in findings]


def timed(stream, done=True, ttft=0.5, last=2.5, total=3.0, chunks=10, tokens=None, broken=None):
    return Timed(stream, done, ttft, last, total, chunks, stream.completion_tokens if tokens is None else tokens, broken)


# ---- refusals common to every request -------------------------------------------------------------

def test_a_404_naming_the_model_is_model_not_served_with_the_servers_text():
    reply = Reply(404, read_capture("vllm_api/error-404-model-not-found-nested-envelope-llm-d-dgxspark-idx61634039117.json"))
    [f] = sv.judge_refused(HEAD, sv.CHAT, reply, "does-not-exist-model")
    assert f.code == Code.MODEL_NOT_SERVED
    assert f.text.startswith(f"[model-not-served] {HEAD}: saw POST /chat/completions -> 404: The model `does-not-exist-model` "
                             "does not exist.; expected 200 for model 'does-not-exist-model'")
    assert "--served-model-name does-not-exist-model" in f.text


def test_a_route_404_is_not_blamed_on_the_model_name():
    reply = Reply(404, read_capture("vllm_api/route-404-fastapi-detail-not-found-vllm-0.17.1-gb10-idx52511083852.json"))
    [f] = sv.judge_refused(HEAD, sv.CHAT, reply, MODEL)
    assert f.code == Code.API_ERROR and "404: Not Found" in f.seen and "refused POST /chat/completions with 404" in f.text


def test_no_answer_in_time_is_api_timeout():
    [f] = sv.judge_refused(HEAD, sv.CHAT, Reply(None, "", "no answer within 120 s"), MODEL)
    assert f.code == Code.API_TIMEOUT and "no answer within 120 s" in f.seen and "hanging" in f.text


# ---- up, key, rank 0 only ---------------------------------------------------------------------------

def test_health():
    where = f"{HEAD} http://198.18.0.10:20001"
    assert sv.judge_health(where, Reply(200, ""), None, 20001) == []
    unreachable = "GET http://198.18.0.10:20001/health: ConnectionError: Connection refused"
    [f] = sv.judge_health(where, None, unreachable, 20001)
    assert f.text.startswith(f"[api-down] {where}: saw no answer: {unreachable}; expected GET /health -> 200\n"
                             "  fix: start the stack (rank 0 first")
    [f] = sv.judge_health(where, Reply(503, "loading"), None, 20001)
    assert f.code == Code.API_DOWN and f.seen == "GET /health -> 503 'loading'" and "(20001)" in f.text


def test_api_key():
    assert sv.judge_api_key(HEAD, Reply(200, "{}"), False, "GB10CHECK_API_KEY") == []
    [f] = sv.judge_api_key(HEAD, Reply(401, '{"error":"Unauthorized"}'), False, "GB10CHECK_API_KEY")
    assert f.seen == "GET /v1/models -> 401 'Unauthorized' with no key (GB10CHECK_API_KEY is not set)"
    assert "export it in GB10CHECK_API_KEY" in f.text
    [f] = sv.judge_api_key(HEAD, Reply(401, '{"error":"Unauthorized"}'), True, "GB10CHECK_API_KEY")
    assert "with a key from GB10CHECK_API_KEY" in f.seen


def test_follower_port():
    assert sv.judge_follower_port("thinkstationpgx-32", 20001, False) == []
    [f] = sv.judge_follower_port("thinkstationpgx-32", 20001, True)
    assert f.code == Code.API_ON_FOLLOWER and "--headless" in f.text


# ---- the model served -------------------------------------------------------------------------------

MODELS_3 = "vllm_api/v1-models-3-served-names-gb10-jethac.json"


def test_models_listed_with_root_and_max_model_len():
    reply = Reply(200, read_capture(MODELS_3))
    assert sv.judge_models(HEAD, "u", reply, deploy(served_model_name="gemma4-fast", model_id="/models/target",
                                                    max_model_len=262144)) == []
    found = sv.judge_models(HEAD, "u", reply, deploy(served_model_name="gemma4-fast", model_id="google/gemma-4",
                                                     max_model_len=131072))
    assert [f.code for f in found] == [Code.MODEL_ROOT, Code.MAX_MODEL_LEN]
    assert found[1].seen == "max_model_len 262144" and "--max-model-len 131072" in found[1].text


def test_model_not_listed_names_what_is():
    [f] = sv.judge_models(HEAD, "u", Reply(200, read_capture(MODELS_3)), deploy(served_model_name="smollm2-135m"))
    assert f.text.startswith(f"[model-not-served] {HEAD}: saw models ['gemma4-aeon-uncensored', 'gemma4-fast', 'gemma4-deep']; "
                             "expected 'smollm2-135m' listed\n  fix: start vLLM with --served-model-name smollm2-135m")


def test_models_refused_or_garbled():
    [f] = sv.judge_models(HEAD, "u", Reply(500, '{"object":"error","message":"boom","code":500}'), deploy())
    assert f.code == Code.API_ERROR and f.seen == "GET /v1/models -> 500: boom"
    [f] = sv.judge_models(HEAD, "http://h/v1/models", Reply(200, '{"object":"list","data":[{"id":'), deploy())
    assert f.code == Code.GARBLED and "curl -s http://h/v1/models" in f.text


def test_unknown_model():
    nested = read_capture("vllm_api/error-404-model-not-found-nested-envelope-llm-d-dgxspark-idx61634039117.json")
    assert sv.judge_unknown_model(HEAD, Reply(404, nested), "does-not-exist-model") == []
    [f] = sv.judge_unknown_model(HEAD, Reply(404, '{"detail":"Not Found"}'), "does-not-exist-model")
    assert f.code == Code.ERROR_STATUS and f.seen == "404 without naming the model: 'Not Found'"
    [f] = sv.judge_unknown_model(HEAD, Reply(400, read_capture("vllm_api/error-400-bad-request-flat-legacy-envelope-vllm-docs-matryoshka.json")),
                                 "x")
    assert f.code == Code.ERROR_STATUS and f.seen.startswith("400 Model \"BAAI/bge-m3\"") and "answered an unknown model with 400" in f.text
    [f] = sv.judge_unknown_model(HEAD, None, "x")
    assert f.code == Code.ERROR_STATUS and f.seen.startswith("200")
    assert sv.judge_unknown_model(HEAD, Reply(None, "", "no answer within 5 s"), "x")[0].code == Code.API_TIMEOUT


METRICS = """# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="smollm2-135m"} 0.015
"""


def test_metrics():
    assert sv.judge_metrics(HEAD, Reply(200, METRICS)) == [] and sv.kv_cache_usage(METRICS) == 0.015
    older = 'vllm:gpu_cache_usage_perc{model_name="m"} 0.5\n'
    assert sv.judge_metrics(HEAD, Reply(200, older)) == [] and sv.kv_cache_usage(older) == 0.5
    [f] = sv.judge_metrics(HEAD, Reply(200, "# nothing\nprocess_cpu_seconds_total 3.0\n"))
    assert f.code == Code.METRICS and "no vllm:kv_cache_usage_perc" in f.seen
    assert sv.judge_metrics(HEAD, Reply(404, "Not Found"))[0].seen == "GET -> 404"


# ---- answers ---------------------------------------------------------------------------------------

ANSWER_IN_REASONING = ("vllm_api/chat-completion-vllm-0.26.0-content-null-answer-in-reasoning-routed_experts-"
                       "ec_transfer_params-qwen3.5-0.8b-djangodevreng.json")


def test_answer():
    s = Serving()
    ok = parse_chat('{"choices":[{"index":0,"message":{"role":"assistant","content":"3! = 6."},"finish_reason":"stop"}]}')
    assert sv.judge_answer(HEAD, None, ok, s, MODEL) == []
    [f] = sv.judge_answer(HEAD, None, parse_chat(read_capture(ANSWER_IN_REASONING)), s, MODEL)
    assert f.text.startswith(f"[answer-wrong] {HEAD}: saw '' to 'Answer in one sentence: what is the factorial of 3?'; "
                             "expected an answer containing '6'")
    [f] = sv.judge_answer(HEAD, Reply(500, '{"error":{"message":"EngineCore died","type":"InternalServerError","code":500}}'),
                          None, s, MODEL)
    assert f.code == Code.API_ERROR and f.seen == "POST /chat/completions -> 500: EngineCore died"


def test_reasoning():
    c = parse_chat(read_capture(ANSWER_IN_REASONING))  # reasoning under `reasoning`, answer kept in it: reasoning present
    assert c.reasoning_field == "reasoning" and sv.judge_reasoning(HEAD, None, c, "qwen3", MODEL) == []
    old = parse_chat('{"choices":[{"index":0,"message":{"role":"assistant","content":"4","reasoning_content":"2+2"},'
                     '"finish_reason":"stop"}]}')
    assert sv.judge_reasoning(HEAD, None, old, "qwen3", MODEL) == []
    none = parse_chat('{"choices":[{"index":0,"message":{"role":"assistant","content":"<think>hm</think>The answer is 4."},'
                      '"finish_reason":"stop"}]}')
    found = sv.judge_reasoning(HEAD, None, none, "qwen3", MODEL)
    assert codes(found) == [(Code.REASONING_MISSING, False)] * 2
    assert found[0].text.startswith(f"[reasoning-missing] {HEAD}: saw no reasoning field; content '<think>hm</think>The answer is 4.'; "
                                    "expected non-empty message.reasoning")
    assert "--reasoning-parser qwen3" in found[0].text and "think tags in content" in found[1].seen


def test_tool_call():
    ok = [ToolCall("c1", "get_weather", '{"city": "Paris"}')]
    assert sv.judge_tool_call(HEAD, None, "tool_calls", ok, "hermes", MODEL) == []
    [f] = sv.judge_tool_call(HEAD, None, "stop", [], "hermes", MODEL)
    assert f.seen == "finish_reason 'stop', 0 tool calls"
    [f] = sv.judge_tool_call(HEAD, None, "tool_calls", [ToolCall("c1", "get_weather", '{"town": 1}')], "hermes", MODEL, streamed=True)
    assert f.where == f"{HEAD} (streamed)" and "{'city': <string>}" in f.expected
    [f] = sv.judge_tool_call(HEAD, None, "tool_calls", [ToolCall("c1", "get_weather", "{city")], "hermes", MODEL)
    assert "(not JSON)" in f.seen


def test_tool_call_from_a_captured_stream_of_another_tool():
    s = parse_sse(read_capture("vllm_api/sse-tool_calls-stream-2-tools-qwen3-coder-next-usage-DONE-idx51976516683.txt"))
    [f] = sv.judge_tool_call(HEAD, None, s.finish_reason, s.tool_calls, "qwen3_xml", MODEL, streamed=True)
    assert f.code == Code.TOOL_CALL_MISSING and f.seen == "function 'write'"


def test_tool_call_refused_keeps_the_servers_reason_and_parser_fix():
    reply = Reply(400, '{"error":{"message":"\\"auto\\" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                       'to be set","type":"BadRequestError","param":null,"code":400}}')
    for streamed in (False, True):
        [f] = sv.judge_tool_call(HEAD, reply, None, [], "hermes", MODEL, streamed=streamed)
        assert f.text.startswith(f"[tool-call-missing] {HEAD}: saw 400: \"auto\" tool choice requires")
        assert "fix: start vLLM with --enable-auto-tool-choice --tool-call-parser hermes" in f.text
    nf = Reply(404, '{"error":{"message":"The model `smollm2-135m` does not exist.","type":"NotFoundError","code":404}}')
    assert sv.judge_tool_call(HEAD, nf, None, [], "hermes", MODEL)[0].code == Code.MODEL_NOT_SERVED


TAIL = "vllm_api/sse-stream-tail-stop-usage-only-chunk-DONE-vllm-omni-pr2313.txt"


def test_stream():
    s = parse_sse(read_capture(TAIL))
    assert s.done and s.usage_chunk and s.completion_tokens == 113
    assert sv.judge_stream(HEAD, None, timed(s, chunks=3), MODEL) == []
    [f] = sv.judge_stream(HEAD, None, timed(s, chunks=1, done=False, broken="connection lost after 2 chunks (RemoteProtocolError)"),
                          MODEL)
    assert f.code == Code.STREAM_BROKEN
    assert f.seen == "connection lost after 2 chunks (RemoteProtocolError); 1 chunks with tokens (expected several); no 'data: [DONE]' at the end"
    no_usage = reassemble([{"choices": [{"index": 0, "delta": {"content": "a"}}]}])
    assert "no usage chunk" in sv.judge_stream(HEAD, None, timed(no_usage), MODEL)[0].seen
    refused = Reply(404, '{"object":"error","message":"The model `smollm2-135m` does not exist.","code":404}')
    [f] = sv.judge_stream(HEAD, refused, None, MODEL)
    assert f.code == Code.MODEL_NOT_SERVED and f.seen.startswith("streaming POST /chat/completions -> 404: The model")


def test_concurrency():
    assert sv.judge_concurrency(HEAD, [None] * 4, MODEL) == []
    busy = Reply(503, '{"error":{"message":"too many requests","type":"ServiceUnavailable","code":503}}')
    [f] = sv.judge_concurrency(HEAD, [None, busy, None, Reply(None, "", "no answer within 120 s")], MODEL)
    assert f.code == Code.CONCURRENCY and f.seen == "2 of 4 failed: #1: 503 too many requests; #3: no answer no answer within 120 s"
    assert "--max-num-seqs to 4" in f.text
    nf = Reply(404, '{"object":"error","message":"The model `smollm2-135m` does not exist.","code":404}')
    [f] = sv.judge_concurrency(HEAD, [nf] * 4, MODEL)
    assert f.code == Code.MODEL_NOT_SERVED  # every request refused alike: not a concurrency limit


# ---- decode speed -----------------------------------------------------------------------------------

NO_FLOOR = sv.DerivedFloor(None, "profile sim gives no expect.memory_bandwidth_gbs / expect.decode_efficiency")

def test_decode_run_and_median():
    s = parse_sse(read_capture(TAIL))  # 113 completion tokens
    good = timed(s, ttft=0.5, last=5.5)  # 112 tokens over 5 s: 22.4 tok/s
    assert sv.judge_decode_run(HEAD, None, good, MODEL) == []
    assert sv.judge_decode(HEAD, [good], 20.0, NO_FLOOR) == []
    [f] = sv.judge_decode(HEAD, [good, timed(s, ttft=0.5, last=12.5, total=13.0)], 25.0, NO_FLOOR)
    assert f.text.startswith(f"[decode-slow] {HEAD}: saw decode 15.9 tok/s (median of 2; end-to-end")  # (22.4 + 9.3) / 2
    assert "expected >= 25 tok/s (serving.min_decode_tok_s)" in f.text
    [f] = sv.judge_decode_run(HEAD, None, timed(reassemble([]), tokens=None), MODEL)
    assert f.code == Code.STREAM_BROKEN and f.seen == "cannot time decoding: 10 token chunks, completion_tokens None (usage chunk missing?)"
    nf = Reply(404, '{"object":"error","message":"The model `smollm2-135m` does not exist.","code":404}')
    assert sv.judge_decode_run(HEAD, nf, None, MODEL)[0].code == Code.MODEL_NOT_SERVED
    assert sv.judge_decode(HEAD, [], 20.0, NO_FLOOR)[0].code == Code.STREAM_BROKEN


# The field report's checkpoint (Qwen3.8-Flash-Next-FP8, 172.78 GiB, TP=2) as its config.json says it (no expert keys:
# read as dense), at the measured GB10 bandwidth (232 GB/s) and the gb10 profile's efficiency.
SEED_FILES = (json.dumps(model_files.config(model_files.REPO_FP8)), json.dumps(model_files.index(model_files.REPO_FP8)))


def seed_floor(files=SEED_FILES, unread=None, bandwidth=232.0, efficiency=0.5):
    return sv.derive_floor(files, unread, 2, bandwidth, efficiency, "gb10")


def test_derived_floor_of_the_seed_model():
    f = seed_floor()
    assert round(f.tok_s, 2) == 1.25  # 232e9 x 0.5 / 92.76e9 bytes a token per node
    assert f.how.startswith("232 GB/s x 0.5 / 92.76 GB a token per node (dense: the whole checkpoint, 172.78 GiB, / TP 2)")


def test_seed_decode_passes_the_derived_floor_and_a_slow_one_fails():
    s = parse_sse(read_capture(TAIL))  # 113 completion tokens
    seed = timed(s, ttft=0.5, last=0.5 + 112 / 22.62)  # the seed's eager figure, 22.62 tok/s
    assert sv.judge_decode(HEAD, [seed], None, seed_floor()) == []
    slow = timed(s, ttft=0.5, last=0.5 + 112 / 1.0)  # 1 tok/s: under the floor
    [f] = sv.judge_decode(HEAD, [slow], None, seed_floor())
    assert f.code == Code.DECODE_SLOW and not f.not_checked
    assert "saw decode 1.0 tok/s (median of 1; end-to-end" in f.text and ", 0.80 of the derived floor" in f.text
    assert "expected >= 1.3 tok/s (derived: 232 GB/s x 0.5 / 92.76 GB a token per node" in f.text
    # the owner's floor, when given, is the one judged: the derived one is reported beside it
    assert sv.judge_decode(HEAD, [slow], 0.5, seed_floor()) == []
    assert sv.judge_decode(HEAD, [seed], 25.0, seed_floor())[0].code == Code.DECODE_SLOW


@pytest.mark.parametrize("files, unread, bandwidth, cause", [
    (None, "no config.json of the model to size it by", 232.0, "the model's size cannot be read: no config.json"),
    ((SEED_FILES[0], '{"weight_map": {}}'), None, 232.0, "has no metadata.total_size"),
    ((SEED_FILES[0], "not json"), None, 232.0, "the model's size cannot be read: Expecting value"),
    ((json.dumps({"num_experts": 512, "num_hidden_layers": 48}), SEED_FILES[1]), None, 232.0, "missing or not numbers ('num_experts_per_tok')"),
    (SEED_FILES, None, None, "profile gb10 gives no expect.memory_bandwidth_gbs"),
])
def test_no_derived_floor_is_not_checked_never_a_pass(files, unread, bandwidth, cause):
    derived = seed_floor(files, unread, bandwidth)
    assert derived.tok_s is None and cause in derived.how
    s = parse_sse(read_capture(TAIL))
    [f] = sv.judge_decode(HEAD, [timed(s, ttft=0.5, last=0.5 + 112 / 22.62)], None, derived)
    assert f.code == Code.DECODE_FLOOR_UNKNOWN and f.not_checked
    assert cause in f.text and "give serving.min_decode_tok_s" in f.text
    assert sv.judge_decode(HEAD, [timed(s, ttft=0.5, last=0.5 + 112 / 22.62)], 20.0, derived) == []  # the owner's floor judges


@pytest.mark.parametrize("code", [Code.API_TIMEOUT, Code.API_ERROR])
def test_new_codes_print_their_fix(code):
    f = sv.judge_refused(HEAD, sv.CHAT, Reply(None if code == Code.API_TIMEOUT else 502, "", "no answer within 1 s"), MODEL)[0]
    assert f.code == code and "{" not in f.text.split("fix: ")[1]


# ---- the engine as it resolved (rank 0's log, /metrics) -----------------------------------------------------------

from gb10check.cluster import ExpectEngine  # noqa: E402
from gb10check.facts import vllm_log  # noqa: E402

GB10_LOG = "vllm_logs/vllm-gb10-single-node-startup-jethac-server.log"  # 0.20.1, NvFp4 MoE on VLLM_CUTLASS, a dflash drafter
SOURCE_BUILD_LOG = "vllm_logs/vllm-source-build-version-0.1.dev1+gda1daf40b-gb10-gemma4-12b-startup-plus-requests-jethac.log"
SIM_SERVE_LOG = "ours/vllm_logs/sim-vllm-0.32.0-cpu-serve-tp1-eager.log"
SIM_RANK0_LOG = "ours/vllm_logs/sim-vllm-0.32.0-cpu-tp2-rank0.log"
WHERE = f"{HEAD} rank 0 log"
GB10_FALLBACKS = ["MARLIN", "EMULATION"]
AS_RESOLVED = ExpectEngine(attention_backend="triton_attn", moe_backend="VLLM_CUTLASS", kv_cache_dtype="auto",
                           cudagraph_mode="FULL_AND_PIECEWISE", speculative="dflash", quantization="compressed-tensors",
                           linear_kernel="FlashInferCutlassNvFp4LinearKernel")


def engine(text, expect=ExpectEngine(), max_num_seqs=64, fallbacks=GB10_FALLBACKS, info=None, profile="gb10"):
    return sv.judge_engine(WHERE, vllm_log.parse(text), info or {}, expect, deploy(max_num_seqs=max_num_seqs), fallbacks,
                           profile, "docker logs gb10-vllm")


def test_an_engine_resolved_as_expected_passes_every_field():
    assert engine(read_capture(GB10_LOG), AS_RESOLVED) == []
    assert engine(read_capture(SIM_SERVE_LOG), ExpectEngine(kv_cache_dtype="auto", cudagraph_mode="none", speculative="none"),
                  max_num_seqs=4) == []


def test_a_resolved_value_other_than_expected_fails_by_name_with_the_flag():
    [f] = engine(read_capture(GB10_LOG), AS_RESOLVED.model_copy(update={"attention_backend": "FLASHINFER"}))
    assert f.code == Code.ENGINE_CONFIG and not f.warning
    assert f.text.startswith(f"[engine-config] {WHERE}: saw attention backend TRITON_ATTN (then FLASH_ATTN); expected attention "
                             "backend FLASHINFER (serving.expect_engine.attention_backend)\n  fix: start vLLM with "
                             "--attention-backend FLASHINFER")
    [f] = engine(read_capture(GB10_LOG), max_num_seqs=8)
    assert "saw max_num_seqs 64; expected max_num_seqs 8 (deploy.max_num_seqs)" in f.text and "--max-num-seqs 8" in f.text


def test_moe_on_marlin_warns_as_a_fallback_and_fails_where_native_was_expected():
    marlin = read_capture(GB10_LOG).replace("Using 'VLLM_CUTLASS' NvFp4 MoE backend", "Using 'MARLIN' NvFp4 MoE backend")
    [f] = engine(marlin)
    assert (f.code, f.warning) == (Code.ENGINE_FALLBACK, True)
    assert f.seen == "MoE backend MARLIN" and f.expected == "native kernels (profile gb10: MARLIN, EMULATION are fallbacks)"
    assert "the engine fell back to MARLIN" in f.text
    assert codes(engine(marlin, AS_RESOLVED)) == [(Code.ENGINE_CONFIG, False)]  # expected VLLM_CUTLASS: a failure, said once
    assert engine(marlin, fallbacks=["EMULATION"], profile="h200") == []  # Hopper has no FP4: Marlin is its path
    assert engine(marlin, ExpectEngine(moe_backend="marlin")) == []  # meant: named in the cluster file


def test_an_asked_value_the_engine_did_not_resolve_fails_with_both():
    asked_fp8 = read_capture(GB10_LOG).replace("non-default args: {", "non-default args: {'kv_cache_dtype': 'fp8', ", 1)
    [f] = engine(asked_fp8)
    assert f.code == Code.ENGINE_ARG_IGNORED
    assert f.seen == "asked kv_cache_dtype fp8 (non-default args); the engine resolved auto"
    assert "vLLM took --kv-cache-dtype fp8 but resolved another value" in f.text
    # fp8 is resolved as fp8_e4m3; eager turns CUDA graphs off (the sim's compose asks FULL_DECODE_ONLY with --enforce-eager)
    assert engine(asked_fp8.replace("kv_cache_dtype=auto", "kv_cache_dtype=fp8_e4m3", 1)) == []
    assert vllm_log.parse(read_capture(SIM_RANK0_LOG)).engine.asked["cudagraph_mode"] == "FULL_DECODE_ONLY"
    assert engine(read_capture(SIM_RANK0_LOG), max_num_seqs=4) == []


def test_what_the_log_does_not_say_is_never_a_pass():
    [f] = engine(read_capture(SOURCE_BUILD_LOG), ExpectEngine(moe_backend="VLLM_CUTLASS"))[:1]
    assert f.not_checked and f.seen == "the log names no MoE backend"
    found = engine(read_capture(SOURCE_BUILD_LOG))
    assert [x.seen for x in found] == ["the log states no max_num_seqs (neither asked nor in the config line)"]
    assert found[0].not_checked
    [f] = engine(read_capture("vllm_logs/vllm-0.13.0-gb10-offline-LLM-ansi-prefix-kvcache-chunk-elizabetht-spark.log"))
    assert f.not_checked and "no engine config line" in f.seen


def test_the_kv_cache_dtype_comes_from_metrics_when_the_log_does_not_say():
    info = sv.metrics_info(Reply(200, read_capture("ours/vllm_api/sim-metrics-vllm-0.32.0-cpu.txt")))
    assert info["cache_config_info"]["cache_dtype"] == "auto"
    text = read_capture(SIM_SERVE_LOG).replace("kv_cache_dtype=auto, ", "")
    assert vllm_log.parse(text).engine.kv_cache_dtype is None
    assert engine(text, ExpectEngine(kv_cache_dtype="auto"), max_num_seqs=4, info=info) == []
    [f] = engine(text, ExpectEngine(kv_cache_dtype="fp8"), max_num_seqs=4, info=info)
    assert f.seen == "KV cache dtype auto" and "--kv-cache-dtype fp8" in f.text


def test_a_variable_vllm_does_not_know_warns_by_name():
    found = engine(read_capture("ours/vllm_logs/sim-vllm-0.32.0-cpu-serve-unknown-env-VLLM_MXFP4_BACKEND.log"), max_num_seqs=4)
    [f] = found
    assert (f.code, f.warning) == (Code.ENGINE_UNKNOWN_ENV, True)
    assert f.text.startswith(f"[engine-unknown-env] {WHERE}: saw vLLM warned: unknown environment variable VLLM_MXFP4_BACKEND "
                             "(ignored); expected only variables this vLLM reads\n  fix: vLLM does not know VLLM_MXFP4_BACKEND "
                             "and ignores it")


# ---- the concurrency sweep --------------------------------------------------------------------------

def level(n, results, health=Reply(200, ""), wall=2.0):
    from gb10check.serving import Level
    return Level(n, results, wall, health)


def answered(tokens=32):
    s = parse_sse(read_capture("vllm_api/sse-stream-tail-stop-usage-only-chunk-DONE-vllm-omni-pr2313.txt"))
    s.done = True
    return None, timed(s, tokens=tokens)


def test_sweep_levels_double_up_to_max_num_seqs():
    from gb10check.serving import sweep_levels
    assert sweep_levels(1) == [1]
    assert sweep_levels(4) == [1, 2, 4]
    assert sweep_levels(6) == [1, 2, 4, 6]
    assert sweep_levels(256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]


def test_a_healthy_level_passes_and_measures_output_tok_s():
    lv = level(4, [answered(32)] * 4, wall=4.0)
    assert sv.judge_sweep_level(HEAD, lv, MODEL, None) == []
    assert lv.completion_tokens == 128 and lv.output_tok_s == 32.0


def test_a_level_that_kills_the_engine_names_the_level_the_error_and_the_logs_cause():
    from gb10check.facts.vllm_log import parse
    cause = sv.log_cause(parse(read_capture("vllm_logs/follower-collective_rpc-assertion-vllm-pr36875.txt")))
    assert cause == "follower_collective_rpc: AssertionError: collective_rpc should not be called on follower node"
    dead = Reply(500, '{"error":{"message":"EngineCore encountered an issue. See stack trace (above) for the root cause.",'
                      '"type":"InternalServerError","code":500}}')
    s = reassemble([{"choices": [{"index": 0, "delta": {"content": "Red"}}]}])
    cut = (None, timed(s, done=False, chunks=1, broken="connection lost after 1 chunks (RemoteProtocolError: peer closed)"))
    lv = level(4, [answered(), (dead, None), cut, (Reply(None, "", "POST /chat/completions (stream): ConnectError: Connection refused"), None)],
               health=Reply(None, "", "GET http://10.0.0.1:20001/health: ConnectionError: Connection refused"))
    [f] = sv.judge_sweep_level(HEAD, lv, MODEL, cause)
    assert f.code == Code.SWEEP_LEVEL and not f.warning
    assert f.text.startswith(
        f"[sweep-level] {HEAD}: saw level 4 (4 streams at once): 4 problems: #1: 500 EngineCore encountered an issue. See stack "
        "trace (above) for the root cause.; #2: connection lost after 1 chunks (RemoteProtocolError: peer closed); no [DONE]; "
        "#3: no answer POST /chat/completions (stream): ConnectError: Connection refused; GET /health after the level: no "
        "answer GET http://10.0.0.1:20001/health: ConnectionError: Connection refused; rank 0's log: follower_collective_rpc: "
        "AssertionError: collective_rpc should not be called on follower node; expected every stream of every level answered"), f.text
    assert "the engine fails at 4 sequences at once" in f.text and "--max-num-seqs under 4" in f.text


def test_a_dead_engine_after_answered_streams_still_fails_its_level():
    lv = level(2, [answered(), answered()], health=Reply(503, '{"error":{"message":"engine dead","code":503}}'))
    [f] = sv.judge_sweep_level(HEAD, lv, MODEL, None)
    assert f.code == Code.SWEEP_LEVEL and "GET /health after the level: 503 engine dead" in f.seen
    assert "rank 0's log" not in f.seen  # the log named no cause: none is made up


def test_a_sweep_whose_model_is_not_served_says_that_once():
    nf = Reply(404, '{"object":"error","message":"The model `smollm2-135m` does not exist.","code":404}')
    [f] = sv.judge_sweep_level(HEAD, level(1, [(nf, None)]), MODEL, None)
    assert f.code == Code.MODEL_NOT_SERVED


def test_the_sweep_table_names_levels_not_run():
    from gb10check.serving import sweep_table
    text = sweep_table([level(1, [answered(30)], wall=1.5), level(2, [answered(), (Reply(500, "{}"), None)])], 8)
    assert text.splitlines()[2:] == ["| 1 | 1/1 | 30 | 1.5 | 20.0 |", "| 2 | 1/2 | 32 | 2.0 | 16.0 |",
                                     "| 4 | not run (a lower level failed) | | | |", "| 8 | not run (a lower level failed) | | | |"]


def test_the_report_charts_and_tables_the_sweep():
    from gb10check import report
    from gb10check.serving import sweep_table

    table = sweep_table([level(1, [answered(30)], wall=1.5), level(2, [answered(), answered()], wall=2.0)], 2)
    run = report.Run("pair", outcomes={"tests/serving/test_sweep.py::test_concurrency_sweep": "passed"},
                     measured=[(report.SWEEP_MEASURE, f"{HEAD} 1 stream", 20.0, "tok/s"),
                               (report.SWEEP_MEASURE, f"{HEAD} 2 streams", 32.0, "tok/s")],
                     tables=[("concurrency sweep (1 to 2 streams, 32 tokens each)", table)])
    page = report.page(run)
    assert "Output tok/s per concurrency level (the serving sweep)" in page and page.count("<rect") == 2
    assert f"{HEAD} 2 streams</text>" in page and "32.0 tok/s</text>" in page
    assert "<h2>Concurrency sweep (1 to 2 streams, 32 tokens each)</h2><pre>| streams | answered" in page
    assert "| 2 | 2/2 | 64 | 2.0 | 32.0 |" in report.markdown(run)
