"""Talking to the served API: plain HTTP with a deadline, the key as a bearer token, timings of a stream.

The serving checks use raw HTTP rather than an SDK so that they read exactly what the server sent
(both error envelopes, the reasoning field under either name, SSE lines as they arrive) and can
time the first and the last token themselves. The API key is only ever put in a header: it is not
in any message, repr or report.
"""

import json
import time
from dataclasses import dataclass, field

import requests

from .facts.vllm_api import DONE, ParseError, Stream, parse_error, reassemble, sse_event


class ApiUnreachable(Exception):
    pass


@dataclass
class Reply:
    status: int
    text: str

    def json(self):
        return json.loads(self.text)

    @property
    def error(self) -> str:
        """The server's error message, whichever envelope it used; the raw body when it is none of them."""
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


@dataclass
class Api:
    base_url: str  # .../v1
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120

    @property
    def root(self) -> str:
        """The server root (/health and /metrics live there, not under /v1)."""
        return self.base_url[: -len("/v1")] if self.base_url.rstrip("/").endswith("/v1") else self.base_url

    def _headers(self) -> dict:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _request(self, method: str, url: str, **kw) -> requests.Response:
        try:
            return requests.request(method, url, headers=self._headers(), timeout=self.timeout_s, **kw)
        except requests.RequestException as exc:
            raise ApiUnreachable(f"{method} {url}: {type(exc).__name__}: {_reason(exc)}") from None

    def get(self, path: str, root: bool = False) -> Reply:
        r = self._request("GET", (self.root if root else self.base_url) + path)
        return Reply(r.status_code, r.text)

    def post(self, path: str, body: dict) -> Reply:
        r = self._request("POST", self.base_url + path, json=body)
        return Reply(r.status_code, r.text)

    def stream(self, path: str, body: dict) -> tuple[Reply | None, Timed | None]:
        """POST with stream=true; (error reply, None) when the server refuses, else (None, timings)."""
        start = time.monotonic()
        try:
            r = requests.post(self.base_url + path, json={**body, "stream": True}, headers=self._headers(),
                              timeout=self.timeout_s, stream=True)
        except requests.RequestException as exc:
            raise ApiUnreachable(f"POST {self.base_url + path}: {type(exc).__name__}: {_reason(exc)}") from None
        if r.status_code != 200:
            return Reply(r.status_code, r.text), None
        events, done, first, last, token_chunks = [], False, None, None, 0
        with r:
            for raw in r.iter_lines(decode_unicode=True):
                event = sse_event(raw or "")
                if event == DONE:
                    done = True
                    break
                if event is None:
                    continue
                events.append(event)
                if _carries_token(event):
                    now = time.monotonic() - start
                    first = now if first is None else first
                    last = now
                    token_chunks += 1
        total = time.monotonic() - start
        s = reassemble(events)
        s.done = done
        return None, Timed(s, done, first, last, total, token_chunks, s.completion_tokens)


def _carries_token(event: dict) -> bool:
    for choice in event.get("choices") or []:
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and (delta.get("content") or delta.get("reasoning") or delta.get("reasoning_content")
                                        or delta.get("tool_calls")):
            return True
    return False


def _reason(exc: Exception) -> str:
    text = str(exc)
    for marker in ("Connection refused", "timed out", "No route to host", "Name or service not known"):
        if marker in text:
            return marker
    return text[:200]


THROUGHPUT_PROMPT = "Count from 1 to 80, separated by spaces."  # the field report's request


def measure_decode(api: Api, model: str, where: str, max_tokens: int = 400) -> dict:
    """One run of the suite's throughput request (test_decode_throughput, bench/serving_throughput.py)."""
    body = {"model": model, "messages": [{"role": "user", "content": THROUGHPUT_PROMPT}],
            "temperature": 0, "max_tokens": max_tokens, "chat_template_kwargs": {"enable_thinking": False},
            "stream_options": {"include_usage": True}}
    error, timed = api.stream("/chat/completions", body)
    if error:
        raise AssertionError(f"{where}: POST /chat/completions -> {error.status}: {error.error}")
    if timed.decode_tok_s is None:
        raise AssertionError(f"{where}: cannot time decoding: {timed.token_chunks} token chunks, "
                             f"completion_tokens {timed.completion_tokens} (usage chunk missing?)")
    return {"decode_tok_s": timed.decode_tok_s, "e2e_tok_s": timed.e2e_tok_s, "ttft_s": timed.ttft_s,
            "completion_tokens": timed.completion_tokens}
