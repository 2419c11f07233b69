"""Is LCM at 6k worse than truncation, or priced differently? The floor at equal dialogue size.

``qa_retention``'s floor is truncation to the budget by the *reader text* of each message, while
the engine prices every raw message in what it sends by its *serialized* JSON (keys, timestamps,
LoCoMo's usage blocks). At one budget the two contexts therefore hold different amounts of
dialogue. For the validity configuration and a variant that can condense
(``condensedTargetTokens`` 300), over the 10 LoCoMo conversations at 6k, this benchmark reports:
how many final contexts hold no summary (a degraded engine path), the reader-text tokens and the
engine's estimate of what LCM sends, the serialized / text ratio of raw messages, and the answer
recall@10 of LCM, of the floor, and of truncation to the *same reader-text size* as LCM's context,
with the paired item-level difference (bootstrap over QA items). The metric itself is unchanged.
Writes ``reports/qa-floor-pricing.{md,json}``.

    python -m benchmarks.qa_floor_pricing
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BUDGET = 6000


def main() -> dict[str, Any]:
    from tqdm.auto import tqdm

    from lcm_lab.engine.assembly.sent import serialized_cost
    from lcm_lab.engine.tokens import estimate_tokens
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.metrics.locomo import context_recall, newest_within, raw_texts, sent_texts, usable_items
    from lcm_lab.metrics.qa_reader import reader_text
    from lcm_lab.metrics.stats import bootstrap_difference
    from lcm_lab.metrics.validity import DEFAULT_CONFIG, control_run
    from lcm_lab.summarizers.controls import ControlRun

    convs = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)
    configs = {
        "validity config": DEFAULT_CONFIG,
        "validity config + condensedTargetTokens 300": dataclasses.replace(DEFAULT_CONFIG, condensed_target_tokens=300),
    }
    out: dict[str, Any] = {"budget": BUDGET, "conversations": len(convs), "configs": {}}
    for name, config in configs.items():
        recall: dict[str, list[float]] = {"lcm": [], "floor": [], "same_size": [], "ceiling": []}
        no_summary, reader_tokens, engine_tokens, ratios = 0, [], [], []
        for i, conv in enumerate(tqdm(convs, desc=name, leave=False)):
            run = control_run("offline", conv, convs[(i + 1) % len(convs)], BUDGET, config)
            sent = run.sent(None, BUDGET)
            no_summary += not any(item.kind == "summary" for item in sent.items)
            texts = sent_texts(run, BUDGET)
            size = sum(estimate_tokens(t) for t in texts)
            reader_tokens.append(size)
            engine_tokens.append(sent.estimated_tokens)
            raw_items = ControlRun(conv.conversation, BUDGET, full=True).sent().items
            ratios.append(sum(serialized_cost(dataclasses.replace(it, kind="message")) for it in raw_items)
                          / max(1, sum(estimate_tokens(reader_text(it.message)) for it in raw_items)))
            items, _ = usable_items(conv.conversation, conv.qa_items)
            questions, answers = [q.question for q in items], [str(q.answer) for q in items]
            history = raw_texts(conv.conversation)
            for key, context in (("lcm", texts), ("floor", newest_within(history, BUDGET)),
                                 ("same_size", newest_within(history, size)), ("ceiling", history)):
                recall[key] += context_recall(context, questions, answers, 10).tolist()
        diff = bootstrap_difference(recall["same_size"], recall["lcm"], paired=True)
        out["configs"][name] = {
            "no_summary_contexts": no_summary,
            "lcm_reader_tokens_mean": sum(reader_tokens) / len(reader_tokens),
            "lcm_engine_tokens_mean": sum(engine_tokens) / len(engine_tokens),
            "serialized_over_text_mean": sum(ratios) / len(ratios),
            "recall": {k: sum(v) / len(v) for k, v in recall.items()},
            "items": len(recall["lcm"]),
            "lcm_minus_same_size": {"diff": diff[0], "ci": [diff[1], diff[2]]},
        }
    report = REPO / "reports" / "qa-floor-pricing"
    report.with_suffix(".json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [
        "# LCM vs truncation at 6k: the floor at equal dialogue size",
        "",
        f"LoCoMo, {len(convs)} conversations, budget {BUDGET}, offline summarizer, BM25 answer recall@10 pooled over "
        "QA items (`benchmarks/qa_floor_pricing.py`). `floor` = truncation to the budget by reader text (the "
        "`qa_retention` floor); `same size` = truncation to the reader-text tokens of LCM's own context. "
        "`serialized / text` = the engine's serialized-message estimate over the reader-text estimate for the "
        "conversation's raw messages.",
        "",
        "| configuration | contexts without summaries | LCM reader tokens | LCM engine estimate | serialized / text "
        "| LCM | floor | same size | ceiling | LCM − same size [95% CI] |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in out["configs"].items():
        d = r["lcm_minus_same_size"]
        lines.append(
            f"| {name} | {r['no_summary_contexts']}/{len(convs)} | {r['lcm_reader_tokens_mean']:.0f} | {r['lcm_engine_tokens_mean']:.0f} "
            f"| {r['serialized_over_text_mean']:.2f} | {r['recall']['lcm']:.3f} | {r['recall']['floor']:.3f} "
            f"| {r['recall']['same_size']:.3f} | {r['recall']['ceiling']:.3f} | {d['diff']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}] |"
        )
    report.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return out


if __name__ == "__main__":
    main()
