"""The run-level ``fact_retention`` headline: hard facts of the history the model can still use.

For one run at its token budget:

* **facts** — the typed hard facts of the whole conversation (:mod:`lcm_lab.metrics.facts`),
  each weighted by type (:data:`~lcm_lab.metrics.facts.FACT_WEIGHTS`);
* **method** (``raw``) — weighted share *usable* in the end-of-run context the model receives
  (``run.sent()``): verbatim in a raw/live message, or *stated* in a summary (pointer lines and
  bare lists do not count, :mod:`lcm_lab.metrics.statements`);
* **ceiling** — the full history (1 by construction: every fact was extracted from it);
* **floor** — plain truncation: the newest raw messages that fit in the budget, priced like the
  engine prices what it sends (serialized-message estimate), fixed per conversation × budget (it
  does not move with the method's own context size);
* **chance** — the same check against another conversation's text of the method's context size
  (``donor_text``; withheld, not faked, when none is given);
* value = ``(raw − floor) / (ceiling − floor)`` with a 95 % percentile bootstrap interval over
  facts (paired: method and floor are resampled together); withheld when ceiling − floor is tiny
  (the history fits in the budget).

Diagnostics next to it: ``compacted_fact_retention`` (facts not visible in any raw message, share
stated in a shown summary: survival through summaries only) and ``fact_pointer_rate`` (share of
those only named in a pointer line: recoverable by expansion, not stated).

Only ``run.sent()``, ``run.conversation``, ``run.token_budget`` are read, so runs of any strategy
score the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from lcm_lab.engine.assembly.bare import estimate_serialized_message_tokens
from lcm_lab.engine.ingest.content import PERSISTABLE_ROLES
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import Conversation
from lcm_lab.metrics.base import Score, message_text, per_conversation, runtime_text
from lcm_lab.metrics.facts import FACT_WEIGHTS, Fact, TextIndex, facts_from_texts
from lcm_lab.metrics.headline import headline
from lcm_lab.metrics.statements import split_statements

RESAMPLES = 2000


class ContextView(NamedTuple):
    """A model-visible context as three texts: raw messages, stated summary text, pointer lines."""

    raw: str
    stated: str
    pointers: str


HISTORY_ROLES = PERSISTABLE_ROLES - {"system"}
"""Roles whose messages form the compacted history (what the engine persists, minus system)."""


def conversation_texts(conversation: Conversation, roles: Sequence[str] | None = None) -> list[tuple[int, str]]:
    """``(index, text)`` of the messages of a conversation, oldest first: the history the engine
    stores (:data:`HISTORY_ROLES`; system rows and host-only messages such as pi's
    ``bashExecution`` skipped, since no strategy replayed from the store can send them);
    ``roles`` keeps only those roles, e.g. ``("user", "assistant")``."""
    if conversation.entries:
        return [(e.line, runtime_text(e.message)) for e in conversation.entries
                if e.message is not None and e.message.get("role") in HISTORY_ROLES and (roles is None or e.message.get("role") in roles)]
    return [(m.seq, message_text(m)) for m in conversation.stored_messages if m.role != "system" and (roles is None or m.role in roles)]


def context_view(items: Sequence[Any]) -> ContextView:
    """Split assembled items into raw text and the stated/pointer parts of summaries."""
    raw, stated, pointers = [], [], []
    for item in items:
        text = runtime_text(item.message)
        if item.kind == "summary":
            split = split_statements(text)
            stated.append(split.stated)
            pointers.append(split.pointers)
        else:
            raw.append(text)
    return ContextView("\n".join(raw), "\n".join(stated), "\n".join(pointers))


def conversation_costs(conversation: Conversation) -> list[int]:
    """Tokens of each message of :func:`conversation_texts` as the engine prices what it sends
    (the serialized-message estimate its final clamp uses), so the floor is costed like the method."""
    if conversation.entries:
        return [estimate_serialized_message_tokens(e.message) for e in conversation.entries
                if e.message is not None and e.message.get("role") in HISTORY_ROLES]
    return [estimate_serialized_message_tokens({"role": m.role, "content": m.content})
            for m in conversation.stored_messages if m.role != "system"]


def conversation_costs_of(conversation: Conversation) -> list[int]:
    """:func:`conversation_costs`, computed once per conversation object."""
    return per_conversation(conversation, "costs", lambda: conversation_costs(conversation))


def truncation_text(texts: Sequence[tuple[int, str]], budget: int, costs: Sequence[int] | None = None) -> str:
    """The newest messages whose tokens (``costs``, default the plain-text estimate) fit in
    ``budget``: the truncation floor. A single message larger than the whole budget is skipped
    (no context could show it whole) instead of ending the floor.

    >>> truncation_text([(1, "a" * 40), (2, "b" * 40), (3, "c" * 8)], 12)
    'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\\ncccccccc'
    """
    prices = list(costs) if costs is not None else [estimate_tokens(t) for _, t in texts]
    kept: list[str] = []
    spent = 0
    for (_, text), cost in zip(reversed(texts), reversed(prices), strict=True):
        if cost > budget:
            continue
        if spent + cost > budget:
            break
        kept.append(text)
        spent += cost
    return "\n".join(reversed(kept))


def text_window(text: str, tokens: int, key: str) -> str:
    """``tokens`` tokens of ``text`` from a start derived from ``key`` (a deterministic sample).

    >>> text_window("abcdefghij" * 10, 2, "k") == text_window("abcdefghij" * 10, 2, "k")
    True
    """
    chars = min(len(text), 4 * tokens)
    span = max(1, len(text) - chars + 1)
    start = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) % span
    return prefix_within(text[start : start + 4 * max(0, tokens) + 1], tokens).strip()


def prefix_within(text: str, tokens: int) -> str:
    """:func:`~lcm_lab.engine.tokens.truncate_to_tokens`, the same prefix by bisection over the
    counting estimator (``estimate_tokens`` grows with the prefix), instead of a Python walk over
    every code point: a chance window costs ~1 ms, not ~15 ms, on text with emoji.

    >>> prefix_within("abcdefgh", 1), prefix_within("ab你好", 2)
    ('abcd', 'ab你')
    """
    if tokens <= 0:
        return ""
    if estimate_tokens(text) <= tokens:
        return text
    low, high = 0, len(text)  # estimate(text[:low]) <= tokens < estimate(text[:high])
    while high - low > 1:
        middle = (low + high) // 2
        if estimate_tokens(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle
    return text[:low]


def facts_present(facts: Sequence[Fact], text: str) -> np.ndarray:
    """1.0 per fact whose key occurs in ``text`` (boundary-aware, see :class:`TextIndex`)."""
    index = TextIndex([(0, text)])
    return np.array([bool(index.containing(f)) for f in facts], dtype=float)


def _weighted(hits: np.ndarray, weights: np.ndarray) -> float:
    return float((hits * weights).sum() / weights.sum())


def bootstrap_normalised(method: np.ndarray, floor: np.ndarray, weights: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """95 % percentile interval of ``(method − floor) / (1 − floor)`` resampling facts (paired).

    Resamples where the floor reaches the ceiling are dropped (the scale is undefined there).
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, method.size, size=(resamples, method.size))
    w = weights[idx]
    m = (method[idx] * w).sum(axis=1) / w.sum(axis=1)
    f = (floor[idx] * w).sum(axis=1) / w.sum(axis=1)
    ok = (1.0 - f) > 1e-9
    values = (m[ok] - f[ok]) / (1.0 - f[ok])
    if values.size < 2:
        return float("nan"), float("nan")
    return float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))


