"""Prompt processing and token generation speed at several context depths, one request at a time, printed as
llama-benchy (0.4.0) prints its markdown table, so the two read side by side.

For each depth d (context tokens) the request is fresh filler text of d + pp tokens (the server's count, through
POST /tokenize; the prefix cache cannot hold it) asking to go on, with max_tokens = min_tokens = tg and ignore_eos
(llama-benchy's --exact-tg), streamed through the `openai` client, `runs` times:
  - pp t/s = prompt tokens (the server's usage.prompt_tokens) / time to the first token (the client's clock);
  - tg t/s = (completion tokens - 1) / (last token - first token), as test_decode_throughput measures decode.
Rows are `pp{pp}` and `tg{tg}` with ` @ d{depth}` for depth > 0, values `mean ± std` (population std, as numpy's);
llama-benchy also counts the context in the pp figure and likewise reports (context + prompt) / prefill time. Where
the two differ: its prefill time is the first response chunk less a measured latency (est_ppt), ours the first token
as a client sees it (e2e_ttft), so at small depths ours reads a little slower.
"""

import statistics
from dataclasses import dataclass, field

from .prompts import Sizer, cut, filler, user
from .serving import Api, ApiUnreachable

CONTINUE = "\n\nContinue the text above."


@dataclass
class DepthRun:
    depth: int
    prompt_tokens: int | None  # the server's usage.prompt_tokens
    ttft_s: float | None
    tg_tok_s: float | None
    completion_tokens: int | None
    error: str | None = None

    @property
    def pp_tok_s(self) -> float | None:
        return self.prompt_tokens / self.ttft_s if self.prompt_tokens and self.ttft_s else None


@dataclass
class Sweep:
    model: str
    pp: int
    tg: int
    runs: list[DepthRun] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (depth, why not run)
    sized_by: str = ""

    @property
    def depths(self) -> list[int]:
        return sorted({r.depth for r in self.runs})

    def values(self, depth: int, what: str) -> list[float]:
        """pp or tg tok/s of the runs at this depth that could be timed."""
        got = [r.pp_tok_s if what == "pp" else r.tg_tok_s for r in self.runs if r.depth == depth]
        return [v for v in got if v is not None]

    def mean(self, depth: int, what: str) -> float | None:
        v = self.values(depth, what)
        return statistics.fmean(v) if v else None


def depth_request(model: str, messages: list[dict], tg: int) -> dict:
    return {"model": model, "messages": messages, "temperature": 0, "max_tokens": tg, "min_tokens": tg, "ignore_eos": True,
            "chat_template_kwargs": {"enable_thinking": False}, "stream_options": {"include_usage": True}}


def sweep(api: Api, model: str, depths: list[int], pp: int, tg: int, runs: int = 3, read_timeout_s: float = 900,
          skipped: list[tuple[int, str]] | None = None, seed: int | None = None, say=None) -> Sweep:
    """The depth sweep at concurrency 1 (see the module docstring); one warm-up request first, not counted."""
    import time

    seed = seed if seed is not None else int(time.time() * 1000) % 10**9
    result = Sweep(model, pp, tg, skipped=list(skipped or []))
    sizer = Sizer(api, model)
    api.stream(depth_request(model, user("Say hello."), 4), read_timeout_s=read_timeout_s)  # warm-up
    for depth in depths:
        for i in range(runs):
            seed += 1
            text = filler((depth + pp) * 6 + 1000, seed)
            sized = sizer.fit(lambda chars: user(cut(text, chars) + CONTINUE), depth + pp)
            result.sized_by = sized.how
            try:
                reply, timed = api.stream(depth_request(model, sized.messages, tg), read_timeout_s=read_timeout_s)
            except ApiUnreachable as exc:
                result.runs.append(DepthRun(depth, None, None, None, None, str(exc)))
                continue
            if reply is not None:
                error = f"{reply.status}: {reply.error}" if reply.status is not None else reply.error
                result.runs.append(DepthRun(depth, None, None, None, None, error))
            else:
                error = timed.broken or (f"error event: {timed.stream.error}" if timed.stream.error else None)
                result.runs.append(DepthRun(depth, timed.stream.prompt_tokens, timed.ttft_s, timed.decode_tok_s,
                                            timed.completion_tokens, error))
            if say is not None:
                r = result.runs[-1]
                say(f"d{depth} run {i + 1}/{runs}: " + (r.error or f"pp {r.pp_tok_s or 0:.1f} t/s, tg {r.tg_tok_s or 0:.1f} t/s"))
    return result


def fmt(values: list[float], scale: float = 1.0) -> str:
    """llama-benchy's cell: mean ± population std, two decimals; empty when nothing was measured."""
    if not values:
        return ""
    v = [x * scale for x in values]
    return f"{statistics.fmean(v):.2f} ± {statistics.pstdev(v):.2f}"


def test_name(kind: str, tokens: int, depth: int) -> str:
    return f"{kind}{tokens}" + (f" @ d{depth}" if depth > 0 else "")


def rows(result: Sweep) -> list[list[str]]:
    """model | test | t/s | e2e_ttft (ms), a pp row and a tg row per depth (llama-benchy's order)."""
    out = []
    for depth in result.depths:
        ttfts = [r.ttft_s for r in result.runs if r.depth == depth and r.ttft_s is not None and r.pp_tok_s is not None]
        out.append([result.model, test_name("pp", result.pp, depth), fmt(result.values(depth, "pp")), fmt(ttfts, 1000)])
        out.append([result.model, test_name("tg", result.tg, depth), fmt(result.values(depth, "tg")), ""])
    return out


HEADERS = ["model", "test", "t/s", "e2e_ttft (ms)"]


def pipe_table(headers: list[str], body: list[list[str]]) -> str:
    """A markdown pipe table as tabulate's "pipe" format prints llama-benchy's: the first column left-aligned, the
    others right-aligned, each padded to its widest cell."""
    widths = [max(len(str(r[i])) for r in [headers] + body) for i in range(len(headers))]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                  for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    rule = "|" + "|".join(":" + "-" * (w + 1) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in body])


def table(result: Sweep) -> str:
    text = pipe_table(HEADERS, rows(result))
    for depth, why in result.skipped:
        text += f"\nd{depth}: not run ({why})"
    return text
