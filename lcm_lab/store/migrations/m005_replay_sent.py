"""What the model received in a replay: one row per engine-level ``assemble`` call.

``turn`` is the per-turn call at the start of that turn; the end-of-run call has ``turn = -1``.
The rows are facts for SQL (paths, clamps, degraded turns, serialized vs bare tokens); the replay
payload itself rebuilds every call exactly (``Replay.sent``), and ``compaction_mode`` says
whether the run compacted inline or deferred (the plugin's default).
"""

from __future__ import annotations

from typing import Any


def up(con: Any) -> None:
    con.execute(
        """
        CREATE TABLE replay_sent (
            run_id VARCHAR NOT NULL,
            turn INTEGER NOT NULL,
            token_budget BIGINT NOT NULL,
            path VARCHAR NOT NULL,
            clamped BOOLEAN NOT NULL,
            degraded BOOLEAN NOT NULL,
            estimated_tokens BIGINT NOT NULL,
            prompt_tokens BIGINT,
            bare_tokens BIGINT,
            messages INTEGER NOT NULL,
            summaries INTEGER NOT NULL,
            emergency_drain VARCHAR,
            PRIMARY KEY (run_id, turn, token_budget)
        )
        """
    )
    con.execute("ALTER TABLE replays ADD COLUMN compaction_mode VARCHAR")
    con.execute("ALTER TABLE replay_turns ADD COLUMN tokens_end BIGINT")
