"""Turn-by-turn replay of a conversation through the compaction engine.

``replay(conversation, config, summarizer, token_budget=...)`` follows the reference protocol
(reference-runs README §1): each turn's messages are ingested as the live plugin ingests them,
stored tokens are compared with ``floor(contextThreshold × budget)``, and threshold compaction
runs inline when over. The result is a :class:`Replay`: what happened at every turn, the final
summary DAG, and views of what the model would see.

Three starting points:

* a transcript (``conversation.entries``): ingest and compact turn by turn;
* an lcm.db conversation from its raw messages (``conversation.stored_messages``): the stored
  rows are replayed turn by turn (a turn starts at each user message) under the given settings;
* an lcm.db conversation from its recorded state (``from_recorded=True``): start from the loaded
  summaries and context items, then evaluate and compact once under the given settings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property, partial
from typing import Any, NamedTuple, cast

from lcm_lab.engine.assembly.bare import ResolveCache
from lcm_lab.engine.assembly.bare import assemble as assemble_context
from lcm_lab.engine.assembly.sent import engine_assemble, memoized_cost, prompt_text
from lcm_lab.engine.compaction.deferred import FORCED_EMERGENCY_ATTEMPTS, DeferredCompaction
from lcm_lab.engine.compaction.pending.maintenance import PendingEngine
from lcm_lab.engine.compaction.sweep import Compactor, Fidelity, SimulatedClock
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.config.surface import check_engine_config
from lcm_lab.engine.ingest.message import is_persistable, to_stored_message
from lcm_lab.engine.js.depth import check_stored_depth
from lcm_lab.engine.protocol import Summarizer
from lcm_lab.engine.replay.commit_turn import run_commit_turn
from lcm_lab.engine.replay.live import HostView, debt_pending_after, host_view_of_entries, host_view_of_stored
from lcm_lab.engine.replay.turns import check_turn, split_turns
from lcm_lab.engine.state import EngineState
from lcm_lab.engine.timefmt import message_time_ms
from lcm_lab.engine.tokens import check_token_budget
from lcm_lab.engine.types import (
    AssembledItem,
    Assembly,
    ContextItem,
    Conversation,
    DrainAttempt,
    InputEntry,
    LargeFile,
    SentContext,
    SentFacts,
    StoredMessage,
    Summary,
    TurnRecord,
)
from lcm_lab.engine.versions import DEFAULT_ENGINE, EngineVersion
from lcm_lab.errors import OptionError
from lcm_lab.summarizers.call_checks import calls_so_far, check_run

DEFAULT_TOKEN_BUDGET = 128_000  # what the plugin assumes when the host reports no window


_HOST_VIEWS: dict[tuple[int, bool, bool, bool], tuple[Conversation, HostView]] = {}
_HOST_VIEW_LIMIT = 64
# Whole contexts a replay keeps (Replay.sent), the last used; their numbers are kept for every call.
_SENT_CACHE_LIMIT = 64


def _keep_last(cache: dict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """Insert ``value`` last in ``cache``, dropping the earliest entry once it holds ``limit``."""
    cache.pop(key, None)
    if len(cache) >= limit:
        cache.pop(next(iter(cache)))
    cache[key] = value

@dataclass(frozen=True)
class Replay:
    """The outcome of a replay: per-turn records and the final DAG, with views over them."""

    conversation: Conversation
    config: LcmConfig
    token_budget: int
    summarizer: str
    turns: tuple[TurnRecord, ...]
    messages: tuple[StoredMessage, ...]  # by seq
    summaries: tuple[Summary, ...]  # creation order
    large_files: tuple[LargeFile, ...] = ()
    fidelity: str = "faithful"
    engine: str = DEFAULT_ENGINE  # lossless-claw version replayed (lcm_lab.engine.versions)
    run_id: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    # The summarizer object the replay compacted with, for drains that run in a question turn
    # (:meth:`ask`); never stored: a replay rebuilt from the store gets it built again when its
    # recorded name says all of it (summarizers.rebuild_summarizer: offline, the stubs), else has none.
    compaction_summarizer: Summarizer | None = field(default=None, compare=False, repr=False, metadata={"stored": False})

    @property
    def final_context(self) -> tuple[ContextItem, ...]:
        return self.context_at(-1)

    @property
    def compaction_mode(self) -> str:
        """``deferred`` (the plugin's default) or ``inline``."""
        return self.config.proactive_threshold_compaction_mode

    @property
    def final_tokens(self) -> int:
        """Stored tokens after the last turn (after its drains in deferred mode)."""
        return self.turns[-1].final_tokens if self.turns else 0

    def context_at(self, turn: int = -1) -> tuple[ContextItem, ...]:
        """Context items at the end of ``turn``, after its drains (negative indexes count from the end)."""
        if not self.turns:
            return ()
        return self.turns[turn].final_context

    @cached_property
    def messages_by_seq(self) -> Mapping[int, StoredMessage]:
        return {m.seq: m for m in self.messages}

    @cached_property
    def summaries_by_id(self) -> Mapping[str, Summary]:
        return {s.summary_id: s for s in self.summaries}

    def summary(self, summary_id: str) -> Summary:
        return self.summaries_by_id[summary_id]

    def assemble(self, turn: int = -1, budget: int | None = None, prompt: str | None = None) -> Assembly:
        """The plugin's *bare* assembler after ``turn`` at ``budget`` tokens (default: the run budget).

        A diagnostic: what the model receives is :meth:`sent`. Pass a ``prompt`` to use
        prompt-aware eviction when the config enables it.
        """
        return self._bare(self.context_at(turn), self.token_budget if budget is None else budget, prompt)

    def _bare(
        self, context: Sequence[ContextItem], budget: int, prompt: str | None = None,
        summaries: Mapping[str, Summary] | None = None,
    ) -> Assembly:  # fmt: skip
        return assemble_context(
            self.messages_by_seq,
            self.summaries_by_id if summaries is None else summaries,
            context,
            token_budget=budget,
            fresh_tail_count=int(self.meta.get("fresh_tail_count", self.config.fresh_tail_count)),
            fresh_tail_max_tokens=self.config.fresh_tail_max_tokens,
            timezone=self.config.timezone,
            prompt=prompt,
            prompt_aware_eviction=self.config.prompt_aware_eviction and prompt is not None,
            cache=self._resolve_cache,
        )

    @cached_property
    def _resolve_cache(self) -> ResolveCache:
        return {}

    @property
    def is_v1(self) -> bool:
        """A replay of lossless-claw 1.0 (commitTurn host path, pending summaries)."""
        return self.engine == "1.0"

    @cached_property
    def _serialized_cost(self) -> Callable[[AssembledItem], int]:
        return memoized_cost(v1=self.is_v1)

    @cached_property
    def _turn_inputs(self) -> list[_TurnInput]:
        single = bool(self.meta.get("single_turn"))
        if self.conversation.entries:
            return _transcript_turns(self.conversation, single)
        if self.meta.get("from_recorded"):
            return [_TurnInput(0, None, stored=tuple(self.conversation.stored_messages))]
        return _stored_turns(self.conversation.stored_messages, single)

    @cached_property
    def _host_view(self) -> HostView:
        # The host's view depends only on the conversation and how it splits into turns, so every
        # replay of one conversation (a sweep's settings, their probes) shares one.
        key = (id(self.conversation), bool(self.meta.get("single_turn")), bool(self.meta.get("from_recorded")), self.is_v1)
        hit = _HOST_VIEWS.get(key)
        if hit is not None and hit[0] is self.conversation:
            return hit[1]
        if self.conversation.entries:
            view = host_view_of_entries([t.entries for t in self._turn_inputs], v1=self.is_v1)
        else:
            view = host_view_of_stored([t.stored for t in self._turn_inputs], v1=self.is_v1)
        # holds the conversation: its id is not reused while cached
        _keep_last(_HOST_VIEWS, key, (self.conversation, view), _HOST_VIEW_LIMIT)
        return view

    def turn_times(self, turn: int) -> tuple[int | None, int | None]:
        """Epoch ms of the first and last message of ``turn`` (``None`` where the input has none)."""
        return _turn_times(self._turn_inputs[turn])

    @cached_property
    def _debt_pending_after(self) -> tuple[bool, ...]:
        return debt_pending_after(self.turns, self.compaction_mode)

    def sent(self, turn: int | None = None, budget: int | None = None) -> SentContext:
        """What the model receives: at the start of ``turn`` (per-turn call), or after the run (``None``).

        The engine-level ``assemble`` (``src/engine.ts`` ``LcmContextEngine.assemble``,
        :mod:`lcm_lab.engine.assembly.sent`): live-message fallbacks, degraded contexts while
        compaction debt is pending, prefill strip and the serialized clamp around the bare
        assembler. ``turn=k`` is the call at the start of turn k (the state after turn k−1 and,
        in deferred mode, after its emergency drain; the host appends ``prompt``, turn k's user
        message); ``None`` is the end-of-run call (no prompt, no drain). A question that is not
        in the conversation goes to :meth:`ask`. Every view and context-based score reads this
        or :meth:`ask`, never :meth:`assemble`. Computed on demand, so replays stay fast.
        """
        k, key = self._sent_key(turn, budget)
        cache = self._sent_cache
        sent = cache.get(key)
        if sent is None:
            budget = key[1]
            prompt = self._host_view.prompts[k] if turn is not None else None
            sent = self.engine_call(k, self._recorded_start(k, turn, budget), budget, prompt, turn is not None)
            self._sent_facts[key] = SentFacts.of(sent)
        _keep_last(cache, key, sent, _SENT_CACHE_LIMIT)  # (re)inserted last: the least recently used goes first
        return sent

    def sent_facts(self, turn: int | None = None, budget: int | None = None) -> SentFacts:
        """The numbers of :meth:`sent` (tokens, path, clamp, counts) without its items: kept for
        every call, where whole contexts are kept only for the last few used (a 20k-message run
        at a 128k budget held about 450 MB of them)."""
        facts = self._sent_facts.get(self._sent_key(turn, budget)[1])
        return facts if facts is not None else SentFacts.of(self.sent(turn, budget))

    def _sent_key(self, turn: int | None, budget: int | None) -> tuple[int, tuple[int | None, int]]:
        n = len(self.turns)
        k = n if turn is None else check_turn(turn, n)
        return k, (None if turn is None else k, self.token_budget if budget is None else budget)

    def ask(
        self,
        question: str,
        after_turn: int | None = None,
        at: datetime | float | None = None,
        *,
        budget: int | None = None,
        summarizer: Summarizer | None = None,
    ) -> SentContext:
        """What the model receives when ``question`` arrives as the user message of a *new* turn
        after turn ``after_turn`` (default: the last), at ``at`` (a ``datetime``, naive = UTC, or
        epoch milliseconds; default: the last message of that turn + 1 hour).

        A branch of the replay (:mod:`lcm_lab.engine.replay.question`): the engine's state after
        that turn is restored on a private copy and the engine-level ``assemble`` of the new turn
        runs there, its deferred emergency drain included (forced while ``retry_attempts < 3``,
        else only once the backoff has expired at ``at``); the question is passed as the prompt.
        The replay itself never changes. A drain that has to run calls the summarizer the replay
        was made with (rebuilt with it from the store when it was the offline or a stub summarizer);
        ``summarizer`` for one rebuilt from a model's run, which has none.
        """
        from lcm_lab.engine.replay.question import ask

        return ask(self, question, after_turn, at, budget=budget, summarizer=summarizer)

    def with_compaction_summarizer(self, summarizer: Summarizer) -> Replay:
        """This replay with ``summarizer`` for the drains of its question turns (:meth:`ask`) when it
        has none (a model's run rebuilt from the store); a replay that has its own keeps it."""
        return self if self.compaction_summarizer is not None else replace(self, compaction_summarizer=summarizer)

    @cached_property
    def _sent_cache(self) -> dict[tuple[int | None, int], SentContext]:
        # the last _SENT_CACHE_LIMIT contexts used, least recently used first
        return {}

    @cached_property
    def _sent_facts(self) -> dict[tuple[int | None, int], SentFacts]:
        return {}

    @cached_property
    def _v1_checkpoint(self) -> dict[str, Any]:
        # commit_turn.rebuild_engine: the furthest 1.0 engine state rebuilt for a branch
        return {}

    @cached_property
    def _question_cache(self) -> dict[tuple[int, int, int], SentContext]:
        # question.ask: one branch per (after_turn, at_ms, budget) when the question cannot change it
        return {}

    def start_state(self, turn: int) -> CallState:
        """The stored state after ``turn`` (after its drains): what the next assemble starts from."""
        if turn < 0:
            if self.meta.get("from_recorded"):
                context = self.conversation.context_items
                return CallState(context, sum(self._item_tokens(i) for i in context), False)
            return CallState((), 0, False)
        record = self.turns[turn]
        return CallState(record.final_context, record.final_tokens, self._debt_pending_after[turn])

    def _recorded_start(self, k: int, turn: int | None, budget: int) -> CallState:
        """The state the call at the start of turn k (``turn``; ``None``: the end-of-run call) met,
        after the emergency drain the replay recorded there."""
        start = self.start_state(k - 1)
        drain = self.turns[k].emergency_drain if turn is not None and budget == self.token_budget else None
        if drain is None:
            return start
        # Deferred mode: the emergency drain ran inside this call and decided its path; a
        # different budget sees the pre-drain state with the drain only recorded.
        return CallState(drain.context_after, drain.tokens_after, False, self.turns[k].start_degraded_path, drain)

    def engine_call(
        self, k: int, start: CallState, budget: int, prompt: AssembledItem | None, per_turn: bool
    ) -> SentContext:
        """The engine-level ``assemble`` on ``start`` with the live messages of turns 0..k−1: a
        per-turn call (``per_turn``: its ``prompt`` is appended by the host) or the end-of-run call."""
        view = self._host_view
        no_conversation = k == 0 and not self.meta.get("from_recorded")
        context = start.context
        summaries = {**self.summaries_by_id, **start.summaries} if start.summaries else None
        prompt_text_ = prompt_text(prompt.message) if prompt is not None and per_turn else None
        sent = engine_assemble(
            live=view.live[: view.live_before[k]],
            budget=budget,
            bare=None if no_conversation else partial(self._bare, context, budget, prompt_text_, summaries),
            context_items=len(context),
            has_summary=any(item.kind == "summary" for item in context),
            stored_tokens=start.stored_tokens,
            debt_pending=start.debt_pending,
            degraded_path=start.degraded_path,
            prompt=prompt if per_turn else None,
            turn=k if per_turn else None,
            cost=self._serialized_cost,
            clamp_at_target=self.is_v1,
        )
        if start.emergency_drain is not None:
            created = tuple(start.summaries.values()) if start.summaries else ()
            sent = replace(sent, emergency_drain_reached=True, emergency_drain=start.emergency_drain, created_summaries=created)
        return sent

    def _item_tokens(self, item: ContextItem) -> int:
        if item.kind == "message":
            message = self.messages_by_seq.get(int(item.ref))
            return message.token_count if message is not None else 0
        found = self.summaries_by_id.get(str(item.ref))
        return found.token_count if found is not None else 0


class CallState(NamedTuple):
    """The stored state an engine-level ``assemble`` works on: the context items and their stored
    tokens, whether a deferred-compaction debt is pending, and — when the call's emergency drain
    already ran — the path it decided, the attempt and the summaries it created."""

    context: tuple[ContextItem, ...]
    stored_tokens: int
    debt_pending: bool
    degraded_path: str | None = None
    emergency_drain: DrainAttempt | None = None
    summaries: Mapping[str, Summary] | None = None  # created by that drain (not in the replay)


@dataclass(frozen=True)
class _TurnInput:
    index: int
    lines: tuple[int, int] | None
    entries: tuple[InputEntry, ...] = ()
    stored: tuple[StoredMessage, ...] = ()

    @property
    def input_messages(self) -> int:
        return len(self.stored) if self.stored else sum(1 for e in self.entries if e.message is not None)


def _transcript_turns(conversation: Conversation, single_turn: bool) -> list[_TurnInput]:
    turns = split_turns(conversation.entries, conversation.meta.get("last_line"))
    if single_turn and turns:
        entries = tuple(e for t in turns for e in t.entries)
        return [_TurnInput(0, (turns[0].first_line, turns[-1].last_line), entries)]
    return [_TurnInput(t.index, t.lines, t.entries) for t in turns]


def _stored_turns(messages: Sequence[StoredMessage], single_turn: bool) -> list[_TurnInput]:
    if single_turn:
        return [_TurnInput(0, None, stored=tuple(messages))] if messages else []
    groups: list[list[StoredMessage]] = []
    for message in messages:
        if not groups or message.role == "user":
            groups.append([message])
        else:
            groups[-1].append(message)
    return [_TurnInput(i, None, stored=tuple(g)) for i, g in enumerate(groups)]


def _check_arguments(conversation: object, config: object, summarizer: object) -> Summarizer:
    """What a notebook passes by mistake, said as an :class:`OptionError` before the engine reaches
    it as an ``AttributeError``: a read result for a conversation, a mapping of plugin keys for a
    config, a summarizer's name or nothing for a summarizer."""
    if not isinstance(conversation, Conversation):
        inner = getattr(conversation, "conversation", None)
        hint = " (this holds one: pass its .conversation)" if isinstance(inner, Conversation) else ""
        raise OptionError(f"replay needs a Conversation, got {type(conversation).__name__}{hint}")
    if config is not None and not isinstance(config, LcmConfig):
        hint = (" (plugin keys: LcmConfig.from_plugin_config({...}); openclaw.json: LcmConfig.from_openclaw_json(...))"
                if isinstance(config, Mapping) else "")
        raise OptionError(f"replay's config must be an LcmConfig, got {type(config).__name__}{hint}")
    if summarizer is None or isinstance(summarizer, str) or not callable(getattr(summarizer, "summarize", None)):
        named = f" (for {summarizer!r}: lcm_lab.get_summarizer({summarizer!r}))" if isinstance(summarizer, str) else ""
        got = "none" if summarizer is None else type(summarizer).__name__
        raise OptionError(f"replay needs a summarizer with a summarize method, got {got}{named} "
                          "(e.g. lcm_lab.get_summarizer('offline'))")
    return cast("Summarizer", summarizer)


def replay(
    conversation: Conversation,
    config: LcmConfig | None = None,
    summarizer: Summarizer | None = None,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    *,
    single_turn: bool = False,
    from_recorded: bool = False,
    fidelity: Fidelity = "faithful",
    intercept_large_payloads: bool = True,
    on_turn: Callable[[TurnRecord], None] | None = None,
    run_id: str | None = None,
    model: str | None = None,
    new_session_before: Collection[int] = (),
    engine: EngineVersion = DEFAULT_ENGINE,
    check_calls: bool = True,
) -> Replay:
    """Replay ``conversation`` turn by turn under ``config`` with ``summarizer``.

    ``engine`` picks the lossless-claw version (:mod:`lcm_lab.engine.versions`): ``"0.15.3"``
    (``afterTurn`` host path) or ``"1.0"`` (``commitTurn`` host path, pending-summary pipeline,
    :mod:`lcm_lab.engine.replay.commit_turn`); config keys a version removed are a ``UserError``.

    ``single_turn`` ingests everything as one turn; ``from_recorded`` starts from a loaded
    lcm.db's summaries and context; ``fidelity="fixed"`` corrects the plugin's quirks
    (:mod:`lcm_lab.engine.quirks`); ``new_session_before`` lists turns preceded by ``/new``;
    ``model`` is matched by ``contextThresholdOverrides`` rules.

    Failed model calls follow the lab's one rule (:mod:`lcm_lab.summarizers.call_checks`): when
    every call failed (a dead server, a wrong model) or the provider refused the credentials,
    nothing of the run came from the model and :class:`~lcm_lab.summarizers.call_checks.ModelCallsFailedError`
    is raised; when some failed, one :class:`~lcm_lab.summarizers.call_checks.ModelCallsWarning`
    counts them (their summaries are the truncation fallback). ``check_calls=False`` is for a
    caller that applies the rule itself, in its own words.

    >>> from lcm_lab.summarizers.stub import StubV1Summarizer
    >>> from lcm_lab.engine.types import Conversation, InputEntry
    >>> chat = Conversation("demo", entries=(
    ...     InputEntry(2, "message", {"role": "user", "content": "hello " * 400, "timestamp": 0}),
    ...     InputEntry(3, "message", {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 1000}),
    ...     InputEntry(4, "message", {"role": "user", "content": "and now?", "timestamp": 2000})))
    >>> result = replay(chat, LcmConfig(fresh_tail_count=1), StubV1Summarizer(), token_budget=500)
    >>> [t.compacted for t in result.turns], [s.kind for s in result.summaries]
    ([False, True], ['leaf'])
    """
    summarizer = _check_arguments(conversation, config, summarizer)
    token_budget = check_token_budget(token_budget)
    check_stored_depth(conversation.stored_messages, conversation.session_id)  # transcripts are checked as read
    config = config or LcmConfig()
    check_engine_config(engine, config)
    overrides: dict[str, int] = {}
    if config.context_threshold_overrides:
        # contextThresholdOverrides: the most specific matching rule sets this run's threshold and
        # may override fresh tail and leaf chunk per call (condensation keeps the configured
        # tail: QUIRK 5). The context window is the token budget.
        effective = config.resolve_overrides(model=model, context_window=token_budget, session_key=conversation.session_key)
        if effective.source == "override":
            config = config.replace(context_threshold=effective.context_threshold)
            overrides = {"fresh_tail_count": effective.fresh_tail_count, "leaf_chunk_tokens": effective.leaf_chunk_tokens}
    if from_recorded:
        state = EngineState(conversation.stored_messages, conversation.summaries, conversation.context_items, conversation.large_files)
        turn_inputs = [_TurnInput(0, None)]
    elif conversation.entries:
        state = EngineState()
        turn_inputs = _transcript_turns(conversation, single_turn)
    else:
        state = EngineState()
        turn_inputs = _stored_turns(conversation.stored_messages, single_turn)

    before = calls_so_far(summarizer)
    compactor = Compactor(
        state, config, summarizer, session_id=conversation.session_id, fidelity=fidelity, clock=SimulatedClock()
    )
    v1 = PendingEngine(compactor, overrides) if engine == "1.0" else None
    if v1 is not None:
        state.include_sender_tokens = False  # 1.0 stores no sender metadata
    deferred = (
        DeferredCompaction(compactor, overrides)
        if v1 is None and config.proactive_threshold_compaction_mode == "deferred"
        else None
    )
    clock = _TranscriptClock()
    records: list[TurnRecord] = []
    for turn_input in turn_inputs:
        if turn_input.index in new_session_before:
            # ``/new``: raw messages and shallow summaries leave the context (§4.14).
            state.prune_for_new_session(config.new_session_retain_depth)
        if v1 is not None:
            record = run_commit_turn(
                v1, turn_input, token_budget, intercept_large_payloads, clock, bool(records) or from_recorded
            )
        elif deferred is None:
            record = _run_turn(compactor, turn_input, token_budget, intercept_large_payloads, overrides)
        else:
            conversation_exists = bool(records) or from_recorded
            record = _run_deferred_turn(
                deferred, turn_input, token_budget, intercept_large_payloads, clock, conversation_exists
            )
        records.append(record)
        if on_turn is not None:
            on_turn(record)

    result = Replay(
        conversation=conversation,
        config=config,
        token_budget=token_budget,
        summarizer=getattr(summarizer, "name", type(summarizer).__name__),
        turns=tuple(records),
        messages=tuple(state.messages[seq] for seq in sorted(state.messages)),
        summaries=tuple(state.summaries.values()),
        large_files=tuple(state.large_files),
        fidelity=fidelity,
        engine=engine,
        run_id=run_id,
        meta={"single_turn": single_turn, "from_recorded": from_recorded, **overrides},
        compaction_summarizer=summarizer,
    )
    if check_calls:
        check_run(result, summarizer, before)
    return result


def _ingest(compactor: Compactor, turn_input: _TurnInput, intercept: bool) -> tuple[list[int], int]:
    state = compactor.state
    seqs: list[int] = []
    persistable = 0
    if turn_input.stored:
        for message in turn_input.stored:
            persistable += 1
            state.append_message(message)
            seqs.append(message.seq)
        return seqs, persistable
    for entry in turn_input.entries:
        if entry.message is None or not is_persistable(entry.message):
            continue
        persistable += 1
        result = to_stored_message(
            entry.message,
            state.next_seq(),
            entry_id=None,  # the runtime-batch protocol carries no transcript entry ids
            intercept_large_payloads=intercept,
            large_file_token_threshold=compactor.config.large_file_token_threshold,
            known_stable_event_keys=state.stable_event_keys,
        )
        if result.stored is None:
            continue
        state.append_message(result.stored)
        state.large_files.extend(result.large_files)
        seqs.append(result.stored.seq)
    return seqs, persistable


class _TranscriptClock:
    """Transcript time in epoch ms that never goes backwards (reference-runs-deferred README §2)."""

    def __init__(self) -> None:
        self.now_ms: int | None = None

    def at(self, moment_ms: int | None) -> int:
        if moment_ms is not None:
            self.now_ms = moment_ms if self.now_ms is None else max(self.now_ms, moment_ms)
        return self.now_ms or 0


def turn_mark(compactor: Compactor) -> tuple[int, int]:
    """Start a turn's bookkeeping: clear the compactor's log, note how many calls and summaries came before."""
    compactor.logs.clear()
    return len(compactor.calls), len(compactor.created)


def turn_made(compactor: Compactor, mark: tuple[int, int]) -> dict[str, Any]:
    """What the compactor did since ``mark``: a :class:`TurnRecord`'s ``calls``, ``created_summary_ids`` and ``logs``."""
    calls, created = mark
    return {"calls": tuple(compactor.calls[calls:]), "logs": tuple(compactor.logs),
            "created_summary_ids": tuple(s.summary_id for s in compactor.created[created:])}


def _turn_times(turn_input: _TurnInput) -> tuple[int | None, int | None]:
    """Timestamps of the turn's first and last message (None when the input has none)."""
    if turn_input.stored:
        times = [message_time_ms({}, m.created_at) for m in turn_input.stored]
    else:
        times = [message_time_ms(e.message, e.timestamp) for e in turn_input.entries if e.message is not None]
    known = [t for t in times if t is not None]
    return (known[0], known[-1]) if known else (None, None)


def _run_deferred_turn(
    deferred: DeferredCompaction,
    turn_input: _TurnInput,
    token_budget: int,
    intercept: bool,
    clock: _TranscriptClock,
    conversation_exists: bool,
) -> TurnRecord:
    """One turn in deferred mode: assemble (with its emergency drain), afterTurn, post-turn drain, maintain."""
    compactor = deferred.compactor
    state = compactor.state
    compactor.turn = turn_input.index
    mark = turn_mark(compactor)
    first, last = _turn_times(turn_input)
    assemble_now = clock.at(first)
    emergency = None
    degraded_path = None
    stored_at_assemble = state.stored_tokens()
    if conversation_exists and deferred.pending and stored_at_assemble > token_budget:
        emergency = deferred.attempt(
            "emergency_drain", token_budget, assemble_now,
            force=deferred.retry_attempts < FORCED_EMERGENCY_ATTEMPTS, force_sweeps=True,
            observed_tokens=stored_at_assemble,
        )  # fmt: skip
        degraded_path = deferred.emergency_path(emergency, token_budget) if emergency is not None else None
    turn_now = clock.at(last)
    seqs, persistable = _ingest(compactor, turn_input, intercept)
    stored = state.stored_tokens()
    threshold = compactor.config.threshold_tokens(token_budget)
    should = stored > threshold
    if should:
        deferred.record(token_budget)
    debt_before = deferred.snapshot(turn_now)
    tokens_after, context_after = stored, tuple(state.context)
    drain = deferred.attempt("drain", token_budget, turn_now) if should else None
    maintain = deferred.attempt("host_maintain", token_budget, turn_now)
    attempts = [a for a in (emergency, drain, maintain) if a is not None]
    return TurnRecord(
        turn=turn_input.index,
        lines=turn_input.lines,
        input_messages=turn_input.input_messages,
        input_persistable_messages=persistable,
        ingested_seqs=tuple(seqs),
        stored_tokens_before=stored,
        threshold=threshold,
        should_compact=should,
        compacted=any(a.compact_result and a.compact_result["compacted"] for a in attempts),
        sweeps=tuple(sweep for a in attempts for sweep in a.sweeps),
        **turn_made(compactor, mark),
        tokens_after=tokens_after,
        context_after=context_after,
        clock_ms=(assemble_now, turn_now),
        time_ms=(first, last) if first is not None and last is not None else None,
        start_degraded_path=degraded_path,
        emergency_drain=emergency,
        debt_recorded=should,
        debt_before=debt_before,
        drain=drain,
        host_maintain=maintain,
        debt_after=deferred.snapshot(turn_now),
        tokens_end=state.stored_tokens(),
        context_end=tuple(state.context),
    )


def _run_turn(
    compactor: Compactor, turn_input: _TurnInput, token_budget: int, intercept: bool, overrides: Mapping[str, int]
) -> TurnRecord:
    state = compactor.state
    compactor.turn = turn_input.index
    mark = turn_mark(compactor)
    seqs, persistable = _ingest(compactor, turn_input, intercept)
    stored = state.stored_tokens()
    threshold = compactor.config.threshold_tokens(token_budget)
    should = stored > threshold
    result = compactor.compact_threshold(
        token_budget, fresh_tail_count=overrides.get("fresh_tail_count"), leaf_chunk_tokens=overrides.get("leaf_chunk_tokens"),
    ) if should else None
    return TurnRecord(
        turn=turn_input.index,
        lines=turn_input.lines,
        input_messages=turn_input.input_messages,
        input_persistable_messages=persistable,
        ingested_seqs=tuple(seqs),
        stored_tokens_before=stored,
        threshold=threshold,
        should_compact=should,
        compacted=bool(result and result.compacted),
        sweeps=tuple(result.sweeps) if result else (),
        **turn_made(compactor, mark),
        tokens_after=state.stored_tokens(),
        context_after=tuple(state.context),
        spend_backoff_would_open=bool(result and result.compacted and not result.ok),
        compact_result=(
            None
            if result is None
            else {
                "ok": result.ok,
                "compacted": result.compacted,
                "reason": result.reason,
                "tokensBefore": result.tokens_before,
                "tokensAfter": result.tokens_after,
                "rounds": result.rounds,
            }
        ),
    )

