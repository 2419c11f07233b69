"""Read a transcript and run the engine's ingest projection on it, in a worker process.

Loading a directory of JSONL sessions is CPU-bound in two pure steps: parsing the file and
projecting every message as lossless-claw would store it (content, token count, parts JSON,
identity hash). Both are pure functions of the file, so :func:`read_and_ingest` runs them in a
worker process while the parent inserts the previous file into the store. No duckdb here: a
worker imports only the readers and the engine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from lcm_lab.engine.ingest import IngestResult, to_stored_message
from lcm_lab.engine.types import InputEntry


class Prepared(NamedTuple):
    """The ingest projection of every entry of a transcript, per conversation (None: not run).

    ``sha256`` is the file's digest when the worker read it and ``keys`` the ``(entry_id, type,
    line)`` of every entry: the parent reads the file again itself (parsing is cheap; sending
    the parsed messages back costs more than the parse) and uses the projections only where both
    reads agree.
    """

    sha256: str
    keys: list[list[tuple[str | None, str, int | None]]]
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
    digest = hashlib.sha256()
    with open(path, "rb") as handle:  # as lcm_lab.store.sources.fingerprint hashes it
        while block := handle.read(1 << 20):
            digest.update(block)
    if read is None:
        from lcm_lab.io.transcripts import read_transcript

        result = read_transcript(path)
    else:
        result = read()
    conversations = [item.conversation for item in result.conversations]
    keys: list[list[tuple[str | None, str, int | None]]] = [
        [(e.entry_id, e.type, e.line) for e in conv.entries] for conv in conversations
    ]
    ingested = [[_ingest_or_none(entry) for entry in conv.entries] for conv in conversations]
    return Prepared(digest.hexdigest(), keys, ingested)


def matching_ingest(prepared: Prepared | None, sha256: str, read: Any) -> list[list[IngestResult | None]] | None:
    """``prepared.ingested`` when it was computed on the same bytes and entries as ``read``."""
    if prepared is None or prepared.sha256 != sha256 or len(prepared.keys) != len(read.conversations):
        return None
    for keys, item in zip(prepared.keys, read.conversations, strict=True):
        if keys != [(e.entry_id, e.type, e.line) for e in item.conversation.entries]:
            return None
    return prepared.ingested
