"""Everything about one summary (content, sources, users, summarizer input, raw messages) as escaped HTML.

``summary_detail_info`` gathers; ``summary_detail_html`` renders. The DAG explorer widget and the
report both use them.
"""

from __future__ import annotations

import html
from typing import Any, NamedTuple

from lcm_lab.engine.types import StoredMessage, SummarizerCall, Summary
from lcm_lab.errors import UnknownNameError
from lcm_lab.viz._source import dag_source
from lcm_lab.viz.dag import _coverage


class SummaryDetail(NamedTuple):
    summary: Summary
    sources: tuple[Summary, ...]
    used_by: tuple[Summary, ...]
    span: tuple[int, int] | None
    messages: tuple[StoredMessage, ...]  # covered raw messages, at most max_messages
    more_messages: int  # covered messages not listed
    call: SummarizerCall | None  # the summarizer call whose output became this summary


def summary_detail_info(obj: Any, summary_id: str, max_messages: int = 40) -> SummaryDetail:
    """Collect one summary's neighbourhood from a ``Replay``, a ``Conversation`` or summaries."""
    source = dag_source(obj)
    by_id = {s.summary_id: s for s in source.summaries}
    if summary_id not in by_id:
        raise UnknownNameError(f"no summary {summary_id!r} in {source.label}")
    s = by_id[summary_id]
    span = _coverage(source.summaries, by_id).get(summary_id)
    covered = [q for q in range(span[0], span[1] + 1) if q in source.messages] if span else []
    return SummaryDetail(
        summary=s,
        sources=tuple(by_id[x] for x in s.source_summary_ids if x in by_id),
        used_by=tuple(p for p in source.summaries if summary_id in p.source_summary_ids),
        span=span,
        messages=tuple(source.messages[q] for q in covered[:max_messages]),
        more_messages=max(0, len(covered) - max_messages),
        call=_producing_call(obj, s),
    )


def _producing_call(obj: Any, s: Summary) -> SummarizerCall | None:
    turns = getattr(obj, "turns", None)
    if not turns or s.created_turn is None or not 0 <= s.created_turn < len(turns):
        return None
    candidates = [c for c in turns[s.created_turn].calls if c.kind == s.kind and c.depth == s.depth]
    exact = [c for c in candidates if c.output == s.content]
    if exact:
        return exact[-1]
    # Capped and fallback summaries are derived from (not equal to) the last call's output.
    partial = [c for c in candidates if c.output and s.content.startswith(c.output[:40])]
    return partial[-1] if partial else None


def _row(s: Summary) -> str:
    return (
        f"<li><code>{html.escape(s.summary_id)}</code> {html.escape(s.kind)} d{s.depth}, {s.token_count:,} tokens"
        f"{' · ' + html.escape(s.level) if s.level else ''}</li>"
    )


def _block(text: str, limit: int) -> str:
    shown = text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit:,} more characters)"
    return f'<pre style="white-space:pre-wrap;max-height:24em;overflow:auto">{html.escape(shown)}</pre>'


def summary_detail_html(detail: SummaryDetail, text_limit: int = 6000) -> str:
    """Render a :class:`SummaryDetail`; every piece of text is HTML-escaped."""
    s = detail.summary
    parts = [
        f"<h4><code>{html.escape(s.summary_id)}</code> · {html.escape(s.kind)} · depth {s.depth}"
        f"{' · ' + html.escape(s.level) if s.level else ''}</h4>",
        f"<p>{s.token_count:,} tokens · covers {s.source_message_token_count:,} message tokens"
        f" · {s.descendant_count:,} descendant summaries"
        + (f" · messages {detail.span[0]}–{detail.span[1]}" if detail.span else "")
        + (f" · created in turn {s.created_turn}" if s.created_turn is not None else "")
        + (f"<br>time {html.escape(s.earliest_at or '?')} → {html.escape(s.latest_at or '?')}" if s.earliest_at else "")
        + f" · model {html.escape(s.model)}</p>",
        "<b>Content</b>",
        _block(s.content, text_limit),
    ]
    if detail.sources:
        parts.append(f"<b>Sources ({len(detail.sources)})</b><ul>{''.join(_row(x) for x in detail.sources)}</ul>")
    if detail.used_by:
        parts.append(f"<b>Condensed into</b><ul>{''.join(_row(x) for x in detail.used_by)}</ul>")
    if detail.call is not None:
        c = detail.call
        parts.append(
            f"<b>Summarizer input</b> ({c.source_tokens:,} tokens, target {c.target_tokens:,},"
            f" {'aggressive' if c.aggressive else 'normal'})"
        )
        parts.append(_block(c.source_text, text_limit))
    if detail.messages:
        rows = "".join(
            f"<tr><td>{m.seq}</td><td>{html.escape(m.role)}</td><td>{m.token_count:,}</td>"
            f"<td>{html.escape(m.created_at or '')}</td><td>{html.escape(_clip(m.content, 300))}</td></tr>"
            for m in detail.messages
        )
        more = f"<p>… and {detail.more_messages:,} more messages</p>" if detail.more_messages else ""
        parts.append(
            "<b>Raw messages</b><table><thead><tr><th>seq</th><th>role</th><th>tokens</th><th>time</th>"
            f"<th>content</th></tr></thead><tbody>{rows}</tbody></table>{more}"
        )
    return "\n".join(parts)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
