"""ClawVault observational memory as a context strategy (ClawVault's ``src/observer/observer.ts``, ``compressor.ts`` and ``reflection-service.ts``).

Per turn, the new messages join a raw buffer; once ``ceil(chars/4)`` of the buffer reaches
``observe_threshold`` (30,000 by default) — and once more at session end (flush) — the buffer is
sanitised and compressed into observations, which are merged into the memory (union by
normalised content, never deleting). Two strategies share this driver:

* ``clawvault`` — the compression call goes to a model through the summarizer boundary and the
  call ledger (the lab's own prompt; temperature 0.1, 1,400 output tokens); the reply is
  normalised and ``enforce_importance_rules`` applied. A failed or invalid reply is an error
  unless ``on_model_failure="fallback"`` asks for ClawVault's behaviour, and then every such
  turn says so in its events — never a silent substitute.
* ``observer_regex`` — ClawVault's deterministic fallback as its own strategy (no model).

**Quirk (reproduced by default):** only *today's* observation file (today = the clock of the
newest buffered message) is sent to the model as existing observations and rewritten with the
merged result, so memory from earlier days never enters the compression prompt.
``fidelity="fixed"`` sends all observations.

What the model receives: the observations (all, or those with importance ≥ ``importance_floor``,
or the ``top_k`` found by BM25 + RRF search for the turn's prompt; weekly reflections first when
``reflection`` is on) as one user message, then the newest raw messages that fit the rest of
the budget (``tail="fill"``) or only the not-yet-observed ones (``tail="unobserved"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import date as Date
from datetime import timedelta
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from lcm_lab.engine.protocol import SummaryRequest
from lcm_lab.engine.replay.question import Question
from lcm_lab.engine.tokens import estimate_tokens as model_tokens
from lcm_lab.engine.types import AssembledItem, Conversation, SentContext, StoredMessage
from lcm_lab.prompts.render import RenderedPrompt
from lcm_lab.strategies.base import (
    MemoryItem,
    ModelCall,
    StrategyBase,
    StrategyError,
    StrategyRun,
    StrategyTurn,
    ingest,
    newest_fitting,
    seen_messages,
    sent_context,
    state_turn,
)
from lcm_lab.strategies.compressor import RawLine, build_prompt, fallback_observations, sanitize
from lcm_lab.strategies.memory_search import iso_week, reflect, search
from lcm_lab.strategies.observations import (
    Observation,
    dedupe,
    enforce_importance_rules,
    merge,
    normalize_output,
    parse_markdown,
)

UNDATED = "1970-01-01"  # the observer's "today" when no message carries a timestamp


@dataclass(frozen=True)
class ObserverParams:
    """Every knob of the observer strategies (all sweepable)."""

    observe_threshold: int = 30_000
    importance_floor: float | None = None
    top_k: int | None = None
    update: Literal["merge", "regenerate"] = "merge"
    reflection: bool = False
    archive_days: int = 14
    fidelity: Literal["faithful", "fixed"] = "faithful"
    prompt: str = "default"
    temperature: float = 0.1
    max_tokens: int = 1400
    flush_at_end: bool = True
    tail: Literal["fill", "unobserved"] = "fill"
    on_model_failure: Literal["error", "fallback"] = "error"

    @staticmethod
    def build(params: Mapping[str, Any]) -> ObserverParams:
        known = {f.name for f in fields(ObserverParams)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise StrategyError(
                f"unknown observer parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        hints = get_type_hints(ObserverParams)
        wrong = [f"{name}={value!r} ({_kind_words(hints[name])})"
                 for name, value in params.items() if not _fits(value, hints[name])]  # fmt: skip
        if wrong:
            raise StrategyError(f"observer parameter(s) of the wrong type: {'; '.join(wrong)}")
        p = ObserverParams(**params)
        if p.observe_threshold < 1 or p.max_tokens < 1 or p.archive_days < 1:
            raise StrategyError("observe_threshold, max_tokens and archive_days must be positive")
        if (
            p.update not in ("merge", "regenerate")
            or p.fidelity not in ("faithful", "fixed")
            or p.tail not in ("fill", "unobserved")
        ):
            raise StrategyError("update is merge|regenerate, fidelity faithful|fixed, tail fill|unobserved")
        if p.on_model_failure not in ("error", "fallback"):
            raise StrategyError("on_model_failure is error|fallback")
        if p.top_k is not None and p.top_k < 1:
            raise StrategyError("top_k must be at least 1")
        return p


_KIND_WORDS: dict[Any, str] = {int: "expected a whole number", float: "expected a finite number",
                               bool: "expected true or false", str: "expected a string"}  # fmt: skip


def _fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` (from JSON, YAML or code) has the type ``hint`` of an observer field."""
    if get_origin(hint) is Literal:
        return value in get_args(hint)
    if get_origin(hint) in (Union, UnionType):
        return any(_fits(value, arm) for arm in get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return type(value) in (int, float) and math.isfinite(value)
    return type(value) is hint  # int excludes bool; bool and str exactly


def _kind_words(hint: Any) -> str:
    """What a value of type ``hint`` must be, in words."""
    if hint in _KIND_WORDS:
        return _KIND_WORDS[hint]
    if get_origin(hint) is Literal:
        return "expected one of " + ", ".join(repr(v) for v in get_args(hint))
    arms = [arm for arm in get_args(hint) if arm is not type(None)]
    return " or ".join(_KIND_WORDS.get(arm, str(arm)) for arm in arms) + " or null"


def _line(message: StoredMessage) -> RawLine:
    return RawLine(message.role, message.content, message.created_at)


@dataclass
class _Memory:
    """The observer's mutable state during a run: observation files by date, reflections."""

    files: dict[str, list[Observation]] = field(default_factory=dict)
    reflections: list[tuple[str, str]] = field(default_factory=list)  # (week, markdown)
    reflected: set[str] = field(default_factory=set)

    def records(self) -> list[Observation]:
        return [r for day in sorted(self.files) for r in self.files[day]]

    def snapshot(self) -> tuple[MemoryItem, ...]:
        items = [
            MemoryItem(f"reflection:{week}", text, model_tokens(text), kind="reflection")
            for week, text in self.reflections
        ]
        for n, record in enumerate(self.records()):
            line = record.line()
            items.append(
                MemoryItem(f"obs:{record.date}:{n}", line, model_tokens(line), record.importance, record.date)
            )
        return tuple(items)


@dataclass(frozen=True)
class ObserverStrategy(StrategyBase):
    """``clawvault`` (model compression) or ``observer_regex`` (deterministic fallback)."""

    name: str = "clawvault"
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def settings(self) -> ObserverParams:
        return ObserverParams.build(self.params)

    # -- running -----------------------------------------------------------------------------
    def replay_turns(self, conversation: Conversation, summarizer: Any, token_budget: int) -> StrategyRun:
        p = self.settings
        model = self._model(summarizer, p)
        ingested = ingest(conversation)
        by_seq = {m.seq: m for m in ingested.messages}
        memory = _Memory()
        memories: list[tuple[MemoryItem, ...]] = []
        pending: list[StoredMessage] = []
        pending_chars = -1  # ClawVault joins the buffer with '\n'
        raw_from = 1
        records: list[StrategyTurn] = []
        for number, (index, lines, seqs) in enumerate(ingested.turns):
            for seq in seqs:
                message = by_seq[seq]
                pending.append(message)
                pending_chars += len(f"{message.role}: {message.content}") + 1
            calls: list[ModelCall] = []
            events: list[str] = []
            last = number == len(ingested.turns) - 1
            if pending and (math.ceil(pending_chars / 4) >= p.observe_threshold or (last and p.flush_at_end)):
                events.append("observe" if math.ceil(pending_chars / 4) >= p.observe_threshold else "flush")
                self._observe(memory, pending, p, model, calls, events)
                raw_from = pending[-1].seq + 1
                pending, pending_chars = [], -1
                memories.append(memory.snapshot())
            record = StrategyTurn(
                index,
                lines,
                seqs,
                calls=tuple(calls),
                memory=len(memories) - 1,
                raw_from=raw_from,
                events=tuple(events),
            )
            records.append(record)
        params = {k: v for k, v in asdict(p).items() if v != getattr(ObserverParams(), k)}
        run = StrategyRun(
            self.name, params, conversation, token_budget, getattr(model, "model", "none") if model else "none",
            tuple(records), ingested.messages, tuple(memories),
        )  # fmt: skip
        return run

    def _model(self, summarizer: Any, p: ObserverParams) -> Any:
        if self.name != "clawvault":
            return None
        if summarizer is None or not callable(getattr(summarizer, "complete", None)):
            raise StrategyError(
                "clawvault compresses with a model: pass a litellm summarizer (e.g. --summarizer litellm --model M); "
                "the LLM-free variant is its own strategy, observer_regex"
            )
        if getattr(summarizer, "temperature", p.temperature) != p.temperature and callable(
            getattr(summarizer, "with_options", None)
        ):
            summarizer = summarizer.with_options(temperature=p.temperature)
        return summarizer

    def _observe(
        self,
        memory: _Memory,
        pending: list[StoredMessage],
        p: ObserverParams,
        model: Any,
        calls: list[ModelCall],
        events: list[str],
    ) -> None:
        stamps = [m.created_at for m in pending if m.created_at]
        today = stamps[-1][:10] if stamps else UNDATED
        lines = sanitize([_line(m) for m in pending])
        existing = (
            dedupe(memory.files.get(today, [])) if p.fidelity == "faithful" else dedupe(memory.records())
        )
        if model is None:
            incoming = fallback_observations(lines, today)
        else:
            incoming = self._compress(lines, existing, today, p, model, calls, events)
        updated = dedupe(merge(existing, incoming) if p.update == "merge" else incoming)
        if p.fidelity == "faithful":
            memory.files[today] = updated
        else:
            memory.files = {}
            for record in updated:
                memory.files.setdefault(record.date, []).append(record)
        events.append(f"observations: {len(memory.records())}")
        if p.reflection:
            self._reflect(memory, today, p, events)

    def _compress(
        self,
        lines: list[RawLine],
        existing: list[Observation],
        today: str,
        p: ObserverParams,
        model: Any,
        calls: list[ModelCall],
        events: list[str],
    ) -> list[Observation]:
        system, user, digest = build_prompt(lines, existing, p.prompt)
        rendered = RenderedPrompt(
            system, user, f"observer:{p.prompt if len(p.prompt) < 40 else 'custom'}", digest, digest
        )
        result = model.complete(
            rendered, SummaryRequest(user, "observe", 0, False, None, p.max_tokens, p.max_tokens)
        )
        failure = result.extra.get("fallback") if isinstance(result.extra, Mapping) else None
        text = None if failure else normalize_output(result.text, today)
        if text is None and not failure:
            failure = "no observation line in the reply"
        calls.append(
            ModelCall("observe", result.model, model_tokens(system + user), result.output_tokens or model_tokens(result.text or ""),
                      result.cost_usd, result.cached, failure)
        )  # fmt: skip
        if text is not None:
            parsed = [enforce_importance_rules(r) for r in parse_markdown(text, today)]
            return [r for r in parsed if r is not None]
        if p.on_model_failure == "error":
            raise StrategyError(
                f"clawvault: the compression call failed ({failure}); rerun, or set on_model_failure='fallback'"
            )
        events.append(f"model failed ({failure}): deterministic fallback used for this batch")
        return fallback_observations(lines, today)

    def _reflect(self, memory: _Memory, today: str, p: ObserverParams, events: list[str]) -> None:
        now_week = iso_week(today) if today != UNDATED else None
        done = {w for w, _ in memory.reflections}
        by_week: dict[str, list[Observation]] = {}
        for record in memory.records():
            week = iso_week(record.date)
            if now_week is not None and week < now_week and week not in done:
                by_week.setdefault(week, []).append(record)
        for week in sorted(by_week):
            out = reflect(week, by_week[week], memory.reflected)
            if out is not None:
                memory.reflections.append((week, out[0]))
                memory.reflected |= out[1]
                events.append(f"reflection {week}")
        if now_week is not None:
            cutoff = (Date.fromisoformat(today) - timedelta(days=p.archive_days)).isoformat()
            old = [d for d in memory.files if d < cutoff]
            for day in old:
                del memory.files[day]
            if old:
                events.append(f"archived {len(old)} observation file(s)")

    # -- what the model receives -----------------------------------------------------------------
    def sent(self, run: StrategyRun, turn: int | None, budget: int) -> SentContext:
        return self._context(run, turn, budget, None)

    def reads_prompt(self, run: StrategyRun) -> bool:
        return self.settings.top_k is not None

    def ask(self, run: StrategyRun, question: Question) -> SentContext:
        """The question turn: with ``top_k`` the observations are searched for the question itself."""
        turn = question.after_turn + 1
        return replace(self._context(run, turn, question.budget, question.text), prompt=question.prompt)

    def _context(self, run: StrategyRun, turn: int | None, budget: int, query: str | None) -> SentContext:
        p = self.settings
        last = state_turn(run, turn)
        if last < 0:
            return sent_context((), budget, turn, "empty")
        record = run.turns[last]
        memory = run.memories[record.memory] if record.memory >= 0 else ()
        reflections = [m for m in memory if m.kind == "reflection"]
        observations = [m for m in memory if m.kind == "observation"]
        if p.importance_floor is not None:
            observations = [m for m in observations if (m.importance or 0.0) >= p.importance_floor]
        if p.top_k is not None and observations:
            query = _prompt_text(run, turn) if query is None else query
            keep = set(search([m.text for m in observations], query, limit=p.top_k))
            observations = [m for i, m in enumerate(observations) if i in keep]
        chosen, clamped = _fit_memory(reflections + observations, budget)
        items: list[AssembledItem] = []
        if chosen:
            text = "Observations from earlier in this session:\n\n" + "\n".join(m.text for m in chosen)
            items.append(
                AssembledItem(
                    "user",
                    "observation",
                    "observations",
                    {"role": "user", "content": text},
                    model_tokens(text),
                )
            )
        used = sum(i.tokens for i in items)
        messages = seen_messages(run, last)
        if p.tail == "unobserved":
            messages = [m for m in messages if m.seq >= record.raw_from]
        tail, _ = newest_fitting(run, messages, max(budget - used, 0))
        return sent_context(items + tail, budget, turn, "observations+tail", clamped=clamped)


def _fit_memory(items: list[MemoryItem], budget: int) -> tuple[list[MemoryItem], bool]:
    """All items when they fit the budget; else the most important ones that do (ties: newest)."""
    header = 12
    if sum(m.tokens + 1 for m in items) + header <= budget:
        return items, False
    order = sorted(
        range(len(items)),
        key=lambda i: (-(items[i].importance if items[i].importance is not None else 1.0), -i),
    )
    keep: set[int] = set()
    used = header
    for i in order:
        if used + items[i].tokens + 1 > budget:
            continue
        keep.add(i)
        used += items[i].tokens + 1
    return [m for i, m in enumerate(items) if i in keep], True


def _prompt_text(run: StrategyRun, turn: int | None) -> str:
    """The user message that starts ``turn`` (``None``: the last user message of the run)."""
    if turn is not None:
        index = turn + len(run.turns) if turn < 0 else turn
        if 0 <= index < len(run.turns):
            by_seq = run.messages_by_seq
            for seq in run.turns[index].ingested_seqs:
                if by_seq[seq].role == "user":
                    return by_seq[seq].content
    for message in reversed(run.messages):
        if message.role == "user":
            return message.content
    return ""


__all__ = ["ObserverParams", "ObserverStrategy"]
