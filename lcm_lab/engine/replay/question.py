"""The question turn: what the model receives when a new user message — a question — arrives after turn k.

``run.ask(question, after_turn=k, at=t)`` (:meth:`~lcm_lab.engine.replay.driver.Replay.ask`) is a
*branch* of a finished replay. The engine's stored state after turn k is restored on a private copy,
the question arrives at ``t`` as the first user message of a new turn, and that turn's engine-level
``assemble`` runs on the copy, exactly as the per-turn call of the replay protocol
(reference-runs-engine README §1): ``messages`` = every message of turns 0..k, ``prompt`` = the
question, the host appends the question after the output. Nothing of the replay changes.

The arguments are resolved once, whatever the engine version, into a :class:`Question`
(:func:`resolve_question`): which turn, when (a ``datetime`` or epoch milliseconds; default: the last
message of that turn + 1 hour, so any retry backoff — at most 30 minutes — has expired), at which
budget, and the user message the host appends. What a version does with it is one function
(:class:`QuestionTurn`) in :data:`QUESTION_TURNS`, keyed by :data:`~lcm_lab.engine.versions.EngineVersion`:
restore that version's state after ``question.after_turn`` and run its per-turn ``assemble``.
For 0.15.3 that is :func:`question_turn_0153`.

The output depends on the question only through prompt-aware eviction (off by default); prompt
recall is not modelled (``SentContext.prompt_recall_identifiers`` flags the questions that would
trigger it). So without prompt-aware eviction one branch serves every question asked at the same
turn, time and budget (:func:`ask` caches it and swaps the prompt).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from lcm_lab.engine.assembly.bare import estimate_serialized_message_tokens
from lcm_lab.engine.assembly.sent import prompt_recall_identifiers
from lcm_lab.engine.compaction.deferred import FORCED_EMERGENCY_ATTEMPTS, DebtRow, DeferredCompaction
from lcm_lab.engine.compaction.sweep import Compactor, SimulatedClock
from lcm_lab.engine.protocol import Summarizer
from lcm_lab.engine.replay.turns import check_turn
from lcm_lab.engine.state import EngineState
from lcm_lab.engine.timefmt import MAX_TIME_MS, message_time_ms
from lcm_lab.engine.tokens import check_token_budget
from lcm_lab.engine.types import AssembledItem, DrainAttempt, SentContext
from lcm_lab.errors import OptionError

if TYPE_CHECKING:
    from lcm_lab.engine.replay.driver import CallState, Replay

__all__ = [
    "DEFAULT_DELAY_MS",
    "QUESTION_TURNS",
    "Question",
    "QuestionTurn",
    "ask",
    "question_message",
    "question_turn_0153",
    "resolve_question",
]

DEFAULT_DELAY_MS = 3_600_000  # a question arrives one hour after the turn it follows, by default


class Question(NamedTuple):
    """One question turn, resolved: the turn it follows, when it arrives, the budget, the user message."""

    text: str
    after_turn: int  # 0-based; the question's turn is after_turn + 1
    at_ms: int  # epoch milliseconds
    budget: int
    prompt: AssembledItem  # kind "prompt": the user message the host appends after the output


class QuestionTurn(Protocol):
    """An engine version's question turn: restore the state after ``question.after_turn`` on a
    private copy and return what that version's per-turn ``assemble`` hands the model.
    ``summarizer`` runs any compaction the call makes (``None``: the caller has none)."""

    def __call__(self, replay: Replay, question: Question, summarizer: Summarizer | None) -> SentContext: ...


def question_message(text: str, at_ms: int) -> dict[str, Any]:
    """The question as a host's user message (the shape the LoCoMo converter writes).

    >>> question_message("When?", 1000)
    {'role': 'user', 'content': [{'type': 'text', 'text': 'When?'}], 'timestamp': 1000}
    """
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": at_ms}


def epoch_ms(at: datetime | float) -> int:
    """``at`` in epoch milliseconds (a naive ``datetime`` is UTC); a time a JavaScript ``Date``
    cannot hold (beyond ±8.64e15 ms, or not a number) is an :class:`~lcm_lab.errors.OptionError`.

    >>> epoch_ms(datetime(1970, 1, 1, 0, 0, 1)), epoch_ms(2500)
    (1000, 2500)
    >>> epoch_ms(float("nan"))
    Traceback (most recent call last):
    lcm_lab.errors.OptionError: at=nan: expected a datetime or epoch milliseconds within ±8,640,000,000,000,000 (the times a JavaScript Date holds), e.g. 1772441611571
    """
    if isinstance(at, datetime):
        moment = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
        return round(moment.timestamp() * 1000)
    if isinstance(at, bool) or not isinstance(at, int | float) or not abs(at) <= MAX_TIME_MS:  # NaN fails too
        raise OptionError(f"at={at!r}: expected a datetime or epoch milliseconds within ±{MAX_TIME_MS:,.0f} "
                          "(the times a JavaScript Date holds), e.g. 1772441611571")
    return int(at)


def last_message_ms(run: Any, turn: int) -> int | None:
    """Epoch ms of the last message of ``turn`` of a replay or any strategy's run (``None``: no time)."""
    times = getattr(run, "turn_times", None)
    if callable(times):
        return times(turn)[1]  # type: ignore[no-any-return]
    record = run.turns[turn]
    if run.conversation.entries and record.lines is not None:
        first, last = record.lines
        stamps = [message_time_ms(e.message, e.timestamp) for e in run.conversation.entries
                  if e.message is not None and first <= e.line <= last]  # fmt: skip
    else:
        by_seq = run.messages_by_seq
        stamps = [message_time_ms({}, by_seq[s].created_at) for s in record.ingested_seqs]
    known = [t for t in stamps if t is not None]
    return known[-1] if known else None


