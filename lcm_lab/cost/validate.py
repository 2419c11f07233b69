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

Those measure the rules. The **bill** adds the misses the rules cannot predict
(:mod:`lcm_lab.cost.misses`, :mod:`lcm_lab.cost.intervals`): ``predicted_cost_usd`` is the
expected held-out bill with its 90% interval ``predicted_cost_usd_p05`` .. ``_p95``
(``recorded_inside_90``, ``expected_cost_error``, ``interval_width_share``); and
``window_coverage_90`` is the share of consecutive windows of :data:`WINDOW_CALLS` held-out calls
whose recorded dollars fall inside the window's own 90% interval (the intervals' calibration).

Calls whose usage is all zeros (failed before the provider processed them) are neither simulated
nor scored; ``calls_without_usage`` counts them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lcm_lab.cost.calibrate import calibration_window, fit_calibration
from lcm_lab.cost.intervals import simulate_bill, window_draws
from lcm_lab.cost.misses import Exposure, SessionEvidence, bundled_evidence, exposures, fit_miss_model
from lcm_lab.cost.model import Calibration, CallCost, Request, estimated_tokens, simulate
from lcm_lab.cost.prices import Prices
from lcm_lab.cost.serialise import BlockCache
from lcm_lab.errors import InputError
from lcm_lab.host.recorded import HostCall
from lcm_lab.summarizers.responses import MAX_USAGE_TOKENS

WINDOW_CALLS = 50  # held-out calls per calibration window of the intervals (a shorter tail joins the last one)
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
        raise InputError("no call in the transcript records its model (or its usage); name the model to price "
                         "(--main-model, or main_model= in the library)")
    return models.most_common(1)[0][0]


def billable(calls: Sequence[HostCall]) -> list[tuple[int, HostCall]]:
    """``(position, call)`` of the calls the provider processed (usage recorded, or no usage
    field at all); a skipped call's host-compaction mark moves to the next kept call. A call whose
    recorded usage is unusable (``HostCall.usage_problem``) is skipped too: its numbers would be
    compared as the provider's (:func:`bad_usage_warning` counts them)."""
    out: list[tuple[int, HostCall]] = []
    pending = False
    for i, call in enumerate(calls):
        if call.usage_problem is not None or (call.usage is not None and not call.has_usage):
            pending = pending or call.host_compaction
            continue
        out.append((i, replace(call, host_compaction=True) if pending else call))
        pending = False
    return out


def bad_usage_warning(calls: Sequence[HostCall], where: str) -> str | None:
    """One line counting the calls whose recorded usage was skipped as unusable, or ``None``."""
    bad = [c.usage_problem for c in calls if c.usage_problem is not None]
    if not bad:
        return None
    return (f"{where}: {len(bad)} of {len(calls)} calls record usage that is not a whole number of tokens from 0 to "
            f"{MAX_USAGE_TOKENS:,} or a cost that is not a finite number ≥ 0 (first: {bad[0]}); they were skipped")  # fmt: skip


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
                chain=call.chain,
                meta={"line": call.line, "turn": call.turn, "chain": call.chain},
            )
        )
    return out


def session_key(calls: Sequence[HostCall]) -> str:
    """The session a call list belongs to: its main chain's id (what the bundled evidence names)."""
    return next((c.chain for c in calls if c.agent == "main"), calls[0].chain if calls else "")


def _window_exposures(calls: Sequence[HostCall], predicted: Sequence[CallCost]) -> dict[str, Exposure]:
    return exposures([p.miss_class for p in predicted], [p.gap_s for p in predicted],
                     [not (c.usage or {}).get("cacheRead") for c in calls])  # fmt: skip


def calibrate_on_calls(calls: Sequence[HostCall], prices: Prices, *, evidence: Sequence[SessionEvidence] | None = None) -> Calibration:
    """Calibration on the first 10% of ``calls`` (the ones with recorded usage among them).

    Sizes come from :func:`~lcm_lab.cost.calibrate.fit_calibration`. The miss model
    (:func:`~lcm_lab.cost.misses.fit_miss_model`) sees the window's calls exposed to an
    unexplained miss and whether each read nothing, with its prior from ``evidence`` (default: the
    bundled sessions) minus this very session (:func:`session_key`).
    """
    window = [c for c in calls[: calibration_window(len(calls))] if c.has_usage]
    blocks = BlockCache()
    sized = fit_calibration([(estimated_tokens(c.messages, blocks), c.agent, c.recorded_prompt_tokens or 0) for c in window])
    own = _window_exposures(window, simulate(host_requests(window), sized, prices))
    misses = fit_miss_model(own, bundled_evidence() if evidence is None else evidence, exclude=session_key(calls))
    seen = ", ".join(f"{name} misses {e.misses}/{e.calls}" for name, e in own.items())
    return replace(sized, misses=misses, fitted_on=f"{sized.fitted_on}; window {seen}")


