"""The main job on the bundled data: load, replay under two settings, score, compare, report.

``lcm-lab demo`` (and ``make demo``) runs :func:`run_demo`: it loads every bundled source into the
lab store, replays a real coding session and a LoCoMo conversation under the plugin's defaults
and under a tight configuration with the offline summarizer, scores each replay (budget, DAG
shape, the headlines of :mod:`lcm_lab.metrics.verdicts` probed over the conversation's life: hard-fact,
decision and LoCoMo QA retention against their ceilings and floors), prints a
comparison and writes a self-contained HTML report.

Both headlines get their chance control: ``qa_retention`` reads the next LoCoMo sample, and
``fact_retention`` (with decision retention) reads a window of a *donor*: the bundled
conversation of the same kind (coding session or LoCoMo), other than the replayed one, closest in
size (:func:`lcm_lab.metrics.donor.pick_donor`); ``details["chance_donor"]`` names it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.errors import InputFileError
from lcm_lab.io.model import LoadedConversation, QAItem
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.loading.dispatch import SourceResult, format_table, load
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.donor import pick_donor
from lcm_lab.metrics.paired import HeadlineOutcome, paired_difference
from lcm_lab.metrics.score import score_replay
from lcm_lab.metrics.verdicts import ProbeRows, verdict
from lcm_lab.report.verdict_text import (
    VERDICT_METRICS,
    Difference,
    Pair,
    Verdict,
    compare_settings,
    interval_text,
    meaning_lines,
    summary_lines,
)
from lcm_lab.store import LabStore
from lcm_lab.store.replays import save_replay
from lcm_lab.store.scores import scores_df, write_scores
from lcm_lab.summarizers import get_summarizer

# Two settings at one budget, so the comparison is of the settings alone.
BUDGET = 8_000
SETTINGS: dict[str, LcmConfig] = {
    "defaults": LcmConfig(),
    "tight": LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400, condensed_target_tokens=300),
}
CONVERSATIONS = (
    ("pi coding session", "pi-mono/before-compaction.jsonl", 0),
    ("LoCoMo conversation 1", "locomo/locomo10.json", 0),
)
# Where fact-retention chance donors come from (besides the files above).
DONOR_SOURCES = (
    "pi-mono/before-compaction.jsonl",
    "pi-mono/large-session.jsonl",
    "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "lossless-claw-ref/golden-session.jsonl",
    "locomo/locomo10.json",
)


def bundled_donor_candidates(datasets: Path) -> list[tuple[str, LoadedConversation]]:
    """Every conversation of :data:`DONOR_SOURCES` found under ``datasets``, labelled ``file#index``
    (plus its title when it has one)."""
    out: list[tuple[str, LoadedConversation]] = []
    for relative in DONOR_SOURCES:
        if not (datasets / relative).is_file():
            continue
        for i, loaded in enumerate(read_transcript(datasets / relative).conversations):
            title = loaded.conversation.title
            out.append((f"{relative}#{i}" + (f" ({title})" if title else ""), loaded))
    return out


@dataclass(frozen=True)
class DemoRun:
    label: str
    run_id: str
    replay: Replay
    scores: list[Score]
    probes: dict[str, ProbeRows] = field(default_factory=dict)  # each probed headline's probes, for pairing


@dataclass(frozen=True)
class DemoResult:
    loaded: list[SourceResult]
    runs: list[DemoRun]
    report: Path
    verdicts: list[tuple[str, list[Verdict]]]


def _run_scores(scores: Sequence[Score]) -> dict[str, float]:
    return {s.metric: s.value for s in scores if s.scope == "run" and s.value is not None}


def _headline(scores: Sequence[Score], name: str) -> Score | None:
    return verdict(scores, name)


def _qa_interval(scores: Sequence[Score]) -> str | None:
    head = _headline(scores, "qa_retention")
    if head is None:
        return None
    if head.value is None:
        return "withheld"
    return interval_text(head.value, head.details, digits=2) or None


def comparison_rows(runs: Sequence[DemoRun]) -> list[dict[str, Any]]:
    """One row per run with the numbers a reader compares first."""
    rows = []
    for run in runs:
        values = _run_scores(run.scores)
        last = run.replay.turns[-1]
        fact, qa = _headline(run.scores, "fact_retention"), _headline(run.scores, "qa_retention")
        rows.append(
            {
                "run": run.label,
                "run_id": run.run_id,
                "turns": len(run.replay.turns),
                "summaries": len(run.replay.summaries),
                "depth": int(values["dag_depth"]) if run.replay.summaries and "dag_depth" in values else None,
                "calls": int(values.get("summarizer_calls", 0)),
                "final_tokens": last.final_tokens,
                "peak_budget": values.get("peak_budget_fraction"),
                "fact_retention": fact.value if fact is not None else None,
                "fact_chance": fact.details.get("chance_normalised") if fact is not None else None,
                "qa_retention": values.get("qa_retention"),
                "qa_95ci": _qa_interval(run.scores),
                "qa_chance": qa.details.get("chance_normalised") if qa is not None else None,
                "qa_end_of_run": values.get("qa_retention_end_of_run"),
                "degraded": (f"{qa.details['probes_degraded']}/{qa.details['probes']}" if qa is not None and qa.details.get("probes")
                             else None),
            }
        )
    return rows


# One line per column of the comparison, printed under the table (and shown in the notebooks).
COLUMNS: dict[str, str] = {
    "run": "conversation · setting, both at an 8k budget (defaults: the plugin's defaults; tight: a fresh tail of 8 "
    "messages and small chunks and summaries)",
    "turns": "user turns replayed",
    "summaries": "summaries the offline summarizer wrote (leaf and condensed)",
    "depth": "deepest summary in the DAG (0 = leaf only; '-' = no summaries were needed)",
    "calls": "summarizer calls, including escalations",
    "final_tokens": "tokens stored in the context after the last turn (summaries + fresh tail)",
    "peak_budget": "largest stored context (summaries + raw messages, after compaction) as a share of the budget; "
    "what the model receives is clamped by the engine (docs/model-context.md)",
    "fact_retention": "hard facts (paths, ids, numbers) said so far still usable when a new user message arrives, "
    "probed at the question turn over the conversation's life, between truncation at each probe (0) and the "
    "full history (1)",
    "fact_chance": "the chance control of fact_retention on its scale (truncation 0, full history 1): the facts found in a "
    "budget-sized window of a donor conversation (another bundled conversation of the same kind, closest in size; named in "
    "the report); a setting should score well above it",
    "qa_retention": "offline proxy: LoCoMo answer recall@10 when each question is asked (run.ask) at the start of every "
    "session after its evidence, between what truncation sends there (0) and the item's gold evidence alone (1); "
    "'-' for runs without QA or where that scale is undefined",
    "qa_95ci": "95% interval of qa_retention, resampling QA items (each with all its probes)",
    "qa_chance": "the chance control of qa_retention on its scale (truncation 0, gold evidence 1): the same reader over "
    "another conversation's text; a setting should score well above it",
    "qa_end_of_run": "the old one-instant reading: qa_retention of the end-of-run call (no user message, no drain)",
    "degraded": "QA probes whose context came from a degraded engine path (raw messages only) / all probes",
}


def explain_columns() -> str:
    """The column legend of :func:`format_rows`, one line per column."""
    width = max(map(len, COLUMNS))
    lines = [f"  {name.ljust(width)}  {meaning}" for name, meaning in COLUMNS.items()]
    return "\n".join([*lines, f"  {'terms'.ljust(width)}  every term defined: docs/glossary.md (and the report's glossary)"])


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    """The comparison as a table with the columns :data:`COLUMNS` explains."""
    from lcm_lab.io.tables import format_table

    return format_table(rows, tuple(COLUMNS))


def paired_differences(a: DemoRun, b: DemoRun) -> dict[str, Difference]:
    """``b − a`` of every probed headline both runs read on the same probes, paired probe by probe
    (:mod:`lcm_lab.metrics.paired`); a headline withheld on either side or without an interval is left out."""
    out: dict[str, Difference] = {}
    for metric in a.probes.keys() & b.probes.keys():
        head_a, head_b = verdict(a.scores, metric), verdict(b.scores, metric)
        if head_a is None or head_b is None:
            continue
        d = paired_difference(HeadlineOutcome(head_a, a.probes[metric]), HeadlineOutcome(head_b, b.probes[metric]))
        if d["paired"] and math.isfinite(d["diff_ci_low"]) and math.isfinite(d["diff_ci_high"]):
            unit = str(head_a.details.get("unit") or "item").replace("_", " ")
            out[metric] = Difference(d["diff"], d["diff_ci_low"], d["diff_ci_high"], int(head_a.details.get("n") or 0), unit)
    return out


def demo_verdicts(runs: Sequence[DemoRun], scores: Any) -> list[tuple[str, list[Verdict]]]:
    """Each conversation's second setting against its first, on every headline both runs carry:
    paired probe by probe where both read the same probes (same conversation, same budget)."""
    first, second = list(SETTINGS)[:2]
    by_label = {run.label: run for run in runs}
    pairs: list[Pair] = []
    differences: dict[tuple[str, str], Difference] = {}
    for name, _relative, _index in CONVERSATIONS:
        a, b = by_label[f"{name} · {first}"], by_label[f"{name} · {second}"]
        pairs.append(Pair(name, a.run_id, first, b.run_id, second))
        differences |= {(name, metric): d for metric, d in paired_differences(a, b).items()}
    return compare_settings(scores, pairs, VERDICT_METRICS, differences=differences)


def run_demo(
    store: LabStore,
    datasets: Path,
    report_path: Path,
    *,
    say: Callable[[str], None] = print,
    progress: bool = True,
) -> DemoResult:
    """Load the bundled data, replay, score, compare and report (see the module docstring)."""
    if not datasets.is_dir():
        raise InputFileError(datasets, "bundled datasets not found; pass the datasets/ directory of an lcm_lab checkout")
    from lcm_lab.report import write_report

    say(f"Loading every bundled source from {datasets} ...")
    loaded = load([datasets], store, progress=progress)
    say(format_table(loaded))

    summarizer = get_summarizer("offline")
    runs: list[DemoRun] = []
    candidates = bundled_donor_candidates(datasets)
    for name, relative, index in CONVERSATIONS:
        source = read_transcript(datasets / relative).conversations
        chosen: LoadedConversation = source[index]
        qa: tuple[QAItem, ...] = chosen.qa_items
        other = source[(index + 1) % len(source)].conversation if qa and len(source) > 1 else None
        donor = pick_donor(chosen, candidates)
        if donor is not None:
            say(f"Chance donor for {name}: {donor.label}")
        for setting, config in SETTINGS.items():
            label = f"{name} · {setting}"
            say(f"Replaying {label} (budget {BUDGET:,}) ...")
            result = replay(chosen.conversation, config, summarizer, token_budget=BUDGET)
            run_id = save_replay(store, result, label=label)
            probes: dict[str, ProbeRows] = {}
            scores = score_replay(result, run_id=run_id, qa_items=qa or None, progress=progress, chance_conversation=other, rows_out=probes,
                                  donor_text=donor.text if donor else None, donor_label=donor.label if donor else None)
            write_scores(store, scores, replace_runs=True)
            runs.append(DemoRun(label, run_id, result, scores, probes))

    say("\nHow the settings compare (qa_retention is an offline proxy, see the legend):")
    say(format_rows(comparison_rows(runs)))
    say(explain_columns())
    score_table = scores_df(store, run_ids=[r.run_id for r in runs])
    verdicts = demo_verdicts(runs, score_table)
    first, second = list(SETTINGS)[:2]
    path = write_report(
        [r.replay for r in runs],
        report_path,
        labels=[r.label for r in runs],
        run_labels={r.run_id: r.label for r in runs},
        scores=score_table,
        verdicts=verdicts,
        title=f"lcm_lab demo: the plugin's defaults against a tight setting, both at {BUDGET:,} tokens",
    )
    say(f"\nVerdict: {second} against {first}, both at a budget of {BUDGET:,} tokens (terms: docs/glossary.md, or the report's glossary)")
    for line in summary_lines(verdicts):
        say(f"  {line}")
    for line in meaning_lines(verdicts):
        say(f"    {line}")
    say(f"Report written to {path}")
    return DemoResult(loaded, runs, path, verdicts)
