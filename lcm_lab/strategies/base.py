"""What every context strategy produces: a :class:`StrategyRun` with the interface of a replay.

Metrics, plots, the report and the sweep engine read a run through ``run.sent(turn, budget)``
(what the model receives), ``run.conversation``, ``run.token_budget``, ``run.turns`` (one
:class:`StrategyTurn` per turn: raw messages ingested, context tokens, model calls, memory
state) and ``run.strategy`` / ``run.strategy_params``. LCM's :class:`~lcm_lab.engine.replay.driver.Replay`
is wrapped, not rewritten (``run.replay``); other strategies keep their memory as versions of
:class:`MemoryItem` tuples and compute ``sent`` from them, so a run rebuilt from the store gives
the same context.

Strategies are pure like the engine: no database, network, files or clock; a model (a
summarizer) comes in as an argument.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from lcm_lab.engine.assembly.bare import estimate_serialized_message_tokens, resolve_message
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.replay.turns import check_turn
from lcm_lab.engine.tokens import MAX_TOKEN_BUDGET, check_token_budget, estimate_tokens
from lcm_lab.engine.types import AssembledItem, Conversation, SentContext, StoredMessage
from lcm_lab.errors import OptionError, SpecError
from lcm_lab.summarizers.call_checks import calls_so_far, check_run

if TYPE_CHECKING:
    from lcm_lab.engine.replay.question import Question

UNBOUNDED = MAX_TOKEN_BUDGET  # a budget no conversation reaches: ingest without ever compacting


class StrategyError(SpecError):
    """A strategy was asked for with unknown parameters, or cannot run as configured."""


class NotAnLcmRunError(OptionError):
    """A run of another context strategy (truncate, full, ClawVault, ...) was given where only an
    LCM replay will do: something that reads its summary DAG or stored context (an lcm.db export,
    a what-if edit, the budget timeline)."""


@dataclass(frozen=True)
class ModelCall:
    """One model call a strategy made (through the summarizer boundary and its ledger)."""

    purpose: str  # "observe" | "reflect" | "leaf" | "condensed"
    model: str
    input_tokens: int  # estimated tokens of what was sent
    output_tokens: int
    cost_usd: float | None = None
    cached: bool = False
    failed: str | None = None  # why the call produced no usable output (then ``events`` says what happened)

    @property
    def failure(self) -> str | None:
        """``failed`` under the name a replay's calls give it (``SummarizerCall.failure``), which the
        lab's rule for failed model calls reads (:func:`~lcm_lab.summarizers.call_checks.recorded_calls`)."""
        return self.failed


@dataclass(frozen=True)
class MemoryItem:
    """One piece of memory shown to the model (an observation line, a reflection, a summary)."""

    ref: str
    text: str
    tokens: int
    importance: float | None = None
    date: str | None = None
    kind: str = "observation"


@dataclass(frozen=True)
class StrategyTurn:
    """One replayed turn of a strategy run.

    ``context_tokens`` is the estimate of what the model receives at the next call (the start
    of the next turn, or the end-of-run call after the last turn); ``memory`` indexes
    ``StrategyRun.memories`` (-1: no memory yet); ``raw_from`` is the first seq the strategy
    may still show raw (0: all).
    """

    turn: int
    lines: tuple[int, int] | None
    ingested_seqs: tuple[int, ...]
    context_tokens: int = 0
    calls: tuple[ModelCall, ...] = ()
    memory: int = -1
    raw_from: int = 0
    events: tuple[str, ...] = ()

    @property
    def tokens_after(self) -> int:
        return self.context_tokens


