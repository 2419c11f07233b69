"""Regenerate the PNGs under ``reports/screenshots/`` (DAG, budget timeline, report) with headless Chromium.

Uses bundled data only: the real pi session ``datasets/pi-mono/before-compaction.jsonl`` replayed
with the offline summarizer under a tight configuration.

    python -m lcm_lab.report.screenshots [--out reports/screenshots]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from lcm_lab.bundled import datasets_path
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.report.browser import screenshot
from lcm_lab.report.build import write_report
from lcm_lab.summarizers import get_summarizer
from lcm_lab.viz import plot_budget_timeline, plot_context_at, plot_dag

TIGHT = LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400, condensed_target_tokens=300,
                  sweep_max_depth=-1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports") / "screenshots")
    args = parser.parse_args(argv)
    session = read_transcript(datasets_path("pi-mono/before-compaction.jsonl")).conversations[0].conversation
    tight = replay(session, TIGHT, get_summarizer("offline"), token_budget=8000, run_id="before-compaction · tight 8k")
    deep = replay(session, TIGHT.replace(sweep_max_depth=1), get_summarizer("offline"), token_budget=8000,
                  run_id="before-compaction · sweepMaxDepth 1")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        figures = {
            "dag": plot_dag(tight, color_by="depth"),
            "budget_timeline": plot_budget_timeline(tight),
            "context_at_turn": plot_context_at(tight, None, source="sent"),
        }
        for name, fig in figures.items():
            fig.update_layout(width=1400)
            html = work / f"{name}.html"
            fig.write_html(html, include_plotlyjs=True)
            print(screenshot(html, args.out / f"{name}.png", width=1440, height=int(fig.layout.height or 450) + 40))
        report = write_report([tight, deep], work / "report.html")
        print(screenshot(report, args.out / "report.png", width=1280, height=2600))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
