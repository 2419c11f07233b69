"""A version comparison in words and markdown tables (notebooks, the report, ``reports/upgrade-1.0.md``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lcm_lab.io.markup import markdown_text

if TYPE_CHECKING:
    from lcm_lab.upgrade._comparison import VersionComparison

TOTAL_LABELS: tuple[tuple[str, str], ...] = (
    ("turns_differing_bytes", "turns where the model receives a different context"),
    ("turns_differing_shape", "… different in shape (structure, summaries as kind/depth/range)"),
    ("summarizer_calls", "summarizer calls"),
    ("summaries", "summaries (leaf + condensed)"),
    ("clamped_turns", "clamped turns"),
    ("degraded_turns", "degraded turns"),
    ("summaries_sent_per_turn", "summaries sent per turn"),
    ("mean_sent_tokens", "sent tokens per turn (mean)"),
    ("peak_sent_tokens", "sent tokens (peak)"),
    ("final_stored_tokens", "stored tokens at the end"),
)


def _num(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def interval(value: Any, low: Any, high: Any) -> str:
    """``0.42 [0.31, 0.55]``, or the value alone when there is no interval.

    >>> interval(0.5, 0.4, 0.6), interval(0.5, float("nan"), float("nan")), interval(None, None, None)
    ('0.50 [0.40, 0.60]', '0.50', '—')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if low is None or high is None or math.isnan(float(low)) or math.isnan(float(high)):
        return _num(value)
    return f"{_num(value)} [{_num(low)}, {_num(high)}]"


def totals_table(totals: Sequence[Mapping[str, Any]]) -> str:
    """What happens to the context, one row per quantity, one column per engine."""
    engines = [markdown_text(t["engine"]) for t in totals]
    lines = ["| | " + " | ".join(f"lossless-claw {e}" for e in engines) + " |", "|---|" + "---|" * len(engines)]
    for key, label in TOTAL_LABELS:
        lines.append(f"| {label} | " + " | ".join(_num(t.get(key)) for t in totals) + " |")
    return "\n".join(lines)


def headlines_table(headlines: Sequence[Mapping[str, Any]]) -> str:
    """Each headline per engine: value [95% CI] (0 = floor, 1 = ceiling), raw · floor · ceiling · chance
    on the raw scale, n clusters (the resampling unit), probes (those on a degraded engine path),
    and the paired difference from the first engine."""
    lines = ["| headline | engine | value [95% CI] | raw · floor · ceiling · chance | n (unit), probes (degraded) "
             "| difference from baseline [paired 95% CI] |", "|---|---|---|---|---|---|"]  # fmt: skip
    for h in headlines:
        value = f"withheld: {h['withheld']}" if h.get("withheld") else interval(h["value"], h["ci_low"], h["ci_high"])
        controls = " · ".join(_num(h.get(k)) for k in ("raw", "floor", "ceiling", "chance"))
        diff = interval(h["diff"], h["diff_ci_low"], h["diff_ci_high"])
        if diff != "—" and not h.get("paired"):
            diff += " (unpaired, no interval)"
        cells = (h["metric"], h["engine"], value, controls, f"{h['n']} ({h['unit']}), {h['probes']} ({h['probes_degraded']})", diff)
        lines.append("| " + " | ".join(markdown_text(c) for c in cells) + " |")
    return "\n".join(lines)


def verdict_lines(comparison: VersionComparison) -> list[str]:
    """What the comparison says, in words, from its numbers (one line per non-baseline engine and headline)."""
    base = comparison.baseline
    out = []
    totals = {t["engine"]: t for t in comparison.totals}
    for engine in comparison.versions[1:]:
        t = totals[engine]
        out.append(
            f"Under {engine} the model receives a different context than under {base} at {t['turns_differing_bytes']} of "
            f"{t['turns']} turns; {t['clamped_turns']} turns are clamped (vs {totals[base]['clamped_turns']}) and it sends "
            f"{_num(t['summaries_sent_per_turn'])} summaries per turn (vs {_num(totals[base]['summaries_sent_per_turn'])})."
        )
    for h in comparison.headlines:
        if h["engine"] == base:
            continue
        if not h.get("paired") or math.isnan(h["diff_ci_low"]):
            out.append(f"{h['metric']}: no paired interval ({h.get('withheld') or 'items differ or too few'}).")
            continue
        low, high = h["diff_ci_low"], h["diff_ci_high"]
        if low <= 0 <= high:
            word = "within noise"
        else:
            word = "better" if h["diff"] > 0 else "worse"
        out.append(f"{h['metric']}: {h['engine']} − {base} = {interval(h['diff'], low, high)} over {h['n']} {h['unit']}s, paired ({word}).")
    return out


def comparison_markdown(comparison: VersionComparison) -> str:
    """The whole comparison: title line, totals, headlines and the verdict in words.

    Every piece of text from the transcript or the caller (title, session id, summarizer, engine
    names) goes through :func:`~lcm_lab.io.markup.markdown_text`: a notebook renders this markdown
    with inline HTML, so markup in a session id must show as text.
    """
    name = markdown_text(comparison.title or comparison.session_id)
    head = (f"**{name}** at {comparison.token_budget:,} tokens, summarizer {markdown_text(comparison.summarizer)}: "
            f"lossless-claw {' vs '.join(markdown_text(v) for v in comparison.versions)}")  # fmt: skip
    return "\n\n".join([head, totals_table(comparison.totals), headlines_table(comparison.headlines),
                        "\n".join(f"- {markdown_text(line)}" for line in verdict_lines(comparison))])  # fmt: skip
