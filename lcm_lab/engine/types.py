"""Core values of the engine: stored rows, summaries, context items.

These mirror the rows lossless-claw writes to ``lcm.db`` (spec §1), so that a replay and a loaded
database speak the same language. They are small frozen dataclasses; the mutable working state of
a replay lives in :mod:`lcm_lab.engine.state`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

Role = Literal["system", "user", "assistant", "tool"]
SummaryKind = Literal["leaf", "condensed"]
ItemKind = Literal["message", "summary"]
Level = Literal["normal", "aggressive", "capped", "fallback", "pending"]  # pending: 1.0's one-call pending pipeline


METADATA_MEMO = "_metadata_memo"  # where :mod:`lcm_lab.engine.assembly.blocks` keeps a part's parsed metadata


@dataclass(frozen=True)
class StoredPart:
    """One ``message_parts`` row (one content block of a message)."""

    part_type: str
    ordinal: int
    text_content: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_input: str | None = None  # JSON text
    tool_output: str | None = None  # JSON text
    metadata: str | None = None  # JSON text, holds originalRole, rawType, raw block, ...
    part_id: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Pickle the fields only, not the parsed-metadata memo (lcm_lab.engine.assembly.blocks).
        return {k: v for k, v in self.__dict__.items() if k != METADATA_MEMO}

    def forget_parsed_metadata(self) -> None:
        """Drop the parsed-metadata memo (a message that left the context is rarely read again,
        and its parsed metadata was the largest thing a replay held per message)."""
        self.__dict__.pop(METADATA_MEMO, None)

    def metadata_dict(self) -> dict[str, Any]:
        if not self.metadata:
            return {}
        try:
            value = json.loads(self.metadata)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class StoredMessage:
    """One ``messages`` row as lossless-claw stores it, with its parts."""

    seq: int
    role: Role
    content: str
    token_count: int
    created_at: str | None = None  # 'YYYY-MM-DD HH:MM:SS' (UTC, second precision)
    parts: tuple[StoredPart, ...] = ()
    identity_hash: str | None = None
    sender_metadata: str | None = None  # JSON text of openclaw_sender_metadata
    transcript_entry_id: str | None = None
    stable_event_key: str | None = None
    large_content: str | None = None
    message_id: int | None = None


@dataclass(frozen=True)
class LargeFile:
    """A payload externalised at ingest (``large_files`` row, without the bytes)."""

    file_id: str
    file_name: str | None
    mime_type: str | None
    byte_size: int | None
    line_count: int | None
    exploration_summary: str | None


@dataclass(frozen=True)
class Summary:
    """One node of the summary DAG (``summaries`` row plus its source edges)."""

    summary_id: str
    kind: SummaryKind
    depth: int
    content: str
    token_count: int
    earliest_at: str | None = None  # ISO-8601 with ms and Z
    latest_at: str | None = None
    descendant_count: int = 0
    descendant_token_count: int = 0
    source_message_token_count: int = 0
    file_ids: tuple[str, ...] = ()
    model: str = "unknown"
    created_at: str | None = None
    source_message_seqs: tuple[int, ...] = ()  # leaf: summary_messages in ordinal order
    source_summary_ids: tuple[str, ...] = ()  # condensed: summary_parents.parent_summary_id
    level: Level | None = None  # escalation level when known (replays); not stored by the plugin
    created_turn: int | None = None
    created_by: str | None = None  # deferred mode: drain | emergency_drain | host_maintain
    summarizer_calls: int = 0  # calls that produced it (replays): 1 normal, 2 after escalation


@dataclass(frozen=True)
class ContextItem:
    """A reference in the model-visible context: a raw message (by seq) or a summary (by id)."""

    kind: ItemKind
    ref: int | str  # message seq or summary_id

    @staticmethod
    def message(seq: int) -> ContextItem:
        return ContextItem("message", seq)

    @staticmethod
    def summary(summary_id: str) -> ContextItem:
        return ContextItem("summary", summary_id)


@dataclass(frozen=True)
class InputEntry:
    """One entry of a transcript in leaf-path order, as the host would see it.

    ``message`` is the runtime AgentMessage dict (``role``, ``content``, ``timestamp``, ...) for
    ``type == "message"`` entries and ``None`` for everything else (model changes, compaction
    records, ...), which still matter for turn boundaries and line numbers.
    """

    line: int
    type: str
    message: Mapping[str, Any] | None = None
    entry_id: str | None = None
    timestamp: str | None = None  # envelope timestamp (ISO)


@dataclass(frozen=True)
class Conversation:
    """Everything the engine needs to replay one conversation.

    Transcripts provide ``entries`` (runtime messages to ingest turn by turn). A loaded lcm.db
    provides ``stored_messages`` (already-ingested rows) and optionally the recorded DAG
    (``summaries``, ``context_items``) to continue from.
    """

    session_id: str
    entries: tuple[InputEntry, ...] = ()
    stored_messages: tuple[StoredMessage, ...] = ()
    summaries: tuple[Summary, ...] = ()
    context_items: tuple[ContextItem, ...] = ()
    large_files: tuple[LargeFile, ...] = ()
    session_key: str | None = None
    title: str | None = None
    source: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


# -- what the model sees (assembly, spec §6) -------------------------------------------------


@dataclass(frozen=True)
class AssembledItem:
    """One output message of assembly and where it came from."""

    role: str  # runtime role: user | assistant | toolResult
    kind: Literal["message", "summary", "synthetic", "live", "prompt_recall", "prompt", "observation"]
    ref: int | str | None  # message seq, summary_id, input line (live), or None (synthetic)
    message: Mapping[str, Any]  # the runtime message dict the model would receive
    tokens: int


@dataclass(frozen=True)
class Assembly:
    """The result of ``ContextAssembler.assemble`` (bare assembler, spec §6 steps 1-6)."""

    token_budget: int
    estimated_tokens: int
    selection_mode: str  # "full-fit" | "chronological" | "prompt-aware"
    fresh_tail_ordinal: int | None
    tail_tokens: int
    remaining_budget: int
    evictable_total_tokens: int
    stats: Mapping[str, int]
    items: tuple[AssembledItem, ...]


@dataclass(frozen=True)
class SentContext:
    """What the model receives at one call: the engine-level assembly (spec §6 step 7).

    ``items`` is the engine's output (bare assembly after the final clamp, or a live/degraded
    fallback: then ``kind == "live"`` and ``ref`` is the 1-based input line); ``prompt`` is the new
    user message the host appends after it on per-turn calls (``None`` on the end-of-run call).
    ``estimated_tokens`` is the engine's serialized estimate of ``items``; ``bare`` is the bare
    assembler at the same state and budget (a diagnostic: views and scores use ``items``).
    ``path`` names the branch that produced it (reference-runs-engine README §2); ``clamped``
    says the serialized clamp fired; ``emergency_drain`` is the deferred drain this call ran first.
    See docs/model-context.md.
    """

    token_budget: int
    estimated_tokens: int
    path: str  # "assembled" | "degraded:near-budget" | "live-fallback:no-context-items" | ...
    clamped: bool
    items: tuple[AssembledItem, ...]
    prompt: AssembledItem | None = None
    bare: Assembly | None = None
    turn: int | None = None  # per-turn call at the start of this turn; None = end-of-run call
    serialized_before: int | None = None  # the clamp's input size when it fired
    evicted: int = 0  # messages the clamp evicted
    emergency_drain_reached: bool = False  # debt pending and stored tokens over the budget
    live_messages_in: int = 0  # live messages the host passed
    emergency_drain: DrainAttempt | None = None  # deferred mode: the drain this call ran first
    # Identifiers in the prompt that would make the engine's prompt recall search (not modelled).
    prompt_recall_identifiers: tuple[str, ...] = ()
    # Summaries this call's emergency drain created that the replay does not hold (a question
    # turn's branch, ``Replay.ask``); the items may show them.
    created_summaries: tuple[Summary, ...] = ()

    @property
    def degraded(self) -> bool:
        return self.path.startswith("degraded:")

    @property
    def has_summaries(self) -> bool:
        return any(item.kind == "summary" for item in self.items)

    @property
    def summary_count(self) -> int:
        return sum(1 for item in self.items if item.kind == "summary")

    @property
    def prompt_tokens(self) -> int:
        """Serialized estimate of the whole model input: the output plus the host's prompt."""
        return self.estimated_tokens + (self.prompt.tokens if self.prompt is not None else 0)

    @property
    def messages(self) -> tuple[Mapping[str, Any], ...]:
        """The message dicts the model receives, the host's appended prompt included."""
        out = tuple(item.message for item in self.items)
        return out + ((self.prompt.message,) if self.prompt is not None else ())


