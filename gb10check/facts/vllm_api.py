"""vLLM OpenAI-API bodies: /v1/models, chat completions, SSE streams, error envelopes.

Reasoning is read from `reasoning` (current vLLM) or `reasoning_content` (older servers).
"""

import json
import re
from dataclasses import dataclass, field

from ._text import ParseError, parser


def _json(kind: str, text: str, expected: str):
    # Drop a captured command line ("user@host % curl ...") before the body.
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ParseError(kind, expected, text)
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise ParseError(kind, f"{expected} ({exc.msg} at char {exc.pos})", text) from None


@dataclass
class ServedModel:
    id: str
    root: str | None
    max_model_len: int | None  # older servers omit it
    owned_by: str | None


@parser
def parse_models(text: str) -> list[ServedModel]:
    body = _json("vllm_models", text, "a /v1/models JSON body")
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise ParseError("vllm_models", "an object with a 'data' list", text)
    return [ServedModel(str(m.get("id")), m.get("root"), m.get("max_model_len"), m.get("owned_by"))
            for m in body["data"] if isinstance(m, dict)]


@dataclass
class ToolCall:
    id: str | None
    name: str | None
    arguments: str  # JSON text as the server sent it


@dataclass
class ChatCompletion:
    model: str | None
    finish_reason: str | None
    content: str | None
    reasoning: str | None
    reasoning_field: str | None  # "reasoning" | "reasoning_content" | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None


def _reasoning(message: dict) -> tuple[str | None, str | None]:
    for key in ("reasoning", "reasoning_content"):
        if message.get(key):
            return message[key], key
    return None, None


def completion_from(body: dict) -> ChatCompletion:
    choice = _dict((body.get("choices") or [{}])[0])
    message = _dict(choice.get("message"))
    reasoning, where = _reasoning(message)
    usage = _dict(body.get("usage"))
    details = _dict(usage.get("completion_tokens_details"))
    return ChatCompletion(
        model=body.get("model"),
        finish_reason=choice.get("finish_reason"),
        content=message.get("content"),
        reasoning=reasoning,
        reasoning_field=where,
        tool_calls=[ToolCall(c.get("id"), _dict(c.get("function")).get("name"), _str(_dict(c.get("function")).get("arguments")))
                    for c in message.get("tool_calls") or [] if isinstance(c, dict)],
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        reasoning_tokens=details.get("reasoning_tokens"),
    )


@parser
def parse_chat(text: str) -> ChatCompletion:
    body = _json("vllm_chat", text, "a chat completion JSON body")
    # Test harnesses often wrap the server's body: {"response": {...}, "ok": ...}
    if isinstance(body, dict) and "choices" not in body and isinstance(body.get("response"), dict):
        body = body["response"]
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list) or not body["choices"]:
        raise ParseError("vllm_chat", "an object with 'choices' (a chat completion)", text)
    return completion_from(body)


@dataclass
class Stream:
    chunks: int
    done: bool  # "data: [DONE]" seen
    content: str
    reasoning: str
    finish_reason: str | None
    tool_calls: list[ToolCall]
    usage_chunk: bool  # a final chunk with empty choices and usage (stream_options.include_usage)
    prompt_tokens: int | None
    completion_tokens: int | None
    first_role: str | None


def reassemble(events: list[dict]) -> Stream:
    """Fold parsed SSE chunk objects into one message (used for live streams too)."""
    content, reasoning, calls = [], [], {}
    finish = role = None
    usage_chunk = False
    usage: dict = {}
    for ev in events:
        if isinstance(ev.get("usage"), dict):
            usage = ev["usage"]
        choices = ev.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            usage_chunk = usage_chunk or bool(ev.get("usage"))
            continue
        choice = choices[0]
        delta = _dict(choice.get("delta"))
        role = role or delta.get("role")
        content.append(_str(delta.get("content")))
        reasoning.append(_str(delta.get("reasoning") or delta.get("reasoning_content")))
        for tc in delta.get("tool_calls") or []:
            if not isinstance(tc, dict):
                continue
            index = tc.get("index", 0)
            slot = calls.setdefault(index if isinstance(index, int) else 0, {"id": None, "name": None, "arguments": ""})
            slot["id"] = slot["id"] or tc.get("id")
            fn = _dict(tc.get("function"))
            slot["name"] = slot["name"] or fn.get("name")
            slot["arguments"] += _str(fn.get("arguments"))
        finish = choice.get("finish_reason") or finish
    return Stream(len(events), False, "".join(content), "".join(reasoning), finish,
                  [ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())],
                  usage_chunk, usage.get("prompt_tokens"), usage.get("completion_tokens"), role)


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _str(value) -> str:
    return value if isinstance(value, str) else ""


DONE = "[DONE]"


def sse_event(line: str) -> dict | str | None:
    """One server-sent-events line: its JSON object, DONE for 'data: [DONE]', None for anything but a data line.

    Shared by parse_sse (a captured stream) and serving.Api.stream (a live one)."""
    if not line.startswith("data:"):
        return None
    payload = line[5:].strip()
    if payload == DONE:
        return DONE
    try:
        event = json.loads(payload)
    except json.JSONDecodeError:
        event = None
    if not isinstance(event, dict):
        raise ParseError("vllm_sse", "'data: {json object}' events", line)
    return event


@parser
def parse_sse(text: str) -> Stream:
    events, done = [], False
    for line in text.splitlines():
        event = sse_event(line)
        if event == DONE:
            done = True
        elif event is not None:
            events.append(event)
    if not events and not done:
        raise ParseError("vllm_sse", "server-sent events ('data: {...}' lines ending with 'data: [DONE]')", text)
    stream = reassemble(events)
    stream.done = done
    return stream


@dataclass
class ApiError:
    envelope: str  # "nested" {"error": {...}} | "flat" {"object": "error", ...} | "string" {"error": "..."} | "fastapi" {"detail": ...}
    message: str
    type: str | None
    code: int | None
    param: str | None


@parser
def parse_error(text: str) -> ApiError:
    body = _json("vllm_error", text, "an error JSON body")
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        e = body["error"]
        return ApiError("nested", str(e.get("message", "")), e.get("type"), _code(e.get("code")), e.get("param"))
    if isinstance(body, dict) and body.get("object") == "error":
        return ApiError("flat", str(body.get("message", "")), body.get("type"), _code(body.get("code")), body.get("param"))
    if isinstance(body, dict) and isinstance(body.get("error"), str):  # vLLM's API-key middleware: {"error": "Unauthorized"}
        return ApiError("string", body["error"], None, None, None)
    if isinstance(body, dict) and "detail" in body:
        detail = body["detail"]
        return ApiError("fastapi", detail if isinstance(detail, str) else json.dumps(detail), None, None, None)
    raise ParseError("vllm_error", "{'error': {...}}, {'object': 'error', ...} or {'detail': ...}", text)


def _code(value) -> int | None:
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and re.fullmatch(r"\d+", value) else None
