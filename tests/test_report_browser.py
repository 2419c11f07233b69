"""The report in a real headless Chromium (Debian's, via Playwright's executable_path; no download).

Checks: the page loads offline with no console errors, every plot renders (plotly div with an
SVG holding drawn marks), and a ``<script>`` planted in a message shows as text and never runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from report_data import PLANTED, planted_replay

from lcm_lab.report import write_report
from lcm_lab.report.browser import chromium_path, headless_browser

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_path() is None, reason="chromium not installed: to run this test install it (sudo apt-get install chromium; `make browser` does so as root)"),
]


def test_report_renders_offline_without_errors_and_shows_planted_script_as_text(tmp_path: Path) -> None:
    pytest.importorskip("playwright.sync_api")
    a = planted_replay()
    b = planted_replay("planted-run-2")
    path = write_report([a, b], tmp_path / "report.html")
    errors: list[str] = []
    requests: list[str] = []
    with headless_browser() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("request", lambda req: requests.append(req.url))
        page.goto(path.resolve().as_uri())
        page.wait_for_function("document.querySelectorAll('.plotly-graph-div .main-svg').length > 0", timeout=30_000)
        page.wait_for_load_state("load")
        plots = page.locator(".plotly-graph-div")
        n_plots = plots.count()
        assert n_plots == 3 * 2 + 2
        rendered = page.evaluate(
            """() => Array.from(document.querySelectorAll('.plotly-graph-div')).map(div =>
                 div.querySelectorAll('svg.main-svg').length > 0 &&
                 div.querySelectorAll('g.trace, g.scatterlayer path, g.barlayer path').length > 0)"""
        )
        assert rendered == [True] * n_plots
        assert page.evaluate("typeof window.__planted") == "undefined"
        assert page.evaluate("typeof window.__planted_img") == "undefined"
        body_text = page.inner_text("body")
        assert PLANTED in body_text  # shown literally, as text
        assert page.title() == "lcm_lab report: 2 runs compared"
        page.close()
    assert errors == []
    assert [u for u in requests if not u.startswith("file://") and not u.startswith("data:")] == []
