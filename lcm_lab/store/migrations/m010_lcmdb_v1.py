"""lcm.db files of lossless-claw 1.0: pending summaries, turn receipts and transcript anchors.

1.0 (src/db/migration.ts @ bf3d69ef) adds seven tables; the lab keeps every row of them, under
their upstream names, keyed the lab's way (lab ``conversation_id``; messages by ``seq``):

* ``pending_compaction_batches``, ``pending_summary_nodes``, ``pending_summary_node_messages``,
  ``pending_summary_node_children`` — summaries the engine prepared in the background
  (src/store/pending-summary-store.ts). They are **not** summaries of the conversation: a node
  the engine has not published yet was never seen by the model, and a published ("promoted")
  node is a copy of the canonical row in ``summaries`` (its ``canonical_summary_id``) whose
  content 1.0 clears. So they live apart from ``summaries``/``summary_sources`` and nothing that
  reads the DAG (views, scores, recall) sees them; read them with ``store.read_df(<table>)``.
* ``turn_advancements`` — commitTurn's receipts (src/engine.ts ``commitTurn``). They belong to a
  session, not to a conversation (they carry session id and key only), so they are kept per
  source.
* ``message_transcript_anchor_trust`` and ``conversation_transcript_epochs`` — how 1.0 trusts the
  link between stored messages and the host transcript.
"""

from __future__ import annotations

from typing import Any

STATEMENTS: tuple[str, ...] = (
    """
    CREATE TABLE pending_compaction_batches (
        conversation_id BIGINT NOT NULL,
        batch_id VARCHAR NOT NULL,
        session_key VARCHAR,
        session_target_json VARCHAR,
        status VARCHAR NOT NULL,
        source_projection_fingerprint VARCHAR,
        compactable_start_ordinal INTEGER,
        compactable_end_ordinal INTEGER,
        planned_fresh_tail_start_ordinal INTEGER,
        prompt_version VARCHAR,
        model VARCHAR,
        failure_summary VARCHAR,
        created_at VARCHAR,
        updated_at VARCHAR,
        published_at VARCHAR,
        PRIMARY KEY (conversation_id, batch_id)
    )
    """,
    """
    CREATE TABLE pending_summary_nodes (
        conversation_id BIGINT NOT NULL,
        node_id VARCHAR NOT NULL,
        batch_id VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        depth INTEGER,
        status VARCHAR NOT NULL,
        ordinal_start INTEGER,
        ordinal_end INTEGER,
        source_fingerprint VARCHAR,
        source_context_hash VARCHAR,
        content VARCHAR,
        token_count INTEGER,
        prompt_version VARCHAR,
        model VARCHAR,
        canonical_summary_id VARCHAR,
        lease_owner VARCHAR,
        lease_expires_at VARCHAR,
        failure_summary VARCHAR,
        retry_count INTEGER,
        next_attempt_after VARCHAR,
        created_at VARCHAR,
        updated_at VARCHAR,
        ready_at VARCHAR,
        promoted_at VARCHAR,
        PRIMARY KEY (conversation_id, node_id)
    )
    """,
    """
    CREATE TABLE pending_summary_node_messages (
        conversation_id BIGINT NOT NULL,
        node_id VARCHAR NOT NULL,
        seq INTEGER NOT NULL,
        ordinal INTEGER NOT NULL,
        transcript_entry_id VARCHAR,
        identity_hash VARCHAR,
        PRIMARY KEY (conversation_id, node_id, seq)
    )
    """,
    """
    CREATE TABLE pending_summary_node_children (
        conversation_id BIGINT NOT NULL,
        node_id VARCHAR NOT NULL,
        ordinal INTEGER NOT NULL,
        child_node_id VARCHAR,
        child_summary_id VARCHAR,
        PRIMARY KEY (conversation_id, node_id, ordinal)
    )
    """,
    """
    CREATE TABLE turn_advancements (
        source_id BIGINT NOT NULL,
        advancement_key VARCHAR NOT NULL,
        payload_hash VARCHAR,
        session_id VARCHAR NOT NULL,
        session_key VARCHAR,
        admission_entry_id VARCHAR,
        terminal_entry_id VARCHAR,
        message_count INTEGER,
        committed_at VARCHAR,
        PRIMARY KEY (source_id, advancement_key)
    )
    """,
    """
    CREATE TABLE message_transcript_anchor_trust (
        conversation_id BIGINT NOT NULL,
        seq INTEGER NOT NULL,
        transcript_entry_id VARCHAR,
        trust_state VARCHAR NOT NULL,
        source VARCHAR,
        reason VARCHAR,
        verified_at VARCHAR,
        created_at VARCHAR,
        updated_at VARCHAR,
        PRIMARY KEY (conversation_id, seq)
    )
    """,
    """
    CREATE TABLE conversation_transcript_epochs (
        conversation_id BIGINT PRIMARY KEY,
        session_id VARCHAR,
        session_key VARCHAR,
        frontier_entry_id VARCHAR,
        frontier_seq INTEGER,
        frontier_created_at VARCHAR,
        migration_mode VARCHAR NOT NULL,
        metadata_json VARCHAR,
        created_at VARCHAR,
        updated_at VARCHAR
    )
    """,
)


def up(con: Any) -> None:
    for statement in STATEMENTS:
        con.execute(statement)
