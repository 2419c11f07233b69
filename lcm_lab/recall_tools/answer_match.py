"""Where a LoCoMo answer stands verbatim: token windows and dialogue ids (recoverability only).

``qa_retention`` credits an answer only when a question retrieves it (:mod:`lcm_lab.metrics.qa_reader`);
recoverability asks a simpler question of the raw history — is the answer there word for word? —
so that answers LoCoMo paraphrases are never counted as "lost".

>>> best_window_f1(["paris"], ["she", "moved", "to", "paris"])
1.0
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from lcm_lab.engine.types import Conversation, StoredMessage

_PERSISTED_ROLES = frozenset({"user", "assistant", "toolResult", "tool"})


def token_f1(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Token-multiset F1 between two token lists (0 when either is empty)."""
    overlap = sum((Counter(gold) & Counter(predicted)).values())
    if not gold or not predicted or overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def best_window_f1(answer: Sequence[str], context: Sequence[str]) -> float:
    """Max F1 between ``answer`` and any window of ``context`` as long as the answer (only windows
    holding an answer token can score, so only those are tried)."""
    if not answer or not context:
        return 0.0
    width, wanted = len(answer), set(answer)
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


def dialogue_seqs(conversation: Conversation, messages: Sequence[StoredMessage]) -> dict[str, int]:
    """LoCoMo dialogue ids (``InputEntry.entry_id``, e.g. ``D1:3``) → stored message seqs.

    Entries are persisted in order, one message each, so the n-th message entry is seq n; an entry
    whose stored text differs (a mismatched conversation) is left out rather than guessed.
    """
    by_seq = {m.seq: m for m in messages}
    mapping: dict[str, int] = {}
    seq = 0
    for entry in conversation.entries:
        message = entry.message
        if entry.type != "message" or message is None or message.get("role") not in _PERSISTED_ROLES:
            continue
        seq += 1
        stored = by_seq.get(seq)
        if entry.entry_id is None or stored is None:
            continue
        content = message.get("content")
        texts = [b.get("text", "") for b in content if isinstance(b, Mapping)] if isinstance(content, list) else [str(content or "")]
        if "\n".join(t for t in texts if t).strip() == stored.content.strip():
            mapping[entry.entry_id] = seq
    return mapping
