"""vLLM log, vLLM API and docker parsers on inputs written here, in the formats real releases print
(names, numbers and paths are made up): what the public captures do not cover."""

import json

import pytest

from gb10check.facts import ParseError, docker, vllm_api, vllm_log

# ---- vLLM logs ----------------------------------------------------------------------------------

V0_LOG = """\
INFO 03-14 09:01:02 api_server.py:212] vLLM API server version 0.4.3
INFO 03-14 09:01:02 llm_engine.py:161] Initializing an LLM engine (v0.4.3) with config: model='org/toy-7b', speculative_config=None, tensor_parallel_size=2, max_seq_len=16384, seed=0
INFO 03-14 09:01:05 utils.py:660] Found nccl from library libnccl.so.2
INFO 03-14 09:01:05 pynccl.py:63] vLLM is using nccl==2.20.5
(VllmWorkerProcess pid=4711) INFO 03-14 09:01:05 pynccl.py:63] vLLM is using nccl==2.20.5
INFO 03-14 09:01:40 model_runner.py:146] Loading model weights took 6.7834 GB
(VllmWorkerProcess pid=4711) INFO 03-14 09:01:40 model_runner.py:146] Loading model weights took 6.7834 GB
INFO 03-14 09:01:44 distributed_gpu_executor.py:56] # GPU blocks: 12051, # CPU blocks: 4096
INFO 03-14 09:01:50 model_runner.py:1030] Graph capturing finished in 6 secs.
INFO:     Started server process [1]
INFO:     Waiting for application startup.
INFO:     Application startup complete.
INFO:     Uvicorn running on http://0.0.0.0:8123 (Press CTRL+C to quit)
"""


def test_v0_log_phrasings():
    log = vllm_log.parse(V0_LOG)
    assert (log.version, log.nccl_version, log.model, log.tensor_parallel_size, log.max_model_len) == \
        ("0.4.3", "2.20.5", "org/toy-7b", 2, 16384)
    assert log.model_gib == 6.7834 and log.gpu_blocks == 12051 and log.kv_cache_tokens is None
    assert [m.name for m in log.milestones] == ["model_loaded", "kv_cache", "graph_capture", "startup_complete", "api_server"]
    assert log.milestones[-1].values == {"url": "http://0.0.0.0:8123"}
    assert log.startup_complete and log.lines == 13 and log.errors == []


V1_MULTINODE = """\
(APIServer pid=1) INFO 11-02 10:00:00 [api_server.py:1800] vLLM API server version 0.11.1
(APIServer pid=1) INFO 11-02 10:00:01 [model.py:1510] Using max model len 32768
(EngineCore_DP0 pid=210) INFO 11-02 10:00:09 [core.py:77] Initializing a V1 LLM engine (v0.11.1) with config: model='/models/toy', tensor_parallel_size=2
(EngineCore_DP0 pid=210) (Worker_TP0 pid=301) INFO 11-02 10:00:12 [parallel_state.py:1208] rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0
(EngineCore_DP0 pid=210) (Worker_TP0 pid=301) INFO 11-02 10:01:12 [gpu_model_runner.py:2653] Model loading took 30.5 GiB and 58.123456 seconds
(EngineCore_DP0 pid=210) INFO 11-02 10:01:30 [kv_cache_utils.py:1087] GPU KV cache size: 1,203,456 tokens
(EngineCore_DP0 pid=210) INFO 11-02 10:01:30 [kv_cache_utils.py:1091] Maximum concurrency for 32,768 tokens per request: 36.73x
(EngineCore_DP0 pid=210) WARNING 11-02 10:03:30 [shm_broadcast.py:466] No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).
(EngineCore_DP0 pid=210) ERROR 11-02 10:05:30 [multiproc_executor.py:230] RPC call to sample_tokens timed out.
"""


