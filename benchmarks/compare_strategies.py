"""The strategy comparison of issue 11 on the bundled data: every strategy, two budgets each.

    python -m benchmarks.compare_strategies [--locomo-samples 2] [--tune-samples 3] [--no-tune]

Evaluated on LoCoMo samples 0..n-1 (budgets 4k and 8k: each sample is ≈18-25k tokens) and the pi
coding session ``before-compaction.jsonl`` (budgets 32k and 64k; the only input with recorded
host compactions). Offline summarizer for LCM.

"LCM tuned" is chosen by the sweep engine, per dataset and budget, on *other* conversations:
a grid sweep over the strategies {lcm, observer_regex, truncate} and LCM's size knobs, on LoCoMo
samples n..n+k-1 (objective ``qa_retention``) and on the other pi session ``large-session.jsonl``
(objective ``fact_retention``); the best LCM configuration of each sweep is the tuned row
(whether or not LCM won the sweep). ``--no-tune`` uses the hand-picked
:data:`~lcm_lab.strategies.compare.LCM_TUNED` instead. The sweeps resume from ``--tune-store``.

Chance controls: LoCoMo sample i is scored against sample i+1; the coding session against
``large-session.jsonl`` (same project, so a strict control). Writes
``reports/strategies/comparison.{json,md}``. Not a test (minutes of CPU); the notebook
``05_compare_strategies`` runs a smaller version live.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "strategies"
LOCOMO = "datasets/locomo/locomo10.json"
CODING = "datasets/pi-mono/before-compaction.jsonl"
CODING_TUNE = "datasets/pi-mono/large-session.jsonl"
LOCOMO_BUDGETS = (4000, 8000)
CODING_BUDGETS = (32000, 64000)

# The LCM knobs the tuning sweeps vary (the plugin defaults — a 20k-token leaf chunk, 2.4k/2k
# summary targets — are sized for 100k+ windows, so the small-budget grid goes well below them).
LOCOMO_SPACE = {"leafChunkTokens": [2000, 4000], "leafTargetTokens": [400, 1200], "freshTailCount": [16, 64]}
CODING_SPACE = {"leafChunkTokens": [8000, 20000], "freshTailCount": [16, 64]}


def tuning_spec(dataset: str, budget: int, skip: int, limit: int) -> dict[str, Any]:
    """The sweep that chooses "LCM tuned" for ``dataset`` at ``budget`` (never on evaluated data)."""
    locomo = dataset == "locomo"
    return {
        "name": f"tune-lcm-{dataset}-{budget}",
        # relative paths (the run is in the repository root): the sweep id does not depend on the machine
        "conversations": [{"path": LOCOMO, "skip": skip, "limit": limit}] if locomo else [{"path": CODING_TUNE}],
        "token_budget": budget,
        "space": {"strategy": ["lcm", "observer_regex", "truncate"], **(LOCOMO_SPACE if locomo else CODING_SPACE)},
        "objectives": [{"metric": "qa_retention" if locomo else "fact_retention", "direction": "maximize"}],
        "scoring": {"qa": locomo},
    }


def tune(dataset: str, budget: int, skip: int, limit: int, store: Any, workers: int | None) -> dict[str, Any]:
    """Run (or resume) the tuning sweep; the best LCM configuration's plugin keys and the why."""
    import lcm_lab as lab

    spec = tuning_spec(dataset, budget, skip, limit)
    result = lab.sweep(spec, store=store, workers=workers, progress=False)
    rec = lab.recommend(result.sweep_id, store)
    metric = spec["objectives"][0]["metric"]
    table = rec.table
    best_lcm = rec.config_id if rec.strategy == "lcm" else rec.best_lcm
    row = table[table.config_id == best_lcm].iloc[0]
    stored = store.fetch_all("SELECT params FROM sweep_configs WHERE sweep_id = ? AND config_id = ?", [result.sweep_id, best_lcm])
    params = {k: v for k, v in json.loads(stored[0][0]).items() if k != "strategy"}
    winners = table.sort_values(metric, ascending=False)[["config_id", "strategy", metric]].head(3)
    return {
        "sweep_id": result.sweep_id, "dataset": dataset, "budget": budget, "objective": metric,
        "conversations": spec["conversations"][0]["path"]
        + (f" samples {skip}..{skip + limit - 1}" if dataset == "locomo" else ""),
        "configurations": result.configs, "best_overall": {"config_id": rec.config_id, "strategy": rec.strategy},
        "best_lcm": best_lcm, "params": params, f"best_lcm_{metric}": float(row[metric]),
        f"best_lcm_{metric}_ci": [row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]],
        "top3": winners.to_dict("records"),
    }