def held_out_windows(n: int, size: int = WINDOW_CALLS) -> list[range]:
    """Consecutive windows of ``size`` over ``n`` held-out calls; a tail under half a window joins the last.

    >>> [len(w) for w in held_out_windows(120)], [len(w) for w in held_out_windows(140)]
    ([50, 70], [50, 50, 40])
    """
    starts = list(range(0, n, size))
    if len(starts) > 1 and n - starts[-1] < size / 2:
        starts.pop()
    return [range(a, b) for a, b in zip(starts, [*starts[1:], n], strict=True)]


def session_evidence(calls: Sequence[HostCall], prices: Prices, *, session: str = "") -> SessionEvidence:
    """What one session says about unexplained misses (every exposed call, window or held out)
    and about size drift (per window of held-out calls), from the rules' predictions alone."""
    window = calibration_window(len(calls))
    calibration = calibrate_on_calls(calls, prices, evidence=())
    used = billable(calls)
    predicted = simulate(host_requests([c for _, c in used]), calibration, prices)
    classes = _window_exposures([c for _, c in used], predicted)
    held = [(p, c) for (i, c), p in zip(used, predicted, strict=True) if i >= window]
    drift = []
    for w in held_out_windows(len(held)):
        pred = sum(held[i][0].prompt_tokens for i in w)
        rec = sum(held[i][1].recorded_prompt_tokens or 0 for i in w)
        if pred and rec:
            drift.append(float(np.log(rec / pred)))
    return SessionEvidence(session, session_key(calls), prices.model, classes, tuple(drift))


def _err(pred: Sequence[float], rec: Sequence[float]) -> float | None:
    total = sum(rec)
    return None if total == 0 else sum(abs(p - r) for p, r in zip(pred, rec, strict=True)) / total


def _total_err(pred: Sequence[float], rec: Sequence[float]) -> float | None:
    total = sum(rec)
    return None if total == 0 else (sum(pred) - total) / total


def validate_recorded(
    calls: Sequence[HostCall], prices: Prices, *, session: str = "", evidence: Sequence[SessionEvidence] | None = None
) -> Validation:
    """Calibrate on the first 10% of ``calls``, freeze, and compare the rest with recorded usage
    (``evidence``: the other sessions the miss model's prior comes from, default the bundled ones)."""
    window = calibration_window(len(calls))
    calibration = calibrate_on_calls(calls, prices, evidence=evidence)
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
        "rules_cost_usd": sum(p.dollars for p, _ in pairs),
        "recorded_cost_usd": sum(r.dollars for _, r in pairs),
        "recorded_cost_usd_all_calls": sum(r.dollars for r in recorded),
        "recorded_dollars_source": sorted({r.dollars_source for r in recorded}),
        **_bill_summary(calibration, prices, pairs),
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


def _bill_summary(calibration: Calibration, prices: Prices, pairs: Sequence[tuple[CallCost, RecordedUsage]]) -> dict[str, Any]:
    """The held-out bill with its 90% interval, and the intervals' coverage over windows of held-out calls."""
    model = calibration.misses
    if model is None or not pairs:
        return {}
    predicted = [p for p, _ in pairs]
    recorded = np.asarray([r.dollars for _, r in pairs])
    bill = simulate_bill(predicted, prices, model).interval()
    total = float(recorded.sum())
    per_call = window_draws(predicted, prices, model)
    windows = []
    for w in held_out_windows(len(pairs)):
        sums = per_call[:, w.start : w.stop].sum(axis=1)
        low, high = np.quantile(sums, [0.05, 0.95])
        rec = float(recorded[w.start : w.stop].sum())
        windows.append({"first_call": w.start, "calls": len(w), "recorded_usd": rec, "expected_usd": float(sums.mean()),
                        "rules_usd": sum(p.dollars for p in predicted[w.start : w.stop]),
                        "p05": float(low), "p95": float(high), "inside": bool(low <= rec <= high)})  # fmt: skip
    inside = [w["inside"] for w in windows]
    exposed = [(p, r) for p, r in pairs if p.miss_class is not None]
    return {
        **bill.as_json("predicted_cost_usd"),
        "recorded_inside_90": bill.low <= total <= bill.high,
        "expected_cost_error": (bill.expected - total) / total if total else None,
        "interval_width_share": (bill.high - bill.low) / total if total else None,
        "window_coverage_90": sum(inside) / len(inside) if inside else None,
        "windows": len(inside),
        "windows_inside": sum(inside),
        "window_intervals": windows,
        "expected_unexplained_misses": float(sum(model.miss_probability(str(p.miss_class), p.gap_s or 0.0).mean() for p, _ in exposed)),
        "recorded_unexplained_misses": sum(1 for _, r in exposed if r.read == 0),
        "exposed_calls": len(exposed),
        "miss_model": model.summary(),
    }


