"""The report's "Context strategies" section: runs of any strategy side by side on the same scores.

Runs of non-LCM strategies (:class:`~lcm_lab.strategies.base.StrategyRun`) have no summary DAG,
so they get no per-run LCM section; every run given to the report (LCM ones included) appears
here, scored by :func:`lcm_lab.metrics.strategies.strategy_scores` through ``run.sent()``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from markupsafe import Markup

from lcm_lab.strategies.base import StrategyRun
from lcm_lab.strategies.compare import Comparison, comparison_table


def _cell(row: dict[str, Any], metric: str) -> tuple[str, str]:
    raw, ci = row.get(f"{metric}_raw"), row.get(f"{metric}_raw_ci")
    value, nci = row.get(metric), row.get(f"{metric}_ci")
    if raw is None:
        return "–", "–"
    left = f"{raw:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
    right = (
        "withheld"
        if value is None
        else f"{value:.3f}" + (f" [{nci[0]:.3f}, {nci[1]:.3f}]" if nci and nci[0] is not None else "")
    )
    return left, right


def strategies_section(
    runs: Sequence[Any], labels: Sequence[str], figure_html: Callable[[Any], Markup], qa_items: Any = None
) -> dict[str, Any]:
    """Table rows and figures for the runs (any strategy)."""
    from lcm_lab.metrics.strategies import message_base, strategy_scores
    from lcm_lab.strategies.lcm import from_replay
    from lcm_lab.viz.strategies import plot_fact_survival_by_age, plot_quality_vs_tokens, plot_tokens_per_turn

    comparison = Comparison({}, {}, {})
    bases: dict[str, Any] = {}
    for run, label in zip(runs, labels, strict=True):
        run = run if isinstance(run, StrategyRun) else from_replay(run)
        key = (run.conversation.session_id, run.token_budget, label)
        base = bases.setdefault(run.conversation.session_id, message_base(run.messages))
        comparison.runs[key] = run
        comparison.scores[key] = strategy_scores(
            run, run_id=run.run_id or label, qa_items=qa_items, base=base
        )
    rows = []
    for row in comparison_table(comparison):
        qa, qa_norm = _cell(row, "qa_retention")
        fact, fact_norm = _cell(row, "fact_retention")
        rows.append([row["strategy"], f"{row['budget']:,}", qa, qa_norm, fact, fact_norm,
                     f"{row['final_context_tokens']:,}" + (" (over budget)" if row.get("final_context_over_budget") else ""),
                     f"{int(row.get('model_calls') or 0):,}"])  # fmt: skip
    first = next(iter(comparison.runs))
    metric = "qa_retention" if qa_items else "fact_retention"
    return {
        "columns": [
            "run",
            "budget",
            "QA answer recall [95% CI]",
            "QA retention (floor→ceiling)",
            "fact recall [95% CI]",
            "fact retention (floor→ceiling)",
            "final context tokens",
            "model calls",
        ],  # fmt: skip
        "rows": rows,
        "figures": [
            figure_html(plot_quality_vs_tokens(comparison, metric)),
            figure_html(plot_fact_survival_by_age(comparison)),
            figure_html(plot_tokens_per_turn(comparison, first[0], first[1])),
        ],  # fmt: skip
    }