def test_v1_nested_prefixes_and_hang_errors():
    log = vllm_log.parse(V1_MULTINODE)
    assert log.version == "0.11.1" and log.max_model_len == 32768 and log.tensor_parallel_size == 2
    assert [m.name for m in log.milestones] == ["tp_rank", "model_loaded", "kv_cache"]
    assert log.milestones[1].values == {"gib": "30.5", "seconds": "58.123456"}
    assert log.kv_cache_tokens == 1203456 and log.max_concurrency == 36.73
    assert [e.name for e in log.errors] == ["shm_broadcast_stall", "rpc_timeout"]
    assert not log.startup_failed and log.cause.name == "shm_broadcast_stall"


def test_wrapped_log_with_prefixes_is_joined_and_counted_once():
    line = ("(EngineCore_DP0 pid=77) INFO 05-06 07:08:09 [gpu_model_runner.py:2000] Model loading took 41.2500 GiB memory "
            "and 201.500000 seconds")
    tail = "(APIServer pid=1) INFO 05-06 07:09:00 [api_server.py:1900] Starting vLLM API server 0 on http://10.0.0.5:8000"
    logged = (line, line.replace("Model loading", "Loading weights").replace("77", "78"), tail)
    text = "\n".join(s[i:i + 70] for s in logged for i in range(0, len(s), 70)) + "\n"
    log = vllm_log.parse(text)
    assert log.wrapped_at == 70 and log.lines == 3
    assert log.model_gib == 41.25 and log.milestones[0].values["seconds"] == "201.500000"
    assert log.milestones[-1].values == {"url": "http://10.0.0.5:8000"}


@pytest.mark.parametrize(("line", "name"), [
    ("(Worker_TP1 pid=9) ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'", "triton_ptxas_sm121a"),
    ("[rank1]:[E1103 04:05:06.000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.", "collective_timeout"),
    ("(VllmWorker TP0 pid=12) ERROR 01-01 00:00:01 [multiproc_executor.py:1] NVRM: failed to allocate: NV_ERR_NO_MEMORY", "nv_err_no_memory"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 119.70 GiB",
     "cuda_oom"),
    ("(RayWorkerWrapper pid=5150, ip=192.168.100.11) ERROR 02-02 02:02:02 [worker_base.py:1] RuntimeError: NCCL error: "
     "unhandled system error [repeated 3x across cluster]", "nccl_error"),
    ("ERROR 02-02 02:02:02 [core.py:1] RuntimeError: Engine core initialization failed. See root cause above. "
     "Failed core proc(s): {'EngineCore_DP0': 1}", "engine_core_failed"),
])
def test_errors_are_named(line, name):
    log = vllm_log.parse(line + "\n")
    assert [e.name for e in log.errors] == [name] and log.errors[0].hint


def test_info_lines_do_not_count_as_errors_and_request_errors_are_apart():
    text = ("(APIServer pid=1) INFO 01-01 00:00:00 [mamba.py:1] Mamba cache will use 2 GiB\n"
            "(APIServer pid=1) ERROR 01-01 00:00:05 [serving_chat.py:1] Error in preprocessing prompt inputs\n"
            "(APIServer pid=1) ERROR 01-01 00:00:05 [serving_chat.py:1] ValueError: This model's maximum context length is "
            "8192 tokens. However, you requested 9000 tokens.\n")
    log = vllm_log.parse(text)
    assert log.errors == [] and [e.name for e in log.request_errors] == ["request_preprocess", "context_length"]


def test_compose_logs_and_docker_timestamps_are_taken_off():
    text = ("vllm-head-1  | 2026-01-02T03:04:05.123456789Z INFO 01-02 03:04:05 [gpu_model_runner.py:1] Model loading took 9.5 GiB "
            "and 3.2 seconds\n"
            "vllm-head-1  | 2026-01-02T03:04:09.000000001Z (APIServer pid=1) INFO:     Application startup complete.\n")
    log = vllm_log.parse(text)
    assert log.model_gib == 9.5 and log.startup_complete and log.milestones[1].t_s == 0.0


@pytest.mark.parametrize("text", ["hello world\n", "Status: active\nTo Action From\n", "+-----+\n| GPU |\n+-----+\n"])
def test_foreign_text_is_refused(text):
    with pytest.raises(ParseError, match="^vllm_log: expected"):
        vllm_log.parse(text)


# ---- vLLM API bodies ----------------------------------------------------------------------------