@dataclass(frozen=True)
class StrategyRun:
    """The outcome of running one context strategy over one conversation."""

    strategy: str
    strategy_params: Mapping[str, Any]
    conversation: Conversation
    token_budget: int
    summarizer: str
    turns: tuple[StrategyTurn, ...]
    messages: tuple[StoredMessage, ...]  # by seq, exactly as LCM ingests them
    memories: tuple[tuple[MemoryItem, ...], ...] = ()
    replay: Replay | None = None  # the LCM replay behind an ``lcm`` run
    run_id: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @cached_property
    def messages_by_seq(self) -> Mapping[int, StoredMessage]:
        return {m.seq: m for m in self.messages}

    @cached_property
    def _resolved(self) -> dict[int, tuple[AssembledItem, ...]]:
        return {}

    def message_items(self, messages: Sequence[StoredMessage]) -> list[AssembledItem]:
        """:func:`message_items`, each message resolved once per run (per-turn views stay linear)."""
        cache = self._resolved
        out: list[AssembledItem] = []
        for message in messages:
            if message.seq not in cache:
                cache[message.seq] = tuple(message_items([message]))
            out.extend(cache[message.seq])
        return out

    @property
    def summaries(self) -> tuple[Any, ...]:
        return self.replay.summaries if self.replay is not None else ()

    def memory_at(self, turn: int | None) -> tuple[MemoryItem, ...]:
        """Memory after ``turn`` (``None``: after the run)."""
        record = self.turns[-1 if turn is None else turn] if self.turns else None
        return self.memories[record.memory] if record is not None and record.memory >= 0 else ()

    def sent(self, turn: int | None = None, budget: int | None = None) -> SentContext:
        """What the model receives at the start of ``turn`` (negative counts from the end; ``None``:
        the end-of-run call); a turn the run does not have is an :class:`~lcm_lab.errors.OptionError`."""
        if self.replay is not None:
            return self.replay.sent(turn, budget)
        from lcm_lab.strategies import get_strategy

        return get_strategy(self.strategy, **self.strategy_params).sent(
            self, None if turn is None else check_turn(turn, len(self.turns)), self.token_budget if budget is None else budget
        )

    def ask(
        self,
        question: str,
        after_turn: int | None = None,
        at: datetime | float | None = None,
        *,
        budget: int | None = None,
        summarizer: Any = None,
    ) -> SentContext:
        """What the model receives when ``question`` arrives as the user message of a new turn
        after ``after_turn`` (default: the last), at ``at`` (default: that turn's last message + 1
        hour): :meth:`Replay.ask <lcm_lab.engine.replay.driver.Replay.ask>` for an LCM run, the
        strategy's own ``ask`` otherwise. The run never changes."""
        if self.replay is not None:
            return self.replay.ask(question, after_turn, at, budget=budget, summarizer=summarizer)
        from lcm_lab.engine.replay.question import resolve_question
        from lcm_lab.strategies import get_strategy

        resolved = resolve_question(self, question, after_turn, at, budget)
        return get_strategy(self.strategy, **self.strategy_params).ask(self, resolved)

    def calls(self) -> list[ModelCall]:
        return [c for t in self.turns for c in t.calls]


def lcm_replay(run: Replay | StrategyRun, needs: str) -> Replay:
    """The LCM replay ``run`` is or carries; a :class:`NotAnLcmRunError` when it is a run of
    another strategy, which has no summary DAG and no stored context (``needs`` names, in words,
    what requires them: "an lcm.db export").

    >>> from lcm_lab.engine.types import Conversation
    >>> lcm_replay(StrategyRun("truncate", {}, Conversation("s"), 8000, "none", (), (), run_id="run_1"), "an lcm.db export")
    Traceback (most recent call last):
    lcm_lab.strategies.base.NotAnLcmRunError: run run_1 was made by the truncate strategy, which keeps no summary DAG or stored context: an lcm.db export needs an LCM replay
    """
    replay = run.replay if isinstance(run, StrategyRun) else run
    if replay is None:
        which = f"run {run.run_id}" if run.run_id else "this run"
        raise NotAnLcmRunError(f"{which} was made by the {run.strategy} strategy, which keeps no summary DAG or stored context: "
                               f"{needs} needs an LCM replay")  # fmt: skip
    return replay


class Strategy(Protocol):
    """A context strategy: ``run`` a conversation, and say what the model receives (``sent``)."""

    name: str
    params: Mapping[str, Any]

    def run(
        self,
        conversation: Conversation,
        summarizer: Any,
        token_budget: int,
        *,
        on_turn: Callable[[StrategyTurn], None] | None = None,
        check_calls: bool = True,
    ) -> StrategyRun: ...

    def sent(self, run: StrategyRun, turn: int | None, budget: int) -> SentContext: ...

    def ask(self, run: StrategyRun, question: Question) -> SentContext: ...

    def reads_prompt(self, run: StrategyRun) -> bool: ...


class StrategyBase:
    """What every strategy does around its own replay: apply the rule for failed model calls, fill
    each turn's ``context_tokens`` from ``sent`` and report the turns (``on_turn``). Subclasses
    implement ``replay_turns`` and ``sent``."""

    name: str
    params: Mapping[str, Any]

    def replay_turns(self, conversation: Conversation, summarizer: Any, token_budget: int) -> StrategyRun:
        raise NotImplementedError

    def sent(self, run: StrategyRun, turn: int | None, budget: int) -> SentContext:
        raise NotImplementedError

    def ask(self, run: StrategyRun, question: Question) -> SentContext:
        """The question turn (:class:`~lcm_lab.engine.replay.question.Question`): the strategy's
        per-turn context at a new turn after ``question.after_turn``, the question appended by
        the host. Right for every strategy whose context does not read the prompt (its arrival
        time does not matter either); strategies that search by the prompt override it."""
        turn = question.after_turn + 1
        return replace(self.sent(run, turn, question.budget), turn=turn, prompt=question.prompt)

    def reads_prompt(self, run: StrategyRun) -> bool:
        """Whether :meth:`ask` depends on the question's text (then every question is its own branch)."""
        return False

    def run(self, conversation: Conversation, summarizer: Any, token_budget: int, *, on_turn: Callable[[StrategyTurn], None] | None = None,
            check_calls: bool = True) -> StrategyRun:  # fmt: skip
        """Run the strategy over ``conversation``. Failed model calls follow the lab's one rule, as
        in :func:`~lcm_lab.engine.replay.driver.replay` (every call failed: ``ModelCallsFailedError``;
        some failed: one ``ModelCallsWarning``), unless ``check_calls=False``."""
        before = calls_so_far(summarizer)
        run = self.replay_turns(conversation, summarizer, check_token_budget(token_budget))
        if check_calls:
            check_run(run, summarizer, before)
        if run.replay is None:
            run = with_context_tokens(self, run)
        for turn in run.turns if on_turn is not None else ():
            on_turn(turn)  # type: ignore[misc]
        return run