def resolve_question(
    run: Any, question: str, after_turn: int | None, at: datetime | float | None, budget: int | None
) -> Question:
    """The :class:`Question` of ``run.ask(question, after_turn, at, budget=budget)`` (any strategy's run)."""
    if not isinstance(question, str):
        raise OptionError(f"question: expected the user's message as a string, e.g. \"When did we meet?\", "
                          f"not {type(question).__name__}")
    n = len(run.turns)
    if n == 0:
        raise OptionError("ask needs a run with at least one turn (the question follows one); this run has none: "
                          "ask a run of a conversation with at least one user message")
    k = n - 1 if after_turn is None else check_turn(after_turn, n, "after_turn")
    if budget is not None:
        check_token_budget(budget, "budget")
    if at is None:
        last = last_message_ms(run, k)
        if last is None:
            raise OptionError(f"turn {k} has no message timestamps: pass at= (a datetime or epoch milliseconds)")
        at_ms = last + DEFAULT_DELAY_MS
    else:
        at_ms = epoch_ms(at)
    message = question_message(question, at_ms)
    prompt = AssembledItem("user", "prompt", None, message, estimate_serialized_message_tokens(message))
    return Question(question, k, at_ms, run.token_budget if budget is None else budget, prompt)


def ask(
    replay: Replay,
    question: str,
    after_turn: int | None = None,
    at: datetime | float | None = None,
    *,
    budget: int | None = None,
    summarizer: Summarizer | None = None,
) -> SentContext:
    """:meth:`Replay.ask <lcm_lab.engine.replay.driver.Replay.ask>`: resolve, dispatch to the replay's
    engine version, and serve repeated questions at one turn, time and budget from one branch."""
    resolved = resolve_question(replay, question, after_turn, at, budget)
    turn = QUESTION_TURNS.get(replay.engine)
    if turn is None:
        raise ValueError(f"no question turn for engine {replay.engine!r} (known: {', '.join(QUESTION_TURNS)})")
    summarizer = summarizer if summarizer is not None else replay.compaction_summarizer
    if replay.config.prompt_aware_eviction:
        return turn(replay, resolved, summarizer)
    cache = replay._question_cache  # one branch per turn, time and budget (the replay owns it)
    key = (resolved.after_turn, resolved.at_ms, resolved.budget)
    found = cache.get(key)
    if found is None:
        found = cache[key] = turn(replay, resolved, summarizer)
    return replace(found, prompt=resolved.prompt, prompt_recall_identifiers=prompt_recall_identifiers(question))


# -- lossless-claw 0.15.3 ---------------------------------------------------------------------


