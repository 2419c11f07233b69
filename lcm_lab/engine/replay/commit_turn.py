"""One turn of lossless-claw 1.0's host path (reference-runs-v1 README §1.4, protocol
``commitTurn-deferred-v1``; upstream ``src/engine.ts`` ``assemble``, ``commitTurn``, ``maintain``).

1. **assemble** at the first message's time: the emergency drain runs when a debt is pending and
   the stored context exceeds the budget (forced while ``retry_attempts < 3``);
2. **commitTurn** at the last message's time: the turn's messages are stored (the 0.15.3 rows
   without sender metadata: 1.0 no longer keeps the ``__openclaw`` envelope), then
   ``evaluatePostTurnCompaction`` records debt or schedules leaf preparation;
3. **background work** to quiescence (threshold publication, debt drains, preparation drains);
4. **maintain** (host-approved deferred execution), one more unforced consume when pending.

The harness settings of the reference runs hold here: background work completes before the next
host call and one transcript clock serves the engine and SQLite.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lcm_lab.engine.compaction.pending.maintenance import PendingEngine, PhaseRecord
from lcm_lab.engine.types import DebtSnapshot, DrainAttempt, TurnRecord

if TYPE_CHECKING:
    from lcm_lab.engine.replay.driver import _TranscriptClock, _TurnInput

__all__ = ["rebuild_engine", "run_commit_turn"]


def _snapshot(engine: PendingEngine) -> DebtSnapshot | None:
    return None if engine.row is None else engine.row.snapshot(engine.now_ms)


def _ingest(engine: PendingEngine, turn_input: _TurnInput, intercept: bool) -> tuple[list[int], int]:
    from lcm_lab.engine.replay.driver import _ingest as ingest_0153

    state = engine.state
    first_new = state.next_seq()
    seqs, persistable = ingest_0153(engine.compactor, turn_input, intercept)
    # commitTurn stores the same rows as 0.15.3 minus the sender envelope (src/openclaw-sender-metadata.ts is gone).
    for seq in seqs:
        message = state.messages[seq]
        if seq >= first_new and message.sender_metadata is not None:
            state.messages[seq] = replace(message, sender_metadata=None)
    return seqs, persistable


def _outcome(result: dict[str, Any] | None, pending_after: bool) -> str:
    if result is None or result["reason"] == "deferred compaction backoff active":
        return "skipped-backoff"
    if result.get("exhausted"):
        return "exhausted"
    return "compacted-still-over-target" if pending_after else "compacted"


def run_commit_turn(
    engine: PendingEngine,
    turn_input: _TurnInput,
    token_budget: int,
    intercept: bool,
    clock: _TranscriptClock,
    conversation_exists: bool,
) -> TurnRecord:
    from lcm_lab.engine.replay.driver import _turn_times, turn_made, turn_mark

    compactor = engine.compactor
    state = engine.state
    engine.turn = turn_input.index
    mark = turn_mark(compactor)
    first, last = _turn_times(turn_input)
    engine.now_ms = assemble_now = clock.at(first)

    emergency: DrainAttempt | None = None
    emergency_record: PhaseRecord | None = None
    degraded: str | None = None
    if conversation_exists and engine.pending and state.stored_tokens() > token_budget:
        emergency_record = engine.begin("emergency_drain")
        debt_before = _snapshot(engine)
        observed = state.stored_tokens()
        degraded, _ = engine.emergency(token_budget)
        consume = emergency_record.consume[0] if emergency_record.consume else {}
        debt_after = _snapshot(engine)
        assert debt_before is not None and debt_after is not None
        emergency = DrainAttempt(
            "emergency_drain", _outcome(consume.get("result"), engine.pending),  # type: ignore[arg-type]
            bool(consume.get("force")), token_budget, observed, assemble_now, debt_before, debt_after,
            calls=tuple(c for _, c in emergency_record.calls),
            created_summary_ids=tuple(s.summary_id for s in emergency_record.created),
            sweeps=tuple(emergency_record.sweeps), tokens_after=state.stored_tokens(), context_after=tuple(state.context),
        )  # fmt: skip
    engine.now_ms = turn_now = clock.at(last)
    debt_start = _snapshot(engine)  # the row after assemble, read on commitTurn's clock
    commit = engine.begin("commitTurn")
    seqs, persistable = _ingest(engine, turn_input, intercept)
    decision = engine.after_commit(token_budget)
    background = engine.begin("background")
    engine.run_background(decision, token_budget)
    tokens_after, context_after = state.stored_tokens(), tuple(state.context)
    debt_after_background = _snapshot(engine)
    maintain = engine.begin("host_maintain")
    changed, reason = engine.maintain(token_budget)
    engine.phase = compactor.phase = None
    records = [r for r in (emergency_record, commit, background, maintain) if r is not None]
    batches, nodes = engine.store.counts()
    return TurnRecord(
        turn=turn_input.index,
        lines=turn_input.lines,
        input_messages=turn_input.input_messages,
        input_persistable_messages=persistable,
        ingested_seqs=tuple(seqs),
        stored_tokens_before=decision["stored"],
        threshold=decision["threshold"],
        should_compact=decision["should"],
        compacted=any(entry["compacted"] for r in records for entry in r.pending_core),
        sweeps=tuple(s for r in records for s in r.sweeps),
        **turn_made(compactor, mark),
        tokens_after=tokens_after,
        context_after=context_after,
        spend_backoff_would_open=any(r.spend_backoff_would_open for r in records),
        clock_ms=(assemble_now, turn_now),
        time_ms=(first, last) if first is not None and last is not None else None,
        start_degraded_path=degraded,
        emergency_drain=emergency,
        debt_recorded=decision["should"],
        debt_before=debt_start,
        debt_after=_snapshot(engine),
        tokens_end=state.stored_tokens(),
        context_end=tuple(state.context),
        phases={
            "leaf_trigger": decision["leaf"],
            "debt_start": debt_start,
            "emergency_drain": emergency_record,
            "commit": commit,
            "background": background,
            "debt_after_background": debt_after_background,
            "context_after_background": context_after,
            "host_maintain": {"changed": changed, "reason": reason, "record": maintain},
            "pending_end": {"batches": batches, "active_nodes": nodes},
            "pending_rows": engine.store.row_counts(),
        },
    )


def rebuild_engine(replay: Any, through_turn: int, summarizer: Any) -> PendingEngine:
    """The 1.0 engine state of ``replay`` after ``through_turn``, rebuilt by replaying its turns
    0..``through_turn`` again with ``summarizer`` (for branches such as a question turn).

    The replay keeps the furthest state it rebuilt (``Replay._v1_checkpoint``), so questions asked
    turn after turn continue from it instead of starting over; callers get a private copy.
    """
    import copy

    from lcm_lab.engine.compaction.sweep import Compactor, SimulatedClock
    from lcm_lab.engine.replay.driver import _TranscriptClock
    from lcm_lab.engine.state import EngineState

    checkpoint = replay._v1_checkpoint
    found = checkpoint.get("engine")
    if found is not None and checkpoint["turn"] <= through_turn and checkpoint["summarizer"] is summarizer:
        engine, clock, done = found, checkpoint["clock"], checkpoint["turn"] + 1
    else:
        state = EngineState()
        state.include_sender_tokens = False
        compactor = Compactor(state, replay.config, summarizer, session_id=replay.conversation.session_id,
                              fidelity=replay.fidelity, clock=SimulatedClock())  # fmt: skip
        overrides = {key: int(replay.meta[key]) for key in ("fresh_tail_count", "leaf_chunk_tokens") if key in replay.meta}
        engine, clock, done = PendingEngine(compactor, overrides), _TranscriptClock(), 0
    for index in range(done, through_turn + 1):
        run_commit_turn(engine, replay._turn_inputs[index], replay.token_budget, True, clock, index > 0)
    checkpoint.update(engine=engine, clock=clock, turn=through_turn, summarizer=summarizer)
    # The summarizer is shared, never copied (it may hold a client).
    private: PendingEngine = copy.deepcopy(engine, memo={id(summarizer): summarizer})
    return private
