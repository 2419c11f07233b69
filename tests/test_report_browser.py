"""The report in a real headless Chromium (Debian's, via Playwright's executable_path; no download).

Checks: the page loads offline with no console errors, every plot renders (plotly div with an
SVG holding drawn marks) once its section is opened, no figure is empty, narrower than its
container, clipped at its title or covered by its legend (``figure_problems``), the verdict is on
the first screen, and a ``<script>`` planted in a message shows as text and never runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from report_data import PLANTED, planted_replay

from lcm_lab.metrics.headline import headline
from lcm_lab.report import write_report
from lcm_lab.report.browser import chromium_path, figure_problems, headless_browser, open_everything
from lcm_lab.report.verdict_text import Pair, compare_settings

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_path() is None, reason="chromium not installed: to run this test install it (sudo apt-get install chromium; `make browser` does so as root)"),
]


def _headline_scores() -> pd.DataFrame:
    rows = []
    for run, raw in (("planted-run", 0.3), ("planted-run-2", 0.6)):
        head = headline(run, "qa_retention", raw=raw, ceiling=0.9, floor=0.1, chance=0.01, n=40, unit="qa_item",
                        ci=((raw - 0.1 - 0.05) / 0.8, (raw - 0.1 + 0.05) / 0.8), extra={"proxy": True})
        rows.append({"run_id": run, "scope": "run", "scope_id": "", "metric": "qa_retention", "value": head.value,
                     "details": json.dumps(dict(head.details))})
    return pd.DataFrame(rows)


def test_report_renders_offline_without_errors_and_shows_planted_script_as_text(tmp_path: Path) -> None:
    pytest.importorskip("playwright.sync_api")
    a = planted_replay()
    b = planted_replay("planted-run-2")
    scores = _headline_scores()
    verdicts = compare_settings(scores, [Pair("planted session", "planted-run", "first", "planted-run-2", "second")], ["qa_retention"])
    path = write_report([a, b], tmp_path / "report.html", scores=scores, verdicts=verdicts,
                        run_labels={"planted-run": "first", "planted-run-2": "second"})
    errors: list[str] = []
    requests: list[str] = []
    with headless_browser() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("request", lambda req: requests.append(req.url))
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        first_screen = page.evaluate("() => document.getElementById('verdict').getBoundingClientRect().bottom")
        assert first_screen < 900, "the verdict is on the first screen"
        assert "second is better than first beyond noise" in page.inner_text("#verdict")
        n_plots = open_everything(page)
        assert n_plots == 3 * 2 + 2 + 1  # per run budget, DAG, context; comparison budget + bars; headlines
        rendered = page.evaluate(
            """() => Array.from(document.querySelectorAll('.lcm-figure')).map(div =>
                 div.querySelectorAll('svg.main-svg').length > 0 &&
                 div.querySelectorAll('g.trace, g.scatterlayer path, g.barlayer path').length > 0)"""
        )
        assert rendered == [True] * n_plots
        assert figure_problems(page) == []
        assert page.evaluate("typeof window.__planted") == "undefined"
        assert page.evaluate("typeof window.__planted_img") == "undefined"
        body_text = page.inner_text("body")
        assert PLANTED in body_text  # shown literally, as text
        assert page.title() == "lcm_lab report: 2 runs compared"
        page.close()
    assert errors == []
    assert [u for u in requests if not u.startswith("file://") and not u.startswith("data:") and not u.startswith("blob:")] == []


def test_figure_problems_catches_an_empty_figure_a_clipped_title_and_a_covering_legend(tmp_path: Path) -> None:
    pytest.importorskip("playwright.sync_api")
    import plotly.graph_objects as go

    from lcm_lab.report.figures import LOADER, figure_html, plotly_js_gzip_base64

    empty = go.Figure(layout={"title": {"text": "nothing here"}})
    clipped = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]), layout={"title": {"text": "a very long title " * 12}, "width": 300})
    covered = go.Figure([go.Scatter(x=[1, 2], y=[1, 2], name=f"series {i}") for i in range(3)],
                        layout={"title": {"text": "covered"}, "xaxis": {"title": {"text": "turn"}},
                                "legend": {"orientation": "h", "x": 0.4, "y": -0.05, "yanchor": "top"}})
    body = "".join(f"<div>{figure_html(f)}</div>" for f in (empty, clipped, covered))
    html = (f'<!DOCTYPE html><html><head><script type="application/gzip-base64" id="plotly-js-gzip">{plotly_js_gzip_base64()}</script>'
            f"</head><body>{body}<script>{LOADER}</script></body></html>")
    path = tmp_path / "bad.html"
    path.write_text(html, encoding="utf-8")
    with headless_browser() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(path.resolve().as_uri())
        open_everything(page)
        problems = figure_problems(page)
        page.close()
    assert any(p.startswith("nothing here: empty figure") for p in problems), problems
    assert any("title clipped" in p for p in problems), problems
    assert any(p.startswith("covered: legend overlaps") for p in problems), problems
