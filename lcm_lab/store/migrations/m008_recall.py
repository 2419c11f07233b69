"""Recall: the documents ``grep``/``describe``/``expand_query`` search, with their DAG edges.

One row per searchable document (message, summary or large file) of an indexed *target*: a
loaded conversation (``conversation:<id>``) or a saved or in-memory replay (``run:<run_id>``).
``recall_docs`` is what DuckDB's full-text index covers (rebuilt when documents change);
``recall_edges`` are the summary -> source edges (a source summary or a message seq).
"""

from __future__ import annotations

from typing import Any

STATEMENTS: tuple[str, ...] = (
    """
    CREATE TABLE recall_targets (
        target VARCHAR PRIMARY KEY,
        kind VARCHAR NOT NULL,
        run_id VARCHAR,
        conversation_id BIGINT,
        family VARCHAR NOT NULL,
        label VARCHAR,
        docs BIGINT NOT NULL,
        files_without_payload INTEGER NOT NULL DEFAULT 0,
        indexed_at TIMESTAMP NOT NULL DEFAULT current_timestamp
    )
    """,
    """
    CREATE TABLE recall_docs (
        doc_key BIGINT PRIMARY KEY,
        target VARCHAR NOT NULL,
        conversation_id BIGINT,
        doc_type VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        seq INTEGER,
        role VARCHAR,
        kind VARCHAR,
        depth INTEGER,
        token_count BIGINT,
        created_at VARCHAR,
        created_ts TIMESTAMP,
        content VARCHAR NOT NULL,
        meta VARCHAR
    )
    """,
    """
    CREATE TABLE recall_edges (
        target VARCHAR NOT NULL,
        summary_id VARCHAR NOT NULL,
        ordinal INTEGER NOT NULL,
        source_summary_id VARCHAR,
        source_seq INTEGER
    )
    """,
    "CREATE TABLE recall_fts_state (built_docs BIGINT NOT NULL, built_max_key BIGINT NOT NULL)",
)


def up(con: Any) -> None:
    """Create the recall tables."""
    for statement in STATEMENTS:
        con.execute(statement)
