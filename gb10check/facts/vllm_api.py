"""vLLM OpenAI-API bodies: /v1/models, chat completions, SSE streams, error envelopes.

Bodies arrive as the server sent them, or as people captured them: after a `curl -v` / `curl -i` header
dump, with the next shell prompt glued to the body (no newline at its end), with curl's `http=404`
line after it, wrapped in a test harness's object, cut short, or as a fragment. The body is found and
decoded once (`_json`); a body cut short is a ParseError that says so, never a guess.

Reasoning is read from `reasoning` (current vLLM) or `reasoning_content` (older servers).
Errors come in vLLM's nested envelope `{"error": {...}}`, the older flat one `{"object": "error", ...}`,
the API-key middleware's `{"error": "Unauthorized"}`, FastAPI's `{"detail": ...}`, a proxy's `detail`
string holding vLLM's envelope as a Python bytes repr, or a gateway's own body (`{"msg": ...}`), which
is not vLLM's and is said to be so (`vllm: False`).
"""

import ast
import warnings
import json
import re
from dataclasses import dataclass, field

from ._text import ParseError, parser

STATUS_LINE = re.compile(r"^(?:< )?HTTP/[\d.]+ (?P<code>\d{3})\b")
RESPONSE_HEADER = re.compile(r"^< (?P<name>[\w-]+):\s*(?P<value>.*)$")
BARE_HEADER = re.compile(r"^(?P<name>[\w-]+):\s*(?P<value>.*)$")  # curl -i prints the headers without "< "
CURL_NOISE = re.compile(r"^(?:[*<>{}] |[*<>]$|Note: |\s*% Total|\s*Dload|\s*\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+)")
TRAILING_STATUS = re.compile(r"^\s*(?:(?:http(?:_code|_status)?|status|HTTP)\s*[=: ]\s*)?(?P<code>[1-5]\d\d)\s*$", re.I | re.M)


@dataclass
class Body:
    value: object
    status: int | None = None  # the HTTP status, when the capture shows it (curl -v / -i, or a "http=404" line)
    server: str | None = None  # the `server:` response header, when shown


def _truncation(text: str, exc: json.JSONDecodeError) -> str:
    rest = text[exc.pos:].strip()
    if not rest or exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
        return f"complete JSON; this body is cut short at char {len(text.rstrip())} ({exc.msg})"
    return f"JSON ({exc.msg} at char {exc.pos})"


def _json(kind: str, text: str, expected: str) -> Body:
    """The JSON body in a capture, with the HTTP status and server header curl showed around it."""
    lines = text.splitlines()
    status = server = None
    body_lines: list[str] = []
    in_headers = False  # after a bare status line (curl -i): headers without "< " until the blank line
    for line in lines:
        if (m := STATUS_LINE.match(line)) and not body_lines:
            status = int(m["code"])
            in_headers = not line.startswith("<")
        elif not body_lines and ((m := RESPONSE_HEADER.match(line)) or (in_headers and (m := BARE_HEADER.match(line)))):
            server = m["value"].strip() if m["name"].lower() == "server" else server
        elif in_headers and not line.strip():
            in_headers = False
        elif body_lines or line.lstrip().startswith(("{", "[", "data: {", "data:{")):
            body_lines.append(line)
    body = "\n".join(body_lines).strip()
    if not body and (i := text.find("{")) >= 0:  # a body after other text on its line ("Response: {...}")
        body = text[i:].strip()
    if body.startswith("data:"):  # an error sent as an SSE event
        body = body[5:].lstrip()
    if not body:
        if (page := _not_json(text)) is not None:
            raise ParseError(kind, f"{expected} (this is an error answer: {page.message[:120]})", text)
        raise ParseError(kind, expected, text)
    try:
        value, end = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError as exc:
        lenient = _lenient_message(body)
        if lenient is not None:
            return Body(lenient, status, server)
        raise ParseError(kind, f"{expected} as {_truncation(body, exc)}", text) from None
    rest = body[end:]
    if status is None and (m := TRAILING_STATUS.search(rest)):
        status = int(m["code"])
    return Body(value, status, server)


