"""Sweeps in the lab store (tables of migration ``m006_sweeps``): the one writer's side.

>>> from lcm_lab.store import LabStore
>>> store = LabStore(":memory:")
>>> register_sweep(store, "sw_1", "demo", {"name": "demo"})
>>> register_config(store, "sw_1", "c_1", {"freshTailCount": 8}, {"freshTailCount": 8}, trial=0)
>>> write_run_row(store, "sw_1", "c_1", "conv-0", "run-1", "ok", None, 0.5, {"peak_context_tokens": 10.0}, 0)
>>> unit_statuses(store, "sw_1")
{('c_1', 'conv-0'): 'ok'}
>>> sweeps_df(store)[["name", "status"]].values.tolist()
[['demo', 'running']]

A sweep's status as stored is what its process last wrote: ``running`` from its start (or
resume) until it records ``done``, ``failed`` or ``interrupted`` (Ctrl-C, SIGTERM). A process
killed with ``kill -9`` writes nothing more, so every reader goes through :func:`live_status`,
which reads a ``running`` sweep whose process is gone as ``interrupted``, without writing (the
store may be read-only).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from lcm_lab.errors import UnknownNameError
from lcm_lab.io.processes import ProcessIdentity, process_ended, this_process
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
       s.stats, s.owner_pid, s.owner_started, s.owner_boot, s.owner_host
FROM sweeps s ORDER BY s.created_at, s.sweep_id
"""
_OWNER = ("owner_pid", "owner_started", "owner_boot", "owner_host")

ENDED = "its process ended without finishing (killed or crashed); run the same spec again to resume"
_NOTES = {
    "interrupted": "stopped by Ctrl-C or SIGTERM; run the same spec again to resume",
    "failed": "stopped by an error; run the same spec again to resume (runs that failed stay failed without --retry-failed)",
}


def register_sweep(store: LabStore, sweep_id: str, name: str, spec: Mapping[str, Any],
                   owner: ProcessIdentity | None = None) -> None:
    """Create the sweep row, or mark a resumed one ``running`` again (its spec kept as it is);
    either way record ``owner`` (default: this process) as the process that runs it."""
    who = owner or this_process()
    store.execute(
        "INSERT INTO sweeps (sweep_id, name, spec, status, owner_pid, owner_started, owner_boot, owner_host)"
        " VALUES (?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT (sweep_id) DO UPDATE SET status = 'running',"
        " owner_pid = excluded.owner_pid, owner_started = excluded.owner_started, owner_boot = excluded.owner_boot,"
        " owner_host = excluded.owner_host, updated_at = now()",
        [sweep_id, name, json.dumps(spec, sort_keys=True), *who],
    )


def live_status(row: Mapping[str, Any]) -> tuple[str, str | None]:
    """The status of a sweep ``row`` (its ``status`` and ``owner_*`` columns) as it is now, with
    what it means in words (``None`` for ``done``): the one place that decides it.

    A ``running`` sweep whose process has ended (gone, started before the last boot, or its pid
    reused by another process) is ``interrupted``: :data:`ENDED`. One that ran on another host
    stays ``running``, saying that this host cannot tell; so does one recorded before sweeps
    noted their process (no owner)."""
    status = str(row["status"])
    if status != "running":
        return status, _NOTES.get(status)
    pid, started, boot, host = (row.get(c) for c in _OWNER)
    if _missing(pid) or _missing(host):
        return status, ("recorded running by a lab that did not note its process; if none runs it, "
                        "run the same spec again to resume")  # fmt: skip
    owner = ProcessIdentity(int(pid), None if _missing(started) else int(started), None if _missing(boot) else str(boot), str(host))
    ended = process_ended(owner)
    if ended:
        return "interrupted", ENDED
    if ended is None:
        return status, f"recorded running by process {owner.pid} on host {owner.host}; this host cannot tell whether it still runs"
    return status, f"running in process {owner.pid}"


def _missing(value: Any) -> bool:
    """NULL as DuckDB hands it back through pandas (``None``, NaN or ``pd.NA``)."""
    import pandas as pd

    return bool(pd.isna(value))


