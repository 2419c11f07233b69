"""The lab's first schema: sources, conversations, messages and the recorded summary DAG.

Keys are plain: a lab ``conversation_id`` (BIGINT, allocated by the store) plus the origin
ids the source used (``origin_*``). Summary edges are named by what they mean:
``summary_sources(summary_id, source_summary_id)`` is lossless-claw's
``summary_parents(summary_id, parent_summary_id)`` with the misleading "parent" resolved.
Timestamps are kept as the source wrote them (text), so nothing is lost in conversion.
"""

from __future__ import annotations

from typing import Any

STATEMENTS: tuple[str, ...] = (
    """
    CREATE TABLE sources (
        source_id BIGINT PRIMARY KEY,
        path VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        status VARCHAR NOT NULL,
        sha256 VARCHAR,
        size_bytes BIGINT,
        mtime DOUBLE,
        loaded_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
        loader_version VARCHAR NOT NULL,
        warnings VARCHAR[] NOT NULL DEFAULT [],
        skipped_lines INTEGER NOT NULL DEFAULT 0,
        meta JSON
    )
    """,
    """
    CREATE TABLE conversations (
        conversation_id BIGINT PRIMARY KEY,
        source_id BIGINT NOT NULL,
        kind VARCHAR NOT NULL,
        origin_conversation_id BIGINT,
        session_id VARCHAR,
        session_key VARCHAR,
        title VARCHAR,
        active BOOLEAN,
        archived_at VARCHAR,
        archive_cause VARCHAR,
        bootstrapped_at VARCHAR,
        created_at VARCHAR,
        updated_at VARCHAR,
        meta JSON
    )
    """,
    """
    CREATE TABLE messages (
        conversation_id BIGINT NOT NULL,
        seq INTEGER NOT NULL,
        role VARCHAR,
        runtime_role VARCHAR,
        content VARCHAR,
        token_count INTEGER,
        token_estimate INTEGER,
        created_at VARCHAR,
        transcript_entry_id VARCHAR,
        line INTEGER,
        identity_hash VARCHAR,
        sender_metadata VARCHAR,
        stable_event_key VARCHAR,
        large_content VARCHAR,
        origin_message_id BIGINT,
        raw JSON,
        PRIMARY KEY (conversation_id, seq)
    )
    """,
    """
    CREATE TABLE message_parts (
        conversation_id BIGINT NOT NULL,
        seq INTEGER NOT NULL,
        ordinal INTEGER NOT NULL,
        part_id VARCHAR,
        part_type VARCHAR NOT NULL,
        text_content VARCHAR,
        tool_call_id VARCHAR,
        tool_name VARCHAR,
        tool_input VARCHAR,
        tool_output VARCHAR,
        metadata VARCHAR,
        is_ignored INTEGER,
        is_synthetic INTEGER,
        tool_status VARCHAR,
        tool_error VARCHAR,
        tool_title VARCHAR,
        patch_hash VARCHAR,
        patch_files VARCHAR,
        file_mime VARCHAR,
        file_name VARCHAR,
        file_url VARCHAR,
        subtask_prompt VARCHAR,
        subtask_desc VARCHAR,
        subtask_agent VARCHAR,
        step_reason VARCHAR,
        step_cost DOUBLE,
        step_tokens_in BIGINT,
        step_tokens_out BIGINT,
        snapshot_hash VARCHAR,
        compaction_auto INTEGER,
        PRIMARY KEY (conversation_id, seq, ordinal)
    )
    """,
    """
    CREATE TABLE summaries (
        conversation_id BIGINT NOT NULL,
        summary_id VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        depth INTEGER,
        content VARCHAR NOT NULL,
        token_count INTEGER NOT NULL,
        token_estimate INTEGER,
        earliest_at VARCHAR,
        latest_at VARCHAR,
        descendant_count INTEGER,
        descendant_token_count INTEGER,
        source_message_token_count INTEGER,
        file_ids VARCHAR[],
        model VARCHAR,
        created_at VARCHAR,
        creation_order INTEGER,
        PRIMARY KEY (conversation_id, summary_id)
    )
    """,
    """
    CREATE TABLE summary_sources (
        conversation_id BIGINT NOT NULL,
        summary_id VARCHAR NOT NULL,
        source_summary_id VARCHAR NOT NULL,
        ordinal INTEGER NOT NULL,
        PRIMARY KEY (conversation_id, summary_id, source_summary_id)
    )
    """,
    """
    CREATE TABLE summary_messages (
        conversation_id BIGINT NOT NULL,
        summary_id VARCHAR NOT NULL,
        seq INTEGER NOT NULL,
        ordinal INTEGER NOT NULL,
        PRIMARY KEY (conversation_id, summary_id, seq)
    )
    """,
    """
    CREATE TABLE context_items (
        conversation_id BIGINT NOT NULL,
        ordinal INTEGER NOT NULL,
        item_type VARCHAR NOT NULL,
        seq INTEGER,
        summary_id VARCHAR,
        created_at VARCHAR,
        PRIMARY KEY (conversation_id, ordinal)
    )
    """,
    """
    CREATE TABLE large_files (
        conversation_id BIGINT NOT NULL,
        file_id VARCHAR NOT NULL,
        file_name VARCHAR,
        mime_type VARCHAR,
        byte_size BIGINT,
        line_count BIGINT,
        storage_uri VARCHAR,
        exploration_summary VARCHAR,
        created_at VARCHAR,
        PRIMARY KEY (conversation_id, file_id)
    )
    """,
    # Every transcript entry on the selected (leaf) path, messages or not: the engine needs
    # them all for turn boundaries and line numbers. ``seq`` links persisted messages; the
    # runtime message of those lives in messages.raw, of the others in ``message``.
    """
    CREATE TABLE entries (
        conversation_id BIGINT NOT NULL,
        position INTEGER NOT NULL,
        line INTEGER,
        entry_type VARCHAR NOT NULL,
        entry_id VARCHAR,
        timestamp VARCHAR,
        seq INTEGER,
        message JSON,
        PRIMARY KEY (conversation_id, position)
    )
    """,
    """
    CREATE TABLE recorded_events (
        conversation_id BIGINT NOT NULL,
        event_index INTEGER NOT NULL,
        kind VARCHAR NOT NULL,
        line INTEGER,
        entry_id VARCHAR,
        timestamp VARCHAR,
        summary VARCHAR,
        first_kept_entry_id VARCHAR,
        tokens_before BIGINT,
        raw JSON,
        PRIMARY KEY (conversation_id, event_index)
    )
    """,
    """
    CREATE TABLE qa_items (
        conversation_id BIGINT NOT NULL,
        qa_id VARCHAR NOT NULL,
        question VARCHAR NOT NULL,
        answer VARCHAR,
        category INTEGER,
        evidence VARCHAR[] NOT NULL DEFAULT [],
        adversarial_answer VARCHAR,
        PRIMARY KEY (conversation_id, qa_id)
    )
    """,
)


def up(con: Any) -> None:
    """Create the initial tables."""
    for statement in STATEMENTS:
        con.execute(statement)