class SentFacts(NamedTuple):
    """The numbers of one :class:`SentContext`, without its items: what a saved run's
    ``replay_sent`` rows, the size metrics and the budget plot read, small enough to keep for
    every call of a long run (``Replay.sent_facts``)."""

    turn: int | None
    token_budget: int
    path: str
    clamped: bool
    degraded: bool
    estimated_tokens: int
    prompt_message_tokens: int | None  # the user message the host appends (per-turn calls)
    bare_tokens: int | None  # the bare assembler's estimate at the same state
    messages: int
    summaries: int
    emergency_drain: str | None  # the outcome of the deferred drain this call ran first

    @classmethod
    def of(cls, sent: SentContext) -> SentFacts:
        return cls(
            sent.turn, sent.token_budget, sent.path, sent.clamped, sent.degraded, sent.estimated_tokens,
            None if sent.prompt is None else sent.prompt.tokens, None if sent.bare is None else sent.bare.estimated_tokens,
            len(sent.items), sent.summary_count,
            None if sent.emergency_drain is None else sent.emergency_drain.outcome,
        )


# -- what a replay records (spec §4, reference trace schema) ---------------------------------


@dataclass(frozen=True)
class SummarizerCall:
    """One call the engine made to its summarizer, with inputs and output."""

    kind: Literal["leaf", "condensed", "observe"]
    depth: int
    aggressive: bool
    source_text: str
    source_tokens: int
    previous_summary: str | None
    output: str
    output_tokens: int
    target_tokens: int
    max_tokens: int
    model: str = "unknown"
    template_hash: str | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    cached: bool = False
    failure: str | None = None  # the model gave no summary, so ``output`` is the fallback: why (connection, timeout, ...)