VALIDATION_KEYS = (
    "calls",
    "calibration_calls",
    "held_out_calls",
    "predicted_cache_read_tokens",
    "recorded_cache_read_tokens",
    "predicted_cost_usd",
    "predicted_cost_usd_p05",
    "predicted_cost_usd_p95",
    "recorded_cost_usd",
    "window_coverage_90",
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
        **v.summary,
    }


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def validation_markdown(records: Sequence[Mapping[str, Any]]) -> str:
    """The validation tables (held-out calls only) as Markdown: the rules call by call, the bill
    with its 90% interval, and the miss model's prior and posterior.

    >>> print(validation_markdown([{"session": "s", "model": "m", "calls": 10, "calibration_calls": 1,
    ...     "held_out_calls": 9, "read_error": 0.05, "write_error": 0.5, "cost_error": 0.1,
    ...     "total_cost_error": -0.02, "hit_miss_accuracy": 0.95, "majority_baseline": 0.9,
    ...     "rules_cost_usd": 1.0, "recorded_cost_usd": 1.02}]).splitlines()[2])
    | s | m | 10 | 1 | 9 | 5.0% | 50.0% | 10.0% | -2.0% | 95.0% (90.0%) | $1.00 / $1.02 |
    """
    lines = [
        "| session | model | calls | calibration calls | held-out calls | cache-read error | cache-write error "
        "| cost error | total cost bias | hit/miss right (always-majority) | rules' / recorded $ (held-out) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['session']} | {r['model']} | {r['calls']} | {r['calibration_calls']} | {r['held_out_calls']} "
            f"| {_pct(r['read_error'])} | {_pct(r['write_error'])} | {_pct(r['cost_error'])} | {_pct(r['total_cost_error'])} "
            f"| {_pct(r['hit_miss_accuracy'])} ({_pct(r['majority_baseline'])}) "
            f"| ${r['rules_cost_usd']:.2f} / ${r['recorded_cost_usd']:.2f} |"
        )
    billed = [r for r in records if "predicted_cost_usd" in r]
    if billed:
        lines += ["", "| session | recorded $ | rules' point $ | expected $ [90% interval] | recorded inside | expected-bill error "
                  "| interval width | windows inside their 90% interval | unexplained misses expected / recorded |",
                  "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in billed:
            lines.append(
                f"| {r['session']} | {r['recorded_cost_usd']:.2f} | {r['rules_cost_usd']:.2f} | {r['predicted_cost_usd']:.2f} "
                f"[{r['predicted_cost_usd_p05']:.2f}, {r['predicted_cost_usd_p95']:.2f}] | {'yes' if r['recorded_inside_90'] else '**no**'} "
                f"| {_signed(r['expected_cost_error'])} | {_pct(r['interval_width_share'])} "
                f"| {r['windows_inside']}/{r['windows']} ({_pct(r['window_coverage_90'])}) "
                f"| {r['expected_unexplained_misses']:.1f} / {r['recorded_unexplained_misses']} of {r['exposed_calls']} |"
            )
        inside = sum(r["windows_inside"] for r in billed)
        windows = sum(r["windows"] for r in billed)
        lines.append(f"| all sessions | | | | {sum(bool(r['recorded_inside_90']) for r in billed)}/{len(billed)} | | "
                     f"| {inside}/{windows} ({_pct(inside / windows if windows else None)}) | |")
        lines += ["", "| session | prior from | turn start, miss chance at 60 s idle: prior → own window → posterior "
                  "| mid-turn, at 5 s: prior → own window → posterior | size drift (log ratio) |", "|---|---|---|---|---|"]  # fmt: skip
        for r in billed:
            m = r["miss_model"]
            lines.append(f"| {r['session']} | {', '.join(m['sources']) or '–'} | {_moved(m['turn_start'])} | {_moved(m['mid_turn'])} "
                         f"| {m['size_drift']['mean']:+.3f} ± {m['size_drift']['sd']:.3f} |")
    return "\n".join(lines)


def _signed(value: Any) -> str:
    return "–" if value is None else f"{100 * value:+.1f}%"


def _moved(row: Mapping[str, Any]) -> str:
    def p(d: Mapping[str, float]) -> str:
        return f"{_pct(d['mean'])} [{_pct(d['p05'])}, {_pct(d['p95'])}]"

    return f"{p(row['prior'])} → {row['window_misses']}/{row['window_calls']} → {p(row['posterior'])}"
