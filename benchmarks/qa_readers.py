"""Which offline QA reader discriminates better: BM25 or sentence embeddings?

Over the bundled LoCoMo conversations at one budget, both readers (same passages, same credit
rule, ``k``) read the full history (ceiling), budget truncation (floor), another conversation's
text (chance), the entity-list control's context and the offline summarizer's context. A good
reader has a wide ceiling − floor gap and gives the chance and entity-list contexts nothing.
Writes ``reports/qa-reader-comparison.{md,json}``. Needs the ``embeddings`` extra.

    python benchmarks/qa_readers.py [--budget 6000] [--conversations 10]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from tqdm.auto import tqdm

    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.metrics.locomo import newest_within, raw_texts, sent_texts, usable_items
    from lcm_lab.metrics.qa_embed import EmbeddingIndex
    from lcm_lab.metrics.qa_reader import TOP_K, Bm25Index
    from lcm_lab.metrics.validity import control_run

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=int, default=6000)
    parser.add_argument("--conversations", type=int, default=10)
    args = parser.parse_args(argv)
    every = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)
    convs = every[: args.conversations]
    readers = {"bm25": Bm25Index.of_texts, "embedding": EmbeddingIndex.of_texts}
    contexts = ("ceiling", "floor", "chance", "entity-list", "offline")
    results: dict[str, dict[str, list[float]]] = {r: {c: [] for c in contexts} for r in readers}
    seconds = dict.fromkeys(readers, 0.0)
    for i, conv in enumerate(tqdm(convs, desc="conversations")):
        other = every[(i + 1) % len(every)]  # the chance partner comes from all conversations
        items, _ = usable_items(conv.conversation, conv.qa_items)
        questions, answers = [q.question for q in items], [str(q.answer) for q in items]
        history = raw_texts(conv.conversation)
        texts = {
            "ceiling": history,
            "floor": newest_within(history, args.budget),
            "chance": newest_within(raw_texts(other.conversation), args.budget),
            "entity-list": sent_texts(control_run("entity-list", conv, other, args.budget), args.budget),
            "offline": sent_texts(control_run("offline", conv, other, args.budget), args.budget),
        }
        for reader, build in readers.items():
            start = time.perf_counter()
            for name, ctx in texts.items():
                results[reader][name].extend(build(ctx).answer_recall(questions, answers, TOP_K).tolist())
            seconds[reader] += time.perf_counter() - start
    summary: dict[str, Any] = {"budget": args.budget, "conversations": len(convs), "k": TOP_K, "seconds": seconds, "readers": {}}
    for reader, by_context in results.items():
        means = {c: float(np.mean(v)) for c, v in by_context.items()}
        gap = means["ceiling"] - means["floor"]
        summary["readers"][reader] = {
            **means,
            "items": len(by_context["ceiling"]),
            "gap": gap,
            "entity_list_normalised": (means["entity-list"] - means["floor"]) / gap if gap else None,
            "offline_normalised": (means["offline"] - means["floor"]) / gap if gap else None,
            "separation": means["ceiling"] - max(means["chance"], means["entity-list"]),
        }
    out = REPO / "reports" / "qa-reader-comparison"
    out.with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [
        "# QA reader comparison: BM25 vs sentence embeddings",
        "",
        f"LoCoMo, {len(convs)} conversations, budget {args.budget}, answer recall@{TOP_K}, same passages and credit rule "
        "(`benchmarks/qa_readers.py`). Raw recall per context (pooled over items); `gap` = ceiling − floor; "
        "`separation` = ceiling − max(chance, entity list).",
        "",
        "| reader | ceiling | floor | chance | entity list | offline | gap | separation | entity list normalised | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for reader, r in summary["readers"].items():
        lines.append(
            f"| {reader} | {r['ceiling']:.3f} | {r['floor']:.3f} | {r['chance']:.3f} | {r['entity-list']:.3f} | {r['offline']:.3f} "
            f"| {r['gap']:.3f} | {r['separation']:.3f} | {r['entity_list_normalised']:.3f} | {seconds[reader]:.1f} |"
        )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return summary


if __name__ == "__main__":
    main()