class FactOutcome(NamedTuple):
    """Per-fact results of one run (aligned arrays), for headlines and for pooling across runs."""

    facts: tuple[Fact, ...]
    weights: np.ndarray
    method: np.ndarray
    floor: np.ndarray
    raw_visible: np.ndarray
    stated: np.ndarray
    pointer: np.ndarray
    chance: np.ndarray | None
    context_tokens: int


def fact_outcome(run: Any, *, budget: int | None = None, donor_text: str | None = None,
                 facts: Sequence[Fact] | None = None) -> FactOutcome:
    """Which facts of ``run.conversation`` the end-of-run context, the floor and chance show
    (``facts``: the conversation's facts when already extracted, e.g. for several runs of it)."""
    budget = run.token_budget if budget is None else budget
    conversation = run.conversation
    texts = per_conversation(conversation, "texts", lambda: conversation_texts(conversation))
    if facts is None:
        facts = per_conversation(conversation, "facts", lambda: tuple(facts_from_texts(texts)))
        # The floor is fixed per conversation × budget (every run of a sweep shares it).
        floor = per_conversation(conversation, f"fact_floor:{budget}",
                                 lambda: facts_present(facts, truncation_text(texts, budget, conversation_costs_of(conversation))))
    else:
        facts = tuple(facts)
        floor = facts_present(facts, truncation_text(texts, budget, conversation_costs_of(conversation)))
    sent = run.sent(None, budget)
    view = context_view(sent.items)
    raw_visible = facts_present(facts, view.raw)
    stated = facts_present(facts, view.stated)
    pointer = facts_present(facts, view.pointers)
    chance = None
    if donor_text:
        chance = facts_present(facts, text_window(donor_text, max(1, sent.estimated_tokens), run.conversation.session_id))
    return FactOutcome(
        facts=facts,
        weights=np.array([FACT_WEIGHTS[f.kind] for f in facts], dtype=float),
        method=np.maximum(raw_visible, stated),
        floor=floor.copy(),
        raw_visible=raw_visible,
        stated=stated,
        pointer=pointer,
        chance=chance,
        context_tokens=sent.estimated_tokens,
    )


