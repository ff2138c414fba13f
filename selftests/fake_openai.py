"""Stand-ins for the soak driver's tests, no vLLM and no root: a small OpenAI-compatible server (stdlib http.server)
that streams chat completions in vLLM's chunk format (as in selftests/captures/vllm_api/sim-chat-stream-include-usage.txt,
the real vLLM's), answers vLLM's POST /tokenize, and refuses a prompt over its max_model_len with vLLM's 400; and a
launcher with scripted node memory, container states and logs (the interface of gb10check.deploy.launch.ComposeLauncher
that the soak's watch uses). Faults: a stream that stops after N tokens (held until released), a scripted memory drop,
a container exit, a log line."""

import json
import math
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHARS_PER_TOKEN = 4
TOO_LONG = ("This model's maximum context length is {limit} tokens. However, your request has {n} input tokens. Please "
            "reduce the length of the input messages.")


def count_tokens(messages: list[dict]) -> int:
    return math.ceil(sum(len(m.get("content") or "") for m in messages) / CHARS_PER_TOKEN) + 8  # + the template


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers JSON: the stand-in servers' shared base."""

    def log_message(self, *args):
        pass

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def in_background(httpd, start: bool = True) -> threading.Thread:
    """httpd.serve_forever on a daemon thread, polled for shutdown every 20 ms: the default half second is a wait in
    every test that stops a server."""
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    if start:
        thread.start()
    return thread


class FakeServer:
    def __init__(self, model: str = "smollm2-135m", max_model_len: int = 4096, token_delay_s: float = 0.005,
                 stall_after: int | None = None, answer=None, ttft_s: float = 0.0):
        self.model, self.max_model_len, self.token_delay_s, self.ttft_s = model, max_model_len, token_delay_s, ttft_s
        self.stall_after, self.answer = stall_after, answer
        self.release = threading.Event()
        self.requests: list[dict] = []
        server = self

        class Handler(JsonHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/tokenize":
                    n = count_tokens(body.get("messages") or [{"content": body.get("prompt", "")}])
                    return self._json(200, {"count": n, "max_model_len": server.max_model_len, "tokens": list(range(n))})
                if self.path != "/v1/chat/completions":
                    return self._json(404, {"detail": "Not Found"})
                server.requests.append(body)
                n = count_tokens(body["messages"])
                if n + int(body.get("max_tokens") or 0) > server.max_model_len:
                    return self._json(400, {"object": "error", "message": TOO_LONG.format(limit=server.max_model_len, n=n),
                                            "type": "BadRequestError", "param": None, "code": 400})
                self.stream(body, n)

            def _event(self, chunk) -> None:
                self.wfile.write(b"data: " + (chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode()) + b"\n\n")
                self.wfile.flush()

            def stream(self, body: dict, prompt_tokens: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": server.model}
                text = server.answer(body["messages"][-1]["content"]) if server.answer else None
                words = text.split(" ") if text else ["w"] * int(body.get("max_tokens") or 16)
                try:
                    time.sleep(server.ttft_s)
                    self._event({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                      "finish_reason": None}]})
                    for i, word in enumerate(words):
                        if server.stall_after is not None and i == server.stall_after:
                            server.release.wait(30)
                        time.sleep(server.token_delay_s)
                        self._event({**base, "choices": [{"index": 0, "delta": {"content": (" " if i else "") + word},
                                                          "finish_reason": None}]})
                    self._event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                    self._event({**base, "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(words),
                                                                  "total_tokens": prompt_tokens + len(words)}})
                    self._event(b"[DONE]")
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = in_background(self.httpd, start=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def echo_digits(content: str) -> str:
    """A model that finds the nonce: answers with the eight-digit number in the prompt."""
    found = re.search(r"\d{8}", content)
    return f"The code is {found[0]}." if found else "I do not know."


class ScriptedClock:
    """A watch's time, scripted: calling it reads virtual seconds, sleep(s) advances them at once. A watch driven by it
    (deploy's, soak's) runs its whole timeline in microseconds, each reading at the time its own schedule says, whatever
    the machine's load."""

    def __init__(self, start: float = 1000.0):
        self.t = start

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(seconds, 0.0)


class FakeLauncher:
    """What the deploy's and the soak's watches ask of a deployment, scripted by time since creation (seconds, on `clock`:
    the machine's by default, a ScriptedClock on the watches' clock seam): mem(node, t) -> GiB, exit(node, t) -> exit code
    or None, log(node, t) -> the whole log so far; `refuse` the nodes whose start fails; `ranks` node -> rank."""

    def __init__(self, mem=None, exit=None, log=None, clock=time.monotonic, refuse=(), ranks=None):
        self.clock_, self.t0 = clock, clock()
        self.mem = mem or (lambda node, t: 100.0)
        self.exit = exit or (lambda node, t: None)
        self.logtext = log or (lambda node, t: "")
        self.refuse, self.ranks = set(refuse), ranks or {}
        self.stopped: list[tuple[str, bool]] = []
        self.started: list[str] = []
        self.calls = 0

    def _t(self) -> float:
        return self.clock_() - self.t0

    def drop_caches(self, node: str) -> str:
        return "dropped"

    def start(self, node: str) -> str:
        from gb10check.deploy.run import DeployFailed

        if node in self.refuse:
            raise DeployFailed(f"{node}: `docker compose up -d` exited 1:\nno such image")
        self.started.append(node)
        return "started"

    def describe(self, node: str) -> str:
        return f"{node} (rank {self.ranks.get(node, '?')})"

    def mem_available_gib(self, node: str) -> float:
        self.calls += 1
        return self.mem(node, self._t())

    def exit_code(self, node: str) -> int | None:
        if (node, True) in self.stopped or (node, False) in self.stopped:
            return 137
        return self.exit(node, self._t())

    def log(self, node: str) -> str:
        return self.logtext(node, self._t())

    def clock(self, node: str) -> float:
        return self.clock_()

    def log_since(self, node: str, since: float) -> tuple[float, str]:
        return self.clock_(), self.logtext(node, self._t())

    def stop(self, node: str, kill: bool = False, grace_s: float = 10) -> str:
        if self.exit_code(node) is not None:
            return "not running"
        self.stopped.append((node, kill))
        return "killed" if kill else "stopped"