@dataclass(frozen=True)
class SweepRecord:
    """One ``compactFullSweep`` run."""

    force: bool
    stop_at_tokens: int | None
    stored_before: int
    action_taken: bool
    tokens_before: int
    tokens_after: int
    condensed: bool
    level: Level | None
    auth_failure: bool
    stopped_at_budget: bool
    created_summary_id: str | None
    passes: int
    fresh_tail_count: int | None = None  # per-call override passed to the sweep, if any
    leaf_chunk_tokens: int | None = None


@dataclass(frozen=True)
class TurnRecord:
    """Everything that happened in one replayed turn."""

    turn: int
    lines: tuple[int, int] | None
    input_messages: int
    input_persistable_messages: int
    ingested_seqs: tuple[int, ...]
    stored_tokens_before: int
    threshold: int
    should_compact: bool
    compacted: bool
    sweeps: tuple[SweepRecord, ...]
    calls: tuple[SummarizerCall, ...]
    created_summary_ids: tuple[str, ...]
    tokens_after: int
    context_after: tuple[ContextItem, ...]
    logs: tuple[str, ...] = ()
    spend_backoff_would_open: bool = False
    compact_result: Mapping[str, Any] | None = None  # engine.compact's report (ok, reason, rounds, ...)
    # Deferred mode (and the debt inline mode leaves behind): the per-turn assemble at the start
    # of this turn, the post-turn drain and host maintenance, and the state they leave.
    clock_ms: tuple[int, int] | None = None  # [assemble now, afterTurn/drain/maintain now]
    time_ms: tuple[int, int] | None = None  # [first, last] message timestamp of the turn
    start_degraded_path: str | None = None  # the degraded path the emergency drain decided, if any
    emergency_drain: DrainAttempt | None = None
    debt_recorded: bool = False
    debt_before: DebtSnapshot | None = None  # after afterTurn
    drain: DrainAttempt | None = None
    host_maintain: DrainAttempt | None = None
    debt_after: DebtSnapshot | None = None  # after drain and maintain
    tokens_end: int | None = None  # after drain and maintain (None: same as tokens_after)
    context_end: tuple[ContextItem, ...] | None = None
    # lossless-claw 1.0 (commitTurn host path): the phase records of the turn and the pending
    # state it leaves (lcm_lab.engine.replay.commit_turn); None for 0.15.3 replays.
    phases: Mapping[str, Any] | None = None

    @property
    def final_tokens(self) -> int:
        """Stored tokens at the end of the turn (after any drain): what the next turn starts from."""
        return self.tokens_after if self.tokens_end is None else self.tokens_end

    @property
    def final_context(self) -> tuple[ContextItem, ...]:
        return self.context_after if self.context_end is None else self.context_end


@dataclass(frozen=True)
class DebtSnapshot:
    """The ``conversation_compaction_maintenance`` row at one instant (deferred mode)."""

    pending: bool
    token_budget: int | None
    context_threshold: float
    retry_attempts: int
    next_attempt_after_ms: int | None
    last_finished_at_ms: int | None
    last_failure: str | None
    now_ms: int
    reason: str = "threshold"

    @property
    def backoff_active(self) -> bool:
        return self.next_attempt_after_ms is not None and self.next_attempt_after_ms > self.now_ms

    @property
    def retry_delay_ms(self) -> int | None:
        if self.next_attempt_after_ms is None or self.last_finished_at_ms is None:
            return None
        return self.next_attempt_after_ms - self.last_finished_at_ms


@dataclass(frozen=True)
class DrainAttempt:
    """One deferred-compaction attempt: post-turn drain, host maintenance or emergency drain."""

    phase: Literal["drain", "host_maintain", "emergency_drain"]
    outcome: Literal["compacted", "exhausted", "compacted-still-over-target", "skipped-backoff"]
    force: bool
    token_budget: int
    current_token_count: int | None
    now_ms: int
    debt_before: DebtSnapshot
    debt_after: DebtSnapshot
    stored_tokens: int | None = None  # evaluate's stored tokens (attempts that ran)
    threshold: int | None = None
    compact_result: Mapping[str, Any] | None = None
    sweeps: tuple[SweepRecord, ...] = ()
    calls: tuple[SummarizerCall, ...] = ()
    created_summary_ids: tuple[str, ...] = ()
    tokens_after: int = 0
    context_after: tuple[ContextItem, ...] = ()
    logs: tuple[str, ...] = ()

    @property
    def ran(self) -> bool:
        return self.outcome != "skipped-backoff"
