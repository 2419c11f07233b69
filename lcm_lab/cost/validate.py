"""Validate the cache model against a session's recorded provider usage.

The recorded host's requests (:func:`lcm_lab.host.recorded_calls`) go through the cache model
with constants calibrated on the first 10% of calls and frozen (:mod:`lcm_lab.cost.calibrate`);
every number below is measured on the remaining (held-out) calls only:

* ``read_error``, ``write_error``, ``cost_error``: token- (or dollar-) weighted absolute error,
  ``Σ|predicted − recorded| / Σ recorded`` over held-out calls (per call, so errors of opposite
  sign do not cancel); ``input_cost_error`` leaves the recorded output tokens out of both sides;
* ``hit_miss_accuracy``: share of held-out calls where "read anything from the cache" is
  predicted right, next to its control ``majority_baseline`` (always guessing the more common
  outcome) and ``miss_recall`` (recorded misses predicted as misses).

Calls whose usage is all zeros (failed before the provider processed them) are neither simulated
nor scored; ``calls_without_usage`` counts them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lcm_lab.cost.calibrate import calibration_window, fit_calibration
from lcm_lab.cost.model import Calibration, CallCost, Request, estimated_tokens, simulate
from lcm_lab.cost.prices import Prices
from lcm_lab.cost.serialise import BlockCache
from lcm_lab.host.recorded import HostCall

MIN_TURN_STARTS = 5
# The real sessions the model is validated on (docs/cost.md), relative to the repository's datasets/.
BUNDLED_SESSIONS = (
    "pi-mono/before-compaction.jsonl",
    "pi-mono/large-session.jsonl",
    "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
)


@dataclass(frozen=True)
class RecordedUsage:
    """What the provider billed for one call."""

    read: int
    write: int
    uncached: int
    output: int
    dollars: float
    dollars_source: str  # "transcript" (usage.cost.total) or "priced" (recorded tokens x cost map)

    @property
    def prompt_tokens(self) -> int:
        return self.read + self.write + self.uncached


@dataclass(frozen=True)
class Validation:
    """Recorded vs predicted usage of one session, with the held-out summary."""

    session: str
    model: str
    calibration: Calibration
    calibration_calls: int
    calls: int
    calls_without_usage: int
    predicted: tuple[CallCost, ...]
    recorded: tuple[RecordedUsage, ...]
    held_out: tuple[bool, ...]
    summary: Mapping[str, Any] = field(default_factory=dict)


def recorded_usage(call: HostCall, prices: Prices) -> RecordedUsage:
    """The recorded usage of ``call``; dollars from the transcript when it logged them."""
    usage = call.usage or {}

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    read, write, uncached, output = count("cacheRead"), count("cacheWrite"), count("input"), count("output")
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, Mapping) else None
    if isinstance(total, int | float) and total > 0:
        return RecordedUsage(read, write, uncached, output, float(total), "transcript")
    return RecordedUsage(read, write, uncached, output, prices.dollars(read=read, write=write, uncached=uncached, output=output), "priced")


def session_model(calls: Sequence[HostCall]) -> str:
    """The model most calls with usage went to."""
    models = Counter(c.model for c in calls if c.has_usage and c.model)
    if not models:
        raise ValueError("no call records a model; pass the main model explicitly")
    return models.most_common(1)[0][0]


def billable(calls: Sequence[HostCall]) -> list[tuple[int, HostCall]]:
    """``(position, call)`` of the calls the provider processed (usage recorded, or no usage
    field at all); a skipped call's host-compaction mark moves to the next kept call."""
    out: list[tuple[int, HostCall]] = []
    pending = False
    for i, call in enumerate(calls):
        if call.usage is not None and not call.has_usage:
            pending = pending or call.host_compaction
            continue
        out.append((i, replace(call, host_compaction=True) if pending else call))
        pending = False
    return out


