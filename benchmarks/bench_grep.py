"""Recall ``grep`` speed on the 500k-message benchmark store: full text vs regex vs a naive scan.

Input: ``benchmarks/_data/lcm-500k.db`` (:mod:`benchmarks.generate`: 500,000 messages in 200
conversations, ≥ 50,000 summaries) loaded into a lab store and indexed for recall (copy into
``recall_docs`` + DuckDB BM25 index). The store is kept in ``benchmarks/_data/grep-500k.duckdb``
and reused by later runs (``--rebuild`` builds it again); the one-off build times are recorded
next to it and reported with the run that measured them.

Each query is asked the same way in three ways, side by side in one run (the machine is shared
and noisy: the ratios are the result, not the milliseconds):

* ``grep`` **full text** (BM25, every term required, quoted phrases checked in order);
* ``grep`` **regex** with the equivalent RE2 pattern (case-insensitive, word boundaries);
* a **naive scan** (what a first attempt would do): every document's text and timestamp already
  in a Python list (loading it is not timed); regex → ``re.search`` over each document; full
  text → lower-cased word split of each document, every term required (plus the phrase test),
  BM25 in Python.

All three rank by relevance and keep 50 (the regex counts matches). Scopes: every conversation
(``all_conversations``, the worst case) and one session family (the plugin's default scope,
4 conversations = 10,000 messages). Each timing is the median of up to 5 runs (fewer when one run
is slow: at most ~30 s per measurement, at least one run). Writes
``reports/benchmarks/grep.{json,md}``. Run: ``python -m benchmarks.bench_grep [--rebuild]``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.generate import DATA, generate_lcm_db

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports" / "benchmarks"
STORE = DATA / "grep-500k.duckdb"
SETUP = DATA / "grep-500k.setup.json"
REPEATS = 5
MEASURE_BUDGET_S = 30.0
LIMIT = 50
# (label, full-text query, the equivalent RE2 pattern)
QUERIES: tuple[tuple[str, str, str], ...] = (
    ("common term", "parser", r"(?i)\bparser\b"),
    ("rare term (CJK)", "テスト", "テスト"),
    ("phrase", '"trailing commas"', r"(?i)\btrailing commas\b"),
    ("two terms", "parser json", r"(?is)\bparser\b.*\bjson\b|\bjson\b.*\bparser\b"),
)


def _median(fn: Callable[[], Any]) -> tuple[float, int, Any]:
    """Median seconds of up to REPEATS runs (stopping once MEASURE_BUDGET_S is spent), runs, last result."""
    times: list[float] = []
    result = None
    while len(times) < REPEATS and (not times or sum(times) < MEASURE_BUDGET_S):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(times), result


def naive_regex(docs: list[tuple[str, str]], pattern: str, limit: int = LIMIT) -> tuple[int, list[int]]:
    rx = re.compile(pattern)
    hits = [(len(rx.findall(text)), created, i) for i, (text, created) in enumerate(docs) if rx.search(text)]
    return len(hits), [i for *_, i in sorted(hits, reverse=True)[:limit]]


def naive_full_text(docs: list[tuple[str, str]], query: str, limit: int = LIMIT) -> tuple[int, list[int]]:
    phrases = [p.lower() for p in re.findall(r'"([^"]*)"', query)]
    terms = re.findall(r"[^\W_]+", query.lower())
    tokenized = [(i, re.findall(r"[^\W_]+", text.lower())) for i, (text, _) in enumerate(docs)]
    matched = [(i, words) for i, words in tokenized if all(t in words for t in terms)]
    if phrases:
        matched = [(i, w) for i, w in matched if all(p in " ".join(w) for p in phrases)]
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
    return len(matched), [i for _, i in sorted(scored, reverse=True)[:limit]]


def build_store(rebuild: bool) -> dict[str, Any]:
    """Build (or reuse) the indexed 500k store; returns the one-off setup timings."""
    from lcm_lab.loading.dispatch import load_lcm_db
    from lcm_lab.recall_tools import index_store
    from lcm_lab.store import LabStore
    from lcm_lab.store import recall_index as ix

    if not rebuild and STORE.exists() and SETUP.exists():
        setup = json.loads(SETUP.read_text())
        return {**setup, "reused": True}
    STORE.unlink(missing_ok=True)
    SETUP.unlink(missing_ok=True)
    start = time.perf_counter()
    source = generate_lcm_db(DATA / "lcm-500k.db", messages=500_000)
    generate_s = time.perf_counter() - start
    with LabStore(STORE) as store:
        start = time.perf_counter()
        load_lcm_db(source, store)
        load_s = time.perf_counter() - start
        start = time.perf_counter()
        targets = index_store(store)
        index_s = time.perf_counter() - start
        start = time.perf_counter()
        ix.ensure_fts(store)
        fts_s = time.perf_counter() - start
        docs = store.fetch_all("SELECT count(*) FROM recall_docs")[0][0]
        messages = store.fetch_all("SELECT count(*) FROM messages")[0][0]
    setup = {"generate_s": generate_s, "load_s": load_s, "index_s": index_s, "fts_index_s": fts_s, "documents": docs,
             "messages": messages, "targets": len(targets), "built_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    SETUP.write_text(json.dumps(setup, indent=2))
    return {**setup, "reused": False}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rebuild", action="store_true", help="build the 500k store again even if one is kept")
    args = parser.parse_args(argv)

    from lcm_lab.recall_tools import Recall
    from lcm_lab.store import LabStore
    from lcm_lab.store import recall_index as ix

    setup = build_store(args.rebuild)
    print(f"setup ({'reused' if setup['reused'] else 'built'}): {json.dumps(setup)}", flush=True)
    store = LabStore(STORE)
    ix.ensure_fts(store)  # a no-op unless the documents changed
    rec = Recall(store, "conversation:1")
    family = rec.targets()
    scopes: dict[str, dict[str, Any]] = {"all conversations": {"all_conversations": True}, "one session family": {}}
    naive_docs = {
        name: [(r[0], r[1] or "") for r in store.fetch_all(
            "SELECT content, created_at FROM recall_docs WHERE doc_type IN ('message', 'summary')"
            + ("" if kw else f" AND target IN ({', '.join(repr(t) for t in family)})"))]
        for name, kw in scopes.items()
    }  # fmt: skip
    records = []
    for scope, kwargs in scopes.items():
        docs = naive_docs[scope]
        for label, query, pattern in QUERIES:
            rec.grep(query, "full_text", sort="relevance", **kwargs)  # warm (caches)
            ft_s, ft_runs, ft = _median(lambda: rec.grep(query, "full_text", sort="relevance", **kwargs))  # noqa: B023
            rx_s, rx_runs, rx = _median(lambda: rec.grep(pattern, "regex", sort="relevance", **kwargs))  # noqa: B023
            nft_s, nft_runs, nft = _median(lambda: naive_full_text(docs, query))  # noqa: B023
            nrx_s, nrx_runs, nrx = _median(lambda: naive_regex(docs, pattern))  # noqa: B023
            record = {
                "scope": scope, "documents": len(docs), "query": label, "full_text": query, "regex": pattern,
                "matches_full_text": ft.total_matches, "matches_regex": rx.total_matches,
                "matches_naive_full_text": nft[0], "matches_naive_regex": nrx[0],
                "full_text_ms": ft_s * 1000, "regex_ms": rx_s * 1000, "naive_full_text_ms": nft_s * 1000, "naive_regex_ms": nrx_s * 1000,
                "runs": {"full_text": ft_runs, "regex": rx_runs, "naive_full_text": nft_runs, "naive_regex": nrx_runs},
                "regex_over_full_text": rx_s / ft_s, "naive_over_full_text": nft_s / ft_s, "naive_over_regex": nrx_s / rx_s,
            }  # fmt: skip
            print(json.dumps(record, ensure_ascii=False), flush=True)
            records.append(record)
    store.close()
    write_report(setup, records)


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def write_report(setup: dict[str, Any], records: list[dict[str, Any]]) -> None:
    REPORTS.mkdir(parents=True, exist_ok=True)
    ratios = {
        scope: {key: _geomean([r[key] for r in records if r["scope"] == scope])
                for key in ("regex_over_full_text", "naive_over_full_text", "naive_over_regex")}
        for scope in dict.fromkeys(r["scope"] for r in records)
    }  # fmt: skip
    (REPORTS / "grep.json").write_text(json.dumps({"setup": setup, "geomean_ratios": ratios, "records": records}, indent=2, ensure_ascii=False))
    built = "reused from an earlier build" if setup.get("reused") else "built in this run"
    lines = [
        "# grep speed on the 500k-message store: full text vs regex vs a naive scan",
        "",
        f"Store ({built}): {setup.get('messages', 500_000):,} messages; recall index of {setup['documents']:,} documents in "
        f"{setup['targets']} conversations. One-off build: load {setup['load_s']:.0f} s, recall index {setup['index_s']:.0f} s, "
        f"BM25 index {setup['fts_index_s']:.0f} s.",
        "",
        "Each query asked three ways in the same run, all ranked by relevance, top 50: `grep` full text (BM25), `grep` regex "
        "(the equivalent RE2 pattern; relevance = number of matches), and a naive Python scan over the same documents already "
        "in memory (regex: `re.search` per document; full text: word split per document + BM25 in Python). Median of up to 5 "
        "runs per cell (one when a run takes > 30 s). The machine is shared (2 cores, several test suites alongside): the "
        "ratios are the result, the milliseconds are indicative only.",
        "",
        "Geometric mean of the ratios per scope (> 1: the left one is slower):",
        "",
        "| scope | regex / full text | naive full text / full text | naive regex / regex |",
        "|---|---|---|---|",
    ]
    for scope, r in ratios.items():
        lines.append(f"| {scope} | {r['regex_over_full_text']:.1f}x | {r['naive_over_full_text']:.1f}x | {r['naive_over_regex']:.1f}x |")
    lines += [
        "",
        "| scope | docs | query | full text | regex | matches (ft / rx) | full text ms | regex ms | naive ft ms | naive rx ms |"
        " regex / ft | naive ft / ft | naive rx / rx |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['scope']} | {r['documents']:,} | {r['query']} | `{r['full_text']}` | `{_md(r['regex'])}` | "
            f"{r['matches_full_text']:,} / {r['matches_regex']:,} | {r['full_text_ms']:.0f} | {r['regex_ms']:.0f} | "
            f"{r['naive_full_text_ms']:.0f} | {r['naive_regex_ms']:.0f} | {r['regex_over_full_text']:.1f}x | "
            f"{r['naive_over_full_text']:.1f}x | {r['naive_over_regex']:.1f}x |"
        )
    lines += [
        "",
        "Reading: over the whole store `grep` beats the naive scans (BM25 far ahead of a Python word split; RE2 in DuckDB "
        "about level with Python's `re` on these simple patterns, ahead on alternations), and full text is about as fast as "
        "the equivalent regex, faster on common terms where counting regex matches for relevance dominates. Within one "
        "session family (the plugin's default scope, ~11k documents) a naive scan of documents *already in memory* is "
        "faster: `grep` pays a fixed cost per query — the BM25 macro scores against the whole index before the family "
        "filter applies, and every query goes through the store — which the 500k scope amortises. The naive scans exclude "
        "loading the documents into memory, which `grep` never needs.",
        "",
        "Match counts differ a little between modes by design: full text stems (`commas` matches `comma`) and tokenizes like "
        "FTS5's `porter unicode61`; the regex is literal with word boundaries. The naive scans return the same counts as "
        "their `grep` mode up to those tokenizer differences (see `grep.json`).",
    ]
    (REPORTS / "grep.md").write_text("\n".join(lines) + "\n")


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def rewrite_report() -> None:
    """Re-render ``grep.md`` from ``grep.json`` (no measurement)."""
    data = json.loads((REPORTS / "grep.json").read_text())
    write_report(data["setup"], data["records"])


if __name__ == "__main__":
    main()
