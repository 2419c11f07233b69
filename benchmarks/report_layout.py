"""How long and how heavy a report page is, measured side by side in one headless Chromium.

For each HTML file: its size in MB, the page height in px as a reader first sees it, the height
with every ``<details>`` opened (the old report had none: both are the same there), the time
until every figure on the first screen is drawn, and the figures' layout problems
(:func:`lcm_lab.report.browser.figure_problems`) once everything is open. Writes
``reports/benchmarks/report_layout.json`` and ``.md``.

    python -m benchmarks.report_layout BEFORE.html AFTER.html [--labels before after]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from lcm_lab.report.browser import figure_problems, headless_browser

OUT = Path("reports") / "benchmarks"


def measure(path: Path, browser: Any) -> dict[str, Any]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    started = time.perf_counter()
    page.goto(path.resolve().as_uri())
    # old pages draw every figure inline; new ones mark the body once plotly.js is unpacked
    page.wait_for_function("document.querySelector('.main-svg') !== null || document.body.dataset.figuresReady === '1'",
                           timeout=120_000)
    first_drawn = time.perf_counter() - started
    folded = page.evaluate("document.documentElement.scrollHeight")
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.wait_for_function("Array.from(document.querySelectorAll('.lcm-figure')).every(d => d.querySelector('.main-svg'))",
                           timeout=120_000)
    page.wait_for_timeout(500)
    opened = page.evaluate("document.documentElement.scrollHeight")
    problems = figure_problems(page)
    figures = page.evaluate("document.querySelectorAll('.js-plotly-plot').length")
    page.close()
    return {"file": path.name, "mb": round(path.stat().st_size / 1e6, 2), "first_screen_px": 900, "folded_px": folded,
            "all_open_px": opened, "seconds_to_first_figures": round(first_drawn, 2), "figures": figures,
            "figure_problems": problems}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--labels", nargs="*")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    labels = args.labels or [p.stem for p in args.files]
    with headless_browser() as browser:
        rows = [{"label": label, **measure(path, browser)} for label, path in zip(labels, args.files, strict=True)]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report_layout.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    lines = ["# Report length and size", "", "Measured side by side in one headless Chromium (1280 × 900 viewport) by "
             "`python -m benchmarks.report_layout`.", "",
             "| report | MB | page px as first seen | px with every section open | s to first figures | figures | layout problems |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['label']} | {r['mb']} | {r['folded_px']:,} | {r['all_open_px']:,} | {r['seconds_to_first_figures']} | "
              f"{r['figures']} | {len(r['figure_problems'])} |" for r in rows]
    for r in rows:
        if r["figure_problems"]:
            lines += ["", f"Layout problems in {r['label']}:", *[f"- {p}" for p in r["figure_problems"]]]
    (args.out / "report_layout.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
