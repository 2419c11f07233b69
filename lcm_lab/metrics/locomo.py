"""LoCoMo QA retention: can the gold answer still be found in what the model sees?

For each QA item (LoCoMo categories 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop;
category 5 adversarial items are unanswerable by design and are skipped, as in the published
LoCoMo evaluations), three contexts are compared
in the same run:

* **method** — the replay's assembled context after the last turn (and, separately, after the
  turn in which the item's last evidence line arrived);
* **ceiling** — the full raw conversation (every message, no budget);
* **floor** — plain truncation at equal cost: the newest raw messages that fit in as many
  tokens as the method's assembled context uses, no summaries. This isolates what summaries buy
  over simply dropping old messages. ``*_floor_budget`` is also reported: truncation to the full
  token budget (a host without compaction). A threshold-triggered compactor typically uses well
  under its budget, so it can score below that floor; that is a finding, not an error.

Measures per context: ``evidence_raw`` (fraction of the item's evidence lines present as raw
messages), ``answer_containment`` (fraction of the normalised answer tokens present anywhere),
``answer_f1`` (best token F1 between the answer and any window of the context of the answer's
length: 1 iff the normalised answer appears contiguously). Per category and overall:
``retention = (method − floor) / (ceiling − floor)`` (undefined when ceiling = floor).
Normalisation follows LoCoMo's QA scorer (lower case, punctuation and articles removed) without
stemming.
"""

from __future__ import annotations

import re
import string
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lcm_lab.engine.types import Assembly, Conversation, StoredMessage
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.base import Score, assembled_message_text, assembly_refs, mean, message_text

CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
MEASURES: tuple[str, ...] = ("evidence_raw", "answer_containment", "answer_f1")
_PERSISTED_ROLES = frozenset({"user", "assistant", "system", "tool", "toolResult"})
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation + "‘’“”"})


class LocomoMappingError(ValueError):
    """QA evidence cannot be tied to stored messages (wrong conversation or changed input)."""


def answer_tokens(text: str) -> list[str]:
    """LoCoMo-style normalised tokens.

    >>> answer_tokens("The 7th of May, 2023!")
    ['7th', 'of', 'may', '2023']
    """
    lowered = text.lower().translate(_PUNCT)
    return _ARTICLES.sub(" ", lowered).split()


