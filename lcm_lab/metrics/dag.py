"""A read-only view of a summary DAG for metrics: from a replay or from a loaded conversation.

Both a :class:`~lcm_lab.engine.replay.driver.Replay` and a loaded lcm.db
:class:`~lcm_lab.engine.types.Conversation` reduce to the same three things: stored messages,
summaries with their source edges, and the current context items. ``Dag`` adds the derived
relations metrics need (which raw messages a summary covers, transitively; which summaries are
roots), computed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from lcm_lab.engine.types import ContextItem, Conversation, StoredMessage, Summary
from lcm_lab.errors import DagCycleError


@dataclass(frozen=True)
class Dag:
    """Messages (by seq), summaries (creation order) and context items of one conversation."""

    messages: tuple[StoredMessage, ...]
    summaries: tuple[Summary, ...]
    context: tuple[ContextItem, ...] = ()
    label: str = ""

    @staticmethod
    def from_conversation(conversation: Conversation) -> Dag:
        """The recorded DAG of a loaded lcm.db conversation."""
        return Dag(
            messages=tuple(sorted(conversation.stored_messages, key=lambda m: m.seq)),
            summaries=conversation.summaries,
            context=conversation.context_items,
            label=conversation.session_id,
        )

    @staticmethod
    def from_replay(replay: object) -> Dag:
        """The final DAG of a replay (anything with ``messages``, ``summaries``, ``context_at``)."""
        messages: Sequence[StoredMessage] = replay.messages  # type: ignore[attr-defined]
        summaries: Sequence[Summary] = replay.summaries  # type: ignore[attr-defined]
        context = replay.context_at(-1)  # type: ignore[attr-defined]
        label = getattr(replay, "run_id", None) or ""
        return Dag(tuple(messages), tuple(summaries), tuple(context), label=str(label))

    @cached_property
    def message_by_seq(self) -> dict[int, StoredMessage]:
        return {m.seq: m for m in self.messages}

    @cached_property
    def summary_by_id(self) -> dict[str, Summary]:
        return {s.summary_id: s for s in self.summaries}

    def covered_seqs(self, summary_id: str) -> tuple[int, ...]:
        """Raw message seqs under a summary (leaf: its sources; condensed: its inputs' seqs).

        Missing inputs are skipped (the doctor reports them); a cycle raises :class:`~lcm_lab.errors.DagCycleError` (a ``ValueError``).
        """
        return self._covered(summary_id, frozenset())

    @cached_property
    def _covered_memo(self) -> dict[str, tuple[int, ...]]:
        return {}

    def _covered(self, summary_id: str, visiting: frozenset[str]) -> tuple[int, ...]:
        memo = self._covered_memo
        if summary_id in memo:
            return memo[summary_id]
        if summary_id in visiting:
            raise DagCycleError(summary_id)
        summary = self.summary_by_id.get(summary_id)
        if summary is None:
            return ()
        seqs: list[int] = list(summary.source_message_seqs)
        for source in summary.source_summary_ids:
            seqs.extend(self._covered(source, visiting | {summary_id}))
        result = tuple(sorted(set(seqs)))
        memo[summary_id] = result
        return result

    def source_tokens(self, summary: Summary) -> int:
        """Tokens of a summary's direct inputs: source messages (leaf) or input summaries."""
        if summary.kind == "leaf" or not summary.source_summary_ids:
            if summary.source_message_token_count > 0:
                return summary.source_message_token_count
            return sum(self.message_by_seq[s].token_count for s in summary.source_message_seqs if s in self.message_by_seq)
        return sum(self.summary_by_id[s].token_count for s in summary.source_summary_ids if s in self.summary_by_id)

    def covered_tokens(self, summary: Summary) -> int:
        """Tokens of all raw messages a summary covers, transitively."""
        return sum(self.message_by_seq[s].token_count for s in self.covered_seqs(summary.summary_id) if s in self.message_by_seq)

    @cached_property
    def roots(self) -> tuple[str, ...]:
        """Summaries that no other summary uses as input."""
        used = {src for s in self.summaries for src in s.source_summary_ids}
        return tuple(s.summary_id for s in self.summaries if s.summary_id not in used)
