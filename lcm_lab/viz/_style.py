"""Shared colours, sizes and text helpers for every plot (no plotly import here)."""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Iterable

KIND_COLORS: dict[str, str] = {"leaf": "#4C78A8", "condensed": "#F58518", "aggregate": "#9D9D9D"}
LEVEL_COLORS: dict[str, str] = {
    "normal": "#54A24B",
    "aggressive": "#EECA3B",
    "capped": "#F58518",
    "fallback": "#E45756",
    "unknown": "#9D9D9D",
}
# Depth d uses DEPTH_COLORS[d % len]; chosen to read well stacked in the budget timeline.
DEPTH_COLORS: tuple[str, ...] = ("#4C78A8", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC", "#E45756")
FRESH_TAIL_COLOR = "#54A24B"
EVICTABLE_COLOR = "#EECA3B"
# Message roles share plots with summary depths: no role colour may equal a depth colour.
ROLE_COLORS: dict[str, str] = {
    "user": "#54A24B",
    "assistant": "#EECA3B",
    "tool": "#F58518",
    "toolResult": "#F58518",
    "system": "#79706E",
    "synthetic": "#79706E",
    "prompt": "#17BECF",  # the user message the host appends after the engine's output
}
CONTINUOUS_SCALE = "Viridis"
# One colour per run, kept across every plot of a comparison (budget lines, score bars, ...).
RUN_COLORS: tuple[str, ...] = (
    "#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#EECA3B", "#FF9DA6", "#9D755D", "#BAB0AC",
)


def run_colors(labels: Iterable[str]) -> dict[str, str]:
    """A colour for each distinct run label, in order of first appearance (same runs, same colours).

    >>> run_colors(["b", "a", "b"])
    {'b': '#4C78A8', 'a': '#F58518'}
    """
    palette: dict[str, str] = {}
    for label in labels:
        if label not in palette:
            palette[label] = RUN_COLORS[len(palette) % len(RUN_COLORS)]
    return palette


def depth_color(depth: int) -> str:
    return DEPTH_COLORS[depth % len(DEPTH_COLORS)]


def category_color(color_by: str, value: str) -> str:
    """Colour of one category value for ``kind``, ``level`` or ``depth`` colouring."""
    if color_by == "kind":
        return KIND_COLORS.get(value, KIND_COLORS["aggregate"])
    if color_by == "level":
        return LEVEL_COLORS.get(value, LEVEL_COLORS["unknown"])
    if color_by == "depth":
        return depth_color(int(value.removeprefix("depth "))) if value.startswith("depth ") else KIND_COLORS["aggregate"]
    raise ValueError(f"no categorical palette for {color_by!r}")


def marker_size(tokens: int, max_tokens: int, smallest: float = 6.0, largest: float = 28.0) -> float:
    """Marker diameter growing with the square root of tokens (area ~ tokens)."""
    if max_tokens <= 0:
        return smallest
    return smallest + (largest - smallest) * math.sqrt(max(tokens, 0) / max_tokens)


def preview_html(text: str | None, limit: int = 240, width: int = 80) -> str:
    """An HTML-escaped, whitespace-collapsed, wrapped preview of transcript or summary text."""
    if not text:
        return "<i>(empty)</i>"
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return "<br>".join(html.escape(line) for line in textwrap.wrap(flat, width=width) or [""])


def wrapped_title(text: str, width: int = 95) -> tuple[str, int]:
    """A plot title broken into lines of at most ``width`` characters (plotly never wraps titles,
    so a long one runs off the figure) and the top margin in px those lines need. Each line is
    HTML-escaped (titles hold session ids and labels from the data; plotly renders tags in them).

    >>> wrapped_title("short <b>")
    ('short &lt;b&gt;', 50)
    """
    lines = textwrap.wrap(text, width=width) or [""]
    return "<br>".join(html.escape(line) for line in lines), 30 + 20 * len(lines)


# A horizontal legend just above the plot area: below it, it runs into the x axis title; at the
# right, into a second y axis. Figures using it add LEGEND_ROOM px to their top margin.
LEGEND_ON_TOP: dict[str, object] = {"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0}
LEGEND_ROOM = 45
