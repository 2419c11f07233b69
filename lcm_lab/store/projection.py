"""How a transcript message would be stored by lossless-claw (content, token_count, parts).

The projection itself belongs to the engine (``lcm_lab.engine.ingest.to_stored_message``);
this adapter only calls it. While that function is not available the projected columns stay
NULL (``messages.content``/``token_count``) and nothing is guessed.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any, NamedTuple

from lcm_lab.engine.ingest import IngestResult
from lcm_lab.engine.types import InputEntry, StoredPart
from lcm_lab.io.prepare import ingest_entry


class StoredProjection(NamedTuple):
    content: str | None
    token_count: int | None
    created_at: str | None
    identity_hash: str | None
    sender_metadata: str | None
    stable_event_key: str | None
    parts: tuple[StoredPart, ...]


@lru_cache(maxsize=1)
def _to_stored_message() -> Any:
    try:
        module = importlib.import_module("lcm_lab.engine.ingest")
    except ModuleNotFoundError as exc:
        if exc.name != "lcm_lab.engine.ingest":
            raise
        return None
    return getattr(module, "to_stored_message", None)


def projection_available() -> bool:
    """True once the engine's ingest projection exists."""
    return _to_stored_message() is not None


class Projected(NamedTuple):
    projection: StoredProjection | None  # None: the projection function is not available
    skip_reason: str | None  # set when lossless-claw would not store this message


def project_entry(entry: InputEntry, seq: int, ingested: IngestResult | None = None) -> Projected:
    """The row lossless-claw would store for ``entry`` as message ``seq``.

    Uses the whole-file import projection (no large-payload interception, as
    ``lossless-claw-migrate-sessions`` does), so content stays lossless and deterministic.
    ``ingested`` is that projection computed elsewhere (a load worker); the stored seq is not
    part of what is returned, so it may have been computed with any seq.
    """
    convert = _to_stored_message()
    if convert is None or entry.message is None:
        return Projected(None, None)
    result = ingested if ingested is not None else ingest_entry(entry, seq)
    stored = result.stored
    if stored is None:
        return Projected(None, result.skip_reason or "skipped")
    return Projected(
        StoredProjection(
            content=stored.content,
            token_count=stored.token_count,
            created_at=stored.created_at,
            identity_hash=stored.identity_hash,
            sender_metadata=stored.sender_metadata,
            stable_event_key=stored.stable_event_key,
            parts=tuple(stored.parts),
        ),
        None,
    )
