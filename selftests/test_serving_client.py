"""The serving client: error envelopes, stream timing, the key kept out of reprs; and the `openai` client paths
(chat, stream with a usage chunk, tool calls, reasoning under both names, 404, 401, connection refused,
no answer in time) proven against a tiny local server on 127.0.0.1 that answers as vLLM does.
"""

import json
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gb10check.checks import serving as judges
from gb10check.facts.vllm_api import parse_error, reassemble
from gb10check.serving import Api, ApiUnreachable, Reply, Timed, measure_decode

from .fake_openai import in_background

# ---- pure parts ---------------------------------------------------------------------------------


def test_the_api_key_middlewares_string_envelope_is_understood():
    # What vLLM 0.32's --api-key middleware answers (seen on the simulated head): no message object.
    err = parse_error('{"error":"Unauthorized"}')
    assert (err.envelope, err.message) == ("string", "Unauthorized")


def test_an_unknown_error_body_is_reported_not_crashed_on():
    assert Reply(502, "<html>Bad Gateway</html>").error == "(unrecognised error body) '<html>Bad Gateway</html>'"
    assert Reply(404, '{"object":"error","message":"The model `x` does not exist.","code":404}').error == \
        "The model `x` does not exist."
    assert Reply(None, "", "no answer within 5 s").error == "no answer within 5 s"


def test_the_key_is_not_in_the_repr():
    api = Api("http://198.18.0.10:20001/v1", api_key="sk-secret-123")
    assert "sk-secret-123" not in repr(api)
    assert api.root == "http://198.18.0.10:20001"
    api.client  # made on first use: still not in the repr
    assert "sk-secret-123" not in repr(api)


def test_decode_rate_is_tokens_after_the_first_over_first_to_last():
    t = Timed(reassemble([]), True, ttft_s=0.5, last_token_s=10.5, total_s=11.0, token_chunks=200, completion_tokens=201)
    assert t.decode_tok_s == 20.0
    assert round(t.e2e_tok_s, 3) == round(201 / 11.0, 3)
    assert Timed(reassemble([]), True, None, None, 1.0, 0, None).decode_tok_s is None


# ---- a local server that answers as vLLM does ----------------------------------------------------

MODEL = "smollm2-135m"
NOT_FOUND_FLAT = {"object": "error", "message": f"The model `{MODEL}` does not exist.", "type": "NotFoundError",
                  "param": None, "code": 404}
NOT_FOUND_NESTED = {"error": {"message": f"The model `{MODEL}` does not exist.", "type": "NotFoundError", "param": "model",
                              "code": 404}}
TOOL_400 = {"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
                      "type": "BadRequestError", "param": None, "code": 400}}


def completion(content="The answer is 4.", reasoning_key=None, reasoning=None, tool_call=False):
    message = {"role": "assistant", "content": content}
    if reasoning_key:
        message[reasoning_key] = reasoning
    finish = "stop"
    if tool_call:
        message["content"] = None
        message["tool_calls"] = [{"id": "chatcmpl-tool-1", "type": "function",
                                  "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
        finish = "tool_calls"
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "stop_reason": None}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17,
                      "completion_tokens_details": {"reasoning_tokens": 3} if reasoning_key else None}}


def chunk(delta=None, finish=None, usage=None):
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    ev = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL, "choices": choices}
    if usage:
        ev["usage"] = usage
    return "data: " + json.dumps(ev)


def counting_stream(reasoning_key=None, usage=True, done=True, gap_s=0.05):
    """What vLLM streams for "count from 1 to 5": role, (reasoning), one number per chunk, usage, [DONE]."""
    events = [chunk({"role": "assistant", "content": ""})]
    if reasoning_key:
        events.append(chunk({reasoning_key: "Counting."}))
    events += [chunk({"content": f"{n} "}) for n in range(1, 5)] + [chunk({"content": "5"}, finish="stop")]
    if usage:
        events.append(chunk(usage={"prompt_tokens": 10, "completion_tokens": 6 if reasoning_key else 5, "total_tokens": 16}))
    if done:
        events.append("data: [DONE]")
    return ("sse", 200, events, gap_s)


