"""Plotly figures of replays, loaded conversations and scores.

Every ``plot_x(obj)`` is ``_x_figure(x_info(obj))``: the ``*_info`` step is pure (no plotly)
and tested on its own; the figure step only maps it to traces.
"""

from lcm_lab.viz.budget import (
    budget_comparison_info,
    budget_df,
    budget_info,
    plot_budget_comparison,
    plot_budget_timeline,
    split_context,
)
from lcm_lab.viz.context import context_df, context_info, plot_context_at
from lcm_lab.viz.cost import (
    cache_breaks,
    cost_breakdown_info,
    cost_validation_info,
    cost_windows_info,
    plot_cost_breakdown,
    plot_cost_validation,
    plot_cost_windows,
)
from lcm_lab.viz.counts import replay_stats, stats_line
from lcm_lab.viz.dag import dag_info, plot_dag, to_networkx
from lcm_lab.viz.detail import summary_detail_html, summary_detail_info
from lcm_lab.viz.diff import match_summaries, summary_diff_info
from lcm_lab.viz.quality import (
    fact_survival_info,
    mean_interval,
    metric_by_depth_info,
    parallel_info,
    pareto_info,
    pareto_mask,
    plot_fact_survival,
    plot_metric_by_depth,
    plot_parallel_coordinates,
    plot_pareto,
    plot_qa_retention,
    plot_run_comparison,
    plot_sweep_heatmap,
    qa_retention_info,
    run_comparison_info,
    score_map,
    sweep_heatmap_info,
    wilson_interval,
)
from lcm_lab.viz.recall import plot_recoverability, recoverability_info
from lcm_lab.viz.strategies import (
    plot_fact_survival_by_age,
    plot_qa_by_category,
    plot_quality_vs_tokens,
    plot_tokens_per_turn,
)
from lcm_lab.viz.versions import plot_version_turns, version_turns_info

__all__ = [
    "plot_version_turns",
    "version_turns_info",
    "plot_recoverability",
    "recoverability_info",
    "budget_comparison_info",
    "budget_df",
    "budget_info",
    "cache_breaks",
    "context_df",
    "context_info",
    "cost_breakdown_info",
    "cost_validation_info",
    "cost_windows_info",
    "dag_info",
    "fact_survival_info",
    "match_summaries",
    "mean_interval",
    "metric_by_depth_info",
    "parallel_info",
    "pareto_info",
    "pareto_mask",
    "plot_budget_comparison",
    "plot_budget_timeline",
    "plot_context_at",
    "plot_cost_breakdown",
    "plot_cost_validation",
    "plot_cost_windows",
    "plot_dag",
    "plot_fact_survival",
    "plot_fact_survival_by_age",
    "plot_metric_by_depth",
    "plot_parallel_coordinates",
    "plot_pareto",
    "plot_qa_by_category",
    "plot_qa_retention",
    "plot_quality_vs_tokens",
    "plot_run_comparison",
    "plot_sweep_heatmap",
    "plot_tokens_per_turn",
    "qa_retention_info",
    "replay_stats",
    "run_comparison_info",
    "score_map",
    "split_context",
    "stats_line",
    "summary_detail_html",
    "summary_detail_info",
    "summary_diff_info",
    "sweep_heatmap_info",
    "to_networkx",
    "wilson_interval",
]
