"""ClawVault's in-process search (``src/lib/in-process-search.ts``) and weekly reflection
(``src/observer/reflection-service.ts``), pure. (One of the lab's three BM25s, each for its own
job: ``docs/metrics.md``, "Three BM25s".)

Search: BM25 (k1 = 1.2, b = 0.75, ``idf = ln((N − df + 0.5)/(df + 0.5) + 1)``) over documents,
top ``5·limit`` min-max normalised, fused by weighted reciprocal rank (k = 60, weights 0.65 BM25
/ 0.35 semantic). Offline there is no embedding model, so only the BM25 term is present: the
fused order equals the BM25 order (said, not hidden). Each observation line is one document
(ClawVault chunks whole files into 700-character pieces; a line is shorter than a chunk).

Reflection: records grouped by ISO week and merged by normalised content (max importance with
its type and text, max confidence, the dates seen); **promotion**: ``i ≥ 0.8``, or ``i ≥ 0.4``
and seen on at least two distinct dates; promoted items go to Open Loops / Key Decisions /
Changes / Stable Patterns, with the dates cited.

>>> docs = ["chose redis for the session cache", "lunch was pasta", "redis cluster needs three nodes"]
>>> [docs[i] for i in search(docs, "redis cache", limit=2)]
['chose redis for the session cache', 'redis cluster needs three nodes']
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from datetime import date as Date

from lcm_lab.strategies.observations import Observation, normalize_content

K1, B = 1.2, 0.75
RRF_K, BM25_WEIGHT, SEMANTIC_WEIGHT = 60, 0.65, 0.35
_SPLIT = re.compile(r"[^\w-]+|_", re.UNICODE)  # letters, digits, '_' and '-' stay in tokens
SECTIONS = ("Open Loops", "Key Decisions", "Changes", "Stable Patterns")
_OPEN_LOOP = re.compile(
    r"\b(todo|follow[- ]up|blocked|pending|unresolved|open question|tbd)\b", re.IGNORECASE
)
_CHANGE = re.compile(r"\b(changed|switched|no longer|pivot\w*|replaced|moved to)\b", re.IGNORECASE)


def tokens(text: str) -> list[str]:
    return [t for t in re.split(r"[^\w-]+", text.lower()) if len(t) > 1]


def bm25_scores(documents: Sequence[str], query: str) -> list[float]:
    """BM25 score of every document for ``query``."""
    docs = [Counter(tokens(d)) for d in documents]
    n = len(docs)
    lengths = [sum(d.values()) for d in docs]
    avg = (sum(lengths) / n) if n else 0.0
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    terms = set(tokens(query))
    scores = []
    for d, length in zip(docs, lengths, strict=True):
        score = 0.0
        for term in terms:
            tf = d.get(term, 0)
            if not tf:
                continue
            idf = math.log((n - df[term] + 0.5) / (df[term] + 0.5) + 1)
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / (avg or 1)))
        scores.append(score)
    return scores


def _minmax(values: dict[int, float]) -> dict[int, float]:
    if not values:
        return {}
    lo, hi = min(values.values()), max(values.values())
    return {k: (v - lo) / (hi - lo) if hi > lo else 1.0 for k, v in values.items()}


def search(
    documents: Sequence[str],
    query: str,
    *,
    limit: int,
    semantic_ranks: Sequence[int] | None = None,
    min_score: float = 0.0,
) -> list[int]:
    """Indexes of the top ``limit`` documents by BM25 fused with semantic ranks by weighted RRF."""
    raw = bm25_scores(documents, query)
    ranked = sorted((i for i, s in enumerate(raw) if s > 0), key=lambda i: (-raw[i], i))[: 5 * limit]
    fused: dict[int, float] = {i: BM25_WEIGHT / (RRF_K + rank + 1) for rank, i in enumerate(ranked)}
    for rank, i in enumerate(semantic_ranks or ()):
        fused[i] = fused.get(i, 0.0) + SEMANTIC_WEIGHT / (RRF_K + rank + 1)
    normalised = _minmax(fused)
    order = sorted((i for i, s in normalised.items() if s >= min_score), key=lambda i: (-normalised[i], i))
    return order[:limit]


# -- weekly reflection ---------------------------------------------------------------------


def iso_week(day: str) -> str:
    """``2026-03-10`` → ``2026-W11``."""
    year, week, _ = Date.fromisoformat(day).isocalendar()
    return f"{year}-W{week:02d}"


def promoted(records: Sequence[Observation]) -> list[tuple[Observation, tuple[str, ...]]]:
    """Records merged by normalised content that pass the promotion rule, with their dates.

    >>> r = [Observation("2026-03-09", "preference", 0.8, 0.5, "prefers tabs"),
    ...      Observation("2026-03-11", "preference", 0.7, 0.45, "Prefers  tabs"),
    ...      Observation("2026-03-11", "fact", 0.7, 0.5, "ate lunch"),
    ...      Observation("2026-03-12", "decision", 0.9, 0.85, "Decision: ship v2")]
    >>> [(o.content, dates) for o, dates in promoted(r)]
    [('prefers tabs', ('2026-03-09', '2026-03-11')), ('Decision: ship v2', ('2026-03-12',))]
    """
    merged: dict[str, tuple[Observation, set[str]]] = {}
    for record in records:
        key = normalize_content(record.content)
        if key not in merged:
            merged[key] = (record, {record.date})
            continue
        best, dates = merged[key]
        dates.add(record.date)
        top = record if record.importance > best.importance else best
        merged[key] = (
            Observation(
                top.date, top.type, max(best.confidence, record.confidence), top.importance, top.content
            ),
            dates,
        )
    return [
        (record, tuple(sorted(dates)))
        for record, dates in merged.values()
        if record.importance >= 0.8 or (record.importance >= 0.4 and len(dates) >= 2)
    ]


def section_of(record: Observation) -> str:
    if _OPEN_LOOP.search(record.content) or record.type in ("todo", "task", "commitment-unresolved"):
        return "Open Loops"
    if record.type in ("decision", "commitment", "milestone"):
        return "Key Decisions"
    if _CHANGE.search(record.content):
        return "Changes"
    return "Stable Patterns"


def reflect(week: str, records: Sequence[Observation], already: set[str]) -> tuple[str, set[str]] | None:
    """The reflection markdown of one ISO week (``None`` when nothing is promoted) and the keys it
    covers; items in ``already`` (earlier weeks' reflections) are skipped."""
    items = [(r, d) for r, d in promoted(records) if normalize_content(r.content) not in already]
    if not items:
        return None
    lines = [f"## Weekly reflection {week}"]
    for section in SECTIONS:
        chosen = [(r, d) for r, d in items if section_of(r) == section]
        if chosen:
            lines.append(f"### {section}")
            lines.extend(f"- {r.content} (i={r.importance:.2f})" for r, _ in chosen)
    lines.append("### Citations")
    dates = sorted({d for _, ds in items for d in ds})
    lines.extend(f"- ledger/observations/{d[:4]}/{d[5:7]}/{d[8:10]}.md" for d in dates)
    return "\n".join(lines), {normalize_content(r.content) for r, _ in items}
