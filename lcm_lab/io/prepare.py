"""Read a transcript and build its lab-table rows, in a load worker process.

Loading a directory of JSONL sessions is CPU-bound in pure steps: parsing each file, projecting
every message as lossless-claw would store it (content, token count, parts JSON, identity hash)
and laying the rows out as Arrow tables. :func:`read_and_build` does all of them in a worker
while the parent inserts the previous file, so the parent's share is the store's insert alone.
No duckdb here: a worker imports only the readers, the engine and pyarrow.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa

from lcm_lab.io.fingerprint import FileFingerprint, fingerprint, unchanged_since
from lcm_lab.io.rows import Start, WriteCounts, build_rows


class Prepared(NamedTuple):
    """A transcript's rows, built for a store that holds nothing from this path yet.

    ``fp`` is the fingerprint of the bytes the worker read (the file had the same size and mtime
    before and after); the parent uses the rows only while the file still has them. Conversation
    ids in ``tables`` count from 0 and ``conversations.source_id`` is 0: the parent shifts both
    when it inserts.
    """

    fp: FileFingerprint
    kind: str
    issues: tuple[str, ...]
    skipped_lines: int
    tables: list[tuple[str, pa.Table]]
    counts: WriteCounts


def read_and_build(path: Path, read: Callable[[], Any] | None = None) -> Prepared:
    """Read ``path`` (or call ``read``) and build the rows of every conversation in it."""
    fp = fingerprint(path)
    if read is None:
        from lcm_lab.io.transcripts import read_transcript

        result = read_transcript(path)
    else:
        result = read()
    tables: list[tuple[str, pa.Table]] = []
    starts = [Start(cid=index) for index in range(len(result.conversations))]
    counts = build_rows(
        result.conversations, starts, lambda table, arrow: tables.append((table, arrow)), kind=result.kind, source_id=0
    )
    if not unchanged_since(fp, path):
        raise RuntimeError(f"{path}: changed while it was read")  # the parent reads it again
    issues = tuple(str(issue) for issue in result.issues)
    return Prepared(fp, result.kind, issues, result.skipped_lines, tables, counts)