# A one-key gateway body whose closing brace is wrong or missing ({"msg":"...!"] as one gateway sent it).
LENIENT = re.compile(r'^\{\s*"(?P<key>msg|message|error|detail)"\s*:\s*"(?P<value>(?:[^"\\]|\\.)*)"\s*[\]}]')


def _lenient_message(body: str) -> dict | None:
    m = LENIENT.match(body)
    if not m:
        return None
    try:
        return {m["key"]: json.loads(f'"{m["value"]}"'), "_malformed": True}
    except json.JSONDecodeError:
        return None


def _find(value, wanted, depth: int = 3):
    """The first object (this one, or one a harness wrapped it in, or a JSON string inside one) that is wanted."""
    if isinstance(value, dict) and wanted(value):
        return value
    if depth == 0:
        return None
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        if isinstance(child, str) and child.lstrip().startswith("{"):
            try:
                child = json.loads(child)
            except json.JSONDecodeError:
                continue
        if isinstance(child, (dict, list)) and (found := _find(child, wanted, depth - 1)) is not None:
            return found
    return None


# ---- /v1/models ---------------------------------------------------------------------------------

@dataclass
class ServedModel:
    id: str
    root: str | None
    max_model_len: int | None  # older servers omit it
    owned_by: str | None
    parent: str | None = None  # a LoRA adapter's base model


def _model(m: dict) -> ServedModel:
    mml = m.get("max_model_len")
    return ServedModel(str(m.get("id")), _opt_str(m.get("root")), mml if isinstance(mml, int) and not isinstance(mml, bool) else None,
                       _opt_str(m.get("owned_by")), _opt_str(m.get("parent")))


def _is_model(m) -> bool:
    return isinstance(m, dict) and isinstance(m.get("id"), str) and m.get("object", "model") == "model"


def _fragment(text: str) -> str | None:
    """One /v1/models entry pasted without its braces (and with markdown bold): made an object again."""
    lines = [re.sub(r"^\*\*|\*\*$", "", line.strip()).strip() for line in text.splitlines() if line.strip()]
    if not lines or not all(re.match(r'^"\w+"\s*:', line) for line in lines) or not any(line.startswith('"id"') for line in lines):
        return None
    lines = [line.rstrip(",").replace("**", "") for line in lines]
    return "{" + ",".join(lines) + "}"


@parser
def parse_models(text: str) -> list[ServedModel]:
    expected = "a /v1/models JSON body ({'object': 'list', 'data': [...]})"
    if "{" not in text and "[" not in text and (fragment := _fragment(text)) is not None:
        text = fragment
    body = _json("vllm_models", text, expected).value
    if isinstance(body, dict) and isinstance(body.get("data"), list):
        entries = body["data"]
    elif isinstance(body, list):
        entries = body
    elif _is_model(body):  # GET /v1/models/{id}, or one entry
        entries = [body]
    else:
        found = _find(body, lambda d: isinstance(d.get("data"), list) and all(_is_model(m) for m in d["data"]))
        if found is None:
            raise ParseError("vllm_models", "an object with a 'data' list of models", text)
        entries = found["data"]
    if not all(_is_model(m) for m in entries):
        raise ParseError("vllm_models", "model entries with an 'id' ({'id': ..., 'object': 'model'})", text)
    return [_model(m) for m in entries]


# ---- chat completions ---------------------------------------------------------------------------

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
    id: str | None = None
    stop_reason: int | str | None = None  # vLLM: the stop token id or stop string that ended it
    total_tokens: int | None = None
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens
    answer_in_reasoning: bool = False  # finished (stop) with no content: the answer is all in reasoning (the reasoning parser kept it)
    system_fingerprint: str | None = None
    vllm_version: str | None = None  # from system_fingerprint "vllm-0.26.0-9fa4dc7a"
    wrapped: bool = False  # the body was found inside a harness's object


