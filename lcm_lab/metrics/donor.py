"""Chance-control donors: which *other* conversation a score's chance control reads.

``qa_retention`` and ``fact_retention`` each have a chance control: the same reader over text of
another conversation (what it finds in unrelated text of the same size). The donor is chosen
deterministically (:func:`pick_donor`): a conversation of the same kind (with LoCoMo QA or
without), of another session, whose raw text is closest in size to the scored one. The demo
picks among the bundled conversations, a sweep among its own conversations; scores name the
donor in ``details["chance_donor"]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lcm_lab.engine.types import Conversation
from lcm_lab.io.model import LoadedConversation
from lcm_lab.metrics.base import per_conversation
from lcm_lab.metrics.locomo import raw_texts


@dataclass(frozen=True)
class Donor:
    """Another conversation's text for a chance control, and which conversation it is."""

    label: str
    text: str


def donor_text(conversation: Conversation) -> str:
    """The raw text a chance control reads of ``conversation`` (computed once per conversation object)."""
    return per_conversation(conversation, "donor_text", lambda: "\n".join(raw_texts(conversation)))


def pick_donor(chosen: LoadedConversation, candidates: Sequence[tuple[str, LoadedConversation]]) -> Donor | None:
    """The candidate of the same kind as ``chosen`` (with LoCoMo QA or without), of another
    session, whose raw text is closest in size (log ratio; ties by label). ``None`` without one.
    """
    size = max(1, len(donor_text(chosen.conversation)))
    kind = bool(chosen.qa_items)
    best: tuple[float, str, str] | None = None
    for label, other in candidates:
        if other.conversation.session_id == chosen.conversation.session_id or bool(other.qa_items) != kind:
            continue
        text = donor_text(other.conversation)
        if not text.strip():
            continue
        key = (abs(math.log(max(1, len(text)) / size)), label, text)
        best = key if best is None or key[:2] < best[:2] else best
    return None if best is None else Donor(best[1], best[2])


def kind_name(loaded: LoadedConversation) -> str:
    """What :func:`pick_donor` calls a conversation's kind, for messages."""
    return "LoCoMo conversation with QA items" if loaded.qa_items else "conversation without QA items"
