"""ParameterPlayground redraw cost against the replay it shows, measured move by move in one run.

Notebook 02's set-up: LoCoMo conversation 1 at a 6,000-token budget, small chunks; the fresh-tail
slider is moved through a few values. Each move replays the conversation (``seconds``) and then
computes what the model receives at every turn and redraws the budget timeline and the DAG
(``redraw_seconds`` is the whole move). Writes ``reports/benchmarks/playground.json`` and ``.md``.

    python -m benchmarks.bench_playground
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

OUT = Path("reports") / "benchmarks"


def main() -> int:
    import lcm_lab as lab

    conversation = lab.read_transcript(lab.datasets_path("locomo/locomo10.json")).conversations[0].conversation
    base = lab.LcmConfig.from_plugin_config({"leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300})
    playground = lab.widgets.ParameterPlayground(conversation, config=base.replace(fresh_tail_count=8), token_budget=6000)
    for value in (16, 24, 12, 32, 8):
        playground.sliders["fresh_tail_count"].value = value
    moves = playground.history[1:]
    ratio = [m["redraw_seconds"] / m["seconds"] for m in moves]
    result = {"moves": moves, "median_replay_seconds": statistics.median(m["seconds"] for m in moves),
              "median_redraw_seconds": statistics.median(m["redraw_seconds"] for m in moves),
              "median_redraw_over_replay": round(statistics.median(ratio), 2)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "playground.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = ["# ParameterPlayground: a slider move against its replay", "",
             "LoCoMo conversation 1, 6,000-token budget, offline summarizer, fresh tail moved 8 → 16 → 24 → 12 → 32 → 8 "
             "(`python -m benchmarks.bench_playground`; kernel side, without the browser's drawing).", "",
             "| fresh tail | summaries | replay s | whole move s | move / replay |", "|---|---|---|---|---|"]
    lines += [f"| {m['fresh_tail_count']} | {m['summaries']} | {m['seconds']:.2f} | {m['redraw_seconds']:.2f} | "
              f"{m['redraw_seconds'] / m['seconds']:.1f} |" for m in moves]
    lines += ["", f"Median: replay {result['median_replay_seconds']:.2f} s, whole move {result['median_redraw_seconds']:.2f} s "
              f"({result['median_redraw_over_replay']}× the replay)."]
    (OUT / "playground.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
