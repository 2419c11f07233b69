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
    "qa_items": "conversation_id, qa_id",
}

_CONVERSATIONS = """
SELECT c.*, s.path AS source_path, s.kind AS source_kind,
       (SELECT count(*) FROM messages m WHERE m.conversation_id = c.conversation_id) AS message_count,
       (SELECT count(*) FROM summaries x WHERE x.conversation_id = c.conversation_id) AS summary_count
FROM conversations c JOIN sources s USING (source_id)
ORDER BY c.conversation_id
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
            where, params = " WHERE conversation_id = ?", [conversation_id]
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

    def recorded_events_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("recorded_events", conversation_id)

    def recorded_events_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("recorded_events", conversation_id)

    def qa_items_df(self, conversation_id: int | None = None) -> pd.DataFrame:
        return self.read_df("qa_items", conversation_id)

    def qa_items_pl(self, conversation_id: int | None = None) -> pl.DataFrame:
        return self.read_pl("qa_items", conversation_id)

    def conversation(self, conversation_id: int) -> Conversation:
        """The engine's :class:`Conversation` for a loaded conversation.

        Transcripts come back as ``entries`` (runtime messages in leaf-path order); lcm.db
        conversations as ``stored_messages`` with the recorded summary DAG and context.
        """
        return rebuild_conversation(self.con, conversation_id)