def _reasoning(message: dict) -> tuple[str | None, str | None]:
    for key in ("reasoning", "reasoning_content"):
        if isinstance(message.get(key), str) and message[key]:
            return message[key], key
    for key in ("reasoning", "reasoning_content"):  # present but empty
        if isinstance(message.get(key), str):
            return message[key], key
    return None, None


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_str(value) -> str | None:
    return value if isinstance(value, str) else None


def _args(value) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, (dict, list)) else ""


def completion_from(body: dict) -> ChatCompletion:
    choices = body.get("choices") if isinstance(body.get("choices"), list) else []
    choice = _dict(next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), choices[0] if choices else {}))
    message = _dict(choice.get("message"))
    reasoning, where = _reasoning(message)
    content = message.get("content") if message else choice.get("text")  # /v1/completions puts the text in choices[].text
    content = content if isinstance(content, str) else None
    usage = _dict(body.get("usage"))
    details = _dict(usage.get("completion_tokens_details"))
    fingerprint = _opt_str(body.get("system_fingerprint"))
    version = m[1] if fingerprint and (m := re.match(r"vllm-(\d+\.\d+[\w.+]*?)(?:-[0-9a-f]{6,})?$", fingerprint)) else None
    stop = choice.get("stop_reason")
    return ChatCompletion(
        model=_opt_str(body.get("model")),
        finish_reason=_opt_str(choice.get("finish_reason")),
        content=content,
        reasoning=reasoning,
        reasoning_field=where,
        tool_calls=[ToolCall(_opt_str(c.get("id")), _opt_str(_dict(c.get("function")).get("name")), _args(_dict(c.get("function")).get("arguments")))
                    for c in (message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []) if isinstance(c, dict)],
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        reasoning_tokens=_int(details.get("reasoning_tokens")),
        id=_opt_str(body.get("id")),
        stop_reason=stop if isinstance(stop, (int, str)) and not isinstance(stop, bool) else None,
        total_tokens=_int(usage.get("total_tokens")),
        cached_tokens=_int(_dict(usage.get("prompt_tokens_details")).get("cached_tokens")),
        answer_in_reasoning=not content and bool(reasoning) and not message.get("tool_calls") and choice.get("finish_reason") == "stop",
        system_fingerprint=fingerprint,
        vllm_version=version,
    )


def _is_completion(d: dict) -> bool:
    choices = d.get("choices")
    return isinstance(choices, list) and bool(choices) and all(isinstance(c, dict) for c in choices) \
        and any("message" in c or "text" in c or "finish_reason" in c for c in choices)


@parser
def parse_chat(text: str) -> ChatCompletion:
    body = _json("vllm_chat", text, "a chat completion JSON body").value
    found = _find(body, _is_completion)
    if found is None:
        error = _error_from(body) if isinstance(body, dict) else None
        if error is not None:
            raise ParseError("vllm_chat", f"a chat completion (this is an error body: {error.message[:120]})", text)
        raise ParseError("vllm_chat", "an object with 'choices' (a chat completion)", text)
    if found.get("object") == "chat.completion.chunk" or not any("message" in c or "text" in c for c in found["choices"]):
        # a stream's chunk carries a delta, not the message: read as a completion its answer would be lost
        raise ParseError("vllm_chat", "a chat completion body (this is a stream's chat.completion.chunk: read it as vllm_sse)",
                         text)
    completion = completion_from(found)
    completion.wrapped = found is not body
    return completion


# ---- SSE streams --------------------------------------------------------------------------------

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
    model: str | None = None
    stop_reason: int | str | None = None
    reasoning_field: str | None = None  # "reasoning" | "reasoning_content" | None (none sent)
    error: str | None = None  # an error event inside the stream ({"error": {...}})
    truncated: bool = False  # the capture ends inside an event


