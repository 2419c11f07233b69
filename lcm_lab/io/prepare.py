"""Read a transcript and build its lab-table rows, in a load worker process.

Loading a directory of JSONL sessions is CPU-bound in pure steps: parsing each file, projecting
every message as lossless-claw would store it (content, token count, parts JSON, identity hash)
and laying the rows out as Arrow tables. :func:`read_and_build` does all of them in a worker
while the parent inserts the previous file, so the parent's share is the store's insert alone.
The worker writes the tables as Arrow IPC files in a spool directory, which the parent
memory-maps: no pickling of rows through a pipe. No duckdb here: a worker imports only the
readers, the engine and pyarrow.
"""

from __future__ import annotations

import os
import uuid
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
    ids in the rows count from 0 and ``conversations.source_id`` is 0: the parent shifts both
    when it inserts. The worker hands over ``files`` (lab table, Arrow IPC file);
    :meth:`mapped` turns them into ``tables``.
    """

    fp: FileFingerprint
    kind: str
    issues: tuple[str, ...]
    skipped_lines: int
    counts: WriteCounts
    files: tuple[tuple[str, str], ...] = ()
    tables: tuple[tuple[str, pa.Table], ...] = ()

    def mapped(self) -> Prepared:
        """The rows memory-mapped from the spool files, which are removed (the mapping stays)."""
        tables = []
        for table, name in self.files:
            with pa.memory_map(name) as source:
                tables.append((table, pa.ipc.open_file(source).read_all()))
            try:
                os.unlink(name)
            except OSError:  # a platform that cannot remove a mapped file: the spool's cleanup does
                pass
        return self._replace(files=(), tables=tuple(tables))


def read_and_build(path: Path, read: Callable[[], Any] | None = None, *, spool: str | os.PathLike[str]) -> Prepared:
    """Read ``path`` (or call ``read``) and write the rows of every conversation under ``spool``."""
    fp = fingerprint(path)
    if read is None:
        from lcm_lab.io.transcripts import read_transcript

        result = read_transcript(path, reread=True)
    else:
        result = read()
    files: list[tuple[str, str]] = []
    stem = os.path.join(spool, uuid.uuid4().hex)

    def write(table: str, arrow: pa.Table) -> None:
        name = f"{stem}-{len(files)}-{table}.arrow"
        with pa.OSFile(name, "wb") as sink, pa.ipc.new_file(sink, arrow.schema) as writer:
            writer.write_table(arrow)
        files.append((table, name))

    starts = [Start(cid=index) for index in range(len(result.conversations))]
    counts = build_rows(result.conversations, starts, write, kind=result.kind, source_id=0)
    if not unchanged_since(fp, path):
        raise RuntimeError(f"{path}: changed while it was read")  # the parent reads it again
    issues = tuple(str(issue) for issue in result.issues)
    return Prepared(fp, result.kind, issues, result.skipped_lines, counts, files=tuple(files))