def test_older_reasoning_content_and_tool_calls():
    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "toy",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "reasoning_content": "I should call it.",
                "tool_calls": [{"id": "chatcmpl-tool-abc", "type": "function",
                                "function": {"name": "get_time", "arguments": "{\"tz\": \"UTC\"}"}}]}}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42,
                      "prompt_tokens_details": {"cached_tokens": 16}}}
    c = vllm_api.parse_chat(json.dumps(body, indent=2))
    assert (c.reasoning, c.reasoning_field, c.answer_in_reasoning) == ("I should call it.", "reasoning_content", False)
    assert [(t.id, t.name, t.arguments) for t in c.tool_calls] == [("chatcmpl-tool-abc", "get_time", "{\"tz\": \"UTC\"}")]
    assert (c.total_tokens, c.cached_tokens, c.wrapped) == (42, 16, False)


def test_chat_inside_a_harness_string_and_an_error_body_refused():
    inner = json.dumps({"choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}], "model": "m"})
    assert vllm_api.parse_chat(json.dumps({"status": 200, "body": inner})).content == "ok"
    with pytest.raises(ParseError, match="error body: The model"):
        vllm_api.parse_chat('{"error":{"message":"The model `x` does not exist.","type":"NotFoundError","param":"model","code":404}}')


@pytest.mark.parametrize("text", ['{"object":"list","data":[{"id":"a","object":"model","max_m', "<html>502</html>", ""])
def test_bad_models_bodies_are_refused(text):
    with pytest.raises(ParseError, match="^vllm_models: expected"):
        vllm_api.parse_models(text)


def test_models_lora_parent():
    models = vllm_api.parse_models('{"object":"list","data":[{"id":"base","object":"model","root":"/m","parent":null,'
                                   '"max_model_len":4096},{"id":"sql-lora","object":"model","root":"/loras/sql","parent":"base"}]}')
    assert [(m.id, m.parent, m.max_model_len) for m in models] == [("base", None, 4096), ("sql-lora", "base", None)]


SSE = """\
: ping - 2026-01-01 00:00:00.000000

event: message
data:{"id":"c1","model":"toy","choices":[{"index":0,"delta":{"role":"assistant","reasoning":"Hm"},"finish_reason":null}]}
data: {"id":"c1","model":"toy","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null},{"index":1,"delta":{"content":"XX"}}]}



data: {"id":"c1","model":"toy","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop","stop_reason":128009}]}

data: {"id":"c1","model":"toy","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}

data: [DONE]
"""


def test_sse_variants():
    s = vllm_api.parse_sse(SSE)
    assert (s.chunks, s.done, s.content, s.reasoning, s.reasoning_field) == (4, True, "Hi!", "Hm", "reasoning")
    assert (s.finish_reason, s.stop_reason, s.usage_chunk, s.completion_tokens, s.first_role) == ("stop", 128009, True, 3, "assistant")


def test_sse_cut_inside_an_event_and_error_event():
    cut = SSE.split("data: {\"id\":\"c1\",\"model\":\"toy\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"}")[0] + \
        'data: {"id":"c1","model":"toy","choi'
    s = vllm_api.parse_sse(cut)
    assert (s.done, s.truncated, s.content) == (False, True, "Hi")
    err = vllm_api.parse_sse('data: {"error": {"object": "error", "message": "boom", "type": "BadRequestError", "code": 400}}\n\n'
                             "data: [DONE]\n")
    assert err.error == "boom" and err.chunks == 1


@pytest.mark.parametrize(("text", "facts"), [
    ('HTTP/1.1 404 Not Found\ncontent-type: application/json\n\n{"detail":"Not Found"}',
     {"envelope": "fastapi", "status": 404, "message": "Not Found"}),
    ('{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}\nhttp=400\n',
     {"envelope": "flat", "status": 400, "code": 400}),
    ('{"error":"Unauthorized"}', {"envelope": "string", "message": "Unauthorized", "vllm": True}),
    ('{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required","input":{}}]}',
     {"envelope": "fastapi", "message": "body.messages: Field required"}),
    ('{"message":"no Route matched with those values"}', {"envelope": "gateway", "vllm": False}),
    ('data: {"error":{"message":"too long","type":"BadRequestError","param":null,"code":400}}',
     {"envelope": "nested", "code": 400, "message": "too long"}),
])
def test_error_shapes(text, facts):
    err = vllm_api.parse_error(text)
    assert {k: getattr(err, k) for k in facts} == facts


@pytest.mark.parametrize("text", ["<html><body>502 Bad Gateway</body></html>", '{"choices": []}', '{"error":{"mess'])
def test_non_errors_are_refused(text):
    with pytest.raises(ParseError, match="^vllm_error: expected"):
        vllm_api.parse_error(text)


# ---- docker -------------------------------------------------------------------------------------

def _inspect(name, status, exit_code=0, oom=False, health=None, devices=None):
    state = {"Status": status, "Running": status == "running", "OOMKilled": oom, "ExitCode": exit_code, "Pid": 0,
             "Error": "", "StartedAt": "2026-02-03T04:05:06.123456789+02:00", "FinishedAt": "2026-02-03T04:07:06.62345678+02:00"}
    if health:
        state["Health"] = health
    return {"Id": "f" * 64, "Name": f"/{name}", "State": state, "RestartCount": 3, "Image": "sha256:" + "a" * 64,
            "Config": {"Image": "vllm/vllm-openai:v0.11.0", "Cmd": ["--model", "x"], "Entrypoint": ["vllm", "serve"],
                       "Healthcheck": {"Test": ["CMD-SHELL", "curl -f localhost:8000/health"]}},
            "HostConfig": {"NetworkMode": "host", "IpcMode": "host", "Memory": 0, "ShmSize": 17179869184,
                           "RestartPolicy": {"Name": "unless-stopped"}, "DeviceRequests": devices}}


def test_inspect_exited_oom_with_offsets_and_many():
    health = {"Status": "unhealthy", "FailingStreak": 4, "Log": [{"ExitCode": 1, "Output": "curl: (7) refused\n", "End": "x"}]}
    one = _inspect("vllm-a", "exited", 137, True, health, [{"Driver": "nvidia", "Count": 0, "DeviceIDs": ["0"], "Capabilities": [["gpu"]]}])
    c = docker.parse_container(json.dumps([one], indent=4))
    assert (c.name, c.status, c.exit_code, c.oom_killed, c.health, c.healthcheck) == ("vllm-a", "exited", 137, True, "unhealthy", True)
    assert (c.ran_s, c.gpus, c.restart_count, c.shm_size_gib, c.pid) == (120.5, "0", 3, 16.0, None)
    many = docker.parse_container(json.dumps([one, _inspect("vllm-b", "restarting", 1, devices=[{"Count": 2, "Capabilities": [["gpu", "utility"]]}])]))
    assert [(x.name, x.status, x.exit_code, x.gpus, x.health) for x in many] == \
        [("vllm-a", "exited", 137, "0", "unhealthy"), ("vllm-b", "restarting", 1, "2", None)]
    h = docker.parse_health(json.dumps([one]))
    assert (h.status, h.failing_streak, h.last_exit_code, h.last_output) == ("unhealthy", 4, 1, "curl: (7) refused")


def test_health_absent_and_state_only():
    assert docker.parse_health("null\n").status == "none"
    assert docker.parse_health(json.dumps([_inspect("x", "running")])).status == "none"
    c = docker.parse_container('{"Status":"exited","Running":false,"OOMKilled":false,"ExitCode":1,"StartedAt":"0001-01-01T00:00:00Z"}')
    assert (c.status, c.exit_code, c.started_at) == ("exited", 1, None)
    assert docker.timestamp("2026-04-13T15:52:04.57922123-03:00") == docker.timestamp("2026-04-13T18:52:04.57922123Z")


PS_V2_OLD = """\
WARN[0000] /srv/vllm/compose.yml: the attribute `version` is obsolete, it will be ignored
NAME                COMMAND                  SERVICE             STATUS                                 PORTS
vllm-head-1         "vllm serve /models…"    vllm                Restarting (1) 5 seconds ago
vllm-proxy-1        "/docker-entrypoint.…"   proxy               Exited (137) 2 minutes ago
vllm-ui-1           "node server.js"         ui                  Up About a minute (health: starting)   0.0.0.0:3000->3000/tcp, [::]:3000->3000/tcp
"""

PS_V1 = """\
     Name                   Command               State             Ports
------------------------------------------------------------------------------------
stack_vllm_1    python3 -m vllm.entrypoint ...   Up (healthy)   127.0.0.1:8000->8000/tcp
stack_worker_1  /bin/sh -c sleep infinity        Exit 137
"""


def test_compose_ps_old_formats():
    rows = docker.parse_compose_ps(PS_V2_OLD)
    assert [(r.name, r.state, r.exit_code, r.health) for r in rows] == [
        ("vllm-head-1", "restarting", 1, None), ("vllm-proxy-1", "exited", 137, None), ("vllm-ui-1", "running", None, "starting")]
    assert [(p.host_ip, p.host_port) for p in rows[2].published] == [("0.0.0.0", "3000"), ("[::]", "3000")]
    v1 = docker.parse_compose_ps(PS_V1)
    assert [(r.name, r.state, r.health, r.exit_code, r.ports) for r in v1] == [
        ("stack_vllm_1", "running", "healthy", None, "127.0.0.1:8000->8000/tcp"), ("stack_worker_1", "exited", None, 137, "")]


def test_compose_ps_json_both_shapes():
    obj = {"Name": "vllm-head-1", "Image": "vllm/vllm-openai:v0.11.0", "Service": "vllm", "State": "running",
           "Status": "Up 3 minutes (healthy)", "Health": "healthy", "ExitCode": 0,
           "Publishers": [{"URL": "127.0.0.1", "TargetPort": 8000, "PublishedPort": 8001, "Protocol": "tcp"}]}
    other = {**obj, "Name": "vllm-side-1", "State": "exited", "Status": "Exited (2) 1 second ago", "Health": "", "ExitCode": 2,
             "Publishers": None}
    for text in (json.dumps([obj, other]), json.dumps(obj) + "\n" + json.dumps(other) + "\n"):
        rows = docker.parse_compose_ps(text)
        assert [(r.name, r.state, r.health, r.exit_code) for r in rows] == [
            ("vllm-head-1", "running", "healthy", None), ("vllm-side-1", "exited", None, 2)]
        assert rows[0].ports == "127.0.0.1:8001->8000/tcp" and rows[0].published[0].host_port == "8001"


@pytest.mark.parametrize("text", ["hello\n", "NAME\n{", '{"Name": 3}\n'])
def test_compose_ps_refuses_foreign_text(text):
    with pytest.raises(ParseError, match="^compose_ps: expected"):
        docker.parse_compose_ps(text)


def test_compose_config_after_a_warning():
    cfg = docker.parse_compose_config('WARN[0000] the attribute `version` is obsolete\nname: x\nservices:\n  vllm:\n    ports:\n'
                                      '      - target: 8000\n        published: "8000"\n        host_ip: 127.0.0.1\n')
    assert cfg["services"]["vllm"]["ports"][0]["host_ip"] == "127.0.0.1"


# ---- vLLM log variants of more releases ---------------------------------------------------------

MULTIPROC_RANK_LOG = """\
INFO 05-06 10:00:00 [api_server.py:1043] vLLM API server version 0.8.5.post1
INFO 05-06 10:00:08 [core.py:58] Initializing a V1 LLM engine (v0.8.5.post1) with config: model='org/toy-32b', max_seq_len=32768, tensor_parallel_size=2, pipeline_parallel_size=1
(VllmWorker rank=0 pid=2201) INFO 05-06 10:00:20 [parallel_state.py:959] rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 0
(VllmWorker rank=1 pid=2202) INFO 05-06 10:00:20 [parallel_state.py:959] rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1
(VllmWorker rank=0 pid=2201) INFO 05-06 10:00:21 [gpu_model_runner.py:1329] Starting to load model org/toy-32b...
(VllmWorker rank=0 pid=2201) INFO 05-06 10:01:21 [gpu_model_runner.py:1347] Model loading took 30.52 GiB and 59.8 seconds
(VllmWorker rank=1 pid=2202) INFO 05-06 10:01:22 [custom_all_reduce.py:1] Custom allreduce is disabled: error reading the topology
INFO 05-06 10:01:40 [kv_cache_utils.py:634] GPU KV cache size: 91,024 tokens
(VllmWorker rank=0 pid=2201) INFO 05-06 10:02:00 [gpu_model_runner.py:1686] Graph capturing finished in 20 secs, took 0.55 GiB
"""


def test_multiproc_worker_prefix_with_rank_is_taken_off():
    log = vllm_log.parse(MULTIPROC_RANK_LOG)
    assert [(m.name, m.t_s) for m in log.milestones] == [
        ("tp_rank", 20.0), ("loading", 21.0), ("model_loaded", 81.0), ("kv_cache", 100.0), ("graph_capture", 120.0)]
    assert (log.version, log.model_gib, log.kv_cache_tokens, log.tensor_parallel_size) == ("0.8.5.post1", 30.52, 91024, 2)
    assert log.errors == []  # an INFO line of a worker mentions "error": still an INFO line


@pytest.mark.parametrize(("line", "name"), [
    ("(EngineCore_DP0 pid=311) ERROR 09-01 10:00:00 [core.py:700] ValueError: Free memory on device cuda:0 (96.1/119.7 GiB) on "
     "startup is less than desired GPU memory utilization (0.9, 107.7 GiB). Decrease GPU memory utilization or reduce GPU "
     "memory used by other processes.", "free_memory_below_utilization"),
    ("(VllmWorker rank=1 pid=2202) ERROR 05-06 10:00:30 [multiproc_executor.py:1] RuntimeError: NCCL error: unhandled cuda "
     "error (run with NCCL_DEBUG=INFO for details)", "nccl_error"),
])
def test_more_errors_are_named(line, name):
    log = vllm_log.parse(line + "\n")
    assert [e.name for e in log.errors] == [name] and log.errors[0].hint


def test_ci_bracketed_iso_timestamps_are_taken_off():
    text = ("[2026-02-03T04:05:06Z] (EngineCore_DP0 pid=61) INFO 02-03 04:05:06 [gpu_model_runner.py:1] Model loading took "
            "9.5 GiB and 3.2 seconds\n"
            "[2026-02-03T04:05:16Z] (EngineCore_DP0 pid=61) INFO 02-03 04:05:16 [kv_cache_utils.py:1] GPU KV cache size: "
            "10,000 tokens\n")
    log = vllm_log.parse(text)
    assert [(m.name, m.t_s) for m in log.milestones] == [("model_loaded", 0.0), ("kv_cache", 10.0)]


# ---- audit: more layouts and failure modes (self-written, values made up) ----------------------

def test_version_not_read_from_other_libraries_version_lines():
    # "NCCL version 2.x" (a DistBackendError's tail) and "Using FlashInfer version 0.x" are not vLLM's version;
    # only the 0.11+ start banner's logo line carries it
    text = ("(EngineCore_DP0 pid=40) INFO 03-01 10:00:00 [flashinfer.py:1] Using FlashInfer version 0.2.9\n"
            "[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:1, "
            "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.26.2\n")
    log = vllm_log.parse(text)
    assert log.version is None and [e.name for e in log.errors] == ["nccl_error"]
    banner = ("(APIServer pid=1) INFO 03-01 10:00:00 [utils.py:1]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.12.3\n"
              "(APIServer pid=1) INFO 03-01 10:00:00 [utils.py:1]   █▄█▀ █     █     █     █  model   /models/toy-8b\n")
    log = vllm_log.parse(banner)
    assert (log.version, log.model) == ("0.12.3", "/models/toy-8b")


def test_model_tp_and_len_from_start_arguments_when_no_engine_config_line():
    # 0.9+ `non-default args: {...}` (a log cut before the engine's config line, or a start that failed first)
    v1 = ("(APIServer pid=1) INFO 03-01 10:00:00 [api_server.py:1] vLLM API server version 0.10.2\n"
          "(APIServer pid=1) INFO 03-01 10:00:00 [utils.py:1] non-default args: {'model_tag': 'org/toy-70b', 'host': '0.0.0.0', "
          "'model': 'org/toy-70b', 'max_model_len': 16384, 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.8}\n"
          "(APIServer pid=1) huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache "
          "and outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' to False.\n")
    log = vllm_log.parse(v1)
    assert (log.model, log.tensor_parallel_size, log.max_model_len) == ("org/toy-70b", 2, 16384)
    assert [e.name for e in log.errors] == ["hf_offline"] and "local path" in log.errors[0].hint
    # 0.4-0.8 `args: Namespace(...)`
    v0 = ("INFO 03-01 10:00:00 api_server.py:1] args: Namespace(host=None, port=8000, model='/models/toy', tokenizer=None, "
          "max_model_len=4096, tensor_parallel_size=4, pipeline_parallel_size=1)\n")
    log = vllm_log.parse(v0)
    assert (log.model, log.tensor_parallel_size, log.max_model_len) == ("/models/toy", 4, 4096)
    # the engine's config line wins over the arguments
    both = v0 + "INFO 03-01 10:00:05 llm_engine.py:1] Initializing an LLM engine (v0.6.3) with config: model='/models/toy', " \
                "max_seq_len=8192, tensor_parallel_size=4\n"
    assert vllm_log.parse(both).max_model_len == 8192


@pytest.mark.parametrize(("line", "name"), [
    ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
     "dist_store_timeout"),
    ("(EngineCore_DP0 pid=5) ERROR 03-01 10:10:00 [core.py:1] torch.distributed.DistNetworkError: The client socket has timed "
     "out after 600000ms while trying to connect to (10.1.1.1, 29501).", "dist_store_timeout"),
    ("(EngineCore_DP0 pid=5) ERROR 03-01 10:10:00 [core.py:1] torch.distributed.DistNetworkError: The server socket has failed "
     "to listen on any local network address. port: 29501, useIpv6: false, code: -98, name: EADDRINUSE, message: address "
     "already in use", "port_in_use"),
    ("(APIServer pid=1) huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/models/org/toy: "
     "offline mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.", "hf_offline"),
    ("OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files and it "
     "looks like org/toy is not the path to a directory containing a file named config.json.", "hf_offline"),
    ("requests.exceptions.ConnectionError: (MaxRetryError('HTTPSConnectionPool(host=\\'huggingface.co\\', port=443): Max "
     "retries exceeded with url: /api/models/org/toy (Caused by NameResolutionError(\"<c>: Failed to resolve "
     "\\'huggingface.co\\' ([Errno -3] Temporary failure in name resolution)\"))')", "hf_offline"),
    ("RuntimeError: NCCL error: invalid argument (run with NCCL_DEBUG=WARN for details)", "nccl_error"),
    ("ERROR 03-01 10:30:00 [ray_utils.py:1] ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': "
     "1.0}, {'GPU': 1.0}] within 1800 seconds. See `ray status` to make sure the cluster has enough resources.",
     "ray_placement_timeout"),
    ("(APIServer pid=1) ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.", "worker_died"),
])
def test_audit_errors_are_named(line, name):
    log = vllm_log.parse(line + "\n")
    assert [e.name for e in log.errors] == [name] and log.errors[0].hint


def test_v0_engine_process_failed_to_start_is_a_failed_start():
    # 0.6-0.8 frontend multiprocessing: the API server's last words when the engine process died while starting
    text = ("ERROR 03-01 10:00:09 engine.py:1] CUDA out of memory. Tried to allocate 2.00 GiB.\n"
            "RuntimeError: Engine process failed to start. See stack trace for the root cause.\n")
    log = vllm_log.parse(text)
    assert log.startup_failed and log.cause.name == "cuda_oom"


JOURNAL_LOG = """\
Mar 01 10:00:00 spark-a vllm[2201]: (APIServer pid=2201) INFO 03-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.2
Mar 01 10:00:50 spark-a vllm[2201]: (EngineCore_DP0 pid=2301) INFO 03-01 10:00:50 [gpu_model_runner.py:1] Model loading took 12.5 GiB and 45.0 seconds
Mar 01 10:00:55 spark-a vllm[2201]: (EngineCore_DP0 pid=2301) INFO 03-01 10:00:55 [config.py:1] Mamba cache mode is set to 'align'
Mar 01 10:01:00 spark-a vllm[2201]: (APIServer pid=2201) INFO:     Application startup complete.
"""


def test_journalctl_prefix_is_taken_off():
    # `journalctl -u vllm` (short): before, the INFO level behind the prefix was not seen and an INFO line counted as an error
    log = vllm_log.parse(JOURNAL_LOG)
    assert log.errors == [] and log.startup_complete and log.version == "0.11.2"
    assert [(m.name, m.t_s) for m in log.milestones] == [("model_loaded", 50.0), ("startup_complete", 55.0)]
    iso = JOURNAL_LOG.replace("Mar 01 ", "2026-03-01T").replace(" spark-a", "+0000 spark-a")
    assert vllm_log.parse(iso).errors == []


def test_curl_i_headers_and_flat_error_event_in_a_stream():
    # curl -i prints the response headers without curl -v's "< "
    err = vllm_api.parse_error('HTTP/1.1 401 Unauthorized\ndate: Sun, 01 Mar 2026 10:00:00 GMT\nserver: uvicorn\n'
                               'content-length: 24\ncontent-type: application/json\n\n{"error":"Unauthorized"}')
    assert (err.status, err.server, err.envelope) == (401, "uvicorn", "string")
    # 0.4-0.6 sent the flat envelope as an event inside a stream
    s = vllm_api.parse_sse('data: {"id":"c","model":"toy","choices":[{"index":0,"delta":{"role":"assistant","content":""},'
                           '"finish_reason":null}]}\n\ndata: {"object": "error", "message": "Input prompt (5000 tokens) is too '
                           'long", "type": "BadRequestError", "param": null, "code": 400}\n\ndata: [DONE]\n')
    assert s.error == "Input prompt (5000 tokens) is too long" and s.done


def test_health_from_a_state_object_is_not_the_container_status():
    # docker inspect --format '{{json .State}}': State.Status is "running"; the health is State.Health.Status
    state = {"Status": "running", "Running": True, "OOMKilled": False, "Pid": 77, "ExitCode": 0,
             "Health": {"Status": "starting", "FailingStreak": 2, "Log": [{"ExitCode": 7, "Output": "refused", "End": "x"}]}}
    h = docker.parse_health(json.dumps(state))
    assert (h.status, h.failing_streak, h.last_exit_code) == ("starting", 2, 7)
    del state["Health"]
    assert docker.parse_health(json.dumps(state)).status == "none"
    with pytest.raises(ParseError, match="^docker_health: expected"):
        docker.parse_health('{"Status": "running", "FailingStreak": 0}')


def test_ps_custom_table_and_docker_ps_json():
    # docker compose ps --format 'table {{.Service}}\t{{.Status}}\t{{.Ports}}'
    rows = docker.parse_compose_ps("SERVICE   STATUS                     PORTS\n"
                                   "vllm      Up 9 minutes (unhealthy)   127.0.0.1:8000->8000/tcp\n"
                                   "ray       Exited (1) 3 minutes ago\n")
    assert [(r.name, r.service, r.state, r.health, r.exit_code) for r in rows] == [
        ("vllm", "vllm", "running", "unhealthy", None), ("ray", "ray", "exited", None, 1)]
    # docker ps --format json (one object a line; "Names", no "Name")
    line = {"Command": "\"vllm serve\"", "ID": "0a1b2c3d4e5f", "Image": "vllm/vllm-openai:v0.11.0", "Names": "vllm-a",
            "Ports": "", "State": "exited", "Status": "Exited (137) 1 minute ago"}
    rows = docker.parse_compose_ps(json.dumps(line) + "\n" + json.dumps({**line, "Names": "vllm-b", "State": "running",
                                                                         "Status": "Up 1 minute"}) + "\n")
    assert [(r.name, r.state, r.exit_code) for r in rows] == [("vllm-a", "exited", 137), ("vllm-b", "running", None)]
