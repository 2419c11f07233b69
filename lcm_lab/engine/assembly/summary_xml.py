"""The XML wrapper a summary gets when it is shown to the model (spec §6, ``formatSummaryContent``).

>>> from lcm_lab.engine.types import Summary
>>> print(summary_xml(Summary("sum_a", "leaf", 0, "x < y & z", 3, "2026-01-01T10:00:00.000Z", None), "UTC"))
<summary id="sum_a" kind="leaf" depth="0" descendant_count="0" trust="untrusted" earliest_at="2026-01-01T10:00:00">
  <content>
x &lt; y &amp; z
  </content>
</summary>
"""

from __future__ import annotations

from lcm_lab.engine.timefmt import format_local_iso
from lcm_lab.engine.types import Summary


def escape_xml_attribute(value: str) -> str:
    """Escape ``& " < >`` for a double-quoted attribute value."""
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def escape_xml_text(value: str) -> str:
    """Escape ``& < >`` for element text (quotes stay as they are)."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def summary_xml(summary: Summary, timezone: str) -> str:
    """The user-message text a summary item becomes at assembly.

    Condensed summaries list their source summaries (``summary_parents`` in ordinal order,
    i.e. ``summary.source_summary_ids``); time attributes are rendered in ``timezone`` and
    left out when unknown. The ``trust="untrusted"`` label marks the content as history, not
    instructions.
    """
    attributes = [
        f'id="{escape_xml_attribute(summary.summary_id)}"',
        f'kind="{escape_xml_attribute(summary.kind)}"',
        f'depth="{summary.depth}"',
        f'descendant_count="{summary.descendant_count}"',
        'trust="untrusted"',
    ]
    if summary.earliest_at:
        attributes.append(f'earliest_at="{format_local_iso(summary.earliest_at, timezone)}"')
    if summary.latest_at:
        attributes.append(f'latest_at="{format_local_iso(summary.latest_at, timezone)}"')
    lines = [f"<summary {' '.join(attributes)}>"]
    if summary.kind == "condensed" and summary.source_summary_ids:
        lines.append("  <parents>")
        lines.extend(
            f'    <summary_ref id="{escape_xml_attribute(ref)}" />' for ref in summary.source_summary_ids
        )
        lines.append("  </parents>")
    lines += ["  <content>", escape_xml_text(summary.content), "  </content>", "</summary>"]
    return "\n".join(lines)
