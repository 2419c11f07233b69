"""Drive the system's headless Chromium (never a downloaded one) for report tests and screenshots.

Needs the optional ``playwright`` package (in the ``test`` extra) and Debian's ``chromium``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_ARGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium_path() -> str | None:
    """Path of the system Chromium, or None when it is not installed."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def headless_browser() -> Iterator[Any]:
    """A Playwright ``Browser`` on the system Chromium (raises if Chromium is missing)."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise RuntimeError("chromium is not installed (Debian: apt-get install -y chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=list(CHROMIUM_ARGS), headless=True)
        try:
            yield browser
        finally:
            browser.close()


def screenshot(html_file: Path, png_file: Path, width: int = 1280, height: int = 800, full_page: bool = False,
               selector: str | None = None) -> Path:
    """Render ``html_file`` and save a PNG of the page (or of the first element matching ``selector``)."""
    png_file.parent.mkdir(parents=True, exist_ok=True)
    with headless_browser() as browser:
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(Path(html_file).resolve().as_uri())
        # a report marks its body once plotly.js is unpacked (figures in closed sections wait); a plain plotly page draws at once
        page.wait_for_function("document.body.dataset.figuresReady === '1' || document.querySelector('.main-svg') !== null",
                               timeout=60_000)
        page.wait_for_timeout(300)
        if selector is not None:
            page.locator(selector).first.screenshot(path=str(png_file))
        else:
            page.screenshot(path=str(png_file), full_page=full_page)
        page.close()
    return png_file


# For each drawn plotly figure: how many values its traces hold, its width against its container, and
# the boxes of the title, the legend and the texts a legend must not cover (axis titles, tick labels,
# subplot titles and annotations), read from the DOM after plotly laid it out.
_FIGURE_BOXES_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(div => {
  const rect = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const count = v => !v ? 0 : (Array.isArray(v) ? v.length : (v.length !== undefined ? v.length : 0));
  const values = (div.data || []).reduce((n, t) => n + Math.max(count(t.x), count(t.y), count(t.z), count(t.values), count(t.dimensions)), 0);
  const title = div.querySelector('.g-gtitle .gtitle');
  const legend = div.querySelector('g.legend');
  const texts = Array.from(div.querySelectorAll('.g-xtitle text, .g-ytitle text, [class*="g-x"][class*="title"] text, [class*="g-y"][class*="title"] text, .xtick text, .ytick text, .annotation-text'))
    .filter(e => e.textContent.trim() && e.getBoundingClientRect().width > 0);
  return {id: div.id, title: title ? title.textContent : '', values: values,
          box: rect(div), parent: rect(div.parentElement),
          titleBox: title && title.textContent ? rect(title) : null,
          legendBox: legend ? rect(legend.querySelector('.bg') || legend) : null,
          texts: texts.map(e => ({text: e.textContent, box: rect(e)}))};
})"""


def _overlap(a: list[float], b: list[float]) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1


def figure_problems(page: Any, min_width_share: float = 0.9) -> list[str]:
    """Every drawn figure on a Playwright ``page`` checked: it has values, it spans its container
    (full width on first render), its title lies inside it (not clipped), and its legend covers no
    axis title, tick label or subplot title. One line per problem; empty when all is well."""
    problems: list[str] = []
    for fig in page.evaluate(_FIGURE_BOXES_JS):
        name = fig["title"] or fig["id"]
        left, top, right, _bottom = fig["box"]
        if fig["values"] == 0:
            problems.append(f"{name}: empty figure (no values in any trace)")
        parent_width = fig["parent"][2] - fig["parent"][0]
        if parent_width > 0 and (right - left) < min_width_share * parent_width:
            problems.append(f"{name}: {right - left:.0f} px wide in a {parent_width:.0f} px container (not full width)")
        t = fig["titleBox"]
        if t is not None and (t[0] < left - 1 or t[2] > right + 1 or t[1] < top - 1):
            problems.append(f"{name}: title clipped (title box {t} outside the figure {fig['box']})")
        legend = fig["legendBox"]
        if legend is not None:
            for text in fig["texts"]:
                if _overlap(legend, text["box"]):
                    problems.append(f"{name}: legend overlaps {text['text']!r}")
                    break
    return problems


def open_everything(page: Any, timeout_ms: int = 60_000) -> int:
    """Open every ``<details>`` of a report page and wait until each figure is drawn; the count."""
    page.wait_for_function("document.body.dataset.figuresReady === '1'", timeout=timeout_ms)
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.wait_for_function(
        "Array.from(document.querySelectorAll('.lcm-figure')).every(d => d.querySelector('.main-svg'))", timeout=timeout_ms)
    page.wait_for_timeout(200)
    return int(page.evaluate("document.querySelectorAll('.lcm-figure').length"))
