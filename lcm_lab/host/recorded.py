"""Rebuild what a recorded host sent to its model at every API call.

A transcript records the responses (assistant messages, each one API call, with the provider's
``usage``) and the host's own compactions, but not the requests. The request of a call is the
host's context at that moment, which this module rebuilds with the host's rules
(pi-coding-agent's ``buildSessionContext`` in ``session-manager.ts``; Claude Code's transcript chain):

* **pi / OpenClaw**: messages accumulate along the leaf path. A ``compaction`` entry replaces the
  context by a ``compactionSummary`` message followed by the kept messages (from
  ``firstKeptEntryId`` up to the compaction); later messages are appended after them. A
  ``branch_summary`` entry becomes a ``branchSummary`` message where it stands.
* **Claude Code**: a ``compact_boundary`` clears the context; the summary arrives as the next
  user message (``isCompactSummary``). Sub-agents (sidechains) are separate conversations with
  their own context; :func:`recorded_session_calls` merges them into one time-ordered call list
  (they share the provider's cache).

Assistant messages that failed or were aborted (``stopReason`` ``error``/``aborted``) are calls
(they may carry usage) but do not stay in the context afterwards, as pi drops them when it
builds the next request. Gateway-injected assistant messages (``provider == "openclaw"``) are
no calls at all. ``thinking_level_change`` and ``model_change`` entries advance
``settings_epoch`` (changing thinking parameters invalidates the provider's message cache). Only message dicts are returned: the system prompt and tool schemas are not in
transcripts (the cost model calibrates their size, :mod:`lcm_lab.cost.calibrate`).

>>> from lcm_lab.engine.types import Conversation, InputEntry
>>> usage = {"input": 5, "output": 2, "cacheRead": 0, "cacheWrite": 0}
>>> conv = Conversation("s", entries=(
...     InputEntry(2, "message", {"role": "user", "content": "hi", "timestamp": 1000}, "a"),
...     InputEntry(3, "message", {"role": "assistant", "content": [{"type": "text", "text": "yo"}],
...                               "usage": usage, "timestamp": 1500}, "b"),
...     InputEntry(4, "message", {"role": "user", "content": "more", "timestamp": 9000}, "c"),
...     InputEntry(5, "message", {"role": "assistant", "content": [], "usage": usage, "timestamp": 9100}, "d")))
>>> calls = recorded_calls(conv)
>>> [(c.turn, len(c.messages), c.timestamp_ms) for c in calls]
[(0, 1, 1500), (1, 3, 9100)]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.io.model import LoadedConversation, RecordedEvent

CONTEXT_ROLES = frozenset({"user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"})
FAILED_STOP_REASONS = frozenset({"error", "aborted"})
SETTINGS_ENTRIES = frozenset({"thinking_level_change", "model_change"})


@dataclass(frozen=True)
class HostCall:
    """One API call of the recorded host: what it sent and what the provider reported.

    ``messages`` is the request's message list (system prompt and tools excluded: transcripts do
    not record them); ``response`` the assistant message the call produced; ``usage`` its
    recorded usage (pi names: ``input``, ``output``, ``cacheRead``, ``cacheWrite``, ``cost``)
    or ``None``. ``host_compaction`` is true when the host compacted since the previous call of
    the same chain; ``chain`` names the conversation and ``agent`` says whether it is the main agent
    or a sub-agent (which has its own system prompt).
    """

    index: int
    line: int
    entry_id: str | None
    turn: int
    timestamp_ms: int | None
    messages: tuple[Mapping[str, Any], ...]
    response: Mapping[str, Any]
    usage: Mapping[str, Any] | None
    model: str | None
    provider: str | None
    chain: str
    host_compaction: bool = False
    agent: str = "main"  # "main", or "sidechain" for a sub-agent's own context and system prompt
    settings_epoch: int = 0  # thinking-level / model changes so far (a change invalidates the message cache)
    turn_start: bool = False  # the first call after a user message
    usage_problem: str | None = None  # recorded usage that is no token count or no cost (``usage`` is then None)

    @property
    def recorded_prompt_tokens(self) -> int | None:
        """Prompt tokens the provider reported (``input + cacheRead + cacheWrite``), or ``None``."""
        if not self.usage:
            return None
        return sum(_count(self.usage, key) for key in ("input", "cacheRead", "cacheWrite"))

    @property
    def has_usage(self) -> bool:
        """True when the provider reported a prompt (failed requests report all zeros)."""
        return bool(self.recorded_prompt_tokens)


USAGE_COUNTS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def usage_problem(usage: object) -> str | None:
    """What makes a transcript's recorded usage unusable, or ``None``: a count that is not a whole
    number of tokens from 0 to ``MAX_USAGE_TOKENS`` (:func:`~lcm_lab.summarizers.responses.usage_tokens`),
    or a ``cost.total`` that is not a finite number ≥ 0. Such a call is left out of what ``cost``
    compares, and counted (:func:`~lcm_lab.cost.validate.billable`).

    >>> usage_problem({"input": 5, "cacheRead": -1000}), usage_problem({"input": "lots"}), usage_problem({"input": 5})
    ('cacheRead -1000', "input 'lots'", None)
    """
    from lcm_lab.summarizers.responses import usage_tokens

    if not isinstance(usage, Mapping):
        return None
    for key in USAGE_COUNTS:
        if usage.get(key) is not None and usage_tokens(usage[key]) is None:
            return f"{key} {usage[key]!r}"[:80]
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, Mapping) else None
    if total is not None and (isinstance(total, bool) or not isinstance(total, int | float) or not math.isfinite(total) or total < 0):
        return f"cost.total {total!r}"[:80]
    return None


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def iso_ms(value: str | None) -> int | None:
    """Epoch milliseconds of an ISO-8601 timestamp (``None`` when absent or unparsable).

    >>> iso_ms("1970-01-01T00:00:01.500Z")
    1500
    """
    if not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def request_ms(message: Mapping[str, Any], previous_ms: int | None, entry: InputEntry) -> int | None:
    """When the call that produced assistant ``message`` was sent (epoch ms)."""
    # pi stamps an assistant message when the request starts; the envelope time is its end.
    stamp = message.get("timestamp")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return int(stamp)
    return previous_ms if previous_ms is not None else iso_ms(entry.timestamp)


def in_context(message: Mapping[str, Any]) -> bool:
    """True when the host sends ``message`` to the model on later calls."""
    role = message.get("role")
    if role not in CONTEXT_ROLES:
        return False
    if role == "bashExecution" and message.get("excludeFromContext"):
        return False
    return not (role == "assistant" and message.get("stopReason") in FAILED_STOP_REASONS)


def is_call(message: Mapping[str, Any]) -> bool:
    """True for an assistant message a model call produced (not a gateway-injected one)."""
    return message.get("role") == "assistant" and message.get("provider") != "openclaw"


class _Context:
    """The host's running context: path history (for kept ranges) and the current message list."""

    def __init__(self) -> None:
        self.history: list[tuple[str | None, Mapping[str, Any]]] = []
        self.messages: list[Mapping[str, Any]] = []

    def append(self, entry_id: str | None, message: Mapping[str, Any]) -> None:
        self.history.append((entry_id, message))
        self.messages.append(message)

    def compact(self, event: RecordedEvent, when_ms: int | None) -> None:
        summary = {"role": "compactionSummary", "summary": event.summary or "", "tokensBefore": event.tokens_before, "timestamp": when_ms}
        kept: list[Mapping[str, Any]] = []
        if event.first_kept_entry_id is not None:
            ids = [entry_id for entry_id, _ in self.history]
            if event.first_kept_entry_id not in ids:
                raise ValueError(
                    f"compaction on line {event.line} keeps entries from {event.first_kept_entry_id!r}, "
                    "which is not on the transcript's path before it; the file is inconsistent"
                )
            start = ids.index(event.first_kept_entry_id)
            kept = [message for _, message in self.history[start:] if in_context(message)]
        self.messages = [summary, *kept]

    def clear(self) -> None:
        self.history.clear()
        self.messages.clear()


