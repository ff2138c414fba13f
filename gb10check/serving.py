"""Talking to the served API, the one way the suite, the deploy, the sim and the bench do (`api_of(cluster)`: serving.base_url,
else rank 0's API port): chat and the deploy's first token through the `openai` client as users' applications do;
/health, /metrics, /v1/models and /tokenize as plain HTTP (Api.get, Api.post); every request bounded by a timeout,
client retries off so a failure is seen.

What comes back is turned into the facts the judges (gb10check/checks/serving.py) read:
- a refused request is a `Reply` (HTTP status and the body as the server sent it, read with
  facts.vllm_api.parse_error so both vLLM error envelopes read right); a request that got no answer in
  time is a `Reply` with no status and what happened;
- a completion is facts.vllm_api's ChatCompletion, a stream its Stream with client-side timings (`Timed`).
The reasoning text is not a field the client declares: it arrives among the message's and the deltas'
extra fields (pydantic `model_extra`), as `reasoning` (current vLLM) or `reasoning_content` (older).
A server that cannot be reached at all raises ApiUnreachable: the checks cannot say anything then.

The API key is only ever put in the client (and the Authorization header of the plain requests): it is
not in any message, repr or report. Nothing else from the environment reaches the server: the client's
own OPENAI_* variables (a user's key for api.openai.com, custom headers) are not read into requests.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import requests

from .facts.vllm_api import ChatCompletion, ParseError, Stream, completion_from, parse_error, reassemble

if TYPE_CHECKING:
    import openai


def _openai():
    """The openai package, imported at the first request: importing it takes about a second on a small machine, and
    every preflight run collects the serving tests (deselected) and would pay that second for nothing."""
    import openai

    return openai


@functools.cache  # a failed import is not remembered by Python: without the cache every stream looked for httpx2 again
def _http_error() -> type:
    try:  # the HTTP library under this openai release (httpx before 3.x, httpx2 after): its errors end a closed stream
        from httpx2 import HTTPError
    except ImportError:  # pragma: no cover
        from httpx import HTTPError
    return HTTPError


def abort_stream(stream) -> None:
    """End a stream another thread is reading. Its socket is shut down first: a read blocked in another thread returns
    at once, where close() alone leaves it waiting for the server's next byte or its own read timeout."""
    response = getattr(stream, "response", None)
    network = getattr(response, "extensions", {}).get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed or never connected: nothing left to wake
            pass
    stream.close()


class ApiUnreachable(Exception):
    pass


@dataclass
class Reply:
    """An HTTP answer (status, body as sent), or none at all in time (status None, `failure` says what happened)."""
    status: int | None
    text: str
    failure: str | None = None  # "no answer within 120 s": the request was sent, nothing came back

    def json(self):
        return json.loads(self.text)

    @property
    def error(self) -> str:
        """The server's error message, whichever envelope it used; the raw body when it is none of them."""
        if self.status is None:
            return self.failure or "no answer"
        try:
            return parse_error(self.text).message
        except ParseError:
            return f"(unrecognised error body) {self.text[:300]!r}"


@dataclass
class Timed:
    """One streamed completion, timed on the client from the request's start."""
    stream: Stream
    done: bool
    ttft_s: float | None  # first chunk carrying content or reasoning
    last_token_s: float | None  # last chunk carrying content or reasoning
    total_s: float
    token_chunks: int
    completion_tokens: int | None  # as the server reports it (stream_options.include_usage)
    broken: str | None = None  # the stream ended by the client's error (connection lost, no chunk in time, unreadable event)
    token_times: list[float] = field(default_factory=list)  # each token chunk's arrival, seconds from the request's start

    @property
    def gaps(self) -> list[float]:
        """Inter-token gaps (s): between consecutive token chunks."""
        return [b - a for a, b in zip(self.token_times, self.token_times[1:])]

    @property
    def decode_tok_s(self) -> float | None:
        """Server-reported completion tokens after the first, over the time between first and last token."""
        if not self.completion_tokens or self.ttft_s is None or self.last_token_s is None or self.last_token_s <= self.ttft_s:
            return None
        return (self.completion_tokens - 1) / (self.last_token_s - self.ttft_s)

    @property
    def e2e_tok_s(self) -> float | None:
        """Completion tokens over the whole request, time to first token included."""
        return self.completion_tokens / self.total_s if self.completion_tokens and self.total_s > 0 else None


def reasoning_of(obj) -> tuple[str | None, str | None]:
    """(text, field name) of the reasoning on a client message or delta: an extra field, under either name."""
    extra = getattr(obj, "model_extra", None) or {}
    for key in ("reasoning", "reasoning_content"):
        value = extra.get(key, getattr(obj, key, None))
        if isinstance(value, str) and value:
            return value, key
    return None, None