def question_turn_0153(replay: Replay, question: Question, summarizer: Summarizer | None) -> SentContext:
    """The 0.15.3 question turn (``src/engine.ts`` ``LcmContextEngine.assemble``).

    The clock is ``max(clock after turn k, question.at_ms)`` (it never goes back). With a
    deferred-compaction debt pending and stored tokens over the budget, the emergency drain
    (``maybeConsumeDeferredCompactionDebtForAssemble``) runs first: forced while
    ``retry_attempts < 3``, else skipped while the backoff is active at that time; then the path
    is decided as after any emergency drain (:meth:`DeferredCompaction.emergency_path`). When the
    replay's own next turn started with this very call (same state, time and budget), its
    recorded drain is that drain and is reused; otherwise the drain runs on a restored copy.
    Inline mode has no retry clock: a pending debt is reported as the engine reference set
    records it (``emergency_drain_reached``), as in :meth:`Replay.sent`.
    """
    k = question.after_turn
    record = replay.turns[k]
    now = question.at_ms if record.clock_ms is None else max(record.clock_ms[1], question.at_ms)
    start = replay.start_state(k)
    if replay.compaction_mode == "deferred" and start.debt_pending and start.stored_tokens > question.budget:
        start = _emergency_drain(replay, k, now, question.budget, summarizer, start)
    return replay.engine_call(k + 1, start, question.budget, question.prompt, per_turn=True)


def _emergency_drain(
    replay: Replay, k: int, now: int, budget: int, summarizer: Summarizer | None, start: CallState,
    branch: BranchDrain | None = None,
) -> CallState:
    from lcm_lab.engine.replay.driver import CallState

    following = replay.turns[k + 1] if k + 1 < len(replay.turns) else None
    if (following is not None and budget == replay.token_budget and following.clock_ms is not None
            and following.clock_ms[0] == now and following.emergency_drain is not None):  # fmt: skip
        drain = following.emergency_drain
        created = {sid: replay.summary(sid) for sid in drain.created_summary_ids}
        return CallState(drain.context_after, drain.tokens_after, False, following.start_degraded_path, drain, created)
    return (branch or branch_drain)(replay, k, now, budget, summarizer, start)


class BranchDrain(Protocol):
    """An engine version's emergency drain on a copy of the state after turn ``k``."""

    def __call__(self, replay: Replay, k: int, now: int, budget: int, summarizer: Summarizer | None,
                 start: CallState) -> CallState: ...  # fmt: skip


class SummarizerNeededError(OptionError):
    """A question turn must compact (an emergency drain) and the replay has no summarizer: it was
    rebuilt from the store, which keeps its summaries, not the summarizer object that wrote them,
    and builds only the offline and stub summarizers again (a model is never assumed)."""


def _require_summarizer(summarizer: Summarizer | None, replay: Replay, k: int) -> Summarizer:
    if summarizer is None:
        models = sorted({c.model for t in replay.turns for c in t.calls} - {"unknown"})
        written = f"{replay.summarizer!r}" + (f" (model {', '.join(models)})" if models else "")
        raise SummarizerNeededError(
            f"the question after turn {k} runs an emergency drain and this replay has no summarizer: it was "
            f"rebuilt from the store, which keeps summaries, not the summarizer, and {written} wrote them; name "
            "the summarizer for the drain: lcm-lab report --model MODEL (with --api-base URL) or --summarizer NAME, or summarizer= "
            "in a notebook (lab.write_report(..., summarizer=...), run.ask(question, summarizer=...))"
        )
    return summarizer


