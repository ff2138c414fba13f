"""Prompts of a given size for the soak stage: filler text, a nonce to find in it, and exact sizing.

Every prompt is new text (its own random seed), so vLLM's prefix cache cannot answer it: the prefill the
long-context check and the depth sweep time is real work. Sizes are in the server's own tokens when it has
vLLM's `POST /tokenize` (the chat template included), else a conservative estimate (SAFE_CHARS_PER_TOKEN:
fewer characters per token than English text takes, so an estimated prompt is shorter than asked, never longer).
"""

import random
import re
import secrets
from dataclasses import dataclass

from .serving import Api, ApiUnreachable

SAFE_CHARS_PER_TOKEN = 3.0  # English filler runs 4-5 characters a token; 3 keeps an estimated prompt under the limit

# Our own vocabulary (plain words, no digits, so a numeric nonce cannot occur in the filler by chance).
WORDS = ("river", "stone", "window", "garden", "quiet", "market", "letter", "winter", "harbour", "lantern", "bridge",
         "orchard", "copper", "meadow", "signal", "engine", "valley", "candle", "ladder", "forest", "shadow", "morning",
         "station", "pocket", "thunder", "village", "basket", "mirror", "ticket", "island", "compass", "blanket",
         "kettle", "feather", "tunnel", "velvet", "anchor", "pepper", "canvas", "marble", "saddle", "harvest", "timber",
         "violet", "whistle", "glacier", "puzzle", "chimney", "parcel", "cobalt", "the", "a", "of", "and", "near", "under",
         "beside", "across", "slowly", "brightly", "carried", "painted", "found", "kept", "opened", "followed", "watched",
         "remembered", "gathered", "crossed", "built", "mended", "old", "small", "green", "distant", "warm", "narrow",
         "heavy", "patient", "silver", "early", "hidden", "gentle", "careful", "busy", "empty")


def filler(chars: int, seed: int) -> str:
    """At least `chars` characters of sentences made from WORDS, the same for the same seed."""
    rng = random.Random(seed)
    parts, size = [], 0
    while size < chars:
        words = [rng.choice(WORDS) for _ in range(rng.randint(7, 15))]
        sentence = " ".join(words).capitalize() + ". "
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)


def cut(text: str, chars: int) -> str:
    """The first `chars` characters, ended at a word boundary."""
    if len(text) <= chars:
        return text
    head = text[:chars]
    space = head.rfind(" ")
    return head[:space] if space > 0 else head


def fresh_nonce() -> str:
    """Eight digits, new each run (secrets, not the seeded filler): no cache or earlier answer can know it."""
    return str(10_000_000 + secrets.randbelow(90_000_000))


NONCE_LINE = " The secret code is {nonce}. "
NONCE_QUESTION = ("\n\nQuestion: somewhere in the text above is a sentence 'The secret code is ...'. What is the secret "
                  "code? Answer with the code only.")


def with_nonce(body: str, nonce: str, placement: str) -> str:
    """The filler with the nonce sentence at its start, middle or end (at a sentence boundary), then the question."""
    line = NONCE_LINE.format(nonce=nonce)
    if placement == "start":
        return line.lstrip() + body + NONCE_QUESTION
    if placement == "end":
        return body + line.rstrip() + NONCE_QUESTION
    middle = body.find(". ", len(body) // 2)
    at = middle + 2 if middle >= 0 else len(body) // 2
    return body[:at] + line.strip() + " " + body[at:] + NONCE_QUESTION


def nonce_found(nonce: str, *texts: str | None) -> bool:
    """The nonce's digits in the answer (its content or reasoning), whatever separators the model put between them."""
    return any(nonce in re.sub(r"\D", "", t or "") for t in texts)


def user(content: str) -> list[dict]:
    return [{"role": "user", "content": content}]


@dataclass
class Sized:
    messages: list[dict]
    tokens: int  # the server's count (/tokenize), or the estimate
    how: str  # "/tokenize" or "estimate (N chars/token)"


class Sizer:
    """Sizes prompts in the server's tokens: vLLM's POST /tokenize on the chat messages (template included), or an estimate."""

    def __init__(self, api: Api, model: str):
        self.api, self.model = api, model
        self.exact: bool | None = None  # None: not asked yet
        self.why_not: str | None = None

    def count(self, messages: list[dict]) -> int | None:
        """Tokens of these chat messages with the generation prompt, as the server counts them; None: it cannot say."""
        if self.exact is False:
            return None
        try:
            reply = self.api.post("/tokenize", {"model": self.model, "messages": messages, "add_generation_prompt": True},
                                  root=True)
        except ApiUnreachable as exc:
            reply, self.why_not = None, str(exc)
        count = None
        if reply is not None and reply.status == 200:
            try:
                count = int(reply.json()["count"])
            except (ValueError, KeyError, TypeError):
                self.why_not = f"POST /tokenize answered {reply.text[:120]!r}"
        elif reply is not None:
            self.why_not = f"POST /tokenize -> {reply.status if reply.status is not None else 'no answer'}: {reply.error[:120]}"
        self.exact = count is not None
        return count

    def chars_per_token(self, seed: int = 1) -> float:
        """Characters of filler per server token (measured once on a sample); the safe estimate without /tokenize."""
        sample = filler(4000, seed)
        n = self.count(user(sample))
        return len(sample) / n if n else SAFE_CHARS_PER_TOKEN

    def fit(self, make, target: int) -> Sized:
        """make(chars) -> messages; the messages of at most `target` tokens, within half a percent of it when exact."""
        ratio = self.chars_per_token()
        chars = max(1, int(target * ratio))
        if not self.exact:
            messages = make(max(1, int(target * SAFE_CHARS_PER_TOKEN)))
            return Sized(messages, target, f"estimate ({SAFE_CHARS_PER_TOKEN:g} chars/token; {self.why_not})")
        tolerance = max(8, target // 200)
        best: Sized | None = None
        for _ in range(6):
            messages = make(chars)
            n = self.count(messages)
            if n is None:
                break
            if n <= target and (best is None or n > best.tokens):
                best = Sized(messages, n, "/tokenize")
            if target - tolerance <= n <= target:
                return best
            chars = max(1, int(chars * (target - tolerance / 2) / max(n, 1)))
        if best is not None:
            return best
        messages = make(max(1, int(target * SAFE_CHARS_PER_TOKEN)))
        return Sized(messages, target, f"estimate ({SAFE_CHARS_PER_TOKEN:g} chars/token; /tokenize did not converge)")
