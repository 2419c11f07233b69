"""Sweeps in the lab store (tables of migration ``m006_sweeps``): the one writer's side.

>>> from lcm_lab.store import LabStore
>>> store = LabStore(":memory:")
>>> register_sweep(store, "sw_1", "demo", {"name": "demo"})
>>> register_config(store, "sw_1", "c_1", {"freshTailCount": 8}, {"freshTailCount": 8}, trial=0)
>>> write_run_row(store, "sw_1", "c_1", "conv-0", "run-1", "ok", None, 0.5, {"peak_context_tokens": 10.0}, 0)
>>> unit_statuses(store, "sw_1")
{('c_1', 'conv-0'): 'ok'}
>>> sweeps_df(store).name.tolist()
['demo']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lcm_lab.errors import UnknownNameError
from lcm_lab.store.stored import stored_json

if TYPE_CHECKING:
    import pandas as pd

    from lcm_lab.store.core import LabStore
    from lcm_lab.store.ledger import Ledger, LedgerEntry

_SWEEPS = """
SELECT s.sweep_id, s.name, s.status, s.created_at, s.updated_at,
       (SELECT count(*) FROM sweep_configs c WHERE c.sweep_id = s.sweep_id) AS configs,
       (SELECT count(*) FROM sweep_runs r WHERE r.sweep_id = s.sweep_id AND r.status = 'ok') AS runs_ok,
       (SELECT count(*) FROM sweep_runs r WHERE r.sweep_id = s.sweep_id AND r.status = 'error') AS runs_failed,
       s.stats
FROM sweeps s ORDER BY s.created_at, s.sweep_id
"""


def register_sweep(store: LabStore, sweep_id: str, name: str, spec: Mapping[str, Any]) -> None:
    """Create the sweep row (kept as it is when the sweep is resumed)."""
    store.execute(
        "INSERT INTO sweeps (sweep_id, name, spec, status) VALUES (?, ?, ?, 'running') ON CONFLICT DO NOTHING",
        [sweep_id, name, json.dumps(spec, sort_keys=True)],
    )


def set_sweep_status(store: LabStore, sweep_id: str, status: str, stats: Mapping[str, Any]) -> None:
    store.execute(
        "UPDATE sweeps SET status = ?, stats = ?, updated_at = current_timestamp WHERE sweep_id = ?",
        [status, json.dumps(stats, sort_keys=True), sweep_id],
    )


def register_config(
    store: LabStore, sweep_id: str, config_id: str, params: Mapping[str, Any], plugin_config: Mapping[str, Any],
    *, trial: int | None = None, baseline: bool = False,
) -> None:
    store.execute(
        "INSERT INTO sweep_configs (sweep_id, config_id, trial, baseline, params, plugin_config)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [sweep_id, config_id, trial, baseline, json.dumps(params, sort_keys=True), json.dumps(plugin_config, sort_keys=True)],
    )


def unit_statuses(store: LabStore, sweep_id: str) -> dict[tuple[str, str], str]:
    """The status (``ok`` or ``error``) of every unit already recorded, by ``(config_id, conversation_key)``."""
    rows = store.fetch_all("SELECT config_id, conversation_key, status FROM sweep_runs WHERE sweep_id = ?", [sweep_id])
    return {(r[0], r[1]): r[2] for r in rows}


def write_run_row(
    store: LabStore, sweep_id: str, config_id: str, conversation_key: str, run_id: str, status: str,
    error: str | None, seconds: float, metrics: Mapping[str, Any], model_calls: int,
) -> None:
    store.execute(
        "INSERT OR REPLACE INTO sweep_runs (sweep_id, config_id, conversation_key, run_id, status, error, seconds, metrics, model_calls)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [sweep_id, config_id, conversation_key, run_id, status, error, seconds, json.dumps(dict(metrics), sort_keys=True), model_calls],
    )


def record_entries(ledger: Ledger, entries: Iterable[LedgerEntry]) -> int:
    """Write ledger entries a worker buffered; returns how many went to a model (not cache hits)."""
    sent = 0
    for entry in entries:
        ledger.record(entry)
        sent += not entry.cache_hit
    return sent


def sweeps_df(store: LabStore) -> pd.DataFrame:
    """One row per sweep: status, configurations, finished and failed runs, stats (JSON)."""
    return store.fetch_df(_SWEEPS)


def sweep_row(store: LabStore, sweep_id: str) -> dict[str, Any]:
    """The sweep's row with its spec and stats parsed; a clear error for an unknown id."""
    rows = store.fetch_df("SELECT * FROM sweeps WHERE sweep_id = ?", [sweep_id])
    if rows.empty:
        known = [r[0] for r in store.fetch_all("SELECT sweep_id FROM sweeps ORDER BY created_at DESC LIMIT 10")]
        hint = f"; known: {', '.join(known)}" if known else "; no sweeps in this store yet (run lcm-lab sweep SPEC.yaml)"
        raise UnknownNameError(f"unknown sweep id {sweep_id!r}{hint}")
    row = rows.iloc[0].to_dict()
    row["spec"] = stored_json(row["spec"], f"sweep {sweep_id}'s spec")
    row["stats"] = stored_json(row["stats"], f"sweep {sweep_id}'s stats")
    return row