# The create() parameters the client knows; anything else in a body (chat_template_kwargs ...) is vLLM's and
# travels in extra_body.
CLIENT_PARAMS = {"model", "messages", "temperature", "max_tokens", "max_completion_tokens", "tools", "tool_choice",
                 "stream_options", "top_p", "n", "stop", "seed", "logprobs", "top_logprobs", "presence_penalty",
                 "frequency_penalty", "response_format", "parallel_tool_calls"}


@functools.cache
def _client_class() -> type:
    """The openai client, its SSE decoder noting whether the stream ended with `data: [DONE]` (the client stops there
    silently)."""
    openai = _openai()
    from openai._streaming import SSEDecoder

    class DoneSeen(SSEDecoder):
        done = False

        def decode(self, line: str):
            sse = super().decode(line)
            if sse is not None and sse.data.startswith("[DONE]"):
                self.done = True
            return sse

    class Client(openai.OpenAI):
        def _make_sse_decoder(self) -> SSEDecoder:
            return DoneSeen()

    return Client


@dataclass
class Api:
    base_url: str  # .../v1
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120
    _client: openai.OpenAI | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def root(self) -> str:
        """The server root (/health and /metrics live there, not under /v1)."""
        return self.base_url[: -len("/v1")] if self.base_url.rstrip("/").endswith("/v1") else self.base_url

    @property
    def client(self) -> openai.OpenAI:
        """The `openai` client users' applications would use, retries off, bounded, holding the key (if any)."""
        if self._client is None:
            openai = _openai()
            # An explicit Authorization header, so OPENAI_CUSTOM_HEADERS cannot replace it; without a key the
            # header is omitted per request (the client refuses to send none otherwise), never OPENAI_API_KEY's.
            headers = {"OpenAI-Organization": openai.Omit(), "OpenAI-Project": openai.Omit()}
            if self.api_key:
                headers["Authorization"] = f"Bearer {self.api_key}"
            self._client = _client_class()(base_url=self.base_url, api_key=self.api_key or "", admin_api_key="",
                                   default_headers=headers, max_retries=0, timeout=self.timeout_s,
                                   _enforce_credentials=False)
        return self._client

    def _headers(self) -> dict:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def get(self, path: str, root: bool = False, timeout_s: float | None = None) -> Reply:
        """Plain HTTP GET (/health, /metrics, /v1/models): the body exactly as the server sent it. timeout_s: this
        request's own bound (a readiness poll's few seconds), else the client's."""
        url = (self.root if root else self.base_url) + path
        timeout = self.timeout_s if timeout_s is None else timeout_s
        try:
            r = requests.get(url, headers=self._headers(), timeout=timeout)
        except requests.ReadTimeout:  # connected, sent, nothing back in time (a connect timeout is unreachable)
            return Reply(None, "", f"no answer within {timeout:g} s")
        except requests.RequestException as exc:
            raise ApiUnreachable(f"GET {url}: {type(exc).__name__}: {_reason(exc)}") from None
        return Reply(r.status_code, r.text)

    def _create(self, body: dict, stream: bool, read_timeout_s: float | None = None):
        openai = _openai()
        params = {k: v for k, v in body.items() if k in CLIENT_PARAMS}
        extra = {k: v for k, v in body.items() if k not in CLIENT_PARAMS and k != "stream"}
        # read_timeout_s: the longest silence between two reads (a stream's next chunk), the connection bounded as usual
        timeout = self.timeout_s if read_timeout_s is None else openai.Timeout(read_timeout_s, connect=min(self.timeout_s, 30))
        return self.client.chat.completions.create(
            **params, stream=stream, extra_body=extra or None, timeout=timeout,
            extra_headers=None if self.api_key else {"Authorization": openai.Omit()})

    def post(self, path: str, body: dict, root: bool = False) -> Reply:
        """Plain HTTP POST of JSON (vLLM's /tokenize at the server root): the body exactly as the server sent it."""
        url = (self.root if root else self.base_url) + path
        try:
            r = requests.post(url, json=body, headers=self._headers(), timeout=self.timeout_s)
        except requests.ReadTimeout:
            return Reply(None, "", f"no answer within {self.timeout_s:g} s")
        except requests.RequestException as exc:
            raise ApiUnreachable(f"POST {url}: {type(exc).__name__}: {_reason(exc)}") from None
        return Reply(r.status_code, r.text)

    def _no_answer(self, exc: openai.APIConnectionError, request: str) -> Reply:
        """Sent but nothing back in time: a Reply without status. Not connected at all: ApiUnreachable."""
        openai = _openai()
        if isinstance(exc, openai.APITimeoutError) and type(exc.__cause__).__name__ != "ConnectTimeout":
            return Reply(None, "", f"no answer within {self.timeout_s:g} s")
        raise ApiUnreachable(f"{request.replace(' /', ' ' + self.base_url + '/', 1)}: {_cause(exc)}") from None

    def first_token(self, model: str) -> Reply:
        """One completion of one token (POST /completions through the client): the deploy's last readiness step. The
        answer as a Reply: 200 and the completion, the refusal, or no status (nothing back in time)."""
        openai = _openai()
        try:
            completion = self.client.completions.create(
                model=model, prompt="Hello", max_tokens=1,
                extra_headers=None if self.api_key else {"Authorization": openai.Omit()})
        except openai.APIStatusError as exc:
            return _refusal(exc)
        except openai.APIConnectionError as exc:
            return self._no_answer(exc, "POST /completions")
        return Reply(200, completion.to_json(indent=None))

    def chat(self, body: dict) -> tuple[Reply | None, ChatCompletion | None]:
        """POST /chat/completions through the client: (the refusal, None) or (None, the completion's facts)."""
        openai = _openai()
        try:
            completion = self._create(body, stream=False)
        except openai.APIStatusError as exc:
            return _refusal(exc), None
        except openai.APIConnectionError as exc:
            return self._no_answer(exc, "POST /chat/completions"), None
        return None, completion_from(completion.to_dict(mode="json"))

    def stream(self, body: dict, read_timeout_s: float | None = None, on_open=None,
               on_chunk=None) -> tuple[Reply | None, Timed | None]:
        """The same, streamed: (the refusal, None), or (None, the stream's facts timed on the client).

        read_timeout_s: the longest silence allowed before any chunk (default: the client's timeout); on_open(stream)
        is handed the open stream (another thread may close() it to abort); on_chunk(seconds since the start, carries
        a token) is called as each chunk arrives (a load driver's stall detector)."""
        openai, http_error = _openai(), _http_error()
        start = time.monotonic()
        wait = self.timeout_s if read_timeout_s is None else read_timeout_s
        try:
            chunks = self._create(body, stream=True, read_timeout_s=read_timeout_s)
        except openai.APIStatusError as exc:
            return _refusal(exc), None
        except openai.APIConnectionError as exc:
            if isinstance(exc, openai.APITimeoutError) and type(exc.__cause__).__name__ != "ConnectTimeout":
                return Reply(None, "", f"no answer within {wait:g} s"), None
            return self._no_answer(exc, "POST /chat/completions (stream)"), None
        if on_open is not None:
            on_open(chunks)
        events, first, last, token_chunks, broken, times = [], None, None, 0, None, []
        with chunks:
            try:
                for chunk in chunks:
                    events.append(chunk.to_dict(mode="json"))
                    now = time.monotonic() - start
                    token = _carries_token(chunk)
                    if token:
                        first = now if first is None else first
                        last = now
                        token_chunks += 1
                        times.append(now)
                    if on_chunk is not None:
                        on_chunk(now, token)
            except openai.APITimeoutError:
                broken = f"no chunk within {wait:g} s after {len(events)} chunks"
            except openai.APIConnectionError as exc:
                broken = f"connection lost after {len(events)} chunks ({_cause(exc)})"
            except openai.APIError as exc:  # an error event inside the stream: kept as the server sent it
                events.append({"error": exc.body if isinstance(exc.body, (dict, str)) else exc.message})
            except json.JSONDecodeError as exc:
                broken = f"an event that is not JSON after {len(events)} chunks ({exc.msg})"
            except (http_error, OSError, ValueError, RuntimeError) as exc:  # closed under us (an abort from another thread)
                broken = f"stream closed after {len(events)} chunks ({type(exc).__name__})"
        total = time.monotonic() - start
        done = bool(getattr(getattr(chunks, "_decoder", None), "done", False))
        s = reassemble(events)
        s.done = done
        return None, Timed(s, done, first, last, total, token_chunks, s.completion_tokens, broken, times)


