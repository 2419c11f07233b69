"""Derived runs in the lab store: the parent run and the edit of each what-if run (``run_edits``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from lcm_lab.store.core import LabStore


def record_edit(store: LabStore, run_id: str, parent_run_id: str, edit: Mapping[str, Any]) -> None:
    """Record that ``run_id`` was derived from ``parent_run_id`` by ``edit`` (idempotent)."""
    if store.fetch_all("SELECT 1 FROM run_edits WHERE run_id = ?", [run_id]):
        return
    store.execute("INSERT INTO run_edits (run_id, parent_run_id, op, edit) VALUES (?, ?, ?, ?)",
                  [run_id, parent_run_id, str(edit.get("op", "edit")), json.dumps(dict(edit), sort_keys=True)])


def run_edit(store: LabStore, run_id: str) -> tuple[str, dict[str, Any]] | None:
    """``(parent_run_id, edit)`` of a derived run, or None for a run that was not derived."""
    rows = store.fetch_all("SELECT parent_run_id, edit FROM run_edits WHERE run_id = ?", [run_id])
    return (rows[0][0], json.loads(rows[0][1])) if rows else None


def run_edits_df(store: LabStore, parent_run_id: str | None = None) -> pd.DataFrame:
    """Every derived run (or those of one parent) with its label, engine and final stored tokens, oldest first."""
    where, params = ("WHERE e.parent_run_id = ?", [parent_run_id]) if parent_run_id else ("", [])
    return store.fetch_df(
        "SELECT e.run_id, e.parent_run_id, e.op, e.edit, r.label, r.engine, r.final_stored_tokens, e.created_at"
        f" FROM run_edits e LEFT JOIN replays r USING (run_id) {where} ORDER BY e.created_at, e.run_id",
        params,
    )
