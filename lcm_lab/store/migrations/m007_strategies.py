"""Strategies: which context strategy produced a run, with which parameters, and its turns.

``replays.strategy`` (``lcm`` for every earlier run) and ``replays.strategy_params`` (JSON: plugin
config keys for LCM, the observer's knobs for ClawVault, ...); ``strategy_turns`` holds the
per-turn facts every strategy shares (context tokens at the next call, model calls, memory size,
events). The run itself is in ``replays.payload`` like any replay.
"""

from __future__ import annotations

from typing import Any


def up(con: Any) -> None:
    con.execute("ALTER TABLE replays ADD COLUMN strategy VARCHAR DEFAULT 'lcm'")
    con.execute("ALTER TABLE replays ADD COLUMN strategy_params JSON DEFAULT '{}'")
    con.execute(
        """
        CREATE TABLE strategy_turns (
            run_id VARCHAR NOT NULL,
            turn INTEGER NOT NULL,
            first_line INTEGER,
            last_line INTEGER,
            ingested INTEGER NOT NULL,
            context_tokens BIGINT NOT NULL,
            model_calls INTEGER NOT NULL,
            memory_items INTEGER NOT NULL,
            events JSON NOT NULL DEFAULT '[]',
            PRIMARY KEY (run_id, turn)
        )
        """
    )
