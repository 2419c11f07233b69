"""Verdicts in words: which of two settings is better on a headline, by how much, how sure.

Every sentence the demo prints, the report's first screen shows and the notebooks end with comes
from :func:`verdict` over two :class:`Reading` values (one headline of each setting, as
:mod:`lcm_lab.metrics.headline` stores it) and, when the scorer paired the two settings on the
same items, their :class:`Difference`. Nothing here is hard-coded: the words follow the numbers.

The outcome is one of

- ``"better"`` / ``"worse"``: the 95% interval of the difference excludes 0;
- ``"within noise"``: it includes 0 (the data cannot tell the two apart);
- ``"n too small"``: fewer than :data:`MIN_ITEMS` items behind either reading, or no interval;
- ``"withheld"``: a reading has no value (its scale is undefined; the reason is given).

Without a paired difference the two readings' intervals are combined as independent (normal
approximation, the half-widths added in quadrature): wider than a paired interval, so a
"better" found that way is conservative, and the sentence says "unpaired".

>>> a = Reading("defaults", 0.20, 0.10, 0.30, n=150, unit="qa item")
>>> b = Reading("tight", 0.50, 0.40, 0.60, n=150, unit="qa item")
>>> v = verdict_in_words("qa_retention", a, b)
>>> v.outcome, v.winner, round(v.diff, 2)
('better', 'tight', 0.3)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

MIN_ITEMS = 10  # fewer items behind a reading: an interval from them says little, so no verdict
Outcome = Literal["better", "worse", "within noise", "n too small", "withheld"]

# What each headline measures, in words a newcomer reads (docs/glossary.md defines the terms).
MEANINGS: dict[str, str] = {
    "qa_retention": "LoCoMo answers the model can still find (0 = plain truncation, 1 = the gold evidence alone)",
    "fact_retention": "hard facts (paths, ids, numbers) the model can still see (0 = plain truncation, 1 = the full history)",
    "decision_retention": "decisions of the conversation the model can still see (0 = plain truncation, 1 = the full history)",
    "todo_retention": "open TODOs of the conversation the model can still see (0 = plain truncation, 1 = the full history)",
    "recoverability": "lost items that grep, describe and expand find again",
    "cost_usd": "the expected bill in dollars",
    "cache_hit_rate": "share of prompt tokens read from the provider's cache",
}
LOWER_IS_BETTER: frozenset[str] = frozenset({"cost_usd"})
# The headlines a verdict is stated on, in the order sentences are printed.
VERDICT_METRICS: tuple[str, ...] = tuple(MEANINGS)


class Reading(NamedTuple):
    """One setting's headline: value with its 95% interval, over ``n`` items of ``unit``."""

    label: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    unit: str = "item"
    withheld: str | None = None


class Difference(NamedTuple):
    """``b − a`` with its interval, as a paired scorer reports it (same items on both sides)."""

    diff: float
    ci_low: float
    ci_high: float
    n: int
    unit: str
    paired: bool = True
    confidence: float = 0.95


