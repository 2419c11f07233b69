"""Read a transcript and run the engine's ingest projection on it, in a worker process.

Loading a directory of JSONL sessions is CPU-bound in two pure steps: parsing the file and
projecting every message as lossless-claw would store it (content, token count, parts JSON,
identity hash). Both are pure functions of the file, so :func:`read_and_ingest` runs them in a
worker process while the parent inserts the previous file into the store. No duckdb here: a
worker imports only the readers and the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from lcm_lab.engine.ingest import IngestResult, to_stored_message
from lcm_lab.engine.types import InputEntry


class Prepared(NamedTuple):
    """A transcript read and, per conversation and entry, its ingest projection (None: not run)."""

    read: Any  # lcm_lab.io.transcripts.TranscriptRead
    ingested: list[list[IngestResult | None]]


def ingest_entry(entry: InputEntry, seq: int) -> IngestResult:
    """The whole-file import projection of one entry (no large-payload interception, as
    ``lossless-claw-migrate-sessions`` does), so content stays lossless and deterministic."""
    assert entry.message is not None
    return to_stored_message(
        entry.message, seq, entry_id=entry.entry_id, intercept_large_payloads=False,
        envelope_timestamp=entry.timestamp,
    )  # fmt: skip


def _ingest_or_none(entry: InputEntry) -> IngestResult | None:
    if entry.message is None:
        return None
    try:
        # The stored row's seq is assigned by the writer; nothing else in the projection depends on it.
        return ingest_entry(entry, 1)
    except Exception:  # the writer projects this entry itself and reports what happens there
        return None


def read_and_ingest(path: Path, read: Callable[[], Any] | None = None) -> Prepared:
    """Read ``path`` (or call ``read``) and project every message entry of every conversation."""
    if read is None:
        from lcm_lab.io.transcripts import read_transcript

        result = read_transcript(path)
    else:
        result = read()
    ingested = [[_ingest_or_none(entry) for entry in item.conversation.entries] for item in result.conversations]
    return Prepared(result, ingested)