def recorded_calls(conversation: Conversation, events: Iterable[RecordedEvent] = ()) -> tuple[HostCall, ...]:
    """The calls the host made in ``conversation``, each with the messages it sent.

    ``events`` are the host's compaction records (``LoadedConversation.events``); without them
    the context only grows. Raises ``ValueError`` when a compaction keeps an entry that is not on
    the path before it.
    """
    by_line = {event.line: event for event in events if event.line is not None}
    context = _Context()
    calls: list[HostCall] = []
    users = 0
    last_ms: int | None = None
    compacted = False
    agent = "sidechain" if conversation.meta.get("sidechain") else "main"
    epoch = 0
    turn_start = False
    for entry in conversation.entries:
        if entry.type in SETTINGS_ENTRIES:
            epoch += 1
        entry_ms = iso_ms(entry.timestamp)
        event = by_line.get(entry.line)
        if event is not None:
            if event.kind == "compaction":
                context.compact(event, entry_ms)
                compacted = True
            elif event.kind == "compact_boundary":
                context.clear()
                compacted = True
            elif event.kind == "branch_summary":
                message = {"role": "branchSummary", "summary": event.summary or "", "timestamp": entry_ms}
                context.append(entry.entry_id, message)
        message = entry.message
        if message is None:
            last_ms = entry_ms if entry_ms is not None else last_ms
            continue
        if message.get("role") == "user":
            users += 1
            turn_start = True
        if is_call(message):
            usage = message.get("usage")
            problem = usage_problem(usage)
            calls.append(
                HostCall(
                    index=len(calls),
                    line=entry.line,
                    entry_id=entry.entry_id,
                    turn=max(users - 1, 0),
                    timestamp_ms=request_ms(message, last_ms, entry),
                    messages=tuple(context.messages),
                    response=message,
                    usage=usage if isinstance(usage, Mapping) and problem is None else None,
                    usage_problem=problem,
                    model=message.get("model") if isinstance(message.get("model"), str) else None,
                    provider=message.get("provider") if isinstance(message.get("provider"), str) else None,
                    chain=conversation.session_id,
                    host_compaction=compacted,
                    agent=agent,
                    settings_epoch=epoch,
                    turn_start=turn_start,
                )
            )
            compacted = False
            turn_start = False
        if in_context(message):
            context.append(entry.entry_id, message)
        stamp = message.get("timestamp")
        last_ms = int(stamp) if isinstance(stamp, int | float) and not isinstance(stamp, bool) else (entry_ms or last_ms)
    return tuple(calls)


def recorded_session_calls(loaded: Sequence[LoadedConversation]) -> tuple[HostCall, ...]:
    """Calls of several conversations of one session (main chain and sub-agents), by request time.

    Sub-agents run in parallel with the main chain and share the provider's prompt cache, so a
    cache model must see their calls interleaved in time. Calls keep their per-chain ``index``.
    """
    merged = [call for item in loaded for call in recorded_calls(item.conversation, item.events)]
    merged.sort(key=lambda c: (c.timestamp_ms if c.timestamp_ms is not None else 0, c.chain, c.index))
    return tuple(merged)
