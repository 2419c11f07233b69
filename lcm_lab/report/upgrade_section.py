"""The report's upgrade section: a :class:`~lcm_lab.upgrade.VersionComparison` as the page shows it.

``report(replays, upgrade=lab.compare_versions(...))`` adds it: the totals per engine, every
headline with its interval and the paired difference, the reading in words and the per-turn figure.
"""

from __future__ import annotations

import math
from typing import Any

from lcm_lab.upgrade._render import TOTAL_LABELS, interval, verdict_lines


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def upgrade_section(comparison: Any) -> dict[str, Any]:
    """Tables, sentences and the figure of a version comparison (the template renders them)."""
    from lcm_lab.report.build import _figure_html
    from lcm_lab.viz.versions import plot_version_turns

    totals = list(comparison.totals)
    headline_rows = []
    for h in comparison.headlines:
        value = f"withheld: {h['withheld']}" if h.get("withheld") else interval(h["value"], h["ci_low"], h["ci_high"])
        diff = interval(h["diff"], h["diff_ci_low"], h["diff_ci_high"]) if h.get("paired") else "—"
        headline_rows.append([h["metric"], h["engine"], value, _cell(h["chance"]), f"{h['n']} {h['unit']}", diff])
    return {
        "title": f"{comparison.title or comparison.session_id} at {comparison.token_budget:,} tokens",
        "versions": " vs ".join(comparison.versions),
        "summarizer": comparison.summarizer,
        "engines": [f"lossless-claw {t['engine']}" for t in totals],
        "totals": [[label, *(_cell(t.get(key)) for t in totals)] for key, label in TOTAL_LABELS],
        "headline_columns": ["headline", "engine", "value [95% CI]", "chance", "n (unit)", f"− {comparison.baseline} [paired 95% CI]"],
        "headlines": headline_rows,
        "verdict": verdict_lines(comparison),
        "figure": _figure_html(plot_version_turns(comparison)),
    }