def host_requests(calls: Sequence[HostCall]) -> list[Request]:
    """Requests of the recorded host's calls (recorded output tokens carried along)."""
    out = []
    for call in calls:
        output = (call.usage or {}).get("output", 0)
        out.append(
            Request(
                float(call.timestamp_ms or 0),
                call.messages,
                agent=call.agent,
                output_tokens=output if isinstance(output, int) else 0,
                host_compaction=call.host_compaction,
                settings=str(call.settings_epoch),
                turn_start=call.turn_start,
                meta={"line": call.line, "turn": call.turn, "chain": call.chain},
            )
        )
    return out


def calibrate_on_calls(calls: Sequence[HostCall], prices: Prices) -> Calibration:
    """Calibration on the first 10% of ``calls`` (the ones with recorded usage among them).

    Sizes come from :func:`~lcm_lab.cost.calibrate.fit_calibration`; the turn-start miss rate is
    the share ``k / n`` of the window's first-of-turn calls (not a chain's first call) that the
    rules predict to hit (``n``) but that recorded no cache read (``k``), and 0 when ``n`` is
    below :data:`MIN_TURN_STARTS` (too few to estimate a rate).
    """
    window = [c for c in calls[: calibration_window(len(calls))] if c.has_usage]
    blocks = BlockCache()
    sized = fit_calibration([(estimated_tokens(c.messages, blocks), c.agent, c.recorded_prompt_tokens or 0) for c in window])
    predicted = simulate(host_requests(window), sized, prices)
    seen: set[str] = set()
    starts = []
    for p, c in zip(predicted, window, strict=True):
        if c.turn_start and p.hit and c.chain in seen:
            starts.append(c)
        seen.add(c.chain)
    missed = sum(1 for c in starts if not (c.usage or {}).get("cacheRead"))
    rate = missed / len(starts) if len(starts) >= MIN_TURN_STARTS else 0.0
    return replace(sized, turn_start_miss_rate=rate, fitted_on=f"{sized.fitted_on}; turn-start misses {missed}/{len(starts)}")


def _err(pred: Sequence[float], rec: Sequence[float]) -> float | None:
    total = sum(rec)
    return None if total == 0 else sum(abs(p - r) for p, r in zip(pred, rec, strict=True)) / total


def _total_err(pred: Sequence[float], rec: Sequence[float]) -> float | None:
    total = sum(rec)
    return None if total == 0 else (sum(pred) - total) / total


def validate_recorded(calls: Sequence[HostCall], prices: Prices, *, session: str = "") -> Validation:
    """Calibrate on the first 10% of ``calls``, freeze, and compare the rest with recorded usage."""
    window = calibration_window(len(calls))
    calibration = calibrate_on_calls(calls, prices)
    used = billable(calls)
    predicted = simulate(host_requests([c for _, c in used]), calibration, prices)
    recorded = tuple(recorded_usage(c, prices) for _, c in used)
    held = tuple(i >= window for i, _ in used)
    pairs = [(p, r) for p, r, h in zip(predicted, recorded, held, strict=True) if h]
    hits = [(p.hit, r.read > 0) for p, r in pairs]
    recorded_hit_share = sum(r for _, r in hits) / len(hits) if hits else 0.0
    misses = [p for p, r in hits if not r]
    summary = {
        "held_out_calls": len(pairs),
        "read_error": _err([p.read for p, _ in pairs], [r.read for _, r in pairs]),
        "write_error": _err([p.write for p, _ in pairs], [r.write for _, r in pairs]),
        "prompt_error": _err([p.prompt_tokens for p, _ in pairs], [r.prompt_tokens for _, r in pairs]),
        "cost_error": _err([p.dollars for p, _ in pairs], [r.dollars for _, r in pairs]),
        "input_cost_error": _err(
            [p.dollars - prices.dollars(output=p.output, uncached=0) for p, _ in pairs],
            [r.dollars - prices.dollars(output=r.output, uncached=0) for _, r in pairs],
        ),
        "total_read_error": _total_err([p.read for p, _ in pairs], [r.read for _, r in pairs]),
        "total_write_error": _total_err([p.write for p, _ in pairs], [r.write for _, r in pairs]),
        "total_cost_error": _total_err([p.dollars for p, _ in pairs], [r.dollars for _, r in pairs]),
        "hit_miss_accuracy": sum(p == r for p, r in hits) / len(hits) if hits else None,
        "majority_baseline": max(recorded_hit_share, 1 - recorded_hit_share) if hits else None,
        "recorded_misses": len(misses),
        "miss_recall": (sum(not p for p in misses) / len(misses)) if misses else None,
        "predicted_cache_read_tokens": sum(p.read for p, _ in pairs),
        "recorded_cache_read_tokens": sum(r.read for _, r in pairs),
        "predicted_cache_write_tokens": sum(p.write for p, _ in pairs),
        "recorded_cache_write_tokens": sum(r.write for _, r in pairs),
        "predicted_cost_usd": sum(p.dollars for p, _ in pairs),
        "recorded_cost_usd": sum(r.dollars for _, r in pairs),
        "recorded_cost_usd_all_calls": sum(r.dollars for r in recorded),
        "recorded_dollars_source": sorted({r.dollars_source for r in recorded}),
    }
    return Validation(
        session=session,
        model=prices.model,
        calibration=calibration,
        calibration_calls=window,
        calls=len(calls),
        calls_without_usage=len(calls) - len(used),
        predicted=predicted,
        recorded=recorded,
        held_out=held,
        summary=summary,
    )


