"""Two summaries of the same span, compared word by word (e.g. two models or two prompt sets)."""

from __future__ import annotations

import difflib
import html
import re
from typing import Any, Literal, NamedTuple

from lcm_lab.engine.types import Summary
from lcm_lab.viz._source import dag_source
from lcm_lab.viz.dag import _coverage

_TOKEN = re.compile(r"\S+\s*|\s+")  # a word keeps its trailing space, so runs of changes stay whole


class SummaryPair(NamedTuple):
    """A summary of run A and the summary of run B covering the most similar message range."""

    left_id: str
    right_id: str
    depth: int
    left_span: tuple[int, int]
    right_span: tuple[int, int]
    overlap: float  # Jaccard overlap of the two seq ranges, 1.0 = same span


class DiffSegment(NamedTuple):
    op: Literal["equal", "delete", "insert"]
    text: str


class SummaryDiffInfo(NamedTuple):
    left_title: str
    right_title: str
    left: tuple[DiffSegment, ...]  # equal + delete
    right: tuple[DiffSegment, ...]  # equal + insert
    similarity: float  # difflib ratio over words, 0..1


def match_summaries(left: Any, right: Any) -> tuple[SummaryPair, ...]:
    """Pair each summary of ``left`` with the same-depth summary of ``right`` overlapping it most.

    Both sides are anything :func:`lcm_lab.viz.dag.plot_dag` accepts. Pairs come sorted by depth
    and position; summaries without a known span or without an overlapping partner are left out.
    """
    a, b = dag_source(left), dag_source(right)
    cov_a = _coverage(a.summaries, {s.summary_id: s for s in a.summaries})
    cov_b = _coverage(b.summaries, {s.summary_id: s for s in b.summaries})
    by_depth: dict[int, list[tuple[str, tuple[int, int]]]] = {}
    for s in b.summaries:
        if s.summary_id in cov_b:
            by_depth.setdefault(s.depth, []).append((s.summary_id, cov_b[s.summary_id]))
    pairs = []
    for s in a.summaries:
        span = cov_a.get(s.summary_id)
        if span is None:
            continue
        best: tuple[float, str, tuple[int, int]] | None = None
        for other_id, other in by_depth.get(s.depth, []):
            overlap = _jaccard(span, other)
            if overlap > 0 and (best is None or overlap > best[0]):
                best = (overlap, other_id, other)
        if best is not None:
            pairs.append(SummaryPair(s.summary_id, best[1], s.depth, span, best[2], best[0]))
    return tuple(sorted(pairs, key=lambda p: (p.depth, p.left_span)))


def _jaccard(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0]) + 1
    if inter <= 0:
        return 0.0
    union = max(a[1], b[1]) - min(a[0], b[0]) + 1
    return inter / union


def summary_diff_info(left: Summary | str, right: Summary | str, left_title: str | None = None,
                      right_title: str | None = None) -> SummaryDiffInfo:
    """Word-level diff of two summaries (or texts): what only the left has, what only the right has.

    >>> info = summary_diff_info("the cat sat", "the dog sat")
    >>> [s.text for s in info.left if s.op == "delete"], [s.text for s in info.right if s.op == "insert"]
    (['cat '], ['dog '])
    """
    a_text = left.content if isinstance(left, Summary) else left
    b_text = right.content if isinstance(right, Summary) else right
    a_words, b_words = _TOKEN.findall(a_text), _TOKEN.findall(b_text)
    matcher = difflib.SequenceMatcher(a=a_words, b=b_words, autojunk=False)
    left_segments: list[DiffSegment] = []
    right_segments: list[DiffSegment] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            left_segments.append(DiffSegment("equal", "".join(a_words[i1:i2])))
            right_segments.append(DiffSegment("equal", "".join(b_words[j1:j2])))
            continue
        if i2 > i1:
            left_segments.append(DiffSegment("delete", "".join(a_words[i1:i2])))
        if j2 > j1:
            right_segments.append(DiffSegment("insert", "".join(b_words[j1:j2])))
    return SummaryDiffInfo(
        left_title=left_title or _title(left, "left"),
        right_title=right_title or _title(right, "right"),
        left=tuple(left_segments),
        right=tuple(right_segments),
        similarity=matcher.ratio(),
    )


def _title(value: Summary | str, side: str) -> str:
    if isinstance(value, Summary):
        return f"{value.summary_id} · {value.kind} d{value.depth} · {value.token_count:,} tokens · {value.model}"
    return side


def diff_html(segments: tuple[DiffSegment, ...]) -> str:
    """Escaped HTML of one side of a diff, changed words highlighted."""
    styles = {"delete": "background:#fdd;text-decoration:line-through", "insert": "background:#dfd"}
    out = []
    for seg in segments:
        text = html.escape(seg.text).replace("\n", "<br>")
        out.append(text if seg.op == "equal" else f'<span style="{styles[seg.op]}">{text}</span>')
    return "".join(out)
