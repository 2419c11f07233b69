"""Shared colours, sizes and text helpers for every plot (no plotly import here)."""

from __future__ import annotations

import html
import math
import textwrap

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
ROLE_COLORS: dict[str, str] = {
    "user": "#54A24B",
    "assistant": "#EECA3B",
    "tool": "#9D755D",
    "toolResult": "#9D755D",
    "system": "#BAB0AC",
    "synthetic": "#BAB0AC",
    "prompt": "#4C78A8",  # the user message the host appends after the engine's output
}
CONTINUOUS_SCALE = "Viridis"


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