def sweep_configs_df(store: LabStore, sweep_id: str) -> pd.DataFrame:
    return store.fetch_df("SELECT * FROM sweep_configs WHERE sweep_id = ? ORDER BY trial NULLS FIRST, config_id", [sweep_id])


def sweep_runs_df(store: LabStore, sweep_id: str) -> pd.DataFrame:
    return store.fetch_df(
        "SELECT r.*, c.trial, c.baseline, c.params FROM sweep_runs r JOIN sweep_configs c USING (sweep_id, config_id)"
        " WHERE r.sweep_id = ? ORDER BY c.trial NULLS FIRST, r.config_id, r.conversation_key",
        [sweep_id],
    )


def first_ok_run(store: LabStore, sweep_id: str, config_id: str) -> str | None:
    """The run id of the configuration's first finished run (by conversation), if any."""
    rows = store.fetch_all(
        "SELECT run_id FROM sweep_runs WHERE sweep_id = ? AND config_id = ? AND status = 'ok' ORDER BY conversation_key LIMIT 1",
        [sweep_id, config_id],
    )
    return rows[0][0] if rows else None


def config_params(store: LabStore, sweep_id: str, config_id: str) -> dict[str, Any]:
    """The varied parameters of one configuration (a ``KeyError`` names an unknown one)."""
    rows = store.fetch_all("SELECT params FROM sweep_configs WHERE sweep_id = ? AND config_id = ?", [sweep_id, config_id])
    if not rows:
        raise UnknownNameError(f"sweep {sweep_id} has no configuration {config_id!r}")
    return dict(json.loads(rows[0][0]))


def trial_params(store: LabStore, sweep_id: str) -> list[tuple[int, dict[str, Any]]]:
    """``(trial, params)`` of every configuration but the baseline, in trial order."""
    rows = store.fetch_all("SELECT trial, params FROM sweep_configs WHERE sweep_id = ? AND NOT baseline ORDER BY trial", [sweep_id])
    return [(int(trial), json.loads(params)) for trial, params in rows]


def ok_metrics(store: LabStore, sweep_id: str, config_id: str) -> list[dict[str, Any]]:
    """The metrics of the configuration's finished runs."""
    rows = store.fetch_all("SELECT metrics FROM sweep_runs WHERE sweep_id = ? AND config_id = ? AND status = 'ok'",
                           [sweep_id, config_id])
    return [json.loads(r[0]) for r in rows]


def run_outcomes(store: LabStore, sweep_id: str) -> list[tuple[str, dict[str, Any]]]:
    """``(status, metrics)`` of every run of the sweep."""
    return [(status, json.loads(m)) for status, m in store.fetch_all("SELECT status, metrics FROM sweep_runs WHERE sweep_id = ?", [sweep_id])]


def first_run_error(store: LabStore, sweep_id: str) -> str | None:
    """The first line of a failed run's error (the one that finished first), or ``None``."""
    rows = store.fetch_all("SELECT error FROM sweep_runs WHERE sweep_id = ? AND status = 'error' AND error IS NOT NULL "
                           "ORDER BY created_at, run_id LIMIT 1", [sweep_id])  # fmt: skip
    return str(rows[0][0]).splitlines()[0] if rows else None


def config_count(store: LabStore, sweep_id: str) -> int:
    """How many configurations the sweep has registered (the baseline included)."""
    return int(store.fetch_all("SELECT count(*) FROM sweep_configs WHERE sweep_id = ?", [sweep_id])[0][0])
