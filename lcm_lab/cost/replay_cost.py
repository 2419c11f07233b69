"""What a replay costs: every main-model call priced through the provider cache, plus summarizer calls.

For each turn ``k`` the provider sees ``run.sent(k).messages`` (what the context engine
assembled, the host's appended prompt included) followed by the turn's own messages so far: each
assistant message of the transcript is one call, and tool results extend the prefix within the
turn. Only ``run.sent``, ``run.conversation``, ``run.turns`` and ``run.token_budget`` are used, so
any strategy's replay is priced the same way.

Two references put the number in context, both priced with the same calibration and cache:
**no compaction** (every call sees the whole history) and, when the host's compaction records are
given (``events``), the **recorded host** (what it actually sent, :mod:`lcm_lab.host.recorded`).

A :class:`SessionCost`'s ``total_usd`` is the rules' point (the cache behaving exactly as
documented); :meth:`SessionCost.bill` adds the misses the rules cannot predict and gives the
expected bill with its 90% interval (:mod:`lcm_lab.cost.intervals`). Every cost of one
conversation shares its calibration's miss model, so differences between them are paired.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from lcm_lab.cost.intervals import BillDraws, Interval, simulate_bill
from lcm_lab.cost.model import Calibration, CallCost, Request, simulate
from lcm_lab.cost.prices import Prices
from lcm_lab.cost.validate import billable, calibrate_on_calls, host_requests
from lcm_lab.engine.replay.turns import split_turns
from lcm_lab.engine.types import Conversation, SentContext, TurnRecord
from lcm_lab.host.recorded import SETTINGS_ENTRIES, in_context, is_call, recorded_calls, request_ms
from lcm_lab.io.model import RecordedEvent

HOST_COMPACTION_TYPES = frozenset({"compaction", "compact_boundary"})


class ReplayLike(Protocol):
    """What pricing needs from a replay (``lcm_lab.engine.replay.driver.Replay`` and other strategies)."""

    conversation: Conversation
    turns: tuple[TurnRecord, ...]
    token_budget: int

    def sent(self, turn: int | None = None, budget: int | None = None) -> SentContext: ...


@dataclass(frozen=True)
class SessionCost:
    """Priced calls of one replay and its session totals (``summarizer_usd`` from the ledger's
    per-call costs; ``unpriced_summarizer_calls`` had none; ``cached_summarizer_calls`` were
    answered from the ledger's cache, which bills them at $0 — rerun with ``--cache off`` or a
    fresh store to see what they cost the first time)."""

    calls: tuple[CallCost, ...]
    prices: Prices
    calibration: Calibration
    summarizer_calls: int
    summarizer_usd: float
    unpriced_summarizer_calls: int
    cached_summarizer_calls: int = 0
    failed_summarizer_calls: int = 0  # their summaries are the truncation fallback (the model gave none)
    warning: str | None = None  # some summarizer calls failed or have no price: the counts (session_cost)

    @property
    def main_usd(self) -> float:
        return sum(c.dollars for c in self.calls)

    @property
    def total_usd(self) -> float:
        return self.main_usd + self.summarizer_usd

    def bill(self) -> BillDraws | None:
        """The simulated bill (main model with unexplained misses, plus summarizer dollars), or
        ``None`` when the calibration carries no miss model (e.g. constants given by hand)."""
        misses = self.calibration.misses
        return None if misses is None else simulate_bill(self.calls, self.prices, misses, extra=self.summarizer_usd)

    def paired_difference(self, other: SessionCost) -> Interval | None:
        """``self − other`` as a paired :class:`~lcm_lab.cost.intervals.Interval` (same miss draws),
        or ``None`` when either has no miss model or the two were calibrated apart (not paired)."""
        if self.calibration.misses is None or self.calibration.misses is not other.calibration.misses:
            return None
        a, b = self.bill(), other.bill()
        return None if a is None or b is None else a.minus(b)

    @property
    def cache_hit_rate(self) -> float | None:
        """Token-weighted: prompt tokens read from the cache / all prompt tokens."""
        total = sum(c.prompt_tokens for c in self.calls)
        return None if total == 0 else sum(c.read for c in self.calls) / total

    def totals(self) -> dict[str, Any]:
        """Session totals as plain numbers (for tables and ``--json``): ``total_usd`` is the rules'
        point, ``expected_usd`` with ``expected_usd_p05`` .. ``_p95`` the bill with its 90% interval."""
        bill = self.bill()
        interval: dict[str, float | None] = dict.fromkeys(("expected_usd", "expected_usd_p05", "expected_usd_p95"))
        if bill is not None:
            interval.update(bill.interval().as_json("expected_usd"))
        return {
            "calls": len(self.calls),
            "cached_tokens": sum(c.read for c in self.calls),
            "written_tokens": sum(c.write for c in self.calls),
            "uncached_tokens": sum(c.uncached for c in self.calls),
            "output_tokens": sum(c.output for c in self.calls),
            "main_usd": self.main_usd,
            "summarizer_calls": self.summarizer_calls,
            "summarizer_usd": self.summarizer_usd,
            "unpriced_summarizer_calls": self.unpriced_summarizer_calls,
            "cached_summarizer_calls": self.cached_summarizer_calls,
            "failed_summarizer_calls": self.failed_summarizer_calls,
            "total_usd": self.total_usd,
            **interval,
            "cache_hit_rate": self.cache_hit_rate,
            "main_model": self.prices.model,
        }


def replay_requests(run: ReplayLike) -> list[Request]:
    """The main-model calls of a replay: ``sent(k)`` plus the turn's messages so far, per call."""
    conversation = run.conversation
    if not conversation.entries:
        raise ValueError(
            "pricing needs a transcript (its assistant messages are the calls, with timestamps); "
            "this replay comes from stored lcm.db rows only"
        )
    turns = split_turns(conversation.entries, conversation.meta.get("last_line"))
    chain = conversation.session_id
    if len(turns) != len(run.turns):
        raise ValueError(f"the replay has {len(run.turns)} turns but its transcript splits into {len(turns)}")
    out: list[Request] = []
    epoch, last_ms = 0, None
    seen: set[object] = set()
    for k, turn in enumerate(turns):
        sent = run.sent(k)
        base = tuple(sent.messages)
        own: list[Mapping[str, Any]] = []
        skip_prompt = sent.prompt is not None
        # A compaction (inline, drained after a turn, or an emergency drain in this very call)
        # shows as a summary the previous call did not see.
        summaries = {item.ref for item in sent.items if item.kind == "summary"}
        compacted = bool(summaries - seen)
        seen = summaries
        first = True
        for entry in turn.entries:
            epoch += entry.type in SETTINGS_ENTRIES
            message = entry.message
            if message is None:
                continue
            if skip_prompt and message.get("role") == "user":
                skip_prompt = False  # the host's appended prompt is already in sent.messages
                continue
            if is_call(message) and not _failed_unbilled(message):
                last_ms = request_ms(message, last_ms, entry)
                output = (message.get("usage") or {}).get("output", 0)
                out.append(
                    Request(
                        float(last_ms or 0), base + tuple(own), output_tokens=output if isinstance(output, int) else 0,
                        compacted=compacted and first, settings=str(epoch), turn_start=first, chain=chain,
                        meta={"turn": k, "line": entry.line, "path": sent.path, "chain": chain},
                    )
                )
                first = False
            if in_context(message):
                own.append(message)
    return out