def reassemble(events: list[dict]) -> Stream:
    """Fold parsed SSE chunk objects into one message (used for live streams too)."""
    content, reasoning, calls = [], [], {}
    finish = role = model = stop = where = error = None
    usage_chunk = False
    usage: dict = {}
    for ev in events:
        # vLLM's nested envelope, or the flat one older servers sent mid-stream ({"object": "error", "message": ...})
        if (isinstance(ev.get("error"), (dict, str)) or ev.get("object") == "error") and "choices" not in ev:
            err = _error_from(ev)
            error = error or (err.message if err else str(ev.get("error") or ev.get("message")))
            continue
        model = model or _opt_str(ev.get("model"))
        if isinstance(ev.get("usage"), dict):
            usage = ev["usage"]
        choices = ev.get("choices")
        mine = [c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0] if isinstance(choices, list) else []
        if not mine:
            usage_chunk = usage_chunk or bool(ev.get("usage"))
            continue
        for choice in mine:
            delta = _dict(choice.get("delta"))
            role = role or _opt_str(delta.get("role"))
            content.append(_str(delta.get("content")) or _str(choice.get("text")))
            for key in ("reasoning", "reasoning_content"):
                if isinstance(delta.get(key), str):
                    reasoning.append(delta[key])
                    where = where or key
                    break
            for tc in delta.get("tool_calls") or [] if isinstance(delta.get("tool_calls"), list) else []:
                if not isinstance(tc, dict):
                    continue
                index = tc.get("index", 0)
                slot = calls.setdefault(index if isinstance(index, int) else 0, {"id": None, "name": None, "arguments": ""})
                slot["id"] = slot["id"] or _opt_str(tc.get("id"))
                fn = _dict(tc.get("function"))
                slot["name"] = slot["name"] or _opt_str(fn.get("name"))
                slot["arguments"] += _args(fn.get("arguments"))
            finish = _opt_str(choice.get("finish_reason")) or finish
            if isinstance(choice.get("stop_reason"), (int, str)) and not isinstance(choice.get("stop_reason"), bool):
                stop = choice["stop_reason"]
    return Stream(len(events), False, "".join(content), "".join(reasoning), finish,
                  [ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())],
                  usage_chunk, _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), role,
                  model, stop, where, error)


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
    """A captured stream: `data:` lines (one JSON object each, or one split over several data lines of an event),
    `event:` / `id:` / `retry:` fields and `: comment` lines, any number of blank lines between events."""
    events, done, truncated = [], False, False
    pending: list[str] = []  # data lines of the event being read, while they do not yet parse
    lines = text.splitlines()

    def flush(last: bool) -> None:
        nonlocal truncated
        if not pending:
            return
        payload = "\n".join(pending)
        pending.clear()
        if last:
            truncated = True
            return
        raise ParseError("vllm_sse", "'data: {json object}' events", payload)

    for n, line in enumerate(lines):
        if not line.strip():
            flush(last=all(not rest.strip() for rest in lines[n:]))
            continue
        if not line.startswith("data:"):
            continue  # event:, id:, retry:, ": ping" comments, headers around a capture
        payload = line[5:].strip()
        if payload == DONE and not pending:
            done = True
            continue
        pending.append(payload)
        try:
            event = json.loads("\n".join(pending))
        except json.JSONDecodeError:
            continue
        pending.clear()
        if not isinstance(event, dict):
            raise ParseError("vllm_sse", "'data: {json object}' events", line)
        events.append(event)
    flush(last=True)
    if not events and not done:
        # The server refused the request before streaming (a 400 for a bad parameter, a proxy's 502 page): its error
        # body stands in place of the stream, and that is the stream's error.
        try:
            refused = parse_error(text)
        except ParseError:
            refused = None
        if refused is not None:
            shown = refused.message if not refused.status or refused.message.startswith(str(refused.status)) \
                else f"{refused.status} {refused.message}"
            return Stream(0, False, "", "", None, [], False, None, None, None, error=shown)
        raise ParseError("vllm_sse", "server-sent events ('data: {...}' lines ending with 'data: [DONE]')", text)
    stream = reassemble(events)
    stream.done = done
    stream.truncated = truncated
    return stream


# ---- error bodies -------------------------------------------------------------------------------

