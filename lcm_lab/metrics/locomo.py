"""LoCoMo QA retention: can a reader that needs the question still answer from what the model receives?

Per QA item (LoCoMo categories 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop) the offline
reader of :mod:`lcm_lab.metrics.qa_reader` retrieves the ``k`` passages most relevant to the
question (BM25) and credits the item iff the normalised gold answer occurs in one of them
(answer recall@k). It reads four contexts, all rendered the same way (:func:`reader_text`:
content only, metadata stripped):

* **method** — what the model receives after the last turn: ``run.sent(None, budget)``;
* **ceiling** — the full raw history (every message, no budget);
* **floor** — plain truncation to the **budget**: the newest raw messages whose tokens, priced
  as the engine prices what it sends (:func:`raw_costs`), fit the budget. It depends only on the
  conversation and the budget, so every run at that budget shares it;
* **chance** — the same truncation applied to *another* conversation (same budget): what the
  reader finds in unrelated text of the same size.

``qa_retention = (method − floor) / (ceiling − floor)`` with a paired bootstrap interval over QA
items; withheld when ceiling − floor < ``MIN_GAP``. The number is an offline **proxy** for the
judged LoCoMo "J" score (``metrics/judge.py``). Only ``run.sent``, ``run.conversation``,
``run.token_budget`` and ``len(run.turns)`` are read, so runs of any strategy score unchanged.

Bad annotations (category 5 adversarial items, empty answers, evidence ids that name no dialogue
line such as ``D:11:26``) are counted in ``details["warnings"]``, never raised.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from lcm_lab.engine.assembly.bare import estimate_serialized_message_tokens
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import Conversation
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.base import Score, per_conversation
from lcm_lab.metrics.headline import headline
from lcm_lab.metrics.qa_reader import TOP_K, Bm25Index, answer_tokens, reader_text
from lcm_lab.metrics.stats import bootstrap_normalised

CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
CONTROLS: tuple[str, ...] = ("ceiling", "floor", "chance")
READER = f"bm25 answer recall@{TOP_K} (offline proxy)"
_PERSISTED_ROLES = frozenset({"user", "assistant", "system", "tool", "toolResult"})
_CACHE: dict[tuple[Any, ...], np.ndarray] = {}
_CACHE_LIMIT = 512


# The per-item and per-category metric this scorer writes (plots read it by this name).
QA_RECALL = "qa_recall"


def containment(answer: Sequence[str], context: set[str]) -> float:
    """Share of answer tokens present in a context's token set (a diagnostic kept for
    ``metrics/strategies.py``; it credits bare lists, so no headline uses it).

    >>> containment(["7", "may"], {"may", "2023"})
    0.5
    """
    return sum(1 for t in answer if t in context) / len(answer) if answer else 0.0


def _raw_messages(conversation: Conversation) -> list[dict[str, Any]]:
    if conversation.entries:
        return [e.message for e in conversation.entries
                if e.type == "message" and e.message is not None and e.message.get("role") in _PERSISTED_ROLES]
    return [{"role": m.role, "content": m.content} for m in sorted(conversation.stored_messages, key=lambda m: m.seq)]


def raw_texts(conversation: Conversation) -> list[str]:
    """Reader texts of a conversation's raw messages in order (input entries or stored messages)."""
    if conversation.entries:
        return [reader_text(message) for message in _raw_messages(conversation)]
    return [m.content for m in sorted(conversation.stored_messages, key=lambda m: m.seq)]


def raw_costs(conversation: Conversation) -> list[int]:
    """Tokens of each message of :func:`raw_texts` as the engine prices what it sends (the
    serialized-message estimate of its final clamp), so a truncation floor holds as many raw
    messages as the budget admits for the method, not the ~2x more its bare text would."""
    return [estimate_serialized_message_tokens(message) for message in _raw_messages(conversation)]


def newest_within(texts: Sequence[str], budget: int, costs: Sequence[int] | None = None) -> list[str]:
    """Plain truncation: the newest texts whose tokens (``costs``, default the plain-text
    estimate) fit ``budget``, in order.

    >>> newest_within(["a" * 40, "b" * 40, "c" * 40], 15)
    ['cccccccccccccccccccccccccccccccccccccccc']
    >>> newest_within(["a" * 40, "b" * 40, "c" * 40], 15, costs=[5, 5, 5])
    ['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 'cccccccccccccccccccccccccccccccccccccccc']
    """
    kept: list[str] = []
    used = 0
    for i in range(len(texts) - 1, -1, -1):
        cost = costs[i] if costs is not None else estimate_tokens(texts[i])
        if used + cost > budget:
            break
        kept.append(texts[i])
        used += cost
    return kept[::-1]


def usable_items(conversation: Conversation, qa_items: Iterable[QAItem]) -> tuple[list[QAItem], Counter[str]]:
    """Items the reader can score, and a count of every data warning.

    Items with evidence ids that name no dialogue line are kept (the reader does not use
    evidence) and counted; adversarial, answerless items are skipped and counted.
    """
    known = {e.entry_id for e in conversation.entries if e.entry_id is not None}
    warnings: Counter[str] = Counter()
    usable: list[QAItem] = []
    for item in qa_items:
        if item.category == 5:
            warnings["skipped: adversarial (category 5, unanswerable by design)"] += 1
            continue
        if not item.answer or not item.answer.strip():
            warnings["skipped: empty gold answer"] += 1
            continue
        if not answer_tokens(item.answer):
            warnings["skipped: answer empty after normalisation"] += 1
            continue
        missing = [e for e in item.evidence if e not in known]
        if missing:
            warnings["kept: evidence id names no dialogue line"] += 1
        if not item.evidence:
            warnings["kept: no evidence ids"] += 1
        usable.append(item)
    return usable, warnings