def set_sweep_status(store: LabStore, sweep_id: str, status: str, stats: Mapping[str, Any]) -> None:
    store.execute(
        "UPDATE sweeps SET status = ?, stats = ?, updated_at = current_timestamp WHERE sweep_id = ?",
        [status, json.dumps(stats, sort_keys=True), sweep_id],
    )


class ConfigRow(NamedTuple):
    """One configuration of a sweep, as :func:`register_configs` records it."""

    config_id: str
    params: Mapping[str, Any]
    plugin_config: Mapping[str, Any]
    trial: int | None = None
    baseline: bool = False


def register_config(
    store: LabStore, sweep_id: str, config_id: str, params: Mapping[str, Any], plugin_config: Mapping[str, Any],
    *, trial: int | None = None, baseline: bool = False,
) -> None:
    register_configs(store, sweep_id, [ConfigRow(config_id, params, plugin_config, trial, baseline)])


def register_configs(store: LabStore, sweep_id: str, rows: Iterable[ConfigRow]) -> int:
    """Record configurations of a sweep in one statement (one already recorded, or repeated in
    ``rows``, keeps its first row); returns how many distinct ids were given. One ``INSERT`` a row
    took 56 to 80 s for a grid of 10,000 before its first run started; one statement, 0.2 s."""
    first = {row.config_id: row for row in reversed(list(rows))}  # the first of a repeated id, as ON CONFLICT keeps
    if not first:
        return 0
    import pyarrow as pa

    kept = list(reversed(first.values()))
    table = pa.table({
        "sweep_id": pa.array([sweep_id] * len(kept), pa.string()),
        "config_id": pa.array([r.config_id for r in kept], pa.string()),
        "trial": pa.array([r.trial for r in kept], pa.int64()),
        "baseline": pa.array([bool(r.baseline) for r in kept], pa.bool_()),
        "params": pa.array([json.dumps(r.params, sort_keys=True) for r in kept], pa.string()),
        "plugin_config": pa.array([json.dumps(r.plugin_config, sort_keys=True) for r in kept], pa.string()),
    })  # fmt: skip
    with store.hold():
        store.con.register("_lcm_lab_sweep_configs", table)
        try:
            store.execute(
                "INSERT INTO sweep_configs (sweep_id, config_id, trial, baseline, params, plugin_config)"
                " SELECT sweep_id, config_id, trial, baseline, params, plugin_config FROM _lcm_lab_sweep_configs"
                " ON CONFLICT DO NOTHING"
            )
        finally:
            store.con.unregister("_lcm_lab_sweep_configs")
    return len(kept)


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
    """One row per sweep: status (:func:`live_status`), configurations, finished and failed runs,
    stats (JSON) and ``status_note``, the status in words."""
    frame = store.fetch_df(_SWEEPS)
    live = [live_status(row) for row in frame.to_dict("records")]
    frame["status"] = [status for status, _ in live]
    frame["status_note"] = [note for _, note in live]
    return frame.drop(columns=list(_OWNER))


def sweep_row(store: LabStore, sweep_id: str) -> dict[str, Any]:
    """The sweep's row with its spec and stats parsed and its status as :func:`live_status` reads
    it (``status_note`` in words); a clear error for an unknown id."""
    rows = store.fetch_df("SELECT * FROM sweeps WHERE sweep_id = ?", [sweep_id])
    if rows.empty:
        known = [r[0] for r in store.fetch_all("SELECT sweep_id FROM sweeps ORDER BY created_at DESC LIMIT 10")]
        hint = f"; known: {', '.join(known)}" if known else "; no sweeps in this store yet (run lcm-lab sweep SPEC.yaml)"
        raise UnknownNameError(f"unknown sweep id {sweep_id!r}{hint}")
    row = rows.iloc[0].to_dict()
    row["spec"] = stored_json(row["spec"], f"sweep {sweep_id}'s spec")
    row["stats"] = stored_json(row["stats"], f"sweep {sweep_id}'s stats")
    row["status"], row["status_note"] = live_status(row)
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
