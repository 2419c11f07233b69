"""What the model receives under deferred (the plugin's default) vs inline compaction, on the bundled sessions.

For each bundled session (the pi coding session, the LoCoMo conversation of the demo, the Claude
Code session) and each demo setting (plugin defaults at 32k, the tight 8k config), replays with
the offline summarizer in both modes and counts the per-turn model contexts the engine clamped
or degraded (raw live history, no summaries), the summaries and the final stored tokens.
Writes reports/benchmarks/model_context_modes.{json,md}.

    .venv/bin/python -m benchmarks.model_context_modes
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from lcm_lab.bundled.demo import SETTINGS
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.summarizers import get_summarizer

REPO = Path(__file__).resolve().parents[1]
SESSIONS = (
    ("pi coding session", "datasets/pi-mono/before-compaction.jsonl"),
    ("LoCoMo conversation 1", "datasets/locomo/locomo10.json"),
    ("Claude Code session", "datasets/claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"),
)
MODES = ("deferred", "inline")


def measure(run: Replay) -> dict[str, Any]:
    """Per-turn model-context counts of one replay."""
    sent = [run.sent(t.turn) for t in run.turns]
    end = run.sent()
    drains = [a for t in run.turns for a in (t.drain, t.emergency_drain) if a is not None]
    return {
        "turns": len(run.turns),
        "clamped_turns": sum(1 for s in sent if s.clamped),
        "degraded_turns": sum(1 for s in sent if s.degraded),
        "paths": dict(Counter(s.path for s in sent)),
        "summaries": len(run.summaries),
        "final_stored_tokens": run.final_tokens,
        "end_path": end.path,
        "end_sent_tokens": end.estimated_tokens,
        "max_sent_tokens": max((s.estimated_tokens for s in sent), default=0),
        "drain_attempts": len(drains),
        "drains_skipped_backoff": sum(1 for a in drains if not a.ran),
    }


def main() -> int:
    summarizer = get_summarizer("offline")
    rows = []
    for label, path in SESSIONS:
        conversation = read_transcript(REPO / path).conversations[0].conversation
        for setting, (config, budget) in SETTINGS.items():
            for mode in MODES:
                run = replay(conversation, config.replace(proactive_threshold_compaction_mode=mode), summarizer,
                             token_budget=budget)  # fmt: skip
                rows.append({"session": label, "setting": setting, "mode": mode, **measure(run)})
                print(rows[-1])
    out = REPO / "reports" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    (out / "model_context_modes.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    lines = [
        "| session | setting | mode | turns | clamped | degraded | summaries | final stored tokens | end of run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['session']} | {r['setting']} | {r['mode']} | {r['turns']} | {r['clamped_turns']} | "
            f"{r['degraded_turns']} | {r['summaries']} | {r['final_stored_tokens']:,} | {r['end_path']} |"
        )
    (out / "model_context_modes.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
