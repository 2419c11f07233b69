"""lcm_lab: a notebook-first research workbench for Lossless Context Management.

One namespace for everything a notebook or script needs (imported lazily, so ``import lcm_lab``
stays cheap; type checkers and IDEs see the real signatures)::

    import lcm_lab as lab
    store = lab.LabStore()                      # .lcm_lab/lab.duckdb, or $LCM_LAB_HOME
    lab.load("datasets/", store)                # lcm.db files, transcripts, directories
    read = lab.read_transcript("datasets/pi-mono/before-compaction.jsonl")
    run = lab.replay(read.conversations[0].conversation, lab.LcmConfig(), lab.get_summarizer("offline"), token_budget=32_000)
    lab.viz.plot_budget_timeline(run)           # plots: lab.viz.*; controls: lab.widgets.*
    rec = lab.recall(run)                       # the plugin's grep / describe / expand_query
    rec.grep("renderer", limit=5).df()
    lab.whatif.dissolve(run, "sum_…", store=store)  # what-if edits as derived runs: lab.whatif.*
    lab.datasets_path("locomo/locomo10.json")   # the data bundled with the package (no checkout needed)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from lcm_lab import sweeps, testing, viz, whatif, widgets
    from lcm_lab.bundled import datasets_path, notebooks_path
    from lcm_lab.cost.litellm_prices import load_prices
    from lcm_lab.cost.replay_cost import calibrate_conversation, reference_costs, session_cost
    from lcm_lab.cost.scores import cost_scores, price_replay, validate_transcript
    from lcm_lab.cost.validate import validation_record
    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.replay.driver import Replay, replay
    from lcm_lab.engine.replay.trace import reference_trace
    from lcm_lab.errors import UserError
    from lcm_lab.host import recorded_calls
    from lcm_lab.io.lcmdb_export import export_lcm_db
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.loading.dispatch import load, load_lcm_db, load_transcript
    from lcm_lab.metrics.compare import compare
    from lcm_lab.metrics.observer_bench import observer_benchmark
    from lcm_lab.metrics.score import score_conversation, score_replay
    from lcm_lab.metrics.strategies import strategy_scores
    from lcm_lab.metrics.verdicts import verdict_scores
    from lcm_lab.recall_tools import recall
    from lcm_lab.recall_tools.recoverability import score_recoverability
    from lcm_lab.report import write_report
    from lcm_lab.report.verdict_text import Difference, Reading, verdict_in_words, verdict_lines
    from lcm_lab.store import LabStore, open_store
    from lcm_lab.store.ledger import Ledger
    from lcm_lab.store.replays import load_replay, load_strategy_run, save_replay
    from lcm_lab.store.scores import scores_df, write_scores
    from lcm_lab.strategies import get_strategy, run_strategy
    from lcm_lab.strategies.compare import (
        BenchInput,
        Comparison,
        StrategySpec,
        compare_strategies,
        comparison_table,
        markdown_table,
    )
    from lcm_lab.strategies.recorded import recorded_params
    from lcm_lab.summarizers import get_summarizer
    from lcm_lab.summarizers.call_checks import ModelCallsFailedError, ModelCallsWarning
    from lcm_lab.sweeps import list_sweeps, recommend, sweep, sweep_df
    from lcm_lab.upgrade import VersionComparison, compare_versions

_EXPORTS = {
    "LabStore": "lcm_lab.store",
    "open_store": "lcm_lab.store",
    "load": "lcm_lab.loading.dispatch",
    "load_lcm_db": "lcm_lab.loading.dispatch",
    "load_transcript": "lcm_lab.loading.dispatch",
    "read_transcript": "lcm_lab.io.transcripts",
    "LcmConfig": "lcm_lab.engine.config.lcm_config",
    "replay": "lcm_lab.engine.replay.driver",
    "Replay": "lcm_lab.engine.replay.driver",
    "reference_trace": "lcm_lab.engine.replay.trace",
    "get_summarizer": "lcm_lab.summarizers",
    "save_replay": "lcm_lab.store.replays",
    "load_replay": "lcm_lab.store.replays",
    "score_replay": "lcm_lab.metrics.score",
    "score_conversation": "lcm_lab.metrics.score",
    "Ledger": "lcm_lab.store.ledger",
    "scores_df": "lcm_lab.store.scores",
    "write_scores": "lcm_lab.store.scores",
    "compare": "lcm_lab.metrics.compare",
    "write_report": "lcm_lab.report",
    "verdict_in_words": "lcm_lab.report.verdict_text",
    "verdict_lines": "lcm_lab.report.verdict_text",
    "Reading": "lcm_lab.report.verdict_text",
    "Difference": "lcm_lab.report.verdict_text",
    "UserError": "lcm_lab.errors",
    "ModelCallsFailedError": "lcm_lab.summarizers.call_checks",
    "ModelCallsWarning": "lcm_lab.summarizers.call_checks",
    "get_strategy": "lcm_lab.strategies",
    "run_strategy": "lcm_lab.strategies",
    "load_strategy_run": "lcm_lab.store.replays",
    "strategy_scores": "lcm_lab.metrics.strategies",
    "verdict_scores": "lcm_lab.metrics.verdicts",
    "recorded_calls": "lcm_lab.host",
    "cost_scores": "lcm_lab.cost.scores",
    "price_replay": "lcm_lab.cost.scores",
    "validate_transcript": "lcm_lab.cost.scores",
    "validation_record": "lcm_lab.cost.validate",
    "load_prices": "lcm_lab.cost.litellm_prices",
    "calibrate_conversation": "lcm_lab.cost.replay_cost",
    "session_cost": "lcm_lab.cost.replay_cost",
    "reference_costs": "lcm_lab.cost.replay_cost",
    "compare_strategies": "lcm_lab.strategies.compare",
    "comparison_table": "lcm_lab.strategies.compare",
    "markdown_table": "lcm_lab.strategies.compare",
    "BenchInput": "lcm_lab.strategies.compare",
    "Comparison": "lcm_lab.strategies.compare",
    "StrategySpec": "lcm_lab.strategies.compare",
    "recorded_params": "lcm_lab.strategies.recorded",
    "observer_benchmark": "lcm_lab.metrics.observer_bench",
    "recall": "lcm_lab.recall_tools",
    "score_recoverability": "lcm_lab.recall_tools.recoverability",
    "export_lcm_db": "lcm_lab.io.lcmdb_export",
    "sweep": "lcm_lab.sweeps",
    "sweep_df": "lcm_lab.sweeps",
    "recommend": "lcm_lab.sweeps",
    "list_sweeps": "lcm_lab.sweeps",
    "datasets_path": "lcm_lab.bundled",
    "compare_versions": "lcm_lab.upgrade",
    "VersionComparison": "lcm_lab.upgrade",
    "notebooks_path": "lcm_lab.bundled",
}
_SUBMODULES = ("viz", "widgets", "testing", "sweeps", "whatif")

__all__ = [  # every name above, listed literally so linters and type checkers see the exports
    "BenchInput",
    "Comparison",
    "LabStore",
    "LcmConfig",
    "Ledger",
    "ModelCallsFailedError",
    "ModelCallsWarning",
    "Replay",
    "StrategySpec",
    "UserError",
    "VersionComparison",
    "calibrate_conversation",
    "compare",
    "compare_strategies",
    "compare_versions",
    "comparison_table",
    "cost_scores",
    "datasets_path",
    "export_lcm_db",
    "get_strategy",
    "get_summarizer",
    "list_sweeps",
    "load",
    "load_lcm_db",
    "load_prices",
    "load_replay",
    "load_strategy_run",
    "load_transcript",
    "markdown_table",
    "notebooks_path",
    "observer_benchmark",
    "open_store",
    "price_replay",
    "read_transcript",
    "recall",
    "recommend",
    "recorded_calls",
    "recorded_params",
    "reference_costs",
    "reference_trace",
    "replay",
    "run_strategy",
    "save_replay",
    "score_conversation",
    "score_recoverability",
    "score_replay",
    "scores_df",
    "session_cost",
    "strategy_scores",
    "sweep",
    "sweep_df",
    "sweeps",
    "testing",
    "validate_transcript",
    "validation_record",
    "verdict_scores",
    "viz",
    "whatif",
    "widgets",
    "write_report",
    "write_scores",
    "verdict_in_words",
    "verdict_lines",
    "Reading",
    "Difference",
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"lcm_lab.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lcm_lab' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
