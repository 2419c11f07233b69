"""Every term a user meets in the demo, the report, the widgets and the notebooks, defined once.

The report's glossary section and ``docs/glossary.md`` are both rendered from :data:`GLOSSARY`
(``python -m lcm_lab.report.glossary`` rewrites the markdown; a test checks it is current), and
the demo's legend points at it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

# term -> definition, grouped as the reader meets them: the context, the DAG, the knobs, the scores.
GLOSSARY: dict[str, str] = {
    # what the model receives
    "token budget": "the most tokens the plugin may hand the model at a turn; the demo compares settings at one budget.",
    "stored": "what lossless-claw keeps as the conversation's current context (summaries plus raw messages), "
    "counted with the plugin's own token estimate; it can exceed the budget between compactions.",
    "sent": "what the model actually receives at a turn (`run.sent(turn)`): the stored context assembled, "
    "clamped by its serialized size to the budget, or a degraded or live fallback; always within the budget.",
    "clamped": "the assembled context was longer than the budget once serialized, so the oldest items were cut.",
    "degraded path": "a turn whose context holds no summaries: while compaction debt is pending near the budget "
    "the plugin sends the raw live history cut to the budget instead. `degraded:near-budget`: debt pending and "
    "the context near the budget; `degraded:emergency-debt-still-pending`: an emergency drain ran but left the "
    "context over 75% of the budget; `degraded:emergency-debt-exhausted`: the emergency drain had nothing left "
    "to summarise.",
    "assembled": "the normal path: summaries plus the fresh tail, as the plugin's assembler builds them.",
    "compacted-still-over-target": "a compaction attempt that wrote summaries but left the context above its "
    "target; the plugin tries again at a later turn.",
    "compaction debt": "compaction the plugin has decided to do but deferred to after the turn "
    "(the default `deferred` mode); `inline` mode compacts before answering instead.",
    "fresh tail": "the newest raw messages, never summarised (`freshTailCount`).",
    "context threshold": "the share of the budget at which compaction starts (`contextThreshold`, default 0.75).",
    # the DAG
    "leaf summary": "a summary of a chunk of raw messages (depth 0).",
    "condensed summary": "a summary of summaries (depth 1 and up); together they form the summary DAG.",
    "DAG depth": "how many levels of summaries of summaries were built; 0 = leaves only.",
    "depth cap": "the depth the plugin's incremental condensation stops at after a leaf pass: "
    "`incrementalMaxDepth` (the lab's `sweep_max_depth`; −1 = no cap). It is a preference, not a limit: a sweep "
    "still over its target condenses deeper, so the DAG can be deeper than the cap.",
    "escalation level": "how hard the summarizer was pushed on a call: normal, aggressive (shorter target), "
    "capped (truncated to the target) or fallback (a deterministic stand-in after failures).",
    "summarizer calls": "requests to the summary model, escalations included.",
    "offline summarizer": "the lab's deterministic, extractive summarizer (no model, no network): it makes replays "
    "reproducible; its summaries are not what a real model writes.",
    # the scores
    "peak_budget": "the largest stored context over the run as a multiple of the budget (`peak_budget_fraction`); "
    "above 1 the plugin stored more than the budget, but what it sent was clamped to fit.",
    "retention": "a headline placed between two controls: 0 = plain truncation to the budget (the floor), "
    "1 = the ceiling; below 0 is worse than truncating. Read over probes: the item is asked at several points of the "
    "conversation's life (`run.ask`), not only after the last turn (lcm_lab.metrics.verdicts).",
    "probe": "one item (a LoCoMo question, a fact, a decision) asked at one point of the conversation: LoCoMo questions at "
    "each session start after their evidence, facts and decisions at user-turn starts at a stride.",
    "floor": "what plain truncation to the same budget scores on the same measure.",
    "ceiling": "the most a strategy can reach on the measure: 1 for facts and decisions (every one was taken from the "
    "history); for LoCoMo QA the item's gold evidence turns alone, dated (a smaller context than the full history, "
    "which no strategy beats by reading less).",
    "chance": "the same measure over another conversation's text: what a context unrelated to the question scores; "
    "a method near chance has kept nothing useful.",
    "chance donor": "the bundled conversation of the same kind, closest in size, used for the chance control.",
    "withheld": "no value, because the scale is undefined (ceiling and floor less than 0.05 apart, or no items); "
    "the reason is given beside it.",
    "offline proxy": "an offline stand-in for a judged score (e.g. answer recall instead of a model's judged accuracy).",
    "95% interval": "the range that holds the true value in 95% of repetitions, from a bootstrap over the "
    "resampling unit; shown clipped to the values the measure can take.",
    "resampling unit": "what the interval resamples: QA items, facts, probes or conversations.",
    "paired": "two settings scored on the same items, so item difficulty cancels from their difference.",
    "within noise": "the interval of a difference includes 0: the data cannot tell the two apart, whatever the point "
    "estimates say.",
    "n too small": "too few items behind a number to judge it (fewer than 10).",
    "fact": "a hard fact of the history (a path, id, number, URL) whose presence in the context can be checked exactly.",
    "recall@10": "the share of a question's answer words found in the 10 passages a simple reader retrieves.",
}


def glossary_markdown() -> str:
    """``docs/glossary.md``: every term with its definition."""
    lines = ["# Glossary", "", "<!-- generated from lcm_lab/report/glossary.py by `python -m lcm_lab.report.glossary`; do not edit -->", "",
             "Every term the demo, the report, the widgets and the notebooks use.", ""]
    lines += [f"- **{term}**: {meaning}" for term, meaning in GLOSSARY.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="rewrite docs/glossary.md from lcm_lab/report/glossary.py")
    parser.add_argument("--out", type=Path, default=Path("docs") / "glossary.md")
    args = parser.parse_args(argv)
    args.out.write_text(glossary_markdown(), encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
