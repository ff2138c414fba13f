"""What clients see of the model: a right answer, reasoning kept apart, tool calls, streaming, concurrency.

The requests go through the `openai` client, as users' applications send them (gb10check.serving.Api).
"""

from concurrent.futures import ThreadPoolExecutor

import pytest

from gb10check.checks import serving
from gb10check.verdict import report

pytestmark = pytest.mark.serving

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TOOL_PROMPT = "what is the weather now? call the tool"


def chat(cluster, content: str, thinking: bool = False, **extra) -> dict:
    return {"model": cluster.deploy.served_model_name, "messages": [{"role": "user", "content": content}],
            "temperature": 0, "max_tokens": 256, "chat_template_kwargs": {"enable_thinking": thinking}, **extra}


def test_basic_answer(served, cluster):
    reply, c = served.chat(chat(cluster, cluster.serving.basic_prompt))
    report(serving.judge_answer(cluster.head.name, reply, c, cluster.serving, cluster.deploy.served_model_name))


def test_reasoning(served, cluster):
    if not cluster.serving.expect_reasoning:
        pytest.skip("serving.expect_reasoning is false: this model is not expected to reason")
    reply, c = served.chat(chat(cluster, "What is 2+2?", thinking=True))
    report(serving.judge_reasoning(cluster.head.name, reply, c, cluster.deploy.reasoning_parser or "<the model's parser>",
                                   cluster.deploy.served_model_name))


def test_tool_call(served, cluster):
    if not cluster.serving.expect_tool_calls:
        pytest.skip("serving.expect_tool_calls is false: this deployment does not serve tool calls")
    reply, c = served.chat(chat(cluster, TOOL_PROMPT, tools=[WEATHER_TOOL]))
    report(serving.judge_tool_call(cluster.head.name, reply, c and c.finish_reason, c.tool_calls if c else [],
                                   cluster.deploy.tool_call_parser or "<the model's parser>", cluster.deploy.served_model_name))


def test_tool_call_streamed(served, cluster):
    if not cluster.serving.expect_tool_calls:
        pytest.skip("serving.expect_tool_calls is false: this deployment does not serve tool calls")
    reply, timed = served.stream(chat(cluster, TOOL_PROMPT, tools=[WEATHER_TOOL]))
    report(serving.judge_tool_call(cluster.head.name, reply, timed and timed.stream.finish_reason,
                                   timed.stream.tool_calls if timed else [],
                                   cluster.deploy.tool_call_parser or "<the model's parser>", cluster.deploy.served_model_name,
                                   streamed=True))


def test_streaming(served, cluster, measurements):
    reply, timed = served.stream(chat(cluster, cluster.serving.basic_prompt, stream_options={"include_usage": True}))
    report(serving.judge_stream(cluster.head.name, reply, timed, cluster.deploy.served_model_name))
    measurements("ttft", cluster.head.name, timed.ttft_s, "s")


def test_concurrency(served, cluster):
    n = cluster.deploy.max_num_seqs
    bodies = [chat(cluster, f"Name a colour. Request {i}.", max_tokens=16) for i in range(n)]
    with ThreadPoolExecutor(n) as pool:
        replies = [reply for reply, _ in pool.map(served.chat, bodies)]
    report(serving.judge_concurrency(cluster.head.name, replies, cluster.deploy.served_model_name))
