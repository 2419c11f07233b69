"""Write and read quality scores (the ``scores`` table, migration ``m004_scores``).

>>> from lcm_lab.store.core import LabStore
>>> from lcm_lab.metrics.base import Score
>>> store = LabStore(":memory:")
>>> write_scores(store, [Score("r1", "run", "", "peak_context_tokens", 812.0)])
1
>>> scores_df(store)[["run_id", "metric", "value"]].values.tolist()
[['r1', 'peak_context_tokens', 812.0]]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from lcm_lab.metrics.base import Score

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    from lcm_lab.store.core import LabStore


def _value(score: Score) -> float | None:
    if score.value is None:
        return None
    value = float(score.value)
    return None if math.isnan(value) else value


def write_scores(store: LabStore, scores: Iterable[Score], *, replace_runs: bool = False) -> int:
    """Insert (or replace) scores; with ``replace_runs`` first delete every score of the runs
    being written, so a re-scored run keeps no stale rows. Returns the number of rows written."""
    return write_score_rows(store, score_rows(scores), replace_runs=replace_runs)


ScoreRow = tuple[str, str, str, str, float | None, str]


def score_rows(scores: Iterable[Score]) -> list[ScoreRow]:
    """Scores as the table's rows (details as canonical JSON): what a sweep worker sends back,
    so the one writer only inserts.

    >>> score_rows([Score("r1", "run", "", "peak_context_tokens", 812.0)])
    [('r1', 'run', '', 'peak_context_tokens', 812.0, '{}')]
    """
    return [(s.run_id, s.scope, s.scope_id, s.metric, _value(s), s.details_json()) for s in scores]


def write_score_rows(store: LabStore, rows: Sequence[ScoreRow], *, replace_runs: bool = False) -> int:
    """:func:`write_scores` for rows already made by :func:`score_rows`."""
    if not rows:
        return 0
    with store.transaction():
        if replace_runs:
            for run_id in sorted({r[0] for r in rows}):
                store.execute("DELETE FROM scores WHERE run_id = ?", [run_id])
        # One set-based insert: executemany is row-at-a-time in DuckDB (seconds per thousand rows).
        import pyarrow as pa

        latest = {row[:4]: row for row in rows}  # INSERT OR REPLACE semantics within one batch too
        names = ["run_id", "scope", "scope_id", "metric", "value", "details"]
        table = pa.table({name: [row[i] for row in latest.values()] for i, name in enumerate(names)})
        store.con.register("_lcm_lab_scores", table)
        try:
            store.execute(
                "INSERT OR REPLACE INTO scores (run_id, scope, scope_id, metric, value, details)"
                " SELECT run_id, scope, scope_id, metric, value, details FROM _lcm_lab_scores"
            )
        finally:
            store.con.unregister("_lcm_lab_scores")
    return len(rows)


def _where(run_ids: Sequence[str] | None, metrics: Sequence[str] | None, scope: str | None) -> tuple[str, list[Any]]:
    clauses, params = [], []
    if run_ids:
        clauses.append(f"run_id IN ({', '.join('?' for _ in run_ids)})")
        params.extend(run_ids)
    if metrics:
        clauses.append(f"metric IN ({', '.join('?' for _ in metrics)})")
        params.extend(metrics)
    if scope:
        clauses.append("scope = ?")
        params.append(scope)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


_SELECT = "SELECT run_id, scope, scope_id, metric, value, details, created_at FROM scores"
_ORDER = " ORDER BY run_id, scope, scope_id, metric"


def scores_df(store: LabStore, run_ids: Sequence[str] | None = None, metrics: Sequence[str] | None = None, scope: str | None = None) -> pd.DataFrame:
    """Scores as a pandas DataFrame (``details`` as JSON text), optionally filtered."""
    where, params = _where(run_ids, metrics, scope)
    return store.fetch_df(_SELECT + where + _ORDER, params)


def scores_pl(store: LabStore, run_ids: Sequence[str] | None = None, metrics: Sequence[str] | None = None, scope: str | None = None) -> pl.DataFrame:
    """Scores as a polars DataFrame, optionally filtered."""
    where, params = _where(run_ids, metrics, scope)
    return store.fetch_pl(_SELECT + where + _ORDER, params)


def read_scores(store: LabStore, run_ids: Sequence[str] | None = None, metrics: Sequence[str] | None = None, scope: str | None = None) -> list[Score]:
    """Scores back as :class:`Score` values (e.g. to feed :func:`lcm_lab.metrics.compare.compare`)."""
    where, params = _where(run_ids, metrics, scope)
    rows = store.fetch_all("SELECT run_id, scope, scope_id, metric, value, details FROM scores" + where + _ORDER, params)
    return [Score(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]) if r[5] else {}) for r in rows]