def _failed_unbilled(message: Mapping[str, Any]) -> bool:
    # A request that failed before the provider processed it records all-zero usage: no call.
    usage = message.get("usage")
    return isinstance(usage, Mapping) and not any(usage.get(k) for k in ("input", "cacheRead", "cacheWrite"))


def _summarizer(turns: Iterable[TurnRecord]) -> tuple[int, float, int, int]:
    calls = [call for turn in turns for call in turn.calls]
    priced = [c.cost_usd for c in calls if c.cost_usd is not None]
    return len(calls), float(sum(priced)), len(calls) - len(priced), sum(1 for c in calls if c.cached)


def _unpriced_model_calls(turns: Iterable[TurnRecord]) -> str | None:
    """What to say of summarizer calls a named model answered that recorded no price (the cost map
    does not know the model): ``summarizer_usd`` leaves them out. Calls of a summarizer that names
    no model (``"unknown"``: the stubs, a function of the user's) and failed calls cost nothing to say."""
    models = Counter(c.model for t in turns for c in t.calls if c.cost_usd is None and c.failure is None and c.model != "unknown")
    if not models:
        return None
    named = ", ".join(f"{model} ×{count}" for model, count in models.most_common())
    return f"{sum(models.values())} summarizer calls recorded no price ({named}: not in the cost map); summarizer_usd leaves them out"


