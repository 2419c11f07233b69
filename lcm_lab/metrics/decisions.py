"""Decision and TODO retention: are the history's decisions and open items still stated?

Sentences of the user's and assistant's messages (not tool output, not code) that record a **decision** (``we decided …``, ``let's go with …``,
``switched to …``) or an **open item** (``TODO``, ``next step``, ``still need to …``) are tagged by
regular expressions (seeded from the decision and open-loop patterns of ClawVault's ``inferObservationType`` in ``src/lib/observation-format.ts``). Each gets *key terms*: its
hard facts when it has any (up to four; one non-word fact such as a path suffices), else up to
four content words (at least two). It counts as retained when at least
two thirds of its key terms are usable in the end-of-run context (``run.sent()``: a raw message, or
a summary's stated sentences — pointer lines do not count).

``decision_retention`` (run headline-shaped score) follows ``fact_retention``: ceiling the full
history (1 by construction), floor plain truncation to the budget (fixed per conversation ×
budget), chance another conversation's text of the method's size, unit ``decision``, 95 %
bootstrap interval over decisions. ``todo_retention`` is the same restricted to open items (unit ``todo``).

>>> [(d.kind, d.terms) for d in tag_decisions([(1, "We decided to use DuckDB 1.5.5. Nice weather.")])]
[('decision', ('DuckDB', '1.5.5'))]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lcm_lab.metrics.base import Score, per_conversation
from lcm_lab.metrics.fact_headline import (
    bootstrap_normalised,
    context_view,
    conversation_costs_of,
    conversation_texts,
    text_window,
    truncation_text,
)
from lcm_lab.metrics.facts import extract_facts, normalize
from lcm_lab.metrics.headline import headline

_DECISION = re.compile(
    r"\b(?:decided|we decide|agreed|chose|choose to|going with|go with|settled on|switch(?:ed)? to|"
    r"we'll use|let's use|will use|instead of|the plan is|approved|rejected)\b",
    re.IGNORECASE,
)
_TODO = re.compile(r"\b(?:todo|fixme|next steps?|still need(?:s)? to|follow[- ]up|pending|blocked on|open question|remaining work)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CODE = re.compile(r"[{}=<>]|//|/\*|\bthis\.|\$\{|^\s*[-*]?\s*\[[ x]\]")
_STOP = frozenset(
    """that this with from have will would could should about there their them they then than when what which
    also just really very some more most into over after before because while where your yours ours were been being
    does done make made want need still next step steps todo fixme let's we'll decided agreed instead going""".split()
)
RETAINED_SHARE = 2 / 3


@dataclass(frozen=True)
class Decision:
    """A tagged sentence: ``kind`` (decision/todo), where it was said, and its key terms."""

    kind: str
    seq: int
    sentence: str
    terms: tuple[str, ...]


def _terms(sentence: str) -> tuple[str, ...]:
    facts = [f.text for f in extract_facts(sentence) if f.kind != "name" or len(f.text) > 3]
    if facts:
        return tuple(dict.fromkeys(facts))[:4]
    words = [w.strip(".,;:!?\"'()[]`").lower() for w in sentence.split()]
    return tuple(dict.fromkeys(w for w in words if len(w) > 3 and w.isalpha() and w not in _STOP))[:4]


def tag_decisions(texts: Sequence[tuple[int, str]]) -> list[Decision]:
    """Decisions and TODOs of ``(seq, text)`` pairs, de-duplicated by sentence."""
    out: list[Decision] = []
    seen: set[str] = set()
    for seq, text in texts:
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            if not sentence or len(sentence) > 400 or _CODE.search(sentence) or normalize(sentence) in seen:
                continue
            kind = "todo" if _TODO.search(sentence) else ("decision" if _DECISION.search(sentence) else None)
            terms = _terms(sentence) if kind else ()
            if kind and terms and (len(terms) >= 2 or not terms[0].isalpha()):  # one specific fact, or two content words
                seen.add(normalize(sentence))
                out.append(Decision(kind, seq, sentence, terms))
    return out


def _term_present(term: str, text: str) -> bool:
    key = normalize(term)
    left = r"(?<![a-z0-9])" if key[:1].isalnum() else ""
    right = r"(?![a-z0-9])" if key[-1:].isalnum() else ""
    return re.search(left + re.escape(key) + right, text) is not None


def retained(decision: Decision, text: str) -> bool:
    """At least two thirds of the key terms occur in ``text`` (normalised)."""
    return _retained_normalised(decision, normalize(text))


def _retained_normalised(decision: Decision, norm: str) -> bool:
    hits = sum(_term_present(t, norm) for t in decision.terms)
    return hits >= RETAINED_SHARE * len(decision.terms)


def retained_all(decisions: Sequence[Decision], text: str) -> np.ndarray:
    """:func:`retained` of every decision in one text (normalised once): 1.0 per retained one."""
    norm = normalize(text)
    return np.array([_retained_normalised(d, norm) for d in decisions], dtype=float)


UNITS: dict[str, str] = {"decision_retention": "decision", "todo_retention": "todo"}
"""What ``n`` counts in each headline: decisions (TODOs among them), or open items alone."""


def decision_scores(run: Any, run_id: str, *, budget: int | None = None, donor_text: str | None = None, seed: int = 0,
                    donor_label: str | None = None) -> list[Score]:
    """``decision_retention`` and ``todo_retention`` (run scope) with floor, ceiling, chance, CI."""
    budget = run.token_budget if budget is None else budget
    conversation = run.conversation
    # What depends on the conversation (and budget) only is made once per conversation.
    texts = per_conversation(conversation, "texts", lambda: conversation_texts(conversation))
    decisions = per_conversation(
        conversation, "decisions", lambda: tag_decisions(conversation_texts(conversation, roles=("user", "assistant")))
    )
    sent = run.sent(None, budget)
    view = context_view(sent.items)
    usable = view.raw + "\n" + view.stated
    floor_text = per_conversation(conversation, f"floor_text:{budget}",
                                  lambda: truncation_text(texts, budget, conversation_costs_of(conversation)))
    chance_text = text_window(donor_text, max(1, sent.estimated_tokens), run.conversation.session_id) if donor_text else None
    scores = []
    for metric, kinds in (("decision_retention", ("decision", "todo")), ("todo_retention", ("todo",))):
        items = [d for d in decisions if d.kind in kinds]
        if not items:
            scores.append(headline(run_id, metric, raw=None, ceiling=None, floor=None, chance=None, n=0, unit=UNITS[metric]))
            continue
        method = np.array([retained(d, usable) for d in items], dtype=float)
        floor = np.array([retained(d, floor_text) for d in items], dtype=float)
        ones = np.ones(len(items))
        chance = float(np.mean([retained(d, chance_text) for d in items])) if chance_text else None
        ci = bootstrap_normalised(method, floor, ones, seed=seed) if floor.mean() < 1.0 else None
        extra = {"budget": budget, "context_tokens": sent.estimated_tokens, "sample": [d.sentence[:120] for d in items[:5]],
                 "lost_sample": [d.sentence[:120] for d, m in zip(items, method, strict=True) if not m][:5]}
        if chance is None:
            extra["chance_withheld"] = "no donor conversation given (pass donor_text)"
        elif donor_label:
            extra["chance_donor"] = donor_label
        scores.append(headline(run_id, metric, raw=float(method.mean()), ceiling=1.0, floor=float(floor.mean()), chance=chance,
                               n=len(items), unit=UNITS[metric], ci=ci, extra=extra))
    return scores
