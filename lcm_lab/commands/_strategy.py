"""``lcm-lab replay --strategy NAME``: run any context strategy, save it, score it (the CLI shell
over :mod:`lcm_lab.strategies`; ``replay.py`` dispatches here for everything but a plain LCM run).

Strategy parameters come from ``--strategy-config FILE.json`` (a JSON object: plugin config keys
for ``lcm``, the observer's knobs for ``clawvault`` / ``observer_regex``). With ``--json`` the
command prints only JSON Lines: one object per replayed conversation, with ``run_id``,
``strategy`` and the headline scores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lcm_lab.cli import print_json
from lcm_lab.errors import SpecError

if TYPE_CHECKING:
    from lcm_lab.engine.types import Conversation

HEADLINE_METRICS = (
    "qa_retention",
    "fact_retention",
    "model_calls",
    "model_cost_usd",
    "peak_context_tokens",
    "final_context_over_budget",
)


def read_strategy_config(path: str | None) -> dict[str, Any]:
    from lcm_lab.engine.config.lcm_config import ConfigError
    from lcm_lab.io.config_files import read_config_document

    try:
        return read_config_document(path) if path is not None else {}
    except ConfigError as exc:
        raise SpecError(f"strategy config {exc}") from None


def loaded_extras(path: Path) -> dict[str, Any]:
    """session id -> LoadedConversation of a transcript (events for ``recorded``, QA items)."""
    from lcm_lab.io.transcripts import TranscriptFormatError, read_transcript

    try:
        return {c.conversation.session_id: c for c in read_transcript(path).conversations}
    except (TranscriptFormatError, ValueError):
        return {}


def headline_summary(scores: list[Any]) -> dict[str, Any]:
    """``metric -> {value, raw, ci_low, ci_high, floor, ceiling, chance, n}`` of the run-level headlines."""
    out: dict[str, Any] = {}
    for score in scores:
        if score.scope != "run" or score.metric not in HEADLINE_METRICS:
            continue
        keys = ("raw", "ci_low", "ci_high", "floor", "ceiling", "chance", "n", "withheld")
        out[score.metric] = {
            "value": score.value,
            **{k: score.details[k] for k in keys if k in score.details},
        }
    return out


def run_strategies(args: argparse.Namespace, store: Any, conversations: list[tuple[Conversation, int | None]], summarizer: Any,
                   plugin_config: dict[str, Any]) -> int:  # fmt: skip
    from tqdm.auto import tqdm

    from lcm_lab.metrics.strategies import strategy_scores
    from lcm_lab.store.replays import save_replay
    from lcm_lab.store.scores import write_scores
    from lcm_lab.strategies import get_strategy
    from lcm_lab.strategies.recorded import recorded_params
    from lcm_lab.summarizers.call_checks import collected_call_warnings

    params = read_strategy_config(args.strategy_config)
    if args.strategy == "lcm":
        params = {
            **plugin_config,
            **params,
            **({"fidelity": args.fidelity} if args.fidelity != "faithful" else {}),
        }
    extras = (
        loaded_extras(Path(args.input))
        if args.strategy == "recorded" or Path(args.input).suffix == ".json"
        else {}
    )
    for conversation, conversation_id in conversations:
        loaded = extras.get(conversation.session_id)
        run_params = dict(params)
        if args.strategy == "recorded" and loaded is not None and "events" not in run_params:
            run_params.update(recorded_params(loaded))
        strategy = get_strategy(args.strategy, **run_params)  # StrategyError (a UserError) on bad parameters
        # the run applies the rule for failed model calls (every call failed raises); its warning is printed below
        with tqdm(desc=f"{args.strategy} {conversation.session_id[:24]}", unit="turn", leave=False,
                  disable=not sys.stderr.isatty() or args.json) as bar, collected_call_warnings() as call_warnings:  # fmt: skip
            run = strategy.run(
                conversation, summarizer, args.token_budget, on_turn=lambda _t: bar.update()
            )  # noqa: B023
        run_id = (
            None
            if args.no_save
            else save_replay(store, run, label=args.label, conversation_id=conversation_id)
        )
        scores = strategy_scores(run, run_id=run_id, qa_items=loaded.qa_items if loaded is not None else None)
        if run_id is not None:
            write_scores(store, scores, replace_runs=True)
        summary = {"run_id": run_id, "strategy": run.strategy, "strategy_params": _public(run.strategy_params),
                   "session_id": conversation.session_id, "turns": len(run.turns), "token_budget": run.token_budget,
                   "scores": headline_summary(scores), "failed_calls": sum(w.failed for w in call_warnings)}  # fmt: skip
        for warning in call_warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if args.json:
            print_json(summary)
        else:
            heads = ", ".join(
                f"{k} {v['value']:.3f}" for k, v in summary["scores"].items() if v.get("value") is not None
            )
            print(
                f"{run_id or '(not saved)'}  {conversation.session_id}: {args.strategy}, {len(run.turns)} turns, {heads}"
            )
    return 0


def _public(params: Any) -> dict[str, Any]:
    """Parameters for display: a recorded run's events are summarised, not dumped."""
    out = dict(params)
    if "events" in out:
        out["events"] = f"{len(out['events'])} recorded host event(s)"
    return out