def api_of(cluster, timeout_s: float = 120) -> Api:
    """The cluster's served API: serving.base_url (default: rank 0's address and deploy.api_port, /v1), with the key from
    serving.api_key_env when set. The one place the suite, the deploy and the bench find it."""
    key_env = cluster.serving.api_key_env
    return Api(cluster.base_url, api_key=os.environ.get(key_env) if key_env else None, timeout_s=timeout_s)


def _carries_token(chunk) -> bool:
    for choice in chunk.choices or []:
        delta = choice.delta
        if delta is not None and (delta.content or delta.tool_calls or reasoning_of(delta)[0]):
            return True
    return False


def _refusal(exc: openai.APIStatusError) -> Reply:
    try:
        text = exc.response.text
    except Exception:  # a streamed response whose body was not read: the client's decoded copy
        text = ""
    if not text and exc.body is not None:
        text = exc.body if isinstance(exc.body, str) else json.dumps(exc.body)
    return Reply(exc.status_code, text)


def _cause(exc: openai.APIConnectionError) -> str:
    cause = exc.__cause__ or exc
    return f"{type(cause).__name__}: {_reason(cause)}"


def _reason(exc: Exception) -> str:
    text = str(exc)
    for marker in ("Connection refused", "timed out", "No route to host", "Name or service not known"):
        if marker in text:
            return marker
    return text[:200]


