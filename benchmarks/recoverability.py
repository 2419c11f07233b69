"""Recoverability on the bundled data: the pi coding session and LoCoMo conversation 1, at the
demo's two settings (defaults at 32k, tight at 8k), offline summarizer and offline answerer.

    python -m benchmarks.recoverability [--max-items 150]

Writes reports/recall/recoverability.{json,md,html} (the HTML report with its recoverability section): per run the lost facts / QA answers, the share
recovered by grep → describe → expand with its ceiling (oracle seeds), chance (random seeds) and
95% bootstrap interval, tokens and calls per item, and the footer precision/recall.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import lcm_lab as lab
from lcm_lab.bundled.demo import CONVERSATIONS, SETTINGS
from lcm_lab.recall_tools.recoverability import score_recoverability

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "reports" / "recall"


def measure(max_items: int | None, seed: int = 0) -> tuple[list[dict[str, Any]], list[Any]]:
    rows, runs = [], []
    for name, relative, index in CONVERSATIONS:
        chosen = lab.read_transcript(REPO / "datasets" / relative).conversations[index]
        facts = None
        for setting, (config, budget) in SETTINGS.items():
            run = lab.replay(chosen.conversation, config, lab.get_summarizer("offline"), token_budget=budget)
            started = time.perf_counter()
            report = score_recoverability(run, qa_items=chosen.qa_items or None, max_items=max_items, seed=seed, facts=facts)
            facts = report.base  # the next setting replays the same conversation
            row = {"conversation": name, "setting": setting, "budget": budget, **report.summary(), "label": f"{name} · {setting}"}
            for score in report.scores():
                if score.metric in ("fact_recoverability", "qa_recoverability"):
                    kind = score.metric.split("_")[0]
                    row[f"{kind}_n"] = score.details["n"]
                    row[f"{kind}_recovered_share"] = score.details["raw"]
                    row[f"{kind}_ceiling"] = score.details["ceiling"]
                    row[f"{kind}_chance"] = score.details["chance"]
                    row[f"{kind}_tokens_per_item"] = score.details["tokens_per_item"]
            row["by_step"] = report.df()["step"].value_counts(dropna=False).to_dict()
            row["seconds"] = round(time.perf_counter() - started, 1)
            print(json.dumps(row, default=str), flush=True)
            rows.append(row)
            runs.append(run)
    return rows, runs


def _fmt(value: Any, spec: str = ".2f") -> str:
    return "–" if value is None else format(value, spec)


def write(rows: list[dict[str, Any]], max_items: int | None) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "recoverability.json").write_text(json.dumps({"max_items": max_items, "runs": rows}, indent=2, default=str))
    lines = [
        "# Recoverability on the bundled data (offline summarizer, offline answerer)",
        "",
        f"Lost = not usable in `run.sent()` after the last turn; up to {max_items} lost items per run sampled (seed 0).",
        "Recovered = found by grep → describe → expand (stopping when found). Ceiling = the item is in the raw history",
        "(answers never verbatim in the history are not counted as lost), floor = 0, chance = expanding random summaries,",
        "oracle = expanding the summaries that really cover the item (search vs. expansion failures); CI = 95% bootstrap",
        "over items. Answerer: the offline deterministic quoter (no model).",
        "",
        "| conversation | setting | lost | attempted | recovered | recoverability [95% CI] | ceiling | chance | oracle | tokens/item | calls/item | footer P | footer R |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['conversation']} | {r['setting']} | {r['lost']} | {r['attempted']} | {_fmt(r['recovered_share'])} | "
            f"{_fmt(r['recoverability'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] | {_fmt(r['ceiling'])} | {_fmt(r['chance'])} | {_fmt(r['oracle_expand'])} | "
            f"{_fmt(r['tokens_per_item'], '.0f')} | {_fmt(r['calls_per_item'])} | {_fmt(r['footer_precision'])} | {_fmt(r['footer_recall'])} |"
        )
    lines += ["", "Per item kind (share recovered / ceiling / chance / tokens per item):", ""]
    for r in rows:
        for kind in ("fact", "qa"):
            if f"{kind}_n" in r:
                lines.append(
                    f"- {r['conversation']} · {r['setting']} · {kind}: n={r[f'{kind}_n']}, recovered {_fmt(r[f'{kind}_recovered_share'])}, "
                    f"ceiling {_fmt(r[f'{kind}_ceiling'])}, chance {_fmt(r[f'{kind}_chance'])}, {_fmt(r[f'{kind}_tokens_per_item'], '.0f')} tokens/item"
                )
    (OUT / "recoverability.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-items", type=int, default=150)
    args = parser.parse_args()
    rows, runs = measure(args.max_items)
    write(rows, args.max_items)
    lab.write_report(runs, OUT / "recoverability.html", labels=[r["label"] for r in rows], recoverability=rows,
                     title="lcm_lab: recoverability on the bundled data", max_summaries=50)  # fmt: skip


if __name__ == "__main__":
    main()