@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing setting ``b`` with setting ``a`` on one headline, and its sentence."""

    metric: str
    a: Reading
    b: Reading
    outcome: Outcome
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    paired: bool
    winner: str | None
    text: str


def _finite(x: float | None) -> bool:
    return x is not None and not math.isnan(x)


def _fmt(x: float, signed: bool = False) -> str:
    text = f"{x:+.2f}" if signed else f"{x:.2f}"
    return text.replace("-", "−")


def _unpaired(a: Reading, b: Reading) -> Difference | None:
    if not all(_finite(x) for x in (a.value, b.value, a.ci_low, a.ci_high, b.ci_low, b.ci_high)):
        return None
    assert a.value is not None and b.value is not None
    half_a = (float(a.ci_high) - float(a.ci_low)) / 2  # type: ignore[arg-type]
    half_b = (float(b.ci_high) - float(b.ci_low)) / 2  # type: ignore[arg-type]
    half = math.hypot(half_a, half_b)
    diff = b.value - a.value
    return Difference(diff, diff - half, diff + half, min(a.n, b.n), a.unit, paired=False)


def verdict_in_words(metric: str, a: Reading, b: Reading, difference: Difference | None = None, *,
            lower_is_better: bool | None = None, min_items: int = MIN_ITEMS) -> Verdict:
    """Compare ``b`` with ``a`` on ``metric`` and say it in one sentence (see the module docstring)."""
    lower = metric in LOWER_IS_BETTER if lower_is_better is None else lower_is_better
    head = f"{metric}: {b.label} {_value(b)} vs {a.label} {_value(a)}"

    def done(outcome: Outcome, text: str, d: Difference | None = None, winner: str | None = None) -> Verdict:
        return Verdict(metric, a, b, outcome, d.diff if d else None, d.ci_low if d else None, d.ci_high if d else None,
                       bool(d and d.paired), winner, text)

    for r in (a, b):
        if not _finite(r.value):
            return done("withheld", f"{head}: no verdict, the reading of {r.label} is withheld ({r.withheld or 'no value'}).")
    n = difference.n if difference else min(a.n, b.n)
    if n < min_items:
        return done("n too small", f"{head}: no verdict, only {n} {_plural(a.unit, n)} behind it (at least {min_items} needed).")
    d = difference or _unpaired(a, b)
    if d is None or not (_finite(d.ci_low) and _finite(d.ci_high)):
        return done("n too small", f"{head}: no verdict, there is no interval to judge the difference by.")
    basis = f"{d.confidence:.0%} interval {_fmt(d.ci_low, True)} to {_fmt(d.ci_high, True)}, {d.n:,} {_plural(d.unit, d.n)}, {'paired' if d.paired else 'unpaired'}"
    change = f"{_fmt(d.diff, True)} ({basis})"
    if d.ci_low <= 0 <= d.ci_high:
        return done("within noise", f"{head}, {change}: within noise, the data cannot tell these two settings apart.", d)
    b_higher = d.ci_low > 0
    b_wins = b_higher != lower
    winner, loser = (b, a) if b_wins else (a, b)
    outcome: Outcome = "better" if b_wins else "worse"
    return done(outcome, f"{head}, {change}: {winner.label} is better than {loser.label} beyond noise.", d, winner.label)


def _value(r: Reading) -> str:
    if not _finite(r.value):
        return "(withheld)"
    assert r.value is not None
    return _fmt(r.value)


def _plural(unit: str, n: int) -> str:
    """``unit`` for ``n`` of it.

    >>> _plural("summary", 2), _plural("fact", 1), _plural("todo", 19), _plural("day", 3)
    ('summaries', 'fact', 'todos', 'days')
    """
    if n == 1 or unit.endswith("s"):
        return unit
    return f"{unit[:-1]}ies" if unit.endswith("y") and unit[-2:-1] not in ("a", "e", "i", "o", "u") else f"{unit}s"


def scale(details: Mapping[str, Any]) -> tuple[float, float]:
    """The values a stored headline can take: a raw share lies in [0, 1], so a normalised one lies in
    ``[(0 − floor) / (ceiling − floor), (1 − floor) / (ceiling − floor)]``; dollars are at least 0."""
    floor, ceiling = details.get("floor"), details.get("ceiling")
    if details.get("normalised", True) and floor is not None and ceiling is not None and ceiling - floor > 0:
        return (0 - floor) / (ceiling - floor), (1 - floor) / (ceiling - floor)
    return (0.0, math.inf) if details.get("unit") == "usd" or "p05" in details else (0.0, 1.0)


def clipped_interval(lo: float | None, hi: float | None, bounds: tuple[float, float]) -> tuple[float, float] | None:
    """``(lo, hi)`` clipped to ``bounds``; None when either end is missing or NaN."""
    if not (_finite(lo) and _finite(hi)):
        return None
    assert lo is not None and hi is not None
    return max(lo, bounds[0]), min(hi, bounds[1])


def interval_text(value: float | None, details: Mapping[str, Any], digits: int = 3) -> str:
    """``[lo, hi]`` of a stored headline within its :func:`scale`; empty around a missing value."""
    if not _finite(value):
        return ""
    ci = clipped_interval(details.get("ci_low"), details.get("ci_high"), scale(details))
    return "" if ci is None else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def reading(label: str, details: Mapping[str, Any] | str | None, value: float | None) -> Reading:
    """A :class:`Reading` from a stored headline (its ``value`` and ``details``, JSON text or a mapping);
    the interval is clipped to the headline's :func:`scale`."""
    info = json.loads(details) if isinstance(details, str) else dict(details or {})
    value = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
    ci = clipped_interval(info.get("ci_low"), info.get("ci_high"), scale(info)) if value is not None else None
    return Reading(label, value, ci[0] if ci else None, ci[1] if ci else None,
                   int(info.get("n") or 0), str(info.get("unit") or "item").replace("_", " "),
                   info.get("withheld") or info.get("reason"))