def context_recall(texts: Sequence[str], questions: Sequence[str], answers: Sequence[str], k: int = TOP_K) -> np.ndarray:
    """Answer recall@k per question over a context (cached: controls are shared by many runs)."""
    key = (hash(tuple(texts)), hash(tuple(questions)), hash(tuple(answers)), k, len(texts))
    hit = _CACHE.get(key)
    if hit is None:
        hit = Bm25Index.of_texts(texts).answer_recall(questions, answers, k)
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = hit
    return hit


def truncated_history(conversation: Conversation, budget: int) -> list[str]:
    """Reader texts of the newest raw messages of ``conversation`` that fit ``budget``: the floor
    of a run of it and the chance control of a run of another conversation. Fixed per
    conversation × budget, so computed once for every run of a sweep that reads it."""
    return per_conversation(conversation, f"qa_truncation:{budget}",
                            lambda: newest_within(raw_texts(conversation), budget, raw_costs(conversation)))


def sent_texts(run: Any, budget: int) -> list[str]:
    """Reader texts of what the model receives after the run (``run.sent(None, budget)``)."""
    return [reader_text(item.message) for item in run.sent(None, budget).items]


def qa_retention_scores(
    run: Any,
    qa_items: Sequence[QAItem],
    run_id: str,
    *,
    budget: int | None = None,
    k: int = TOP_K,
    chance_conversation: Conversation | None = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> list[Score]:
    """The ``qa_retention`` headline and its diagnostics (see the module docstring).

    ``chance_conversation`` is the *other* conversation of the chance control (e.g. the next
    LoCoMo sample); without it the chance control is missing and ``details`` say so.
    """
    budget = budget or run.token_budget
    items, warnings = usable_items(run.conversation, qa_items)
    questions = [i.question for i in items]
    answers = [str(i.answer) for i in items]
    contexts: dict[str, list[str] | None] = {"method": sent_texts(run, budget)}
    contexts["ceiling"] = per_conversation(run.conversation, "qa_history", lambda: raw_texts(run.conversation))
    contexts["floor"] = truncated_history(run.conversation, budget)
    contexts["chance"] = truncated_history(chance_conversation, budget) if chance_conversation is not None else None
    steps: Iterable[str] = progress(list(contexts)) if progress else list(contexts)
    recall: dict[str, np.ndarray | None] = {}
    for name in steps:
        texts = contexts[name]
        recall[name] = None if texts is None else context_recall(texts, questions, answers, k)
    means = {name: (float(v.mean()) if v is not None and v.size else None) for name, v in recall.items()}
    scores: list[Score] = []
    for i, item in enumerate(items):
        per = {name: float(v[i]) for name, v in recall.items() if v is not None}
        details = {"category": item.category, "category_name": CATEGORY_NAMES.get(item.category or 0, "unknown"),
                   "question": item.question, "answer": item.answer, **{n: per[n] for n in CONTROLS if n in per}}
        scores.append(Score(run_id, "qa", item.qa_id, QA_RECALL, per["method"], details))
    for category in sorted({i.category for i in items}, key=lambda c: c or 0):
        idx = [j for j, i in enumerate(items) if i.category == category]
        cat = {name: float(v[idx].mean()) for name, v in recall.items() if v is not None}
        scores.append(Score(run_id, "category", str(category), QA_RECALL, cat["method"],
                            {"n": len(idx), "category_name": CATEGORY_NAMES.get(category or 0, "unknown"), **{n: cat[n] for n in CONTROLS if n in cat}}))
    method, ceiling, floor = recall["method"], recall["ceiling"], recall["floor"]
    ci = bootstrap_normalised(method, floor, ceiling) if method is not None and method.size else None  # type: ignore[arg-type]
    extra: dict[str, Any] = {
        "reader": READER.replace(str(TOP_K), str(k)),
        "proxy": True,
        "k": k,
        "budget": budget,
        "turns": len(run.turns),
        "warnings": dict(warnings),
        "method_tokens": sum(estimate_tokens(t) for t in contexts["method"] or []),
        "floor_messages": len(contexts["floor"] or []),
        "paired": True,
    }
    if means["chance"] is None:
        extra["chance_missing"] = "no chance_conversation given: pass another conversation to compute the chance control"
    elif means["ceiling"] is not None and means["floor"] is not None and means["ceiling"] - means["floor"] > 0:
        extra["chance_normalised"] = (means["chance"] - means["floor"]) / (means["ceiling"] - means["floor"])
    scores.append(headline(run_id, "qa_retention", raw=means["method"], ceiling=means["ceiling"], floor=means["floor"],
                           chance=means["chance"], n=len(items), unit="qa_item", ci=ci, extra=extra))
    for name, value in means.items():
        suffix = "" if name == "method" else f"_{name}"
        scores.append(Score(run_id, "run", "", f"qa_recall{suffix}", value, {"n": len(items), "k": k, "budget": budget}))
    scores.append(Score(run_id, "run", "", "qa_data_warnings", float(sum(warnings.values())), {"warnings": dict(warnings)}))
    return scores


def chance_partner(conversations: Sequence[Conversation], index: int) -> Conversation:
    """The chance-control partner of ``conversations[index]``: the next one (cyclically).

    >>> chance_partner(["a", "b", "c"], 2)
    'a'
    """
    if len(conversations) < 2:
        raise ValueError("a chance control needs at least two conversations")
    return conversations[(index + 1) % len(conversations)]


def qa_headline(scores: Iterable[Score]) -> Mapping[str, Any] | None:
    """The ``qa_retention`` headline's value and details from a score list (``None`` if absent)."""
    for s in scores:
        if s.metric == "qa_retention" and s.scope == "run":
            return {"value": s.value, **s.details}
    return None