def branch_drain(
    replay: Replay, k: int, now: int, budget: int, summarizer: Summarizer | None, start: CallState
) -> CallState:
    """The emergency drain of an ``assemble`` at ``now`` after turn ``k``, run on a copy of the
    stored state after that turn (messages, summaries, context items, the debt row)."""
    from lcm_lab.engine.replay.driver import CallState

    summarizer = _require_summarizer(summarizer, replay, k)
    debt = replay.turns[k].debt_after
    assert debt is not None and debt.pending  # start.debt_pending says so
    # Seqs grow turn by turn, so the messages stored by turn k are those up to its last seq (a
    # replay from a recorded state has one turn and starts with every stored message).
    last_seq = max((s for t in replay.turns[: k + 1] for s in t.ingested_seqs), default=0)
    recorded = bool(replay.meta.get("from_recorded"))
    state = EngineState(
        (m for m in replay.messages if recorded or m.seq <= last_seq),
        (s for s in replay.summaries if s.created_turn is None or s.created_turn <= k),
        start.context,
    )
    compactor = Compactor(
        state, replay.config, summarizer, session_id=replay.conversation.session_id,
        fidelity=replay.fidelity,  # type: ignore[arg-type]
        clock=SimulatedClock(),
    )  # fmt: skip
    compactor.turn = k + 1
    overrides = {key: int(replay.meta[key]) for key in ("fresh_tail_count", "leaf_chunk_tokens") if key in replay.meta}
    deferred = DeferredCompaction(compactor, overrides)
    deferred.row = DebtRow(
        debt.token_budget or budget, debt.context_threshold, pending=True, retry_attempts=debt.retry_attempts,
        next_attempt_after_ms=debt.next_attempt_after_ms, last_finished_at_ms=debt.last_finished_at_ms,
        last_failure=debt.last_failure,
    )  # fmt: skip
    attempt = deferred.attempt(
        "emergency_drain", budget, now, force=debt.retry_attempts < FORCED_EMERGENCY_ATTEMPTS, force_sweeps=True,
        observed_tokens=start.stored_tokens,
    )  # fmt: skip
    assert attempt is not None  # the row is pending
    created = {s.summary_id: s for s in compactor.created}
    path = deferred.emergency_path(attempt, budget)
    return CallState(attempt.context_after, attempt.tokens_after, False, path, attempt, created)


# -- lossless-claw 1.0 ------------------------------------------------------------------------


def question_turn_v1(replay: Replay, question: Question, summarizer: Summarizer | None) -> SentContext:
    """The 1.0 question turn (``src/engine.ts`` ``assemble`` at ``bf3d69ef``): as 0.15.3's, with
    1.0's emergency drain (``publish-if-ready``, the pending pipeline first, the legacy sweep as
    fallback) and 1.0's assembly (clamp above 0.9 × budget, tool results at the boundary estimate).
    When the replay's next turn did not start with this very call, the drain runs on the engine
    state rebuilt by replaying turns 0..k again (the pending tables included), so it needs the
    replay's summarizer."""
    k = question.after_turn
    record = replay.turns[k]
    now = question.at_ms if record.clock_ms is None else max(record.clock_ms[1], question.at_ms)
    start = replay.start_state(k)
    if start.debt_pending and start.stored_tokens > question.budget:
        start = _emergency_drain(replay, k, now, question.budget, summarizer, start, branch_drain_v1)
    return replay.engine_call(k + 1, start, question.budget, question.prompt, per_turn=True)


def branch_drain_v1(
    replay: Replay, k: int, now: int, budget: int, summarizer: Summarizer | None, start: CallState
) -> CallState:
    """1.0's emergency drain at ``now`` on the engine state after turn ``k``, rebuilt by replaying
    turns 0..k of the replay's input again (deterministic: the same summaries and pending rows)."""
    from lcm_lab.engine.replay.commit_turn import rebuild_engine
    from lcm_lab.engine.replay.driver import CallState

    engine = rebuild_engine(replay, k, _require_summarizer(summarizer, replay, k))
    assert engine.state.stored_tokens() == start.stored_tokens  # the rebuilt state is the replay's
    known = set(engine.state.summaries)
    engine.turn = k + 1
    engine.begin("emergency_drain")
    engine.now_ms = max(engine.now_ms, now)
    path, _ = engine.emergency(budget)
    created = {sid: s for sid, s in engine.state.summaries.items() if sid not in known}
    drain = DrainAttempt(
        "emergency_drain", "compacted", False, budget, start.stored_tokens, engine.now_ms,
        *_debts(replay, k, engine), tokens_after=engine.state.stored_tokens(), context_after=tuple(engine.state.context),
        created_summary_ids=tuple(created),
    )  # fmt: skip
    return CallState(drain.context_after, drain.tokens_after, False, path, drain, created)


def _debts(replay: Replay, k: int, engine: Any) -> tuple[Any, Any]:
    before = replay.turns[k].debt_after
    after = engine.row.snapshot(engine.now_ms) if engine.row is not None else before
    return before, after


QUESTION_TURNS: dict[str, QuestionTurn] = {"0.15.3": question_turn_0153, "1.0": question_turn_v1}
"""The question turn of each engine version (``Replay.engine``)."""
