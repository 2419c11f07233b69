"""Raw source lines a transcript reader kept (``raw_lines``), one row per line.

Readers keep the raw object of each line the lab's rows do not fully represent (every Claude
Code line on the conversation's path; pi entries that are not fully represented) in
``LoadedConversation.meta["raw_entries"]``. Until now that whole mapping went into ONE JSON
value in ``conversations.meta``, which held a big file's every line in memory at load and at
each rebuild. This table holds one row per line instead, written through the loader's flushing
row buffers. Stores built before it have ``raw_entries`` moved out of ``conversations.meta``
into this table.
"""

from __future__ import annotations

import json
from typing import Any


def up(con: Any) -> None:
    con.execute(
        "CREATE TABLE raw_lines (conversation_id BIGINT NOT NULL, line INTEGER NOT NULL, raw JSON,"
        " PRIMARY KEY (conversation_id, line))"
    )
    has_raw = "json_exists(meta, '$.raw_entries')"
    con.execute(
        "INSERT INTO raw_lines SELECT conversation_id, CAST(e.key AS INTEGER), e.value"
        f" FROM conversations, json_each(meta -> '$.raw_entries') AS e WHERE {has_raw}"
    )
    ids = [row[0] for row in con.execute(f"SELECT conversation_id FROM conversations WHERE {has_raw}").fetchall()]
    for cid in ids:  # one meta value at a time (DuckDB has no json_remove)
        (text,) = con.execute("SELECT meta FROM conversations WHERE conversation_id = ?", [cid]).fetchone()
        meta = json.loads(text)
        meta.pop("raw_entries", None)
        con.execute("UPDATE conversations SET meta = ? WHERE conversation_id = ?", [json.dumps(meta) if meta else None, cid])