def tool_stream():
    return ("sse", 200, [
        chunk({"role": "assistant", "content": ""}),
        chunk({"tool_calls": [{"index": 0, "id": "chatcmpl-tool-1", "type": "function",
                               "function": {"name": "get_weather", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}, finish="tool_calls"),
        "data: [DONE]"], 0)


class FakeVllm(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # streams end by closing the connection, as without chunked encoding

    def log_message(self, *args):
        pass

    def _answer(self, status, body, content_type="application/json"):
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.server.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": None})
        if self.path == "/health":
            self._answer(200, "")
        elif self.path == "/v1/models":
            self._answer(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "root": "HuggingFaceTB/SmolLM2-135M-Instruct",
                                                          "max_model_len": 4096, "owned_by": "vllm"}]})
        else:
            self._answer(404, {"detail": "Not Found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
        kind, status, payload, extra = self.server.script.pop(0)
        if kind == "json":
            self._answer(status, payload)
        elif kind == "hang":
            time.sleep(extra)
            self._answer(status, payload)
        else:  # sse: payload is a list of "data: ..." lines, sent `extra` seconds apart
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for line in payload:
                self.wfile.write((line + "\n\n").encode())
                self.wfile.flush()
                time.sleep(extra)


@pytest.fixture(scope="module")
def vllm():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeVllm)
    server.daemon_threads = True
    server.seen, server.script = [], []
    in_background(server)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def fake(vllm):
    vllm.seen.clear()
    vllm.script.clear()
    return vllm


def api_for(server, key=None, timeout_s=10):
    return Api(f"http://127.0.0.1:{server.server_port}/v1", api_key=key, timeout_s=timeout_s)


def body(**extra):
    return {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "temperature": 0, "max_tokens": 16,
            "chat_template_kwargs": {"enable_thinking": True}, **extra}


# ---- chat ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["reasoning", "reasoning_content"])
def test_chat_reads_reasoning_under_either_name_from_the_clients_extra_fields(fake, key):
    fake.script.append(("json", 200, completion(content="4", reasoning_key=key, reasoning="2 and 2 make 4."), None))
    reply, c = api_for(fake).chat(body())
    assert reply is None
    assert (c.content, c.reasoning, c.reasoning_field, c.reasoning_tokens) == ("4", "2 and 2 make 4.", key, 3)
    sent = fake.seen[-1]["body"]
    assert sent["chat_template_kwargs"] == {"enable_thinking": True}  # vLLM's field travels in the body, not dropped
    assert judges.judge_reasoning("head", reply, c, "qwen3", MODEL) == []


def test_chat_answer_and_the_request_as_sent(fake):
    fake.script.append(("json", 200, completion(content="The factorial of 3 is 6."), None))
    reply, c = api_for(fake, key="sk-secret-123").chat(body())
    assert reply is None and c.content == "The factorial of 3 is 6." and c.finish_reason == "stop"
    seen = fake.seen[-1]
    assert seen["path"] == "/v1/chat/completions"
    assert seen["headers"]["authorization"] == "Bearer sk-secret-123"
    assert seen["headers"]["x-stainless-retry-count"] == "0"
    assert seen["body"]["model"] == MODEL and seen["body"]["max_tokens"] == 16


def test_tool_call_through_the_client(fake):
    fake.script.append(("json", 200, completion(tool_call=True), None))
    reply, c = api_for(fake).chat(body(tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]))
    assert reply is None and c.finish_reason == "tool_calls"
    assert [(t.name, t.arguments) for t in c.tool_calls] == [("get_weather", '{"city": "Paris"}')]
    assert judges.judge_tool_call("head", reply, c.finish_reason, c.tool_calls, "hermes", MODEL) == []
    assert fake.seen[-1]["body"]["tools"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("envelope", [NOT_FOUND_FLAT, NOT_FOUND_NESTED], ids=["flat", "nested"])
def test_404_is_a_reply_with_the_servers_message(fake, envelope):
    fake.script.append(("json", 404, envelope, None))
    reply, c = api_for(fake).chat(body())
    assert c is None and (reply.status, reply.error) == (404, f"The model `{MODEL}` does not exist.")
    assert [f.code.value for f in judges.judge_answer("head", reply, c, _serving(), MODEL)] == ["model-not-served"]


def test_401_from_the_key_middleware_is_a_reply(fake):
    fake.script.append(("json", 401, {"error": "Unauthorized"}, None))
    reply, c = api_for(fake).chat(body())
    assert c is None and (reply.status, reply.error) == (401, "Unauthorized")


def test_a_5xx_is_seen_once_not_retried(fake):
    fake.script += [("json", 503, {"error": {"message": "busy", "type": "ServiceUnavailable", "code": 503}}, None),
                    ("json", 200, completion(), None)]
    reply, _ = api_for(fake).chat(body())
    assert (reply.status, reply.error) == (503, "busy")
    assert len([s for s in fake.seen if s["path"] == "/v1/chat/completions"]) == 1


def test_no_answer_in_time_is_a_reply_without_status(fake):
    fake.script.append(("hang", 200, completion(), 1.5))
    reply, c = api_for(fake, timeout_s=0.3).chat(body())
    assert c is None and reply.status is None and reply.error == "no answer within 0.3 s"
    assert [f.code.value for f in judges.judge_answer("head", reply, c, _serving(), MODEL)] == ["api-timeout"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_unreachable_not_a_verdict():
    api = Api(f"http://127.0.0.1:{_closed_port()}/v1", api_key="sk-secret-123", timeout_s=5)
    for ask in (lambda: api.chat(body()), lambda: api.stream(body()), lambda: api.get("/health", root=True)):
        with pytest.raises(ApiUnreachable, match="Connection refused") as exc:
            ask()
        assert "sk-secret-123" not in str(exc.value)


def test_no_key_sends_no_authorization_even_with_openai_variables_set(fake, monkeypatch):
    """A user's OPENAI_API_KEY (meant for api.openai.com) or OPENAI_CUSTOM_HEADERS never reach the cluster's server."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-openai-key")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "Authorization: Bearer from-env")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-user")
    fake.script += [("json", 200, completion(), None), ("json", 200, completion(), None)]
    api_for(fake).chat(body())
    headers = {k.lower(): v for k, v in fake.seen[-1]["headers"].items()}
    assert "authorization" not in headers and "openai-organization" not in headers
    api_for(fake, key="sk-mine").chat(body())
    assert fake.seen[-1]["headers"]["authorization"] == "Bearer sk-mine"


# ---- streams ------------------------------------------------------------------------------------

def test_stream_with_usage_chunk_is_timed_on_the_client(fake):
    fake.script.append(counting_stream(gap_s=0.1))
    reply, timed = api_for(fake).stream(body(stream_options={"include_usage": True}))
    assert reply is None and timed.broken is None
    assert timed.done and timed.stream.usage_chunk and timed.completion_tokens == 5
    assert timed.token_chunks == 5 and timed.stream.content == "1 2 3 4 5"
    assert 0 < timed.ttft_s < timed.last_token_s <= timed.total_s
    assert timed.last_token_s - timed.ttft_s >= 0.2  # four gaps of 0.1 s between the first and the last number
    assert timed.decode_tok_s == pytest.approx(4 / (timed.last_token_s - timed.ttft_s))
    assert fake.seen[-1]["body"]["stream"] is True and fake.seen[-1]["body"]["stream_options"] == {"include_usage": True}
    assert judges.judge_stream("head", reply, timed, MODEL) == []


@pytest.mark.parametrize("key", ["reasoning", "reasoning_content"])
def test_streamed_reasoning_under_either_name_counts_as_a_token(fake, key):
    fake.script.append(counting_stream(reasoning_key=key, gap_s=0))
    _, timed = api_for(fake).stream(body(stream_options={"include_usage": True}))
    assert (timed.stream.reasoning, timed.stream.reasoning_field) == ("Counting.", key)
    assert timed.token_chunks == 6


def test_stream_without_done_or_usage_is_judged_broken(fake):
    fake.script.append(counting_stream(usage=False, done=False, gap_s=0))
    reply, timed = api_for(fake).stream(body(stream_options={"include_usage": True}))
    assert not timed.done and not timed.stream.usage_chunk
    [f] = judges.judge_stream("head", reply, timed, MODEL)
    assert f.code.value == "stream-broken" and "no 'data: [DONE]' at the end" in f.seen and "no usage chunk" in f.seen
    assert [f.code.value for f in judges.judge_decode_run("head", reply, timed, MODEL)] == ["stream-broken"]


def test_an_error_event_inside_a_stream_is_kept(fake):
    error = 'data: {"error": {"message": "engine dead", "type": "InternalServerError", "code": 500}}'
    fake.script.append(("sse", 200, [chunk({"role": "assistant", "content": ""}), chunk({"content": "1 "}), error], 0))
    _, timed = api_for(fake).stream(body())
    assert timed.stream.error == "engine dead" and timed.token_chunks == 1
    assert "an error event in the stream: engine dead" in judges.judge_stream("head", None, timed, MODEL)[0].seen


def test_streamed_tool_call_is_reassembled(fake):
    fake.script.append(tool_stream())
    reply, timed = api_for(fake).stream(body(tools=[]))
    assert reply is None and timed.stream.finish_reason == "tool_calls"
    assert [(t.name, t.arguments) for t in timed.stream.tool_calls] == [("get_weather", '{"city": "Paris"}')]
    assert judges.judge_tool_call("head", reply, timed.stream.finish_reason, timed.stream.tool_calls, "hermes", MODEL,
                                  streamed=True) == []


@pytest.mark.parametrize("status,payload,message", [(404, NOT_FOUND_NESTED, f"The model `{MODEL}` does not exist."),
                                                    (401, {"error": "Unauthorized"}, "Unauthorized"),
                                                    (400, TOOL_400, TOOL_400["error"]["message"])])
def test_a_refused_stream_is_a_reply(fake, status, payload, message):
    fake.script.append(("json", status, payload, None))
    reply, timed = api_for(fake).stream(body())
    assert timed is None and (reply.status, reply.error) == (status, message)


def test_measure_decode_sends_the_seeds_request(fake):
    fake.script.append(counting_stream(gap_s=0.01))
    reply, timed = measure_decode(api_for(fake), MODEL)
    sent = fake.seen[-1]["body"]
    assert sent["messages"][0]["content"] == "Count from 1 to 80, separated by spaces."
    assert sent["chat_template_kwargs"] == {"enable_thinking": False} and sent["stream_options"] == {"include_usage": True}
    assert reply is None and timed.decode_tok_s > 0


def test_plain_http_get_for_health_and_models(fake):
    api = api_for(fake, key="sk-secret-123")
    assert api.get("/health", root=True).status == 200
    models = api.get("/models")
    assert models.status == 200 and judges.judge_models("head", "url", models, _deploy()) == []
    assert fake.seen[-1]["headers"]["authorization"] == "Bearer sk-secret-123"


def _serving():
    from gb10check.cluster import Serving
    return Serving()


def _deploy():
    from .test_judges_serving import deploy
    return deploy(served_model_name=MODEL, model_id="HuggingFaceTB/SmolLM2-135M-Instruct", max_model_len=4096)


def test_real_captured_bodies_read_through_the_client(fake):
    """vLLM's own bodies (../shared/captures/vllm_api), served as they were captured, read back through the client."""
    from .conftest import read_capture
    from .test_judges_serving import ANSWER_IN_REASONING
    fake.script.append(("json", 200, read_capture(ANSWER_IN_REASONING), None))
    _, c = api_for(fake).chat(body())
    assert (c.reasoning_field, c.content, c.answer_in_reasoning, c.vllm_version) == ("reasoning", None, True, "0.26.0")
    sse = read_capture("vllm_api/sse-tool_calls-stream-2-tools-qwen3-coder-next-usage-DONE-idx51976516683.txt")
    fake.script.append(("sse", 200, [line for line in sse.splitlines() if line.startswith("data:")], 0))
    _, timed = api_for(fake).stream(body())
    assert timed.done and timed.stream.finish_reason == "tool_calls"
    assert [t.name for t in timed.stream.tool_calls] == ["write", "read"] and timed.completion_tokens
