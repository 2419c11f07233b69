"""Regenerate the PNGs under ``reports/screenshots/`` (DAG, budget timeline, report) with headless Chromium.

Uses bundled data only: the real pi session ``datasets/pi-mono/before-compaction.jsonl`` replayed
with the offline summarizer under a tight configuration. ``--demo-report FILE`` (the page
``lcm-lab demo`` writes) adds ``report_first_screen.png``, the 1280 × 900 px a reader sees first;
``--notebook FILE`` executes a notebook (notebook 02 by default: its verdict) and adds
``<notebook>_verdict.png``, the output of the last cell that prints ``--marker``.

    python -m lcm_lab.report.screenshots [--out reports/screenshots] [--demo-report reports/demo-report.html]
        [--notebook notebooks/02_tune_parameters.ipynb --marker "within noise"]
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
    parser.add_argument("--demo-report", type=Path, default=None)
    parser.add_argument("--notebook", type=Path, default=None)
    parser.add_argument("--marker", default="recommend", help="text the notebook's verdict output contains")
    parser.add_argument("--only-extra", action="store_true", help="only the demo report and notebook shots")
    args = parser.parse_args(argv)
    if args.demo_report is not None:
        print(screenshot(args.demo_report, args.out / "report_first_screen.png", width=1280, height=900))
    if args.notebook is not None:
        print(notebook_screenshot(args.notebook, args.out / f"{args.notebook.stem}_verdict.png", args.marker))
    if args.only_extra:
        return 0
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


def notebook_screenshot(notebook: Path, png_file: Path, marker: str) -> Path:
    """Execute ``notebook`` (lab store and reports in a temporary directory), render it with
    nbconvert and save the output of the last code cell whose text contains ``marker``."""
    import os

    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "LCM_LAB_HOME": str(Path(tmp) / "home"), "LCM_LAB_REPORTS": str(Path(tmp) / "reports"),
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        book = nbformat.read(notebook, as_version=4)
        NotebookClient(book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(notebook.parent)}}).execute(env=env)
        hits = [i for i, c in enumerate(book.cells) if c.cell_type == "code"
                and any(marker in (o.get("text") or "") + str(o.get("data", {}).get("text/plain", "")) for o in c.outputs)]
        if not hits:
            raise SystemExit(f"{notebook.name}: no cell output contains {marker!r}")
        body, _ = HTMLExporter(template_name="lab").from_notebook_node(book)
        page = Path(tmp) / f"{notebook.stem}.html"
        page.write_text(body, encoding="utf-8")
        code_cells = [i for i, c in enumerate(book.cells) if c.cell_type == "code"]
        nth = code_cells.index(hits[-1])
        png_file.parent.mkdir(parents=True, exist_ok=True)
        from lcm_lab.report.browser import headless_browser

        with headless_browser() as browser:
            view = browser.new_page(viewport={"width": 1280, "height": 900})
            view.goto(page.resolve().as_uri())
            view.locator(".jp-CodeCell").nth(nth).screenshot(path=str(png_file))
            view.close()
    return png_file


if __name__ == "__main__":
    raise SystemExit(main())