def token_f1(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Token-multiset F1 between two token lists (0 when either is empty)."""
    common = Counter(gold) & Counter(predicted)
    overlap = sum(common.values())
    if not gold or not predicted or overlap == 0:
        return 0.0
    precision = overlap / len(predicted)
    recall = overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def best_window_f1(answer: Sequence[str], context: Sequence[str]) -> float:
    """Max F1 between ``answer`` and any window of ``context`` as long as the answer.

    Only windows containing at least one answer token can score above 0, so only those are tried.
    """
    if not answer or not context:
        return 0.0
    width = len(answer)
    wanted = set(answer)
    starts: set[int] = set()
    for i, token in enumerate(context):
        if token in wanted:
            starts.update(range(max(0, i - width + 1), min(i, max(0, len(context) - width)) + 1))
    best = 0.0
    for start in sorted(starts):
        best = max(best, token_f1(answer, context[start : start + width]))
        if best == 1.0:
            break
    return best


def containment(answer: Sequence[str], context: set[str]) -> float:
    """Fraction of answer tokens present in a context's token set."""
    return sum(1 for t in answer if t in context) / len(answer) if answer else 0.0


def dialogue_seqs(conversation: Conversation, messages: Sequence[StoredMessage]) -> dict[str, int]:
    """Map LoCoMo dialogue ids (``InputEntry.entry_id``, e.g. ``D1:3``) to stored message seqs.

    Entries are persisted in order, one message each, so the n-th message entry is seq n; the
    stored content is checked against the entry's text to catch a mismatched conversation.
    """
    by_seq = {m.seq: m for m in messages}
    mapping: dict[str, int] = {}
    seq = 0
    for entry in conversation.entries:
        message = entry.message
        if entry.type != "message" or message is None or message.get("role") not in _PERSISTED_ROLES:
            continue
        seq += 1
        if entry.entry_id is None:
            continue
        stored = by_seq.get(seq)
        if stored is None:
            raise LocomoMappingError(f"dialogue {entry.entry_id} (line {entry.line}) has no stored message seq {seq}")
        texts = [b.get("text", "") for b in message.get("content", []) if isinstance(b, Mapping)] if isinstance(message.get("content"), list) else [str(message.get("content", ""))]
        expected = "\n".join(t for t in texts if t)
        if expected.strip() != stored.content.strip():
            raise LocomoMappingError(
                f"dialogue {entry.entry_id} (line {entry.line}) does not match stored message {seq}: "
                f"{expected[:60]!r} vs {stored.content[:60]!r}"
            )
        mapping[entry.entry_id] = seq
    return mapping


@dataclass(frozen=True)
class ContextView:
    """A context to test answers against: raw seqs shown and the tokens of all its text."""

    seqs: frozenset[int]
    tokens: tuple[str, ...]
    context_tokens: int = 0  # estimated model tokens of the context (assembly estimate or Σ token_count)

    @property
    def token_set(self) -> set[str]:
        return set(self.tokens)

    @staticmethod
    def of_messages(messages: Iterable[StoredMessage]) -> ContextView:
        items = list(messages)
        tokens: list[str] = []
        for m in items:
            tokens.extend(answer_tokens(message_text(m)))
        return ContextView(frozenset(m.seq for m in items), tuple(tokens), sum(m.token_count for m in items))

    @staticmethod
    def of_assembly(assembly: Assembly) -> ContextView:
        seqs, _ = assembly_refs(assembly)
        tokens: list[str] = []
        for item in assembly.items:
            tokens.extend(answer_tokens(assembled_message_text(item.message)))
        return ContextView(seqs, tuple(tokens), assembly.estimated_tokens)


def truncation_floor(messages: Sequence[StoredMessage], budget: int) -> ContextView:
    """The newest raw messages whose stored token counts fit ``budget`` (plain truncation)."""
    kept: list[StoredMessage] = []
    used = 0
    for message in sorted(messages, key=lambda m: m.seq, reverse=True):
        if message.role == "system":
            continue
        if used + message.token_count > budget:
            break
        kept.append(message)
        used += message.token_count
    return ContextView.of_messages(reversed(kept))


def _measure(item_answer: list[str], evidence: Sequence[int], view: ContextView, token_set: set[str]) -> dict[str, float]:
    return {
        "evidence_raw": sum(1 for s in evidence if s in view.seqs) / len(evidence) if evidence else float("nan"),
        "answer_containment": containment(item_answer, token_set),
        "answer_f1": best_window_f1(item_answer, view.tokens),
    }


def retention(method: float | None, floor: float | None, ceiling: float | None) -> float | None:
    """``(method − floor) / (ceiling − floor)``, ``None`` when undefined."""
    if method is None or floor is None or ceiling is None or ceiling == floor:
        return None
    return (method - floor) / (ceiling - floor)


def locomo_qa_scores(
    replay: Any,
    qa_items: Sequence[QAItem],
    run_id: str,
    *,
    budget: int | None = None,
    at_evidence: bool = True,
    progress: Callable[[Iterable[QAItem]], Iterable[QAItem]] | None = None,
) -> list[Score]:
    """QA retention scores of a LoCoMo replay (see module docstring).

    ``budget`` is the assembly budget for method and floor (default: the replay's budget).
    ``at_evidence`` also scores the context right after the turn of each item's last evidence.
    """
    budget = budget or replay.token_budget
    messages: Sequence[StoredMessage] = replay.messages
    seq_of = dialogue_seqs(replay.conversation, messages)
    turn_of = {seq: turn.turn for turn in replay.turns for seq in turn.ingested_seqs}
    last_turn = replay.turns[-1].turn
    views: dict[int, ContextView] = {}

    def method_view(turn: int) -> ContextView:
        if turn not in views:
            views[turn] = ContextView.of_assembly(replay.assemble(turn, budget))
        return views[turn]

    final = method_view(last_turn)
    contexts = {
        "method": final,
        "ceiling": ContextView.of_messages(messages),
        "floor": truncation_floor(messages, final.context_tokens),
        "floor_budget": truncation_floor(messages, budget),
    }
    sets = {name: view.token_set for name, view in contexts.items()}
    scores: list[Score] = []
    per_category: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    skipped: Counter[str] = Counter()
    items: Iterable[QAItem] = progress(qa_items) if progress else qa_items
    for item in items:
        if item.category == 5:
            skipped["adversarial (category 5: unanswerable by design)"] += 1
            continue
        if not item.answer:
            skipped["no gold answer"] += 1
            continue
        missing = [e for e in item.evidence if e not in seq_of]
        if missing:
            raise LocomoMappingError(f"QA {item.qa_id}: evidence {missing} not among the conversation's dialogue ids")
        evidence = sorted(seq_of[e] for e in item.evidence)
        gold = answer_tokens(item.answer)
        if not gold:
            skipped["answer empty after normalisation"] += 1
            continue
        results = {name: _measure(gold, evidence, view, sets[name]) for name, view in contexts.items()}
        arrival_turn = turn_of.get(evidence[-1]) if evidence else None
        if at_evidence and arrival_turn is not None:
            view = method_view(arrival_turn)
            results["at_evidence"] = _measure(gold, evidence, view, view.token_set)
        category = str(item.category) if item.category is not None else "none"
        details = {
            "category": item.category,
            "category_name": CATEGORY_NAMES.get(item.category or 0, "unknown"),
            "question": item.question,
            "answer": item.answer,
            "evidence_seqs": evidence,
            "evidence_turn": arrival_turn,
            "age_turns": (last_turn - arrival_turn) if arrival_turn is not None else None,
        }
        for condition, values in results.items():
            suffix = "" if condition == "method" else f"_{condition}"
            for measure, value in values.items():
                if value != value:  # NaN: item without evidence
                    continue
                scores.append(Score(run_id, "qa", item.qa_id, f"qa_{measure}{suffix}", value, details))
                for key in (category, "all"):
                    per_category[key][f"{measure}{suffix}"].append(value)
    for key, measures in sorted(per_category.items()):
        for measure in MEASURES:
            values = {
                cond: mean(measures.get(f"{measure}{'' if cond == 'method' else '_' + cond}", []))
                for cond in ("method", "ceiling", "floor", "floor_budget", "at_evidence")
            }
            n = len(measures.get(measure, []))
            details = {"n": n, **{k: v for k, v in values.items()}, "budget": budget}
            if key != "all":
                details["category_name"] = CATEGORY_NAMES.get(int(key), "unknown") if key.isdigit() else key
            scope, scope_id = ("run", "") if key == "all" else ("category", key)
            for cond, value in values.items():
                suffix = "" if cond == "method" else f"_{cond}"
                scores.append(Score(run_id, scope, scope_id, f"qa_{measure}{suffix}", value, details))
            scores.append(Score(run_id, scope, scope_id, f"qa_retention_{measure}", retention(values["method"], values["floor"], values["ceiling"]), details))
            scores.append(
                Score(
                    run_id,
                    scope,
                    scope_id,
                    f"qa_retention_vs_budget_floor_{measure}",
                    retention(values["method"], values["floor_budget"], values["ceiling"]),
                    details,
                )
            )
    scores.append(
        Score(
            run_id,
            "run",
            "",
            "qa_items_scored",
            float(len(per_category.get("all", {}).get("answer_f1", []))),
            {
                "skipped": dict(skipped),
                "budget": budget,
                "method_context_tokens": final.context_tokens,
                "method_raw_messages": len(final.seqs),
                "floor_messages": len(contexts["floor"].seqs),
                "floor_budget_messages": len(contexts["floor_budget"].seqs),
            },
        )
    )
    return scores
