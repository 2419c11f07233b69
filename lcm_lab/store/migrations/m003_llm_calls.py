"""The LLM call ledger: one row per model call (or cache hit), and the response cache over it.

``cache_key`` is the sha256 of the canonical JSON of the fields that change a model's output
(model, rendered messages, template hash, temperature, max tokens, seed, reasoning effort).
Only rows with ``cacheable = true`` (successful, non-empty responses written in a cache mode
that allows writing) are ever served again. Errors are recorded with ``error_class`` and never
cached. No API key is stored in any column. Lookups go through an in-memory index the ledger
builds with one scan, so the table carries no index (row inserts stay cheap).
"""

from __future__ import annotations

from typing import Any

STATEMENTS: tuple[str, ...] = (
    """
    CREATE TABLE llm_calls (
        call_id VARCHAR NOT NULL,  -- uuid4 hex; no key constraint (inserts stay cheap)
        created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
        run_id VARCHAR,
        purpose VARCHAR NOT NULL,
        summarizer VARCHAR NOT NULL,
        provider VARCHAR,
        model VARCHAR NOT NULL,
        api_base VARCHAR,
        cache_key VARCHAR NOT NULL,
        cache_hit BOOLEAN NOT NULL,
        cacheable BOOLEAN NOT NULL,
        attempt INTEGER NOT NULL,
        kind VARCHAR,
        depth INTEGER,
        aggressive BOOLEAN,
        template_name VARCHAR,
        template_hash VARCHAR,
        system_template_hash VARCHAR,
        params JSON,
        request_messages JSON,
        response_text VARCHAR,
        finish_reason VARCHAR,
        input_tokens BIGINT,
        output_tokens BIGINT,
        cost_usd DOUBLE,
        latency_ms DOUBLE,
        error_class VARCHAR,
        error_message VARCHAR
    )
    """,
)


def up(con: Any) -> None:
    for statement in STATEMENTS:
        con.execute(statement)
