"""Read helpers of the lab store: ``*_df()`` return pandas, ``*_pl()`` return polars.

``conversation(conversation_id)`` rebuilds the engine's :class:`Conversation` value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lcm_lab.errors import require_extra
from lcm_lab.store.rebuild import rebuild_conversation

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    from lcm_lab.engine.types import Conversation

# table -> ORDER BY of its natural reading order
_ORDER = {
    "sources": "source_id",
    "conversations": "conversation_id",
    "messages": "conversation_id, seq",
    "message_parts": "conversation_id, seq, ordinal",
    "summaries": "conversation_id, creation_order, summary_id",
    "summary_sources": "conversation_id, summary_id, ordinal",
    "summary_messages": "conversation_id, summary_id, ordinal",
    "context_items": "conversation_id, ordinal",
    "large_files": "conversation_id, created_at, file_id",
    "entries": "conversation_id, position",
    "recorded_events": "conversation_id, event_index",
    "raw_lines": "conversation_id, line",
    "qa_items": "conversation_id, qa_id",
    # lcm.db files of 1.0 (lcm_lab.store.migrations.m010_lcmdb_v1): apart from the summary DAG
    "pending_compaction_batches": "conversation_id, created_at, batch_id",
    "pending_summary_nodes": "conversation_id, batch_id, depth, ordinal_start, node_id",
    "pending_summary_node_messages": "conversation_id, node_id, ordinal",
    "pending_summary_node_children": "conversation_id, node_id, ordinal",
    "turn_advancements": "source_id, session_id, committed_at, advancement_key",
    "message_transcript_anchor_trust": "conversation_id, seq",
    "conversation_transcript_epochs": "conversation_id",
}
# Tables without a conversation_id: how one conversation's rows are found.
_OF_CONVERSATION = {
    # receipts name a session; a conversation's are its source's rows of its session
    "turn_advancements": "(source_id, session_id) IN (SELECT source_id, session_id FROM conversations WHERE conversation_id = ?)",
}

_CONVERSATIONS = """
SELECT c.*, s.path AS source_path, s.kind AS source_kind,
       (SELECT count(*) FROM messages m WHERE m.conversation_id = c.conversation_id) AS message_count,
       (SELECT count(*) FROM summaries x WHERE x.conversation_id = c.conversation_id) AS summary_count
FROM conversations c JOIN sources s USING (source_id)
ORDER BY c.conversation_id
"""

_PENDING = """
SELECT n.conversation_id, n.batch_id, b.status AS batch_status, n.node_id, n.kind, n.depth, n.status,
       n.status = 'promoted' AS published, n.canonical_summary_id, n.ordinal_start, n.ordinal_end, n.token_count,
       n.content,
       (SELECT count(*) FROM pending_summary_node_messages m
        WHERE m.conversation_id = n.conversation_id AND m.node_id = n.node_id) AS source_messages,
       (SELECT count(*) FROM pending_summary_node_children c
        WHERE c.conversation_id = n.conversation_id AND c.node_id = n.node_id) AS children,
       n.created_at, n.ready_at, n.promoted_at
FROM pending_summary_nodes n LEFT JOIN pending_compaction_batches b USING (conversation_id, batch_id)
{where}
ORDER BY n.conversation_id, b.created_at, n.batch_id, n.depth, n.ordinal_start, n.node_id
"""


class StoreReads:
    """Mixed into :class:`~lcm_lab.store.core.LabStore`."""

    con: Any

    def table_query(self, table: str, conversation_id: int | None = None) -> tuple[str, list[Any]]:
        """SQL (and parameters) reading ``table`` in its natural order, optionally one conversation."""
        if table not in _ORDER:
            raise ValueError(f"unknown table {table!r}; known: {', '.join(sorted(_ORDER))}")
        where, params = "", []
        if conversation_id is not None and table != "sources":
            where, params = f" WHERE {_OF_CONVERSATION.get(table, 'conversation_id = ?')}", [conversation_id]
        return f"SELECT * FROM {table}{where} ORDER BY {_ORDER[table]}", params

    def read_df(self, table: str, conversation_id: int | None = None) -> pd.DataFrame:
        sql, params = self.table_query(table, conversation_id)
        return self.con.execute(sql, params).df()

    def read_pl(self, table: str, conversation_id: int | None = None) -> pl.DataFrame:
        sql, params = self.table_query(table, conversation_id)
        require_extra("polars", "polars", "polars frames (the *_pl readers)")
        return self.con.execute(sql, params).pl()

    # conversations get source path and counts alongside
    def conversations_df(self) -> pd.DataFrame:
        """One row per conversation with its source path, message and summary counts."""
        return self.con.execute(_CONVERSATIONS).df()

    def conversations_pl(self) -> pl.DataFrame:
        require_extra("polars", "polars", "polars frames (the *_pl readers)")
        return self.con.execute(_CONVERSATIONS).pl()

    def sources_df(self) -> pd.DataFrame:
        return self.read_df("sources")

    def sources_pl(self) -> pl.DataFrame:
        return self.read_pl("sources")

    def messages_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("messages", conversation_id)

    def messages_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("messages", conversation_id)

    def message_parts_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("message_parts", conversation_id)

    def message_parts_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("message_parts", conversation_id)

    def summaries_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("summaries", conversation_id)

    def summaries_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("summaries", conversation_id)

    def summary_sources_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("summary_sources", conversation_id)

    def summary_sources_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("summary_sources", conversation_id)

    def summary_messages_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("summary_messages", conversation_id)

    def summary_messages_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("summary_messages", conversation_id)

    def context_items_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("context_items", conversation_id)

    def context_items_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("context_items", conversation_id)

    def large_files_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("large_files", conversation_id)

    def large_files_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("large_files", conversation_id)

    def entries_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("entries", conversation_id)

    def entries_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("entries", conversation_id)

    def raw_lines_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        """Raw source lines a transcript reader kept (the lines the other rows do not fully represent)."""
        return self.read_df("raw_lines", conversation_id)

    def raw_lines_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("raw_lines", conversation_id)

    def recorded_events_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("recorded_events", conversation_id)

    def recorded_events_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("recorded_events", conversation_id)

    def qa_items_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("qa_items", conversation_id)

    def qa_items_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("qa_items", conversation_id)

    def pending_summaries_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        """Summaries lossless-claw 1.0 prepared in the background (lcm.db files of 1.0), one row per node.

        Not part of the conversation's summary DAG: ``published`` nodes were copied into
        ``summaries`` as ``canonical_summary_id`` (1.0 then clears their ``content`` here), the
        others were never seen by the model. ``batch_status`` is their batch's (``planning``,
        ``ready``, ``publishing``, ``published``, ``stale``, ``failed``).
        """
        where, params = ("WHERE n.conversation_id = ?", [conversation_id]) if conversation_id is not None else ("", [])
        return self.con.execute(_PENDING.format(where=where), params).df()

    def conversation(self, conversation_id: int) -> Conversation:
        """The engine's :class:`Conversation` for a loaded conversation.

        Transcripts come back as ``entries`` (runtime messages in leaf-path order); lcm.db
        conversations as ``stored_messages`` with the recorded summary DAG and context.
        """
        return rebuild_conversation(self.con, conversation_id)
