"""Headline scores of each engine version side by side, with paired intervals of the difference.

:func:`headline_outcomes` is the one call into the lab's scorers (``lcm_lab/metrics/``): for each
headline it returns the run's headline :class:`~lcm_lab.metrics.base.Score` (value, ceiling, floor,
chance, n, unit and its own interval in ``details``) and the per-item arrays behind it. Both
versions replay the same conversation at the same budget, so they are scored on the same items
(facts, QA items) against the same floor and ceiling; :func:`headline_rows` resamples those items
once for both (:func:`~lcm_lab.metrics.stats.bootstrap_normalised_difference`), which removes item
difficulty from the interval of the difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from lcm_lab.engine.types import Conversation
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.stats import bootstrap_normalised_difference

HEADLINE_COLUMNS: tuple[str, ...] = (
    "metric", "engine", "value", "ci_low", "ci_high", "raw", "ceiling", "floor", "chance", "n", "unit",
    "diff", "diff_ci_low", "diff_ci_high", "paired", "withheld",
)  # fmt: skip


class HeadlineOutcome(NamedTuple):
    """One headline of one run and the per-item values it was computed from (aligned arrays)."""

    score: Score
    item_ids: tuple[str, ...]
    method: np.ndarray
    floor: np.ndarray
    ceiling: np.ndarray
    weights: np.ndarray


def headline_outcomes(
    run: Any,
    run_id: str,
    *,
    qa_items: Sequence[QAItem] | None = None,
    chance_conversation: Conversation | None = None,
) -> dict[str, HeadlineOutcome]:
    """``fact_retention`` (always) and ``qa_retention`` (with ``qa_items``) of ``run``, through the
    lab's scorers; ``chance_conversation`` gives both their chance control."""
    from lcm_lab.metrics.fact_headline import fact_headline_scores, fact_outcome
    from lcm_lab.metrics.locomo import qa_retention_scores, raw_texts

    donor_text = "\n".join(raw_texts(chance_conversation)) if chance_conversation is not None else None
    donor_label = (chance_conversation.title or chance_conversation.session_id) if chance_conversation is not None else None
    out: dict[str, HeadlineOutcome] = {}
    facts = fact_outcome(run, donor_text=donor_text)
    fact_score = next(s for s in fact_headline_scores(run, run_id, donor_text=donor_text, donor_label=donor_label)
                      if s.metric == "fact_retention" and s.scope == "run")  # fmt: skip
    out["fact_retention"] = HeadlineOutcome(
        fact_score, tuple(f"{f.kind}:{f.key}" for f in facts.facts),
        facts.method, facts.floor, np.ones_like(facts.method), facts.weights,
    )
    if qa_items:
        scores = qa_retention_scores(run, qa_items, run_id, chance_conversation=chance_conversation)
        per_item = [s for s in scores if s.scope == "qa" and s.metric == "qa_recall"]
        qa_score = next(s for s in scores if s.scope == "run" and s.metric == "qa_retention")
        out["qa_retention"] = HeadlineOutcome(
            qa_score, tuple(s.scope_id for s in per_item),
            np.array([float(s.value or 0.0) for s in per_item]),
            np.array([float(s.details["floor"]) for s in per_item]),
            np.array([float(s.details["ceiling"]) for s in per_item]),
            np.ones(len(per_item)),
        )
    return out


def _nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def headline_rows(outcomes: Mapping[str, Mapping[str, HeadlineOutcome]], *, resamples: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """One row per (headline, engine): the engine's value with its own interval and controls; for
    every engine but the first, ``diff`` = its value − the first engine's, with a paired 95%
    bootstrap interval over the shared items (``paired`` False and no interval when the items
    differ or the headline is withheld on either side)."""
    engines = list(outcomes)
    metrics = [m for m in outcomes[engines[0]] if all(m in outcomes[e] for e in engines)]
    rows: list[dict[str, Any]] = []
    for metric in metrics:
        base = outcomes[engines[0]][metric]
        for engine in engines:
            mine = outcomes[engine][metric]
            d = mine.score.details
            row: dict[str, Any] = {
                "metric": metric, "engine": engine, "value": _nan(mine.score.value), "ci_low": _nan(d.get("ci_low")),
                "ci_high": _nan(d.get("ci_high")), "raw": _nan(d.get("raw")), "ceiling": _nan(d.get("ceiling")),
                "floor": _nan(d.get("floor")), "chance": _nan(d.get("chance")), "n": int(d.get("n") or 0),
                "unit": str(d.get("unit") or ""), "diff": math.nan, "diff_ci_low": math.nan, "diff_ci_high": math.nan,
                "paired": False, "withheld": d.get("withheld"),
            }  # fmt: skip
            if engine != engines[0]:
                row |= _paired_difference(base, mine, resamples=resamples, seed=seed)
            rows.append(row)
    return rows


def _paired_difference(base: HeadlineOutcome, other: HeadlineOutcome, *, resamples: int, seed: int) -> dict[str, Any]:
    if base.score.value is None or other.score.value is None:
        return {"diff": math.nan, "paired": False}
    same_items = (base.item_ids == other.item_ids and np.array_equal(base.floor, other.floor)
                  and np.array_equal(base.ceiling, other.ceiling) and np.array_equal(base.weights, other.weights))  # fmt: skip
    if not same_items:
        return {"diff": float(other.score.value) - float(base.score.value), "paired": False}
    diff, low, high = bootstrap_normalised_difference(
        base.method, other.method, base.floor, base.ceiling, base.weights, resamples=resamples, seed=seed
    )
    return {"diff": diff, "diff_ci_low": low, "diff_ci_high": high, "paired": True}
