"""Every strategy on the same conversations and budgets, with the same scores (issue 11's table).

:func:`compare_strategies` runs a list of :class:`StrategySpec` over conversations at several
budgets and scores every run with :func:`lcm_lab.metrics.strategies.strategy_scores` (one shared
message index per conversation, so facts are extracted once). :func:`comparison_table` lays the
run-level numbers out as one row per (conversation, budget, strategy) with intervals and
controls; the long score list feeds the plots (per-category QA, fact survival by age, tokens and
calls per turn).

The sweep engine can vary the strategy like any other dimension: a spec is just a name and
parameters (``get_strategy(spec.strategy, **spec.params)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.types import Conversation
from lcm_lab.io.model import QAItem, RecordedEvent
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.verdicts import END_OF_RUN
from lcm_lab.strategies import get_strategy
from lcm_lab.strategies.base import StrategyError, StrategyRun

LCM_TUNED = {"freshTailCount": 8, "leafChunkTokens": 4000, "contextThreshold": 0.6}


@dataclass(frozen=True)
class StrategySpec:
    """A labelled strategy with parameters (``recorded`` takes its events from the input)."""

    label: str
    strategy: str
    params: Mapping[str, Any] = field(default_factory=dict)


DEFAULT_SPECS: tuple[StrategySpec, ...] = (
    StrategySpec("LCM defaults", "lcm"),
    StrategySpec("LCM tuned", "lcm", LCM_TUNED),
    StrategySpec("ClawVault LLM-free fallback", "observer_regex"),
    StrategySpec("truncation", "truncate"),
    StrategySpec("recorded host compaction", "recorded"),
    StrategySpec("full context", "full"),
)


@dataclass(frozen=True)
class BenchInput:
    """One conversation to compare on, with what its source recorded (host events, QA items)."""

    name: str
    conversation: Conversation
    events: tuple[RecordedEvent, ...] = ()
    qa_items: tuple[QAItem, ...] = ()
    chance: Conversation | None = None  # another conversation: the headlines' chance control


@dataclass(frozen=True)
class Comparison:
    runs: dict[tuple[str, int, str], StrategyRun]  # (input, budget, label) -> run
    scores: dict[tuple[str, int, str], list[Score]]
    skipped: dict[tuple[str, int, str], str]


def compare_strategies(
    inputs: Iterable[BenchInput],
    budgets: Sequence[int],
    summarizer: Any,
    specs: Sequence[StrategySpec] = DEFAULT_SPECS,
    *,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> Comparison:
    """Run and score every spec on every input at every budget; a spec that does not apply (the
    recorded host on a source without host compactions) is listed in ``skipped`` with the reason."""
    from lcm_lab.metrics.strategies import message_base, strategy_scores
    from lcm_lab.strategies.recorded import _EVENT_FIELDS

    runs: dict[tuple[str, int, str], StrategyRun] = {}
    scores: dict[tuple[str, int, str], list[Score]] = {}
    skipped: dict[tuple[str, int, str], str] = {}
    jobs = [(i, b, s) for i in inputs for b in budgets for s in specs]
    bases: dict[str, Any] = {}
    for item, budget, spec in progress(jobs) if progress else jobs:
        key = (item.name, budget, spec.label)
        params = dict(spec.params)
        if spec.strategy == "recorded":
            if not item.events:
                skipped[key] = "no host compaction recorded in this source"
                continue
            params["events"] = [{k: getattr(e, k) for k in _EVENT_FIELDS} for e in item.events]
        try:
            run = get_strategy(spec.strategy, **params).run(item.conversation, summarizer, budget)
        except StrategyError as exc:
            skipped[key] = str(exc)
            continue
        base = bases.setdefault(item.name, message_base(run.messages))
        runs[key] = run
        scores[key] = strategy_scores(
            run, run_id=f"{item.name}@{budget}:{spec.label}", qa_items=item.qa_items or None, base=base,
            chance_conversation=item.chance,
        )
    return Comparison(runs, scores, skipped)


def comparison_table(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per run: headline values with intervals and controls, tokens and calls."""
    rows: list[dict[str, Any]] = []
    for (name, budget, label), scores in comparison.scores.items():
        run_scores = {s.metric: s for s in scores if s.scope == "run"}
        row: dict[str, Any] = {"input": name, "budget": budget, "strategy": label}
        for metric in ("qa_retention", "fact_retention", "decision_retention"):
            score = run_scores.get(metric)
            if score is None:
                continue
            d = score.details
            end = run_scores.get(END_OF_RUN[metric])
            row.update({
                f"{metric}": score.value, f"{metric}_ci": (d.get("ci_low"), d.get("ci_high")),
                f"{metric}_raw": d.get("raw"), f"{metric}_raw_ci": tuple(d["raw_ci"]) if d.get("raw_ci") else None,
                f"{metric}_floor": d.get("floor"), f"{metric}_ceiling": d.get("ceiling"),
                f"{metric}_chance": d.get("chance"), f"{metric}_n": d.get("n"),
                f"{metric}_probes": d.get("probes"), f"{metric}_degraded": d.get("probes_degraded"),
                f"{metric}_end_of_run": end.value if end is not None else None,
            })  # fmt: skip
        for metric in (
            "peak_context_tokens",
            "mean_context_tokens",
            "model_calls",
            "model_calls_per_turn",
            "final_context_over_budget",
        ):
            if metric in run_scores:
                row[metric] = run_scores[metric].value
        row["final_context_tokens"] = run_scores["final_context_over_budget"].details["context_tokens"]
        rows.append(row)
    for (name, budget, label), reason in comparison.skipped.items():
        rows.append({"input": name, "budget": budget, "strategy": label, "skipped": reason})
    return rows


