"""The main job on the bundled data: load, replay under two settings, score, compare, report.

``lcm-lab demo`` (and ``make demo``) runs :func:`run_demo`: it loads every bundled source into the
lab store, replays a real coding session and a LoCoMo conversation under the plugin's defaults
and under a tight configuration with the offline summarizer, scores each replay (budget, DAG
shape, hard-fact retention, LoCoMo QA retention against its ceiling and floor), prints a
comparison and writes a self-contained HTML report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lcm_lab.engine.config import LcmConfig
from lcm_lab.engine.replay import Replay, replay
from lcm_lab.io.model import LoadedConversation, QAItem
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.load import SourceResult, load
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.score import score_replay
from lcm_lab.store import LabStore
from lcm_lab.store.replays import save_replay
from lcm_lab.store.scores import scores_df, write_scores
from lcm_lab.summarizers import get_summarizer

SETTINGS: dict[str, tuple[LcmConfig, int]] = {
    "defaults-32k": (LcmConfig(), 32_000),
    "tight-8k": (
        LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400, condensed_target_tokens=300),
        8_000,
    ),
}
CONVERSATIONS = (
    ("pi coding session", "pi-mono/before-compaction.jsonl", 0),
    ("LoCoMo conversation 1", "locomo/locomo10.json", 0),
)


@dataclass(frozen=True)
class DemoRun:
    label: str
    run_id: str
    replay: Replay
    scores: list[Score]


@dataclass(frozen=True)
class DemoResult:
    loaded: list[SourceResult]
    runs: list[DemoRun]
    report: Path


def _run_scores(scores: Sequence[Score]) -> dict[str, float]:
    return {s.metric: s.value for s in scores if s.scope == "run" and s.value is not None}


def _final_fact_retention(scores: Sequence[Score], last_turn: int) -> float | None:
    for s in scores:
        if s.scope == "turn" and s.metric == "fact_retention" and str(s.scope_id) == str(last_turn):
            return s.value
    return None


def comparison_rows(runs: Sequence[DemoRun]) -> list[dict[str, Any]]:
    """One row per run with the numbers a reader compares first."""
    rows = []
    for run in runs:
        values = _run_scores(run.scores)
        last = run.replay.turns[-1]
        rows.append(
            {
                "run": run.label,
                "run_id": run.run_id,
                "turns": len(run.replay.turns),
                "summaries": len(run.replay.summaries),
                "depth": int(values.get("dag_depth", -1)),
                "calls": int(values.get("summarizer_calls", 0)),
                "final_tokens": last.final_tokens,
                "peak_budget": values.get("peak_budget_fraction"),
                "facts_in_context": _final_fact_retention(run.scores, last.turn),
                "qa_retention": values.get("qa_retention_answer_f1"),
            }
        )
    return rows


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    headers = ("run", "turns", "summaries", "depth", "calls", "final_tokens", "peak_budget", "facts_in_context", "qa_retention")

    def cell(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value)

    table = [headers] + [tuple(cell(r[h]) for h in headers) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))) for row in table)


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
        raise FileNotFoundError(f"bundled datasets not found at {datasets}; run from a checkout of lcm_lab")
    from lcm_lab.commands.load import format_table
    from lcm_lab.report import write_report

    say(f"Loading every bundled source from {datasets} ...")
    loaded = load([datasets], store, progress=progress)
    say(format_table(loaded))

    summarizer = get_summarizer("offline")
    runs: list[DemoRun] = []
    for name, relative, index in CONVERSATIONS:
        chosen: LoadedConversation = read_transcript(datasets / relative).conversations[index]
        qa: tuple[QAItem, ...] = chosen.qa_items
        for setting, (config, budget) in SETTINGS.items():
            label = f"{name} · {setting}"
            say(f"Replaying {label} (budget {budget:,}) ...")
            result = replay(chosen.conversation, config, summarizer, token_budget=budget)
            run_id = save_replay(store, result, label=label)
            scores = score_replay(result, run_id=run_id, qa_items=qa or None, progress=progress)
            write_scores(store, scores, replace_runs=True)
            runs.append(DemoRun(label, run_id, result, scores))

    say("\nHow the settings compare (facts_in_context: share of hard facts from the history still visible")
    say("to the model after the last turn; qa_retention: LoCoMo answer F1 between truncation and full context):")
    say(format_rows(comparison_rows(runs)))
    path = write_report(
        [r.replay for r in runs],
        report_path,
        labels=[r.label for r in runs],
        scores=scores_df(store, run_ids=[r.run_id for r in runs]),
        title="lcm_lab demo: defaults vs a tight configuration",
    )
    say(f"\nReport written to {path}")
    return DemoResult(loaded, runs, path)