def calibrate_conversation(conversation: Conversation, prices: Prices, events: Sequence[RecordedEvent] | None = None) -> Calibration:
    """Calibrate on the recorded host calls of ``conversation`` (first 10%), or explain what is missing."""
    calls = recorded_calls(conversation, events or ())
    if not any(c.has_usage for c in calls):
        raise ValueError(
            "the transcript records no provider usage to calibrate on; pass calibration=Calibration("
            "system_tokens={'main': N}, ratio=R) (e.g. from another session of the same host)"
        )
    if events is None and any(e.type in HOST_COMPACTION_TYPES for e in conversation.entries):
        first_compaction = min(e.line for e in conversation.entries if e.type in HOST_COMPACTION_TYPES)
        window = calls[: max(1, -(-len(calls) // 10))]
        if any(c.line > first_compaction for c in window):
            raise ValueError("the host compacted inside the calibration window; pass events=loaded.events")
    return calibrate_on_calls(calls, prices)


def session_cost(run: ReplayLike, prices: Prices, calibration: Calibration, summarizer: object = None, *, warn: bool = True) -> SessionCost:
    """Price a replay's main-model calls and add its summarizer calls.

    Failed summarizer calls follow the lab's one rule (:mod:`lcm_lab.summarizers.call_checks`): a
    replay whose every model call failed is not priced (:class:`ModelCallsFailedError`: its
    context is the truncation fallback's, not the model's). Some failed calls, and calls a named
    model answered that recorded no price (``summarizer_usd`` leaves their dollars out), make the result partial:
    they are counted (``failed_summarizer_calls``, ``unpriced_summarizer_calls``), said in
    ``warning`` and issued as one :class:`~lcm_lab.summarizers.call_checks.ModelCallsWarning` at
    the caller's line, which a notebook shows under the cell. ``warn=False`` is for a caller that
    says it in its own words (a sweep counts its runs' failed calls). With the run's model
    ``summarizer`` its summaries not shorter than their input count as well."""
    from lcm_lab.summarizers.call_checks import check_calls, run_calls, warn_failed_calls

    where = run.conversation.session_id
    failed, warning = check_calls(run_calls(run, summarizer), where, "the replay was not priced")
    calls = simulate(replay_requests(run), calibration, prices)
    n, usd, unpriced, cached = _summarizer(run.turns)
    if note := _unpriced_model_calls(run.turns):
        warning = f"{warning}; {note}" if warning else f"{where}: {note}"
    if warn:
        warn_failed_calls(failed, warning)
    return SessionCost(calls, prices, calibration, n, usd, unpriced, cached, failed, warning)


def reference_costs(
    conversation: Conversation, prices: Prices, calibration: Calibration, events: Sequence[RecordedEvent] | None = None
) -> dict[str, SessionCost]:
    """The session priced with no compaction at all, and as the recorded host sent it (with ``events``)."""
    out: dict[str, SessionCost] = {}
    full = [c for _, c in billable(recorded_calls(conversation))]
    out["no_compaction"] = SessionCost(simulate(host_requests(full), calibration, prices), prices, calibration, 0, 0.0, 0)
    if events is not None:
        host = [c for _, c in billable(recorded_calls(conversation, events))]
        out["recorded_host"] = SessionCost(simulate(host_requests(host), calibration, prices), prices, calibration, 0, 0.0, 0)
    return out
