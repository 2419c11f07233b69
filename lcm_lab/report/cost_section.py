"""The report's "What it costs" section: session bills side by side, per-call tokens, cache breaks.

>>> cost_section({}) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

COLUMNS = ("setting", "calls", "cached tokens", "written tokens", "uncached tokens", "output tokens",
           "main model $", "summarizer $", "total $", "cache hit rate")  # fmt: skip


def cost_section(costs: Mapping[str, Any], figure_for: str | None = None) -> dict[str, Any] | None:
    """Template data for priced sessions (``label -> SessionCost``); the per-call figure and the
    cache-break table are drawn for ``figure_for`` (default: the first label)."""
    if not costs:
        return None
    from lcm_lab.viz.cost import cache_breaks, plot_cost_breakdown

    rows = []
    for label, cost in costs.items():
        t = cost.totals()
        rate = t["cache_hit_rate"]
        rows.append([label, f"{t['calls']:,}", f"{t['cached_tokens']:,}", f"{t['written_tokens']:,}", f"{t['uncached_tokens']:,}",
                     f"{t['output_tokens']:,}", f"{t['main_usd']:.2f}", f"{t['summarizer_usd']:.2f}", f"{t['total_usd']:.2f}",
                     "–" if rate is None else f"{rate:.1%}"])  # fmt: skip
    focus = figure_for if figure_for in costs else next(iter(costs))
    chosen = costs[focus]
    figure = plot_cost_breakdown(chosen, title=f"{focus}: prompt tokens per call (cached / written / uncached)")
    breaks = [[b["reason"], f"{b['calls']:,}", f"{b['lost_tokens']:,}", f"{b['extra_usd']:.2f}"] for b in cache_breaks(chosen)]
    return {
        "columns": COLUMNS,
        "rows": rows,
        "focus": focus,
        "model": chosen.prices.model,
        "figure": Markup(figure.to_html(full_html=False, include_plotlyjs=False)),
        "breaks": breaks,
    }