def main() -> int:
    import lcm_lab as lab
    from lcm_lab.strategies.compare import (
        DEFAULT_SPECS,
        LCM_TUNED,
        BenchInput,
        StrategySpec,
        compare_strategies,
        comparison_table,
        markdown_table,
    )

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo-samples", type=int, default=2, help="evaluate on LoCoMo samples 0..N-1")
    parser.add_argument("--tune-samples", type=int, default=3, help="tune LCM on the next N LoCoMo samples")
    parser.add_argument("--no-tune", action="store_true", help="use the hand-picked LCM_TUNED instead of sweeps")
    parser.add_argument("--tune-store", type=Path, default=ROOT / ".lcm_lab" / "strategy-tuning.duckdb",
                        help="lab store the tuning sweeps run in (resumable)")
    parser.add_argument("--workers", type=int, default=None, help="sweep workers (default: every core)")
    args = parser.parse_args()
    os.chdir(ROOT)
    started = time.perf_counter()
    n = args.locomo_samples
    tuned: dict[tuple[str, int], dict[str, Any]] = {}
    if not args.no_tune:
        from lcm_lab.store import LabStore

        args.tune_store.parent.mkdir(parents=True, exist_ok=True)
        store = LabStore(args.tune_store)
        for budget in LOCOMO_BUDGETS:
            tuned[("locomo", budget)] = tune("locomo", budget, n, args.tune_samples, store, args.workers)
        for budget in CODING_BUDGETS:
            tuned[("coding", budget)] = tune("coding", budget, 0, 1, store, args.workers)
        print(json.dumps(list(tuned.values()), indent=1, default=str))

    def specs(dataset: str, budget: int) -> list[StrategySpec]:
        params = tuned[(dataset, budget)]["params"] if tuned else LCM_TUNED
        return [StrategySpec(s.label, s.strategy, params) if s.label == "LCM tuned" else s for s in DEFAULT_SPECS]

    read = lab.read_transcript(ROOT / LOCOMO).conversations
    coding = lab.read_transcript(ROOT / CODING).conversations[0]
    donor = lab.read_transcript(ROOT / CODING_TUNE).conversations[0].conversation
    offline = lab.get_summarizer("offline")
    rows = []
    for i, loaded in enumerate(read[:n]):
        item = BenchInput(f"locomo-{i}", loaded.conversation, loaded.events, loaded.qa_items,
                          chance=read[(i + 1) % len(read)].conversation)
        for budget in LOCOMO_BUDGETS:
            rows += comparison_table(compare_strategies([item], (budget,), offline, specs("locomo", budget)))
    item = BenchInput("pi-before-compaction", coding.conversation, coding.events, chance=donor)
    for budget in CODING_BUDGETS:
        rows += comparison_table(compare_strategies([item], (budget,), offline, specs("coding", budget)))
    OUT.mkdir(parents=True, exist_ok=True)
    tuning = list(tuned.values())
    (OUT / "comparison.json").write_text(json.dumps(
        {"rows": rows, "tuning": tuning, "seconds": time.perf_counter() - started}, indent=1, default=_plain))
    (OUT / "comparison.md").write_text(_note(tuning, n) + markdown_table(rows) + "\n")
    print(markdown_table(rows))
    return 0


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | set):
        return list(value)
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def _note(tuning: list[dict[str, Any]], n: int) -> str:
    lines = [
        "# Strategy comparison (bundled data, offline summarizer)",
        "",
        f"LoCoMo samples 0..{n - 1} at 4k/8k tokens and the pi coding session `before-compaction.jsonl` (two recorded "
        "host compactions) at 32k/64k. Every headline is probed over the conversation's life through `run.ask` (the "
        "question turn, emergency drain included; `lcm_lab/metrics/verdicts.py`, `docs/metrics.md` §0), the same code "
        "for every strategy.",
        "",
        "* **QA retention** (`qa_retention`): BM25 answer recall@k of each LoCoMo question asked at the start of every "
        "session after its last evidence, normalised 0 = floor (what `truncate` sends at that probe) .. 1 = ceiling (the "
        "item's gold evidence alone, dated); 95% cluster bootstrap interval over QA items (an item's probes together). "
        "**fact retention** (`fact_retention`): weighted share of the hard facts said so far usable at each probe (LoCoMo: "
        "session boundaries; coding: user-turn starts at a stride), floor `truncate` there, ceiling 1, interval over facts. "
        "'withheld' = ceiling − floor < 0.05 or no probe point where the history exceeds the budget.",
        "* raw · floor · ceiling · chance: the raw values pooled over probes; **chance** = the same reading of *another* "
        "conversation (LoCoMo sample i+1; for the coding session the other pi session, same project) cut to the budget.",
        "* probes (degraded): probes pooled by the QA headline (fact headline on the coding session), and how many of them "
        "fell on a degraded engine path; end of run: the old one-instant reading (`qa_retention_end_of_run`, ceiling the "
        "full history; `fact_retention_end_of_run` on the coding session), for comparison.",
        "* tokens/turn: mean estimated tokens the model receives per call; model calls/turn: summarizer / observer "
        "calls per turn (the offline summarizer for LCM; the recorded host's own calls are not in its transcript).",
        "",
        "Read `notes.md` next to this table first: it says what changed when the headlines moved from the end-of-run "
        "call to probes over the conversation's life.",
        "",
    ]
    if tuning:
        lines += ["**LCM tuned** = the best LCM configuration of a grid sweep (strategies lcm, observer_regex, truncate "
                  "× LCM size knobs) on conversations *not* evaluated here, one sweep per dataset and budget "
                  "(`python -m benchmarks.compare_strategies` runs them):", ""]
        for t in tuning:
            metric = t["objective"]
            lo, hi = t[f"best_lcm_{metric}_ci"]
            ci = "" if lo is None or lo != lo else f" [{lo:.3f}, {hi:.3f}]"
            overall = t["best_overall"]
            lines.append(
                f"* {t['dataset']} @ {t['budget']:,}: sweep `{t['sweep_id']}` on {t['conversations']}, objective "
                f"`{metric}`: {json.dumps(t['params'])} ({metric} {t[f'best_lcm_{metric}']:.3f}{ci} on the tuning data; "
                f"best overall: {overall['strategy']} `{overall['config_id']}`)"
            )
        lines += ["", "The coding-session sweeps tune on a single conversation (no interval across conversations).", ""]
    else:
        lines += ["**LCM tuned** = the hand-picked `LCM_TUNED` (run without `--no-tune` to choose it by sweeps).", ""]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