@dataclass
class ApiError:
    envelope: str  # "nested" {"error": {...}} | "flat" {"object": "error", ...} | "string" {"error": "..."} | "fastapi" {"detail": ...}
    #                | "gateway" (a proxy's or gateway's own body, e.g. {"msg": ...}: not vLLM's)
    #                | "html" (a proxy's error page: nginx's 502 Bad Gateway) | "text" (a plain-text body: Internal Server Error)
    message: str
    type: str | None
    code: int | None
    param: str | None
    vllm: bool = True  # the body is vLLM's (or FastAPI's inside vLLM), not a gateway's in front of it
    status: int | None = None  # the HTTP status, when the capture shows it
    server: str | None = None  # the response's `server:` header, when shown (envoy, nginx ...)
    wrapped_by: str | None = None  # a proxy's text around vLLM's error ("Upstream[decode] error")


BYTES_REPR = re.compile(r"""b(?P<q>['"])(?P<body>.*)(?P=q)""", re.S)


def _inner_error(detail: str) -> tuple["ApiError | None", str | None]:
    """vLLM's envelope inside a proxy's detail string, as JSON or as a Python bytes repr (b'{...}')."""
    m = BYTES_REPR.search(detail)
    candidates = []
    if m:
        try:
            with warnings.catch_warnings():  # a mangled repr may hold invalid escapes: read it, do not warn
                warnings.simplefilter("ignore")
                raw = ast.literal_eval(m.group(0))
            candidates.append((raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw), detail[:m.start()]))
        except (ValueError, SyntaxError):
            pass
    if (i := detail.find("{")) >= 0:
        candidates.append((detail[i:], detail[:i]))
    for inner, outer in candidates:
        try:
            value, _ = json.JSONDecoder().raw_decode(inner)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and (err := _error_from(value, nested_ok=False)) is not None:
            return err, outer.strip().rstrip(",:").strip() or None
    return None, None


def _error_from(body: dict, nested_ok: bool = True) -> ApiError | None:
    if isinstance(body.get("error"), dict):
        e = body["error"]
        message = e.get("message")
        if not isinstance(message, str):
            return None
        vllm = "type" in e or "param" in e or "code" in e
        return ApiError("nested", message, _opt_str(e.get("type")), _code(e.get("code")), _opt_str(e.get("param")), vllm)
    if body.get("object") == "error" and isinstance(body.get("message"), str):
        return ApiError("flat", body["message"], _opt_str(body.get("type")), _code(body.get("code")), _opt_str(body.get("param")))
    if isinstance(body.get("error"), str) and set(body) <= {"error", "_malformed"} | {"status", "code"}:
        # vLLM's API-key middleware: {"error": "Unauthorized"}
        return ApiError("string", body["error"], None, _code(body.get("code")), None, "_malformed" not in body)
    if "detail" in body and nested_ok:
        detail = body["detail"]
        if isinstance(detail, str):
            inner, outer = _inner_error(detail)
            if inner is not None:
                inner.wrapped_by = outer
                inner.vllm = True
                return inner
            return ApiError("fastapi", detail, None, None, None, "_malformed" not in body)
        if isinstance(detail, list):  # FastAPI's request validation: [{"loc": [...], "msg": ..., "type": ...}]
            parts = [f"{'.'.join(str(x) for x in d.get('loc', []))}: {d.get('msg')}" if d.get("loc") else str(d.get("msg"))
                     for d in detail if isinstance(d, dict) and "msg" in d]
            if parts:
                return ApiError("fastapi", "; ".join(parts), "RequestValidationError", None, None)
        return None
    for key in ("msg", "message"):
        if isinstance(body.get(key), str) and body.get("object") != "error":
            return ApiError("gateway", body[key], _opt_str(body.get("type")), _code(body.get("code")), None, vllm=False)
    return None


