"""Cost of scoring ``qa_retention``: a scored replay against the bare replay, side by side.

For each bundled LoCoMo conversation at one budget: the bare replay (offline summarizer), then
``qa_retention`` scoring cold (ceiling, floor and chance computed) and warm (a second run at the
same conversation × budget: the controls come from the cache, as in a sweep). Target (issue 10):
scored / bare ≤ 2.

    python -m benchmarks.bench_qa_scoring [--budget 6000] [--conversations 10]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REPORT_DIR = REPO / "reports" / "benchmarks"
TARGET = 2.0


def main(argv: list[str] | None = None) -> int:
    from lcm_lab.engine.config import LcmConfig
    from lcm_lab.engine.replay import replay
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.metrics import locomo
    from lcm_lab.summarizers.offline import OfflineSummarizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=6000)
    parser.add_argument("--conversations", type=int, default=10)
    args = parser.parse_args(argv)
    convs = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)[: args.conversations]
    config = LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400)
    rows = []
    for i, conv in enumerate(convs):
        other = convs[(i + 1) % len(convs)].conversation
        start = time.perf_counter()
        run = replay(conv.conversation, config, OfflineSummarizer(), token_budget=args.budget)
        bare = time.perf_counter() - start
        locomo._CACHE.clear()
        start = time.perf_counter()
        locomo.qa_retention_scores(run, conv.qa_items, "cold", chance_conversation=other)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        locomo.qa_retention_scores(run, conv.qa_items, "warm", chance_conversation=other)
        warm = time.perf_counter() - start
        rows.append({"conversation": conv.conversation.title or str(i), "replay_s": bare, "qa_cold_s": cold, "qa_warm_s": warm,
                     "ratio_cold": (bare + cold) / bare, "ratio_warm": (bare + warm) / bare})
    total = {k: sum(r[k] for r in rows) for k in ("replay_s", "qa_cold_s", "qa_warm_s")}
    result = {
        "budget": args.budget,
        "conversations": len(rows),
        "rows": rows,
        "ratio_cold": (total["replay_s"] + total["qa_cold_s"]) / total["replay_s"],
        "ratio_warm": (total["replay_s"] + total["qa_warm_s"]) / total["replay_s"],
        "target": TARGET,
    }
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "qa_scoring.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# qa_retention scoring cost (scored replay / bare replay)",
        "",
        f"LoCoMo, budget {args.budget}, offline summarizer; measured side by side in one run. Target ≤ {TARGET}.",
        "",
        "| conversation | replay s | QA cold s | QA warm s | ratio cold | ratio warm |",
        "|---|---|---|---|---|---|",
        *(f"| {r['conversation']} | {r['replay_s']:.2f} | {r['qa_cold_s']:.2f} | {r['qa_warm_s']:.3f} | {r['ratio_cold']:.2f} | {r['ratio_warm']:.2f} |" for r in rows),
        f"| **all** | {total['replay_s']:.2f} | {total['qa_cold_s']:.2f} | {total['qa_warm_s']:.3f} | {result['ratio_cold']:.2f} | {result['ratio_warm']:.2f} |",
    ]
    (REPORT_DIR / "qa_scoring.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if result["ratio_cold"] <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
