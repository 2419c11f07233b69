"""A provider's prompt cache, call by call (pure: no clock, no network, prices injected).

Each call is a :class:`Prompt`: block sizes in provider tokens, one digest per block boundary
(the identity of the prefix ending there), the boundaries where the host put cache breakpoints,
and the request time in the transcript's own clock. :class:`PromptCache` replays calls in order
and reports, per call, the tokens read from the cache, written to it and sent uncached.

Provider rules (:class:`CacheRules`, documented in ``docs/cost.md``):

* **Anthropic** (explicit breakpoints): a request reads the longest cached prefix found at a
  breakpoint or at most ``lookback_blocks`` (20) block boundaries before one; it writes the prefix
  up to each breakpoint that is not cached yet, if that prefix is at least ``min_tokens`` long
  (1,024 / 2,048 / 4,096 by model). Entries live ``ttl_s`` (300 s, or 3,600 s for the 1-hour
  cache) from their last use; a read refreshes them. An entry becomes readable only once the
  response of the request that wrote it has begun, so a request of another chain (a parallel
  sub-agent) sent within ``first_token_s`` (1 s) of the write cannot read it; transcripts do not
  record when a response began, and a chain's own next request always follows its response. Writes cost ``cache_creation_input_token_cost``
  (1.25x input for 5 minutes, ``…_above_1hr`` 2x for 1 hour), reads ``cache_read_input_token_cost``.
* **OpenAI** (automatic): every request's prefix is cached; a request reads the longest prefix
  shared with a live entry, rounded down to 1,024 + a multiple of 128 tokens (nothing below
  1,024). Writing is free.
* **none**: the model has no cache price in litellm's cost map; everything is uncached.

>>> rules = CacheRules("anthropic", min_tokens=1024)
>>> cache = PromptCache(rules)
>>> first = Prompt(0, (2000, 500), (b"a", b"b"), breakpoints=(0, 1))
>>> second = Prompt(60_000, (2000, 500, 300), (b"a", b"b", b"c"), breakpoints=(0, 2))
>>> u1, u2 = cache.call(first), cache.call(second)
>>> (u1.read, u1.write, u1.uncached), (u2.read, u2.write, u2.uncached)
((0, 2500, 0), (2500, 300, 0))
>>> cache.call(Prompt(60_000 + 301_000, (2000, 500, 300), (b"a", b"b", b"c"), breakpoints=(0, 2))).read
0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Provider = Literal["anthropic", "openai", "none"]

OPENAI_MIN_TOKENS = 1024
OPENAI_INCREMENT = 128
ANTHROPIC_LOOKBACK_BLOCKS = 20

# Minimum cacheable prompt length by Anthropic model family (Anthropic's prompt-caching docs);
# first match wins, so more specific names come first. Not in litellm's cost map.
ANTHROPIC_MIN_TOKENS: tuple[tuple[str, int], ...] = (
    ("opus-4-5", 4096),
    ("opus-4-6", 4096),
    ("haiku-4-5", 4096),
    ("sonnet-4-6", 2048),
    ("opus-4-7", 2048),
    ("haiku-3", 2048),
    ("3-haiku", 2048),
    ("3-5-haiku", 2048),
)
ANTHROPIC_DEFAULT_MIN_TOKENS = 1024  # Opus 4/4.1, Sonnet 4/4.5, Sonnet 3.7, ...

# Models that keep previous turns' thinking blocks in context (Anthropic: Claude Opus 4.5 and
# later); earlier models drop them once a new user message arrives, which changes the prefix.
ANTHROPIC_KEEPS_THINKING: tuple[str, ...] = ("opus-4-5", "opus-4-6", "opus-4-7", "opus-5", "sonnet-5")


def anthropic_keeps_thinking(model: str) -> bool:
    """True when ``model`` keeps earlier turns' thinking blocks in its context.

    >>> anthropic_keeps_thinking("claude-opus-4-5"), anthropic_keeps_thinking("claude-sonnet-4-5")
    (True, False)
    """
    return any(fragment in model.lower() for fragment in ANTHROPIC_KEEPS_THINKING)


def anthropic_min_tokens(model: str) -> int:
    """Anthropic's minimum cacheable length for ``model``.

    >>> anthropic_min_tokens("claude-opus-4-5"), anthropic_min_tokens("claude-sonnet-4-5-20250929")
    (4096, 1024)
    """
    name = model.lower()
    for fragment, tokens in ANTHROPIC_MIN_TOKENS:
        if fragment in name:
            return tokens
    return ANTHROPIC_DEFAULT_MIN_TOKENS


@dataclass(frozen=True)
class CacheRules:
    """How one provider caches prompts."""

    provider: Provider
    ttl_s: float = 300.0
    min_tokens: int = ANTHROPIC_DEFAULT_MIN_TOKENS
    lookback_blocks: int = ANTHROPIC_LOOKBACK_BLOCKS
    increment: int = OPENAI_INCREMENT
    first_token_s: float = 1.0  # a new entry is readable by other chains this long after its write


@dataclass(frozen=True)
class Prompt:
    """What the provider sees at one call.

    ``tokens[i]`` is block ``i``'s size in provider tokens, ``digests[i]`` the identity of the
    prefix ending with block ``i``; ``breakpoints`` are block indexes carrying ``cache_control``
    (Anthropic only). ``time_ms`` is the request time; ``chain`` names the conversation that sent
    it (the main agent or one sub-agent).
    """

    time_ms: float
    tokens: tuple[int, ...]
    digests: tuple[bytes, ...]
    breakpoints: tuple[int, ...] = ()
    chain: str = ""

    @property
    def total(self) -> int:
        return sum(self.tokens)


@dataclass(frozen=True)
class CacheUsage:
    """Prompt tokens of one call by how the provider billed them (``write`` = 5-minute plus
    1-hour writes); ``gap_s`` is the idle time since the cache was last used."""

    read: int
    write: int
    uncached: int
    write_1h: int = 0
    gap_s: float | None = None

    @property
    def total(self) -> int:
        return self.read + self.write + self.uncached


def _cumulative(tokens: tuple[int, ...]) -> list[int]:
    out, running = [], 0
    for size in tokens:
        running += size
        out.append(running)
    return out


@dataclass
class PromptCache:
    """The provider-side cache of one account, replayed call by call."""

    rules: CacheRules
    entries: dict[bytes, float] = field(default_factory=dict)  # prefix digest -> expiry (ms)
    written: dict[bytes, tuple[float, str]] = field(default_factory=dict)  # prefix digest -> (write ms, chain)
    last_ms: float | None = None

    def _live(self, digest: bytes, now_ms: float, chain: str = "") -> bool:
        # Entries expire lazily: a lookup ignores an entry past its expiry.
        if self.entries.get(digest, float("-inf")) < now_ms:
            return False
        when, writer = self.written.get(digest, (float("-inf"), chain))
        return writer == chain or now_ms - when >= self.rules.first_token_s * 1000

    def _write(self, digest: bytes, now_ms: float, chain: str) -> None:
        if self.entries.get(digest, float("-inf")) < now_ms:
            self.written[digest] = (now_ms, chain)
        self.entries[digest] = self._expiry(now_ms)

    def call(self, prompt: Prompt) -> CacheUsage:
        """Bill one call and update the cache."""
        gap = None if self.last_ms is None else max(prompt.time_ms - self.last_ms, 0.0) / 1000
        self.last_ms = prompt.time_ms if self.last_ms is None else max(self.last_ms, prompt.time_ms)
        if self.rules.provider == "none" or not prompt.tokens:
            return CacheUsage(0, 0, prompt.total, gap_s=gap)
        if self.rules.provider == "openai":
            return self._openai(prompt, gap)
        return self._anthropic(prompt, gap)

    def _expiry(self, now_ms: float) -> float:
        return now_ms + self.rules.ttl_s * 1000

    def _anthropic(self, prompt: Prompt, gap: float | None) -> CacheUsage:
        cum = _cumulative(prompt.tokens)
        read_at = -1
        for bp in prompt.breakpoints:
            for j in range(bp, max(bp - self.rules.lookback_blocks, -1), -1):
                if self._live(prompt.digests[j], prompt.time_ms, prompt.chain):
                    read_at = max(read_at, j)
                    break
        read = cum[read_at] if read_at >= 0 else 0
        if read_at >= 0:
            self._write(prompt.digests[read_at], prompt.time_ms, prompt.chain)
        written_to = read
        for bp in prompt.breakpoints:
            if cum[bp] >= self.rules.min_tokens:
                self._write(prompt.digests[bp], prompt.time_ms, prompt.chain)
                written_to = max(written_to, cum[bp])
        write = written_to - read
        uncached = prompt.total - read - write
        one_hour = write if self.rules.ttl_s >= 3600 else 0
        return CacheUsage(read, write, uncached, write_1h=one_hour, gap_s=gap)

    def _openai(self, prompt: Prompt, gap: float | None) -> CacheUsage:
        cum = _cumulative(prompt.tokens)
        shared = 0
        for j in range(len(cum) - 1, -1, -1):
            if self._live(prompt.digests[j], prompt.time_ms):
                shared = cum[j]
                break
        read = 0
        if shared >= OPENAI_MIN_TOKENS:
            read = OPENAI_MIN_TOKENS + (shared - OPENAI_MIN_TOKENS) // self.rules.increment * self.rules.increment
        expiry = self._expiry(prompt.time_ms)
        for digest in prompt.digests:
            self.entries[digest] = expiry
        return CacheUsage(read, 0, prompt.total - read, gap_s=gap)
