"""Sweeps: a spec, its configurations and one row per (configuration, conversation) run.

``sweep_runs`` is written last for a unit (after its replay and scores), so a unit is finished
exactly when its row exists: a resumed sweep skips those and nothing is written twice.
``status`` is ``ok`` or ``error`` (``error`` holds the message and traceback; the sweep went on).
"""

from __future__ import annotations

from typing import Any


def up(con: Any) -> None:
    con.execute(
        """
        CREATE TABLE sweeps (
            sweep_id VARCHAR PRIMARY KEY,
            name VARCHAR NOT NULL,
            spec JSON NOT NULL,
            status VARCHAR NOT NULL,
            stats JSON NOT NULL DEFAULT '{}',
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            updated_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        )
        """
    )
    con.execute(
        """
        CREATE TABLE sweep_configs (
            sweep_id VARCHAR NOT NULL,
            config_id VARCHAR NOT NULL,
            trial INTEGER,
            baseline BOOLEAN NOT NULL DEFAULT false,
            params JSON NOT NULL,
            plugin_config JSON NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            PRIMARY KEY (sweep_id, config_id)
        )
        """
    )
    con.execute(
        """
        CREATE TABLE sweep_runs (
            sweep_id VARCHAR NOT NULL,
            config_id VARCHAR NOT NULL,
            conversation_key VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            error VARCHAR,
            seconds DOUBLE,
            metrics JSON NOT NULL DEFAULT '{}',
            model_calls INTEGER NOT NULL DEFAULT 0,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            PRIMARY KEY (sweep_id, config_id, conversation_key)
        )
        """
    )