# -- shared building blocks ----------------------------------------------------------------


@dataclass(frozen=True)
class Ingested:
    """A conversation's stored messages and its turns, ingested exactly as LCM would."""

    messages: tuple[StoredMessage, ...]
    turns: tuple[tuple[int, tuple[int, int] | None, tuple[int, ...]], ...]  # (turn, lines, seqs)


def ingest(conversation: Conversation) -> Ingested:
    """Ingest without compacting: the LCM engine at an unreachable budget (same seqs, same turns).

    >>> from lcm_lab.engine.types import InputEntry
    >>> chat = Conversation("demo", entries=(
    ...     InputEntry(2, "message", {"role": "user", "content": "hello", "timestamp": 0}),
    ...     InputEntry(3, "message", {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 1000})))
    >>> [m.seq for m in ingest(chat).messages], ingest(chat).turns[0][2]
    ([1, 2], (1, 2))
    """

    class _Never:
        name = "never-called"

        def summarize(self, request: Any) -> str:
            raise AssertionError("ingest never compacts")

    run = replay(conversation, LcmConfig(), _Never(), token_budget=UNBOUNDED)
    return Ingested(run.messages, tuple((t.turn, t.lines, t.ingested_seqs) for t in run.turns))


def message_items(messages: Sequence[StoredMessage]) -> list[AssembledItem]:
    """Stored messages as the runtime messages the model receives (the assembler's own mapping)."""
    out: list[AssembledItem] = []
    for ordinal, message in enumerate(messages):
        resolved = resolve_message(message, ordinal)
        if resolved is not None:
            out.append(
                AssembledItem(
                    resolved.message["role"], "message", message.seq, resolved.message,
                    estimate_serialized_message_tokens(resolved.message),
                )
            )
    return out


def newest_fitting(
    run: StrategyRun, messages: Sequence[StoredMessage], budget: int
) -> tuple[list[AssembledItem], bool]:
    """The newest raw messages whose tokens fit ``budget`` (chronological order), and whether
    anything older was left out. A tool result is never the first item (its call would be gone).

    Linear in the number of messages kept: it walks back from the newest.
    """
    kept: list[AssembledItem] = []
    used = 0
    index = len(messages) - 1
    while index >= 0:
        items = run.message_items([messages[index]])
        tokens = sum(i.tokens for i in items)
        if used + tokens > budget:
            break
        kept[:0] = items
        used += tokens
        index -= 1
    while kept and kept[0].role == "toolResult":
        kept.pop(0)
    return kept, index >= 0 or len(kept) < len(messages)


def memory_item(item: MemoryItem) -> AssembledItem:
    """A memory item as the user-role message the model receives."""
    message = {"role": "user", "content": item.text}
    kind = "observation" if item.kind != "summary" else "summary"
    return AssembledItem("user", kind, item.ref, message, estimate_serialized_message_tokens(message))


def text_item(ref: str, text: str, kind: str = "observation") -> MemoryItem:
    return MemoryItem(ref, text, estimate_tokens(text), kind=kind)


def sent_context(
    items: Sequence[AssembledItem], budget: int, turn: int | None, path: str, *, clamped: bool = False
) -> SentContext:
    return SentContext(budget, sum(i.tokens for i in items), path, clamped, tuple(items), turn=turn)


def state_turn(run: StrategyRun, turn: int | None) -> int:
    """The turn whose end state the model sees at the start of ``turn`` (``None``: the last turn;
    ``-1``: nothing yet)."""
    if turn is None:
        return len(run.turns) - 1
    if turn < 0:
        turn += len(run.turns)
    return turn - 1


def seen_messages(run: StrategyRun, last_turn: int) -> list[StoredMessage]:
    """Messages ingested up to and including ``last_turn``."""
    if last_turn < 0:
        return []
    seqs = [s for t in run.turns[: last_turn + 1] for s in t.ingested_seqs]
    by_seq = run.messages_by_seq
    return [by_seq[s] for s in seqs]


def with_context_tokens(strategy: Strategy, run: StrategyRun) -> StrategyRun:
    """Fill each turn's ``context_tokens`` from ``strategy.sent`` at the next call."""
    turns = []
    last = len(run.turns) - 1
    for t in run.turns:
        nxt = None if t.turn == last else t.turn + 1
        turns.append(replace(t, context_tokens=strategy.sent(run, nxt, run.token_budget).estimated_tokens))
    return replace(run, turns=tuple(turns))