THROUGHPUT_PROMPT = "Count from 1 to 80, separated by spaces."  # the field report's request


def decode_request(model: str, max_tokens: int = 400) -> dict:
    """The suite's throughput request (test_decode_throughput, bench/serving_throughput.py)."""
    return {"model": model, "messages": [{"role": "user", "content": THROUGHPUT_PROMPT}],
            "temperature": 0, "max_tokens": max_tokens, "chat_template_kwargs": {"enable_thinking": False},
            "stream_options": {"include_usage": True}}


def measure_decode(api: Api, model: str, max_tokens: int = 400) -> tuple[Reply | None, Timed | None]:
    """One run of the throughput request: (the refusal, None) or (None, its timings); judged by checks.serving."""
    return api.stream(decode_request(model, max_tokens))


def medians(runs: list[Timed]) -> dict[str, float]:
    """Median decode and end-to-end tok/s and TTFT of timed runs (those that could be timed)."""
    timed = [r for r in runs if r.decode_tok_s is not None]
    if not timed:
        return {}
    return {"decode_tok_s": statistics.median(r.decode_tok_s for r in timed),
            "e2e_tok_s": statistics.median(r.e2e_tok_s for r in timed),
            "ttft_s": statistics.median(r.ttft_s for r in timed),
            "completion_tokens": statistics.median(r.completion_tokens for r in timed), "runs": len(timed)}


# ---- concurrency sweep ----------------------------------------------------------------------------

SWEEP_PROMPT = "Name a colour, then a fruit. Request {i}."


def sweep_levels(top: int) -> list[int]:
    """The sweep's levels: 1, 2, 4 ... doubling below `top`, then `top` itself (max_num_seqs)."""
    levels, n = [], 1
    while n < top:
        levels.append(n)
        n *= 2
    return levels + [top]


@dataclass
class Level:
    """One level of the sweep: `n` short streamed requests sent at once, each (the refusal, None) or (None, its timings);
    a request the server could not be reached for is a Reply without status. health: GET /health after the level
    (a Reply, or why it got none)."""
    n: int
    results: list[tuple[Reply | None, Timed | None]]
    wall_s: float
    health: Reply

    @property
    def completion_tokens(self) -> int:
        return sum(t.completion_tokens or 0 for r, t in self.results if r is None and t is not None)

    @property
    def output_tok_s(self) -> float | None:
        """Completion tokens of every stream over the level's wall time (first request sent to last stream ended)."""
        return self.completion_tokens / self.wall_s if self.wall_s > 0 and self.completion_tokens else None


def sweep_request(model: str, i: int, max_tokens: int) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": SWEEP_PROMPT.format(i=i)}], "temperature": 0,
            "max_tokens": max_tokens, "chat_template_kwargs": {"enable_thinking": False},
            "stream_options": {"include_usage": True}}


def run_level(api: Api, model: str, n: int, max_tokens: int) -> Level:
    """n streams at once through the one client, then /health: whether the engine outlived the level."""
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> tuple[Reply | None, Timed | None]:
        try:
            return api.stream(sweep_request(model, i, max_tokens))
        except ApiUnreachable as exc:  # refused mid-sweep: the server went away
            return Reply(None, "", str(exc)), None

    start = time.monotonic()
    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(one, range(n)))
    wall = time.monotonic() - start
    try:
        health = api.get("/health", root=True, timeout_s=min(api.timeout_s, 30))
    except ApiUnreachable as exc:
        health = Reply(None, "", str(exc))
    return Level(n, results, wall, health)


def sweep_table(levels: list[Level], top: int) -> str:
    """The sweep as a text table: each level run, its streams answered and output tok/s; levels not run are named."""
    lines = ["| streams | answered | completion tokens | wall s | output tok/s |", "|---:|---:|---:|---:|---:|"]
    for lv in levels:
        ok = sum(1 for r, t in lv.results if r is None and t is not None and not t.broken and not t.stream.error)
        rate = lv.output_tok_s
        lines.append(f"| {lv.n} | {ok}/{lv.n} | {lv.completion_tokens} | {lv.wall_s:.1f} | "
                     f"{'-' if rate is None else f'{rate:.1f}'} |")
    for n in sweep_levels(top)[len(levels):]:
        lines.append(f"| {n} | not run (a lower level failed) | | | |")
    return "\n".join(lines)
