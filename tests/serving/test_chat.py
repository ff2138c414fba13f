"""What clients see of the model: a right answer, reasoning kept apart, tool calls, streaming, concurrency."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from gb10check.facts.vllm_api import completion_from
from gb10check.remedies import Code
from gb10check.verdict import Finding, report

pytestmark = pytest.mark.serving

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TOOL_PROMPT = "what is the weather now? call the tool"


def chat(api, cluster, content: str, thinking: bool = False, **extra) -> dict:
    return {"model": cluster.deploy.served_model_name, "messages": [{"role": "user", "content": content}],
            "temperature": 0, "max_tokens": 256, "chat_template_kwargs": {"enable_thinking": thinking}, **extra}


def post_chat(api, cluster, body: dict):
    reply = api.post("/chat/completions", body)
    if reply.status != 200:
        pytest.fail(f"{cluster.head.name}: POST /chat/completions -> {reply.status}: {reply.error}", pytrace=False)
    return completion_from(reply.json())


def test_basic_answer(served, cluster):
    s = cluster.serving
    c = post_chat(served, cluster, chat(served, cluster, s.basic_prompt))
    if s.basic_expect not in (c.content or ""):
        report([Finding(Code.ANSWER_WRONG, cluster.head.name, f"{(c.content or '')[:300]!r} to {s.basic_prompt!r}",
                        f"an answer containing {s.basic_expect!r}")])


def test_reasoning(served, cluster):
    if not cluster.serving.expect_reasoning:
        pytest.skip("serving.expect_reasoning is false: this model is not expected to reason")
    c = post_chat(served, cluster, chat(served, cluster, "What is 2+2?", thinking=True))
    where = cluster.head.name
    parser = cluster.deploy.reasoning_parser or "<the model's parser>"
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
    report(findings)


def check_call(where: str, finish: str | None, calls, parser: str) -> list[Finding]:
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


def test_tool_call(served, cluster):
    if not cluster.serving.expect_tool_calls:
        pytest.skip("serving.expect_tool_calls is false: this deployment does not serve tool calls")
    parser = cluster.deploy.tool_call_parser or "<the model's parser>"
    reply = served.post("/chat/completions", chat(served, cluster, TOOL_PROMPT, tools=[WEATHER_TOOL]))
    if reply.status != 200:
        report([Finding(Code.TOOL_CALL_MISSING, cluster.head.name, f"{reply.status}: {reply.error}",
                        "200 with a tool call", parser=parser)])
    c = completion_from(reply.json())
    report(check_call(cluster.head.name, c.finish_reason, c.tool_calls, parser))


def test_tool_call_streamed(served, cluster):
    if not cluster.serving.expect_tool_calls:
        pytest.skip("serving.expect_tool_calls is false: this deployment does not serve tool calls")
    parser = cluster.deploy.tool_call_parser or "<the model's parser>"
    error, timed = served.stream("/chat/completions", chat(served, cluster, TOOL_PROMPT, tools=[WEATHER_TOOL]))
    if error:
        report([Finding(Code.TOOL_CALL_MISSING, cluster.head.name, f"{error.status}: {error.error}",
                        "200 with a streamed tool call", parser=parser)])
    report(check_call(f"{cluster.head.name} (streamed)", timed.stream.finish_reason, timed.stream.tool_calls, parser))


def test_streaming(served, cluster, measurements):
    body = chat(served, cluster, cluster.serving.basic_prompt, stream_options={"include_usage": True})
    error, timed = served.stream("/chat/completions", body)
    where = cluster.head.name
    if error:
        pytest.fail(f"{where}: streaming POST /chat/completions -> {error.status}: {error.error}", pytrace=False)
    problems = []
    if timed.token_chunks < 2:
        problems.append(f"{timed.token_chunks} chunks with tokens (expected several)")
    if not timed.done:
        problems.append("no 'data: [DONE]' at the end")
    if not timed.stream.usage_chunk or not timed.completion_tokens:
        problems.append("no usage chunk although stream_options.include_usage was set")
    if problems:
        report([Finding(Code.STREAM_BROKEN, where, "; ".join(problems), "token chunks, a usage chunk, then [DONE]")])
    measurements("ttft", where, timed.ttft_s * 1000, "ms")


def test_concurrency(served, cluster):
    n = cluster.deploy.max_num_seqs
    bodies = [chat(served, cluster, f"Name a colour. Request {i}.", max_tokens=16) for i in range(n)]
    with ThreadPoolExecutor(n) as pool:
        replies = list(pool.map(lambda b: served.post("/chat/completions", b), bodies))
    failed = [f"#{i}: {r.status} {r.error}" for i, r in enumerate(replies) if r.status != 200]
    if failed:
        report([Finding(Code.CONCURRENCY, cluster.head.name, f"{len(failed)} of {n} failed: {'; '.join(failed)[:400]}",
                        f"all {n} (max_num_seqs) requests at once answered", value=n)])