HTML_TITLE = re.compile(r"<title>\s*(?P<t>[^<]*?)\s*</title>|<h1>\s*(?P<h>[^<]*?)\s*</h1>", re.I)
HTML_SERVER = re.compile(r"<hr>\s*<center>\s*(?P<s>[^<]+?)\s*</center>", re.I)  # nginx's signature line
# Plain-text bodies that are whole error answers: Starlette's (vLLM's server stack) unhandled-exception 500, and
# envoy's when no upstream answers.
PLAIN_ERRORS = {"Internal Server Error": True, "no healthy upstream": False}  # body -> vLLM's own
PLAIN_UPSTREAM = re.compile(r"^upstream connect error or disconnect/reset before headers\b.*$", re.M)


def _not_json(text: str) -> ApiError | None:
    """An error answer that is not JSON: a proxy's HTML page (nginx's `502 Bad Gateway`) or a known plain-text body."""
    status = next((int(m["code"]) for line in text.splitlines() if (m := STATUS_LINE.match(line))), None)
    server = next((m["value"].strip() for line in text.splitlines()
                   if (m := RESPONSE_HEADER.match(line) or BARE_HEADER.match(line)) and m["name"].lower() == "server"), None)
    if re.search(r"<html\b|<!DOCTYPE html", text, re.I) and (m := HTML_TITLE.search(text)):
        message = m["t"] or m["h"]
        if status is None and (code := re.match(r"([1-5]\d\d)\b", message)):
            status = int(code[1])
        if server is None and (sig := HTML_SERVER.search(text)):
            server = sig["s"]
        return ApiError("html", message, None, None, None, vllm=False, status=status, server=server)
    body = [line.strip() for line in text.splitlines() if line.strip() and not STATUS_LINE.match(line)
            and not RESPONSE_HEADER.match(line) and not CURL_NOISE.match(line) and not TRAILING_STATUS.fullmatch(line)]
    body = [line for line in body if not (status is not None and BARE_HEADER.match(line))]
    if len(body) == 1 and body[0] in PLAIN_ERRORS:
        return ApiError("text", body[0], None, None, None, vllm=PLAIN_ERRORS[body[0]], status=status, server=server)
    if len(body) == 1 and PLAIN_UPSTREAM.match(body[0]):
        return ApiError("text", body[0], None, status, None, vllm=False, status=status, server=server)
    return None


@parser
def parse_error(text: str) -> ApiError:
    if "{" not in text and (plain := _not_json(text)) is not None:
        return plain
    found = _json("vllm_error", text, "an error JSON body")
    body = found.value
    error = _error_from(body) if isinstance(body, dict) else None
    if error is None:
        raise ParseError("vllm_error", "{'error': {...}}, {'object': 'error', ...}, {'detail': ...} or a gateway's "
                                       "{'msg'|'message': ...}", text)
    error.status = found.status
    error.server = found.server
    return error


def _code(value) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and re.fullmatch(r"\d+", value) else None


# ---- GET /metrics: the engine's *_info gauges (Prometheus text) ---------------------------------------------------

METRIC_INFO = re.compile(r'^vllm:(?P<name>\w+_info)\{(?P<labels>.*)\}\s+\S+\s*$')
LABEL = re.compile(r'(?P<k>\w+)="(?P<v>(?:[^"\\]|\\.)*)"')


@parser
def parse_metrics_info(text: str) -> dict[str, dict[str, str]]:
    """The `vllm:*_info` gauges of a /metrics body: {"cache_config_info": {"cache_dtype": "auto", ...}}; the first
    sample of each (one engine's). A body without any is refused (the judge then reads the log alone)."""
    info: dict[str, dict[str, str]] = {}
    samples = 0
    for line in text.splitlines():
        samples += line.startswith("vllm:")
        if (m := METRIC_INFO.match(line.strip())) and m["name"] not in info:
            info[m["name"]] = {k: v for k, v in LABEL.findall(m["labels"])}
    declared = set(re.findall(r"^# TYPE vllm:(\w+_info) ", text, re.M))
    if not samples or not info or declared - set(info):  # none, or a body cut between a gauge's TYPE and its sample
        raise ParseError("vllm_metrics_info", "a Prometheus /metrics body with its vllm:*_info gauges' samples", text)
    return info