def headline_readings(scores: Any, metrics: Sequence[str]) -> dict[tuple[str, str], tuple[Any, Any]]:
    """``(run_id, metric) -> (value, details)`` of the run-scope headlines in a ``scores_df()`` frame."""
    if scores is None or len(scores) == 0:
        return {}
    frame = scores[(scores["scope"] == "run") & scores["metric"].isin(list(metrics))]
    return {(str(r["run_id"]), str(r["metric"])): (r.get("value"), r.get("details")) for r in frame.to_dict("records")}


class Pair(NamedTuple):
    """Two runs to compare within one group (e.g. one conversation under two settings)."""

    group: str
    run_a: str
    label_a: str
    run_b: str
    label_b: str


def compare_settings(scores: Any, pairs: Sequence[Pair], metrics: Sequence[str], *,
                     differences: Mapping[tuple[str, str], Difference] | None = None) -> list[tuple[str, list[Verdict]]]:
    """Verdicts of each pair (``b`` against ``a``) on every headline of ``metrics`` both runs carry, in that order.
    ``differences`` (``(group, metric) -> Difference``) are the pairs' paired differences where the
    scorer could pair them (:mod:`lcm_lab.metrics.paired`); the others combine the two readings' intervals."""
    found = headline_readings(scores, metrics)
    differences = differences or {}
    out: list[tuple[str, list[Verdict]]] = []
    for p in pairs:
        verdicts = []
        for m in metrics:
            if (p.run_a, m) in found and (p.run_b, m) in found:
                a = reading(p.label_a, found[p.run_a, m][1], found[p.run_a, m][0])
                b = reading(p.label_b, found[p.run_b, m][1], found[p.run_b, m][0])
                verdicts.append(verdict_in_words(m, a, b, differences.get((p.group, m))))
        out.append((p.group, verdicts))
    return out


def summary_lines(groups: Sequence[tuple[str, Sequence[Verdict]]]) -> list[str]:
    """One line per group (e.g. conversation) and verdict: the demo's last lines."""
    lines: list[str] = []
    for group, found in groups:
        if not found:
            lines.append(f"{group}: no headline both settings carry, so no verdict.")
        for v in found:
            lines.append(f"{group}: {v.text}")
    return lines


def meaning_lines(groups: Sequence[tuple[str, Sequence[Verdict]]]) -> list[str]:
    """What each headline named in ``groups`` measures, one line each (printed under the verdicts)."""
    named = dict.fromkeys(v.metric for _group, found in groups for v in found)
    return [f"{m}: {MEANINGS[m]}" for m in named if m in MEANINGS]


def verdicts_from_compare(table: Any, metrics: Sequence[str] | None = None) -> list[Verdict]:
    """Each non-baseline run of a :func:`lcm_lab.compare` table against its baseline, per metric,
    using the table's (paired where it could pair) difference and interval."""
    out: list[Verdict] = []
    for metric, rows in table.groupby("metric", sort=False):
        if metrics is not None and metric not in metrics:
            continue
        records = rows.to_dict("records")
        base = next((r for r in records if not _finite(r["diff"])), records[0])

        def as_reading(r: Mapping[str, Any]) -> Reading:
            finite = _finite(r["ci_low"]) and _finite(r["ci_high"])
            return Reading(str(r["run"]), r["mean"] if _finite(r["mean"]) else None, r["ci_low"] if finite else None,
                           r["ci_high"] if finite else None, int(r["n"]), str(r["unit"] or "item").split(" (")[0])

        for r in records:
            if r is base:
                continue
            d = (Difference(float(r["diff"]), float(r["diff_ci_low"]), float(r["diff_ci_high"]), int(r["n"]),
                            str(r["unit"]).split(" (")[0] or "item", bool(r["paired"]))
                 if _finite(r["diff_ci_low"]) and _finite(r["diff_ci_high"]) else None)
            out.append(verdict_in_words(str(metric), as_reading(base), as_reading(r), d))
    return out


def verdict_lines(table: Any, metrics: Sequence[str] | None = None) -> list[str]:
    """The sentences of :func:`verdicts_from_compare`, one per metric and run (a notebook's conclusion)."""
    return [v.text for v in verdicts_from_compare(table, metrics)]
