"""Price a sequence of API calls: serialise, size, run through the provider cache, bill.

A :class:`Request` is one call as the host makes it (the messages it sends, when, for which
agent); a :class:`Calibration` holds the two constants transcripts do not record — the size of
each agent's system prompt plus tool schemas, and the ratio of the provider's tokenizer to the
lab's estimator; :func:`simulate` returns one :class:`CallCost` per request.

>>> from lcm_lab.cost.prices import Prices
>>> prices = Prices("m", "anthropic", input=5e-06, output=2.5e-05, cache_read=5e-07, cache_write=6.25e-06)
>>> cal = Calibration({"main": 3000.0}, ratio=1.0)
>>> reqs = [Request(0, ({"role": "user", "content": "x" * 8000},)),
...         Request(1000, ({"role": "user", "content": "x" * 8000}, {"role": "user", "content": "y" * 400}))]
>>> [(c.read, c.write, c.uncached) for c in simulate(reqs, cal, prices, min_tokens=1024)]
[(0, 5000, 0), (5000, 100, 0)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lcm_lab.cost.cache import CacheRules, Prompt, PromptCache, anthropic_keeps_thinking, anthropic_min_tokens
from lcm_lab.cost.misses import miss_class
from lcm_lab.cost.prices import Prices
from lcm_lab.cost.serialise import BlockCache, prefix_hashes

if TYPE_CHECKING:
    from lcm_lab.cost.misses import MissModel

BROKEN_SHARE = 0.2  # a call "breaks" the cache when it cannot read 20% or more of what its chain sent last time
BREAK_REASONS = ("first call", "ttl expiry", "host compaction", "lcm compaction", "settings change", "prefix change")


@dataclass(frozen=True)
class Request:
    """One API call to price: the messages sent (system prompt excluded), its time and agent.

    ``compacted`` marks a call whose context an engine just rewrote (an LCM compaction pass),
    ``host_compaction`` one after the recorded host's own compaction; ``chain`` names the
    conversation that sends it (main agent or one sub-agent); ``meta`` carries labels (turn,
    transcript line) through to the result.
    """

    time_ms: float
    messages: tuple[Mapping[str, Any], ...]
    agent: str = "main"
    output_tokens: int = 0
    compacted: bool = False
    host_compaction: bool = False
    settings: str = ""  # thinking level / model epoch: a change invalidates the message prefix
    turn_start: bool = False
    chain: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Calibration:
    """Frozen constants: ``system_tokens[agent]`` (system prompt + tools, provider tokens) and
    ``ratio`` (provider tokens per estimated token), fitted on ``calls`` calls; ``misses`` is the
    session's model of the cache misses the rules cannot predict (:mod:`lcm_lab.cost.misses`),
    which gives every bill its interval (``None``: the bill is the rules' point only)."""

    system_tokens: Mapping[str, float]
    ratio: float
    calls: int = 0
    fitted_on: str = "given"
    misses: MissModel | None = None

    def system(self, agent: str) -> int:
        if agent not in self.system_tokens:
            known = ", ".join(sorted(self.system_tokens))
            raise KeyError(f"no calibrated system-prompt size for agent {agent!r} (calibrated: {known}); calibrate on calls that include it")
        return round(self.system_tokens[agent])


@dataclass(frozen=True)
class CallCost:
    """One priced call: prompt tokens by billing class, output tokens, dollars, and why the cache broke."""

    index: int
    time_ms: float
    agent: str
    prompt_tokens: int
    read: int
    write: int
    uncached: int
    output: int
    dollars: float
    write_1h: int = 0
    gap_s: float | None = None
    break_reason: str | None = None
    lost_tokens: int = 0  # tokens sent before that had to be written (or sent) again
    meta: Mapping[str, Any] = field(default_factory=dict)
    miss_class: str | None = None  # the unexplained-miss class it is exposed to (cost.misses), None when predicted to miss

    @property
    def hit(self) -> bool:
        return self.read > 0


def rules_for(prices: Prices, *, ttl_s: float = 300.0, min_tokens: int | None = None) -> CacheRules:
    """Cache rules of the provider behind ``prices`` (Anthropic minimum length by model)."""
    minimum = min_tokens if min_tokens is not None else anthropic_min_tokens(prices.model)
    return CacheRules(prices.provider, ttl_s=ttl_s, min_tokens=minimum)


def estimated_tokens(messages: Sequence[Mapping[str, Any]], blocks: BlockCache | None = None) -> int:
    """The lab estimator's size of a request's messages (what calibration scales)."""
    blocks = blocks or BlockCache()
    return sum(block.estimate for block in blocks.request(messages))


def build_prompt(request: Request, calibration: Calibration, blocks: BlockCache, *, strip_old_thinking: bool = False) -> Prompt:
    """The provider's view of one request: system block, then message blocks; breakpoints on the
    system prompt and on the last block (where pi and Claude Code put ``cache_control``)."""
    content = blocks.request(request.messages, strip_old_thinking=strip_old_thinking)
    tokens = (calibration.system(request.agent),) + tuple(max(round(b.estimate * calibration.ratio), 0) for b in content)
    system = f"system:{request.agent}"
    digests = tuple(prefix_hashes([system])) + tuple(prefix_hashes([b.key for b in content], seed=f"{system}|{request.settings}", memo=blocks.links))
    return Prompt(request.time_ms, tokens, digests, breakpoints=(0, len(tokens) - 1) if len(tokens) > 1 else (0,), chain=request.chain)


def _break_reason(
    request: Request, usage_read: int, previous: tuple[int, str] | None, gap_s: float | None, ttl_s: float
) -> str | None:
    if previous is None:
        return "first call"
    previous_total, previous_settings = previous
    if previous_total - usage_read < BROKEN_SHARE * previous_total:
        return None
    if gap_s is not None and gap_s > ttl_s:
        return "ttl expiry"
    if request.host_compaction:
        return "host compaction"
    if request.compacted:
        return "lcm compaction"
    if request.settings != previous_settings:
        return "settings change"
    return "prefix change"


def simulate(
    requests: Sequence[Request],
    calibration: Calibration,
    prices: Prices,
    *,
    ttl_s: float = 300.0,
    min_tokens: int | None = None,
) -> tuple[CallCost, ...]:
    """Price ``requests`` in order through one provider cache (the rules' point: the misses they
    cannot predict are simulated on top, :mod:`lcm_lab.cost.intervals`)."""
    rules = rules_for(prices, ttl_s=ttl_s, min_tokens=min_tokens)
    strip = rules.provider == "anthropic" and not anthropic_keeps_thinking(prices.model)
    cache = PromptCache(rules)
    blocks = BlockCache()
    previous: dict[str, tuple[int, str]] = {}
    out: list[CallCost] = []
    for index, request in enumerate(requests):
        prompt = build_prompt(request, calibration, blocks, strip_old_thinking=strip)
        usage = cache.call(prompt)
        before = previous.get(request.agent)
        reason = _break_reason(request, usage.read, before, usage.gap_s, rules.ttl_s)
        lost = max(before[0] - usage.read, 0) if before and reason else 0
        previous[request.agent] = (prompt.total, request.settings)
        dollars = prices.dollars(read=usage.read, write=usage.write, uncached=usage.uncached, output=request.output_tokens, write_1h=usage.write_1h)
        out.append(
            CallCost(
                index, request.time_ms, request.agent, prompt.total, usage.read, usage.write, usage.uncached,
                request.output_tokens, dollars, usage.write_1h, usage.gap_s, reason, lost, request.meta,
                miss_class(request.turn_start, usage.read),
            )
        )
    return tuple(out)
