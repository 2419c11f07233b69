"""Regenerate the cost PNGs under ``reports/screenshots/`` with headless Chromium.

The recorded-vs-predicted cache plot of each bundled real session (``lcm-lab cost --validate``)
and the per-call breakdown of the recorded pi session as its host sent it.

    python -m lcm_lab.report.cost_screenshots [--out reports/screenshots]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from lcm_lab.bundled import datasets_path
from lcm_lab.cost.scores import validate_transcript
from lcm_lab.cost.validate import BUNDLED_SESSIONS
from lcm_lab.report.browser import screenshot
from lcm_lab.viz.cost import plot_cost_validation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports") / "screenshots")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for relative in BUNDLED_SESSIONS:
            path = datasets_path(relative)
            fig = plot_cost_validation(validate_transcript(path))
            fig.update_layout(width=1400)
            html = Path(tmp) / f"{path.stem}.html"
            fig.write_html(html, include_plotlyjs=True)
            name = "cost_validation_" + path.stem.split("-")[0] if relative.startswith("claude") else "cost_validation_" + path.stem
            print(screenshot(html, args.out / f"{name}.png", width=1440, height=int(fig.layout.height or 420) + 40))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
