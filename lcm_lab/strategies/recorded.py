"""``recorded``: the compaction the recorded host (pi/OpenClaw) actually performed, as a strategy.

The host's context at every call is rebuilt by :func:`lcm_lab.host.recorded.recorded_calls`
from the transcript and its own ``compaction`` / ``branch_summary`` records: after a compaction
the model saw the summary, then the kept messages from ``firstKeptEntryId`` on. Per turn this
strategy keeps what the host sent at the first call of the next turn (the summaries as memory,
the oldest raw message still shown as ``raw_from``), so it is scored like any other strategy.
The host had its own context window: a context over the bench budget is flagged
(``path == "recorded:over-budget"``), never cut.

The events come from the loaded transcript (``LoadedConversation.events``); pass them with
:func:`recorded_params`. A conversation that holds compaction entries but no events is an
error, not a silent full-context run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.ingest.message import is_persistable
from lcm_lab.engine.types import Conversation, SentContext
from lcm_lab.host.recorded import recorded_calls
from lcm_lab.io.model import LoadedConversation, RecordedEvent
from lcm_lab.strategies.base import (
    MemoryItem,
    StrategyBase,
    StrategyError,
    StrategyRun,
    StrategyTurn,
    ingest,
    memory_item,
    seen_messages,
    sent_context,
    state_turn,
    text_item,
)

_EVENT_FIELDS = ("kind", "line", "entry_id", "timestamp", "summary", "first_kept_entry_id", "tokens_before")


def recorded_params(loaded: LoadedConversation) -> dict[str, Any]:
    """``get_strategy("recorded", **recorded_params(loaded))``: the host's events as plain data."""
    return {"events": [{k: getattr(e, k) for k in _EVENT_FIELDS} for e in loaded.events]}


def _events(params: Mapping[str, Any]) -> tuple[RecordedEvent, ...]:
    out = []
    for raw in params.get("events", ()):
        if not isinstance(raw, Mapping) or "kind" not in raw:
            raise StrategyError(
                "recorded: events are mappings with kind, line, summary, first_kept_entry_id, ..."
            )
        out.append(RecordedEvent(**{k: raw.get(k) for k in _EVENT_FIELDS}))
    return tuple(out)


def _summary_text(message: Mapping[str, Any]) -> str:
    if message.get("role") == "compactionSummary":
        return (
            "The conversation history before this point was compacted into the following summary:\n\n"
            + str(message.get("summary", ""))
        )
    return "A branch of this conversation was summarised:\n\n" + str(message.get("summary", ""))


@dataclass(frozen=True)
class RecordedStrategy(StrategyBase):
    """The host's own compaction, replayed turn by turn from its records."""

    name: str = "recorded"
    params: Mapping[str, Any] = field(default_factory=dict)

    def replay_turns(self, conversation: Conversation, summarizer: Any, token_budget: int) -> StrategyRun:
        events = _events(self.params)
        if not events and any(e.type in ("compaction", "branch_summary") for e in conversation.entries):
            raise StrategyError(
                "recorded: this transcript has compaction entries; pass its events (recorded_params(loaded))"
            )
        try:
            calls = recorded_calls(conversation, events)
        except ValueError as exc:
            raise StrategyError(f"recorded: {exc}") from None
        ingested = ingest(conversation)
        seq_of = _seq_by_message(conversation, ingested.turns)
        memories: list[tuple[MemoryItem, ...]] = []
        states: list[tuple[int, int]] = []  # per call: (memory version, first raw seq shown)
        for call in calls:
            summaries = tuple(text_item(f"{m['role']}:{call.index}:{n}", _summary_text(m), kind="summary")
                              for n, m in enumerate(call.messages) if m.get("role") in ("compactionSummary", "branchSummary"))  # fmt: skip
            if summaries and (not memories or [s.text for s in memories[-1]] != [s.text for s in summaries]):
                memories.append(summaries)
            raw = [seq_of[id(m)] for m in call.messages if id(m) in seq_of]
            states.append(
                (len(memories) - 1 if summaries else -1, min(raw) if raw else 1 if not summaries else 1 << 62)
            )
        turns: list[StrategyTurn] = []
        for number, (index, lines, seqs) in enumerate(ingested.turns):
            nxt = ingested.turns[number + 1][1] if number + 1 < len(ingested.turns) else None
            state = _state_at(calls, states, nxt)
            events_here = tuple(
                f"host {e.kind} (line {e.line})"
                for e in events
                if lines and e.line is not None and lines[0] <= e.line <= lines[1]
            )
            turns.append(
                StrategyTurn(index, lines, seqs, memory=state[0], raw_from=state[1], events=events_here)
            )
        run = StrategyRun(
            self.name,
            dict(self.params),
            conversation,
            token_budget,
            "recorded-host",
            tuple(turns),
            ingested.messages,
            tuple(memories),
        )
        return run

    def sent(self, run: StrategyRun, turn: int | None, budget: int) -> SentContext:
        last = state_turn(run, turn)
        if last < 0:
            return sent_context((), budget, turn, "empty")
        record = run.turns[last]
        memory = run.memories[record.memory] if record.memory >= 0 else ()
        items = [memory_item(m) for m in memory]
        items += run.message_items([m for m in seen_messages(run, last) if m.seq >= record.raw_from])
        total = sum(i.tokens for i in items)
        return sent_context(items, budget, turn, "recorded:over-budget" if total > budget else "recorded")


def _state_at(
    calls: Sequence[Any], states: Sequence[tuple[int, int]], next_lines: tuple[int, int] | None
) -> tuple[int, int]:
    """The host state at the first call of the next turn (``next_lines``), else at the latest call
    before it; ``None`` (after the last turn): the state at the last call."""
    chosen = (-1, 1)
    for call, state in zip(calls, states, strict=True):
        if next_lines is not None and call.line > next_lines[1]:
            break
        chosen = state
        if next_lines is not None and call.line >= next_lines[0]:
            break
    return chosen


def _seq_by_message(
    conversation: Conversation, turns: Sequence[tuple[int, tuple[int, int] | None, tuple[int, ...]]]
) -> dict[int, int]:
    """``id(message dict) -> seq`` for messages the ingest stored (turns whose counts line up)."""
    out: dict[int, int] = {}
    entries = [e for e in conversation.entries if e.message is not None and is_persistable(e.message)]
    position = 0
    for _, lines, seqs in turns:
        group = []
        while position < len(entries) and (lines is None or entries[position].line <= lines[1]):
            group.append(entries[position])
            position += 1
        if len(group) == len(seqs):
            out.update({id(e.message): s for e, s in zip(group, seqs, strict=True)})
    return out
