"""Normalise what the plots accept (a replay, a loaded conversation, bare summaries) into one shape."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from lcm_lab.engine.types import Conversation, StoredMessage, Summary
from lcm_lab.errors import OptionError

if TYPE_CHECKING:
    from lcm_lab.engine.replay.driver import Replay


@dataclass(frozen=True)
class DagSource:
    """Summaries (creation order) and the stored messages they cover, keyed by seq."""

    summaries: tuple[Summary, ...]
    messages: Mapping[int, StoredMessage]
    label: str


# What DAG plots and widgets accept: a replay, a loaded conversation, summaries, or a DagSource.
DagInput: TypeAlias = "Replay | Conversation | Iterable[Summary] | DagSource"
_WHAT_TO_PASS = ("pass what lab.replay returns, a Conversation (lab.read_transcript(path).conversations[0].conversation "
                 "or store.conversation(conversation_id)) or a list of its Summary values")


def dag_source(obj: DagInput) -> DagSource:
    """Accept a ``Replay``, a ``Conversation`` (e.g. a loaded lcm.db) or an iterable of ``Summary``;
    anything else is an :class:`~lcm_lab.errors.OptionError` saying what to pass (every DAG view,
    plot and widget reads its input here)."""
    if isinstance(obj, DagSource):
        return obj
    if isinstance(obj, Conversation):
        messages = obj.stored_messages
        label = obj.title or obj.session_id
        summaries = obj.summaries
    elif hasattr(obj, "summaries") and hasattr(obj, "messages") and hasattr(obj, "turns"):
        summaries = obj.summaries
        messages = obj.messages
        conversation = getattr(obj, "conversation", None)
        label = getattr(obj, "run_id", None) or getattr(conversation, "session_id", None) or "replay"
    elif isinstance(obj, Iterable) and not isinstance(obj, str | bytes | Mapping):
        summaries = tuple(obj)
        messages = ()
        label = "summaries"
    else:
        raise OptionError(f"expected a Replay, a Conversation or Summary values, got {type(obj).__name__}; {_WHAT_TO_PASS}")
    summaries = tuple(summaries)
    for s in summaries:
        if not isinstance(s, Summary):
            raise OptionError(f"expected Summary values, got {type(s).__name__}; {_WHAT_TO_PASS}")
    return DagSource(summaries=summaries, messages={m.seq: m for m in messages}, label=str(label))