VALIDATION_KEYS = (
    "calls",
    "calibration_calls",
    "held_out_calls",
    "predicted_cache_read_tokens",
    "recorded_cache_read_tokens",
    "predicted_cost_usd",
    "recorded_cost_usd",
    "read_error",
    "write_error",
    "cost_error",
    "hit_miss_accuracy",
)


def validation_record(v: Validation) -> dict[str, Any]:
    """One session's validation as a flat JSON-ready dict (held-out numbers, calibration, controls)."""
    return {
        "session": v.session,
        "model": v.model,
        "calls": v.calls,
        "calibration_calls": v.calibration_calls,
        "calls_without_usage": v.calls_without_usage,
        "system_tokens": dict(v.calibration.system_tokens),
        "tokenizer_ratio": v.calibration.ratio,
        "turn_start_miss_rate": v.calibration.turn_start_miss_rate,
        **v.summary,
    }


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def validation_markdown(records: Sequence[Mapping[str, Any]]) -> str:
    """The validation table (held-out calls only) as Markdown.

    >>> print(validation_markdown([{"session": "s", "model": "m", "calls": 10, "calibration_calls": 1,
    ...     "held_out_calls": 9, "read_error": 0.05, "write_error": 0.5, "cost_error": 0.1,
    ...     "total_cost_error": -0.02, "hit_miss_accuracy": 0.95, "majority_baseline": 0.9,
    ...     "predicted_cost_usd": 1.0, "recorded_cost_usd": 1.02}]).splitlines()[2])
    | s | m | 10 | 1 | 9 | 5.0% | 50.0% | 10.0% | -2.0% | 95.0% (90.0%) | $1.00 / $1.02 |
    """
    lines = [
        "| session | model | calls | calibration calls | held-out calls | cache-read error | cache-write error "
        "| cost error | total cost bias | hit/miss right (always-majority) | predicted / recorded $ (held-out) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['session']} | {r['model']} | {r['calls']} | {r['calibration_calls']} | {r['held_out_calls']} "
            f"| {_pct(r['read_error'])} | {_pct(r['write_error'])} | {_pct(r['cost_error'])} | {_pct(r['total_cost_error'])} "
            f"| {_pct(r['hit_miss_accuracy'])} ({_pct(r['majority_baseline'])}) "
            f"| ${r['predicted_cost_usd']:.2f} / ${r['recorded_cost_usd']:.2f} |"
        )
    return "\n".join(lines)
