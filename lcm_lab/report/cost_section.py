"""The report's "What it costs" section: session bills side by side with their 90% intervals, the
paired saving against the first setting, per-call tokens, cache breaks.

>>> cost_section({}) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

COLUMNS = ("setting", "calls", "cached tokens", "written tokens", "uncached tokens", "output tokens", "summarizer $",
           "rules' total $", "expected $ [90% interval]", "saving vs first row $ [90% paired]", "cache hit rate")  # fmt: skip


def _interval(interval: Any) -> str:
    if interval is None:
        return "–"
    noise = " (within noise)" if interval.covers_zero else ""
    return f"{interval.expected:,.2f} [{interval.low:,.2f}, {interval.high:,.2f}]{noise}"


def cost_section(costs: Mapping[str, Any], figure_for: str | None = None) -> dict[str, Any] | None:
    """Template data for priced sessions (``label -> SessionCost``); the per-call figure and the
    cache-break table are drawn for ``figure_for`` (default: the first label). The saving column
    is the first setting's bill minus each row's, paired (the same simulated cache misses) when
    both were priced with one calibration."""
    if not costs:
        return None
    from lcm_lab.report.figures import figure_html
    from lcm_lab.viz.cost import cache_breaks, plot_cost_breakdown

    reference_label, reference = next(iter(costs.items()))
    rows = []
    for label, cost in costs.items():
        t = cost.totals()
        rate = t["cache_hit_rate"]
        bill = cost.bill()
        saving = "reference" if label == reference_label else _interval(reference.paired_difference(cost))
        rows.append([label, f"{t['calls']:,}", f"{t['cached_tokens']:,}", f"{t['written_tokens']:,}", f"{t['uncached_tokens']:,}",
                     f"{t['output_tokens']:,}", f"{t['summarizer_usd']:.2f}", f"{t['total_usd']:.2f}",
                     _interval(bill.interval() if bill is not None else None), saving,
                     "–" if rate is None else f"{rate:.1%}"])  # fmt: skip
    focus = figure_for if figure_for in costs else next(iter(costs))
    chosen = costs[focus]
    figure = plot_cost_breakdown(chosen, title=f"{focus}: prompt tokens per call (cached / written / uncached)")
    breaks = [[b["reason"], f"{b['calls']:,}", f"{b['lost_tokens']:,}", f"{b['extra_usd']:.2f}"] for b in cache_breaks(chosen)]
    return {
        "columns": COLUMNS,
        "rows": rows,
        "reference": reference_label,
        "focus": focus,
        "model": chosen.prices.model,
        "figure": figure_html(figure),
        "breaks": breaks,
    }
