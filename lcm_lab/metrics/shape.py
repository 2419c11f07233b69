"""Shape and budget metrics: how much each summary compresses, what the DAG looks like, how the
context size behaved against the budget, and how often the engine had to escalate.

All functions are pure and take a :class:`~lcm_lab.metrics.dag.Dag` (a replay's final DAG or a
loaded conversation) or, for the per-turn budget metrics, a replay.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence

from lcm_lab.engine.types import TurnRecord
from lcm_lab.metrics.base import Score, mean
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.markers import inferred_level

LEVELS = ("normal", "aggressive", "capped", "fallback")


def summary_shape_scores(dag: Dag, run_id: str) -> list[Score]:
    """Per summary, per depth and run-level shape metrics of a DAG.

    Per summary: ``compression_ratio`` (summary tokens / tokens of its direct inputs),
    ``coverage_compression`` (summary tokens / raw tokens it covers transitively), ``fanout``,
    ``covered_messages``. Per depth: the means of those and ``summaries``. Run: ``dag_depth``
    (max depth, -1 without summaries), ``summaries``, ``leaf_summaries``, ``condensed_summaries``,
    ``dag_roots``, ``fanout_mean``/``fanout_max``/``fanout_cv`` (coefficient of variation over
    summaries: 0 = perfectly even chunks), ``dag_balance`` (mean over condensed nodes of
    min/max raw-messages-covered among its inputs: 1 = balanced subtrees), level rates.
    """
    scores: list[Score] = []
    by_depth: dict[int, list[dict[str, float]]] = defaultdict(list)
    fanouts: list[int] = []
    balances: list[float] = []
    levels: Counter[str] = Counter()
    for summary in dag.summaries:
        source_tokens = dag.source_tokens(summary)
        covered = dag.covered_tokens(summary)
        covered_seqs = dag.covered_seqs(summary.summary_id)
        fanout = len(summary.source_summary_ids) if summary.kind == "condensed" else len(summary.source_message_seqs)
        level = inferred_level(summary.content, summary.model, summary.level)
        levels[level] += 1
        fanouts.append(fanout)
        row = {
            "compression_ratio": summary.token_count / source_tokens if source_tokens else None,
            "coverage_compression": summary.token_count / covered if covered else None,
            "fanout": float(fanout),
            "covered_messages": float(len(covered_seqs)),
            "tokens": float(summary.token_count),
        }
        details = {"kind": summary.kind, "depth": summary.depth, "level": level, "source_tokens": source_tokens, "covered_tokens": covered}
        for metric, value in row.items():
            if metric == "tokens":
                continue
            scores.append(Score(run_id, "summary", summary.summary_id, metric, value, details))
        by_depth[summary.depth].append({k: v for k, v in row.items() if v is not None})
        if summary.kind == "condensed" and len(summary.source_summary_ids) > 1:
            sizes = [len(dag.covered_seqs(s)) for s in summary.source_summary_ids]
            if max(sizes) > 0:
                balances.append(min(sizes) / max(sizes))
    for depth, rows in sorted(by_depth.items()):
        scores.append(Score(run_id, "depth", str(depth), "summaries", float(len(rows))))
        for metric in ("compression_ratio", "coverage_compression", "fanout", "covered_messages", "tokens"):
            value = mean(r[metric] for r in rows if metric in r)
            scores.append(Score(run_id, "depth", str(depth), f"mean_{metric}", value, {"n": len(rows)}))
    total = len(dag.summaries)
    run = {
        "summaries": float(total),
        "leaf_summaries": float(sum(1 for s in dag.summaries if s.kind == "leaf")),
        "condensed_summaries": float(sum(1 for s in dag.summaries if s.kind == "condensed")),
        "dag_depth": float(max((s.depth for s in dag.summaries), default=-1)),
        "dag_roots": float(len(dag.roots)),
        "fanout_mean": mean(fanouts),
        "fanout_max": float(max(fanouts)) if fanouts else None,
        "fanout_cv": (statistics.pstdev(fanouts) / statistics.fmean(fanouts)) if fanouts and statistics.fmean(fanouts) else None,
        "dag_balance": mean(balances),
    }
    for level in LEVELS:
        run[f"rate_{level}"] = levels[level] / total if total else None
    for metric, value in run.items():
        details = {"levels_inferred_from_markers": any(s.level is None for s in dag.summaries)} if metric.startswith("rate_") else {}
        scores.append(Score(run_id, "run", "", metric, value, details))
    return scores


def budget_scores(turns: Sequence[TurnRecord], token_budget: int, run_id: str) -> list[Score]:
    """Context size against budget and threshold, per turn and for the run, plus engine effort.

    Per turn: ``context_tokens`` (stored tokens at the end of the turn, after deferred drains: what
    the next turn starts from; what the model *receives* is ``run.sent(k)``, clamped by the engine).
    Run: ``peak_context_tokens``,
    ``mean_context_tokens``, ``peak_budget_fraction`` (peak / budget), ``mean_budget_fraction``,
    ``turns_over_threshold`` (turns that ended above the threshold despite compaction),
    ``compacting_turns``, ``sweeps``, ``summarizer_calls``, ``aggressive_call_rate``,
    ``summarizer_input_tokens`` / ``summarizer_output_tokens``, ``summarizer_cost_usd`` (when
    the summarizer reported costs).
    """
    scores: list[Score] = []
    sizes: list[int] = []
    calls = [call for turn in turns for call in turn.calls]
    for turn in turns:
        sizes.append(turn.final_tokens)
        scores.append(
            Score(
                run_id,
                "turn",
                str(turn.turn),
                "context_tokens",
                float(turn.final_tokens),
                {"threshold": turn.threshold, "budget": token_budget, "compacted": turn.compacted},
            )
        )
    costs = [c.cost_usd for c in calls if c.cost_usd is not None]
    run: dict[str, float | None] = {
        "peak_context_tokens": float(max(sizes)) if sizes else None,
        "mean_context_tokens": mean(sizes),
        "peak_budget_fraction": max(sizes) / token_budget if sizes and token_budget else None,
        "mean_budget_fraction": (statistics.fmean(sizes) / token_budget) if sizes and token_budget else None,
        "turns_over_threshold": float(sum(1 for t in turns if t.tokens_after > t.threshold)),
        "compacting_turns": float(sum(1 for t in turns if t.compacted)),
        "sweeps": float(sum(len(t.sweeps) for t in turns)),
        "summarizer_calls": float(len(calls)),
        "aggressive_call_rate": (sum(1 for c in calls if c.aggressive) / len(calls)) if calls else None,
        "summarizer_input_tokens": float(sum(c.source_tokens for c in calls)),
        "summarizer_output_tokens": float(sum(c.output_tokens for c in calls)),
        "summarizer_cost_usd": float(sum(costs)) if costs else None,
    }
    threshold = turns[-1].threshold if turns else None
    for metric, value in run.items():
        scores.append(Score(run_id, "run", "", metric, value, {"budget": token_budget, "threshold": threshold}))
    return scores
