"""Recall ``grep`` speed on the 500k-message benchmark store vs a naive Python scan (same run).

Input: ``benchmarks/_data/lcm-500k.db`` (:mod:`benchmarks.generate`: 500,000 messages in 200
conversations, ≥ 50,000 summaries) loaded into a fresh lab store, then indexed for recall
(copy into ``recall_docs`` + DuckDB BM25 index; both timed once). Queries run over every
conversation (``all_conversations``, the worst case) and over one session family (the
plugin's default scope, 4 conversations = 10,000 messages). Each query is timed as the median
of 5 runs.

Baseline (what a first attempt would do): every document's text and timestamp already in a
Python list (loading it is not timed); regex → ``re.search`` over each document; full text →
lower-cased word split of each document, every term required (plus the phrase test), BM25 in
Python; then sort and keep 50. Writes ``reports/benchmarks/grep.{json,md}``.
Run: ``python -m benchmarks.bench_grep``.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.generate import DATA, generate_lcm_db

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports" / "benchmarks"
REPEATS = 5
QUERIES: tuple[tuple[str, str, str], ...] = (
    ("regex", "chokes on trailing", "recency"),
    ("regex", "テスト", "recency"),
    ("regex", "fail(ed|s) because", "recency"),
    ("full_text", "parser", "relevance"),
    ("full_text", "テスト", "relevance"),
    ("full_text", '"trailing commas"', "relevance"),
    ("full_text", "parser json", "hybrid"),
)


def _median(fn: Any) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _naive(docs: list[tuple[str, str]], mode: str, pattern: str, limit: int = 50) -> list[int]:
    if mode == "regex":
        rx = re.compile(pattern)
        hits = [(created, i) for i, (text, created) in enumerate(docs) if rx.search(text)]
        return [i for _, i in sorted(hits, reverse=True)[:limit]]
    phrases = re.findall(r'"([^"]*)"', pattern)
    terms = re.findall(r"[^\W_]+", pattern.lower())
    tokenized = [(i, re.findall(r"[^\W_]+", text.lower())) for i, (text, _) in enumerate(docs)]
    matched = [(i, words) for i, words in tokenized if all(t in words for t in terms)]
    if phrases:
        lowered = [p.lower() for p in phrases]
        matched = [(i, w) for i, w in matched if all(p in " ".join(w) for p in lowered)]
    n = len(docs)
    avg = sum(len(w) for _, w in tokenized) / max(1, n)
    df = {t: sum(1 for _, w in tokenized if t in w) for t in terms}
    scored = []
    for i, words in matched:
        counts = Counter(words)
        score = sum(
            math.log((n - df[t] + 0.5) / (df[t] + 0.5) + 1) * counts[t] * 2.2 / (counts[t] + 1.2 * (0.25 + 0.75 * len(words) / avg))
            for t in terms
        )
        scored.append((score, i))
    return [i for _, i in sorted(scored, reverse=True)[:limit]]


def main() -> None:
    from lcm_lab.load import load_lcm_db
    from lcm_lab.recall import Recall, index_store
    from lcm_lab.store import LabStore
    from lcm_lab.store import recall_index as ix

    source = generate_lcm_db(DATA / "lcm-500k.db", messages=500_000)
    store_path = DATA / "grep-500k.duckdb"
    store_path.unlink(missing_ok=True)
    store = LabStore(store_path)
    start = time.perf_counter()
    load_lcm_db(source, store)
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    targets = index_store(store)
    index_s = time.perf_counter() - start
    start = time.perf_counter()
    ix.ensure_fts(store)
    fts_s = time.perf_counter() - start
    docs_total = store.fetch_all("SELECT count(*) FROM recall_docs")[0][0]
    print(f"loaded in {load_s:.1f}s, {len(targets)} targets / {docs_total} documents indexed in {index_s:.1f}s, BM25 index {fts_s:.1f}s", flush=True)

    rec = Recall(store, targets[0])
    family = rec.targets()
    scopes = {"all conversations": {"all_conversations": True}, "one session family": {}}
    naive_docs = {
        name: [(r[0], r[1] or "") for r in store.fetch_all(
            "SELECT content, created_at FROM recall_docs WHERE doc_type IN ('message', 'summary')"
            + ("" if kw else f" AND target IN ({', '.join(repr(t) for t in family)})"))]
        for name, kw in scopes.items()
    }  # fmt: skip
    records = []
    for scope, kwargs in scopes.items():
        for mode, pattern, sort in QUERIES:
            rec.grep(pattern, mode, sort=sort, **kwargs)  # warm (index build, caches)
            lab_s, result = _median(lambda: rec.grep(pattern, mode, sort=sort, **kwargs))  # noqa: B023
            naive_s, naive_hits = _median(lambda: _naive(naive_docs[scope], mode, pattern))  # noqa: B023
            record = {
                "scope": scope, "documents": len(naive_docs[scope]), "mode": mode, "pattern": pattern, "sort": sort,
                "matches": result.total_matches, "lab_ms": lab_s * 1000, "naive_ms": naive_s * 1000,
                "speedup": naive_s / lab_s, "naive_returned": len(naive_hits),
            }  # fmt: skip
            print(json.dumps(record, ensure_ascii=False), flush=True)
            records.append(record)
    store.close()
    store_path.unlink(missing_ok=True)
    setup = {"load_s": load_s, "index_s": index_s, "fts_index_s": fts_s, "documents": docs_total, "targets": len(targets)}
    write_report(setup, records)


def write_report(setup: dict[str, Any], records: list[dict[str, Any]]) -> None:
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / "grep.json").write_text(json.dumps({"setup": setup, "records": records}, indent=2, ensure_ascii=False))
    lines = [
        "# grep speed on the 500k-message store",
        "",
        f"Setup (once): load {setup['load_s']:.1f} s; recall index of {setup['documents']:,} documents in "
        f"{setup['targets']} conversations {setup['index_s']:.1f} s; BM25 index {setup['fts_index_s']:.1f} s.",
        "Per query: median of 5 runs; baseline = naive Python scan over the same documents in memory, same run.",
        "",
        "| scope | docs | mode | pattern | sort | matches | lab ms | naive ms | speed-up |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['scope']} | {r['documents']:,} | {r['mode']} | `{r['pattern'].replace('|', chr(92) + '|')}` | {r['sort']} | {r['matches']:,} | "
            f"{r['lab_ms']:.0f} | {r['naive_ms']:.0f} | {r['speedup']:.1f}x |"
        )
    (REPORTS / "grep.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
