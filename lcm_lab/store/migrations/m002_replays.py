"""Replays: one row per run, its turns, the summaries it created and every summarizer call.

The ``replays.payload`` column holds the whole :class:`~lcm_lab.engine.replay.driver.Replay` (compressed
JSON) so a run can be rebuilt exactly; the other tables are the same facts laid out for SQL.
"""

from __future__ import annotations

from typing import Any

STATEMENTS: tuple[str, ...] = (
    """
    CREATE TABLE replays (
        run_id VARCHAR PRIMARY KEY,
        created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
        label VARCHAR,
        conversation_id BIGINT,
        session_id VARCHAR NOT NULL,
        source VARCHAR,
        summarizer VARCHAR NOT NULL,
        fidelity VARCHAR NOT NULL,
        token_budget BIGINT NOT NULL,
        config JSON NOT NULL,
        turns INTEGER NOT NULL,
        messages INTEGER NOT NULL,
        summaries INTEGER NOT NULL,
        summarizer_calls INTEGER NOT NULL,
        final_stored_tokens BIGINT NOT NULL,
        payload BLOB NOT NULL
    )
    """,
    """
    CREATE TABLE replay_turns (
        run_id VARCHAR NOT NULL,
        turn INTEGER NOT NULL,
        first_line INTEGER,
        last_line INTEGER,
        ingested INTEGER NOT NULL,
        stored_tokens_before BIGINT NOT NULL,
        threshold BIGINT NOT NULL,
        should_compact BOOLEAN NOT NULL,
        compacted BOOLEAN NOT NULL,
        sweeps INTEGER NOT NULL,
        summarizer_calls INTEGER NOT NULL,
        summaries_created INTEGER NOT NULL,
        tokens_after BIGINT NOT NULL,
        context_items INTEGER NOT NULL,
        PRIMARY KEY (run_id, turn)
    )
    """,
    """
    CREATE TABLE replay_summaries (
        run_id VARCHAR NOT NULL,
        summary_id VARCHAR NOT NULL,
        ordinal INTEGER NOT NULL,
        created_turn INTEGER,
        kind VARCHAR NOT NULL,
        depth INTEGER NOT NULL,
        level VARCHAR,
        token_count BIGINT NOT NULL,
        source_message_token_count BIGINT NOT NULL,
        descendant_count BIGINT NOT NULL,
        earliest_at VARCHAR,
        latest_at VARCHAR,
        model VARCHAR,
        content VARCHAR NOT NULL,
        PRIMARY KEY (run_id, summary_id)
    )
    """,
    """
    CREATE TABLE replay_summary_sources (
        run_id VARCHAR NOT NULL,
        summary_id VARCHAR NOT NULL,
        ordinal INTEGER NOT NULL,
        source_summary_id VARCHAR,
        source_seq BIGINT
    )
    """,
    """
    CREATE TABLE replay_calls (
        run_id VARCHAR NOT NULL,
        turn INTEGER NOT NULL,
        call_index INTEGER NOT NULL,
        kind VARCHAR NOT NULL,
        depth INTEGER NOT NULL,
        aggressive BOOLEAN NOT NULL,
        source_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        target_tokens BIGINT NOT NULL,
        model VARCHAR,
        template_hash VARCHAR,
        latency_ms DOUBLE,
        cost_usd DOUBLE,
        cached BOOLEAN,
        PRIMARY KEY (run_id, turn, call_index)
    )
    """,
)


def up(con: Any) -> None:
    for statement in STATEMENTS:
        con.execute(statement)
