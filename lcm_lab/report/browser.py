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
        page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)
        page.wait_for_timeout(300)
        if selector is not None:
            page.locator(selector).first.screenshot(path=str(png_file))
        else:
            page.screenshot(path=str(png_file), full_page=full_page)
        page.close()
    return png_file