def _fmt(value: float | None, ci: tuple[float | None, float | None] | None) -> str:
    if value is None:
        return "—"
    if not ci or ci[0] is None or ci[1] is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _controls(row: Mapping[str, Any], metric: str) -> str:
    """``raw · floor · ceiling · chance`` on the raw scale (the chance control: another
    conversation; '—' when none was given)."""
    if f"{metric}_raw" not in row:
        return "—"
    return " · ".join(_num(row.get(f"{metric}_{part}")) for part in ("raw", "floor", "ceiling", "chance"))


def _headline_cell(row: Mapping[str, Any], metric: str) -> str:
    if f"{metric}_raw" not in row:
        return "—"
    if row.get(metric) is None:
        return "withheld"
    return _fmt(row.get(metric), row.get(f"{metric}_ci"))


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The closing table: each headline (``qa_retention``, ``fact_retention``: 0 = floor,
    1 = ceiling) with its 95% interval, its raw value with the floor, ceiling and chance controls
    on the raw scale, the probes it pooled (and how many fell on degraded paths) and the old
    end-of-run reading, what the model receives per turn (mean tokens), the end-of-run context,
    and model calls per turn."""
    head = ("| input | budget | strategy | QA retention [95% CI] | QA raw · floor · ceiling · chance "
            "| fact retention [95% CI] | fact raw · floor · ceiling · chance | probes (degraded) | end of run "
            "| tokens/turn (mean) | final tokens | model calls/turn |")  # fmt: skip
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['input']} | {r['budget']} | {r['strategy']} | skipped: {r['skipped']} |||||||||")
            continue
        probed = "qa_retention" if "qa_retention_raw" in r else "fact_retention"
        probes, degraded, end = (r.get(f"{probed}_{part}") for part in ("probes", "degraded", "end_of_run"))
        over = " (over budget)" if r.get("final_context_over_budget") else ""
        mean_tokens = r.get("mean_context_tokens")
        per_turn = r.get("model_calls_per_turn")
        lines.append(
            f"| {r['input']} | {r['budget']:,} | {r['strategy']} | {_headline_cell(r, 'qa_retention')} "
            f"| {_controls(r, 'qa_retention')} | {_headline_cell(r, 'fact_retention')} | {_controls(r, 'fact_retention')} "
            f"| {'—' if not probes else f'{probes:,} ({degraded or 0:,})'} | {_num(end)} "
            f"| {'—' if mean_tokens is None else f'{mean_tokens:,.0f}'} | {r['final_context_tokens']:,}{over} "
            f"| {'—' if per_turn is None else f'{per_turn:.2f}'} |"
        )
    return "\n".join(lines)
