"""Headline scores of each engine version side by side, with paired intervals of the difference.

:func:`headline_outcomes` is the one call into the lab's scorer (:mod:`lcm_lab.metrics.verdicts`):
for each probed headline it returns the run's headline :class:`~lcm_lab.metrics.base.Score` (value,
ceiling, floor, chance, n, unit and its own cluster-bootstrap interval in ``details``) and the
probes behind it (:class:`~lcm_lab.metrics.verdicts.ProbeRows`). Both versions replay the same
conversation at the same budget, so their probes are the same items at the same probe points
against the same floor and ceiling; :func:`headline_rows` pairs them row by row and resamples the
clusters (QA items, facts, decisions) once for both
(:func:`~lcm_lab.metrics.stats.cluster_bootstrap_difference`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from lcm_lab.engine.types import Conversation
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.paired import HeadlineOutcome, paired_difference
from lcm_lab.metrics.verdicts import ProbeRows

HEADLINE_COLUMNS: tuple[str, ...] = (
    "metric", "engine", "value", "ci_low", "ci_high", "raw", "ceiling", "floor", "chance", "n", "unit", "probes",
    "probes_degraded", "diff", "diff_ci_low", "diff_ci_high", "paired", "withheld",
)  # fmt: skip


def headline_outcomes(
    run: Any,
    run_id: str,
    *,
    qa_items: Sequence[QAItem] | None = None,
    chance_conversation: Conversation | None = None,
    seed: int = 0,
) -> dict[str, HeadlineOutcome]:
    """Every probed headline of ``run`` (``qa_retention`` only with ``qa_items``) with its probes;
    ``chance_conversation`` gives each its chance control."""
    from lcm_lab.metrics.donor import donor_text
    from lcm_lab.metrics.verdicts import verdict, verdict_scores

    donor = donor_text(chance_conversation) if chance_conversation is not None else None
    label = (chance_conversation.title or chance_conversation.session_id) if chance_conversation is not None else None
    rows: dict[str, ProbeRows] = {}
    scores = verdict_scores(run, run_id, qa_items=qa_items or None, chance_conversation=chance_conversation, donor_text=donor,
                            donor_label=label, seed=seed, end_of_run=False, rows_out=rows)  # fmt: skip
    out: dict[str, HeadlineOutcome] = {}
    for metric, probes in rows.items():
        found = verdict(scores, metric)
        if found is not None:
            out[metric] = HeadlineOutcome(found, probes)
    return out


def _nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def headline_rows(outcomes: Mapping[str, Mapping[str, HeadlineOutcome]], *, resamples: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """One row per (headline, engine): the engine's value with its own interval and controls; for
    every engine but the first, ``diff`` = its value − the first engine's, with a paired 95%
    cluster-bootstrap interval over the shared probes (``paired`` False and no interval when the
    probes differ or the headline is withheld on either side)."""
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
                "unit": str(d.get("unit") or ""), "probes": int(d.get("probes") or 0),
                "probes_degraded": int(d.get("probes_degraded") or 0), "diff": math.nan, "diff_ci_low": math.nan,
                "diff_ci_high": math.nan, "paired": False, "withheld": d.get("withheld") or d.get("no_probes"),
            }  # fmt: skip
            if engine != engines[0]:
                row |= paired_difference(base, mine, resamples=resamples, seed=seed)
            rows.append(row)
    return rows