def fact_headline_scores(run: Any, run_id: str, *, budget: int | None = None, donor_text: str | None = None, seed: int = 0,
                         donor_label: str | None = None, facts: Sequence[Fact] | None = None) -> list[Score]:
    """``fact_retention`` (run headline), ``compacted_fact_retention`` and ``fact_pointer_rate`` (run);
    ``donor_label`` names the conversation ``donor_text`` came from (``details["chance_donor"]``)."""
    out = fact_outcome(run, budget=budget, donor_text=donor_text, facts=facts)
    n = len(out.facts)
    if n == 0:
        return [headline(run_id, "fact_retention", raw=None, ceiling=None, floor=None, chance=None, n=0, unit="fact")]
    w = out.weights
    raw, floor = _weighted(out.method, w), _weighted(out.floor, w)
    chance = _weighted(out.chance, w) if out.chance is not None else None
    ci = bootstrap_normalised(out.method, out.floor, w, seed=seed) if floor < 1.0 else None
    extra: dict[str, Any] = {
        "weighted_by": "fact type",
        "raw_unweighted": float(out.method.mean()),
        "floor_unweighted": float(out.floor.mean()),
        "context_tokens": out.context_tokens,
        "budget": run.token_budget if budget is None else budget,
        "resamples": RESAMPLES,
        "scale": "raw/ceiling/floor/chance: weighted share of facts usable; value and ci: (raw - floor) / (ceiling - floor)",
    }
    if chance is None:
        extra["chance_withheld"] = "no donor conversation given (pass donor_text)"
    elif donor_label:
        extra["chance_donor"] = donor_label
    scores = [headline(run_id, "fact_retention", raw=raw, ceiling=1.0, floor=floor, chance=chance, n=n, unit="fact", ci=ci, extra=extra)]
    compacted = out.raw_visible == 0
    nc = int(compacted.sum())
    details = {"n": nc, "unit": "fact", "weighted_by": "fact type", "context_tokens": out.context_tokens}
    if nc:
        wc = w[compacted]
        stated = out.stated[compacted]
        pointer_only = out.pointer[compacted] * (1 - stated)
        scores.append(Score(run_id, "run", "", "compacted_fact_retention", _weighted(stated, wc), details))
        scores.append(Score(run_id, "run", "", "fact_pointer_rate", _weighted(pointer_only, wc), details))
    else:
        for metric in ("compacted_fact_retention", "fact_pointer_rate"):
            scores.append(Score(run_id, "run", "", metric, None, {**details, "reason": "every fact is visible raw"}))
    return scores
