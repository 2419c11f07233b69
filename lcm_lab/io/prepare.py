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

import gc
import multiprocessing
import os
import signal
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from lcm_lab.io.fingerprint import FileFingerprint, fingerprint, unchanged_since
from lcm_lab.io.growing import reading_up_to
from lcm_lab.io.model import LoadedConversation
from lcm_lab.io.rows import Sink, Start, WriteCounts, build_rows, load_warnings
from lcm_lab.io.scratch import scratch_directory

# A conversation is split across workers from this many entries on (below, a worker's start-up
# costs more than it saves).
SPLIT_MIN_ENTRIES = 5_000


class Prepared(NamedTuple):
    """A transcript's rows, built for a store that holds nothing from this path yet.

    ``fp`` is the fingerprint of the bytes the worker read (the file had the same size and mtime
    before and after); the parent uses the rows only while the file still has them. Conversation
    ids in the rows count from 0 and ``conversations.source_id`` is 0: the parent shifts both
    when it inserts. The worker hands over ``files`` (lab table, Arrow IPC file, its bytes), one
    per flush of its rows; :meth:`tables` maps them one at a time.
    """

    fp: FileFingerprint
    kind: str
    issues: tuple[str, ...]
    skipped_lines: int
    counts: WriteCounts
    files: tuple[tuple[str, str, int], ...] = ()

    @property
    def nbytes(self) -> int:
        return sum(size for _, _, size in self.files)

    def tables(self) -> Iterator[tuple[str, pa.Table]]:
        """Each spool file's rows, memory-mapped when asked for. A mapping lasts as long as the
        table it backs, so a caller that drops each table once stored keeps no more of the rows
        resident than it holds (mapping them all at once kept a 164 MB session's rows, about
        550 MB of pages, in the loading process until the last was stored)."""
        for table, name, _ in self.files:
            with pa.memory_map(name) as source:
                yield table, pa.ipc.open_file(source).read_all()

    def discard(self) -> None:
        """Remove the spool files (the rows were stored, or will be read from the file again)."""
        for _, name, _ in self.files:
            try:
                os.unlink(name)
            except OSError:  # gone already, or a platform that cannot remove a mapped file: the spool's cleanup does
                pass


def read_and_build(path: Path, read: Callable[[], Any] | None = None, *, spool: str | os.PathLike[str]) -> Prepared:
    """Read ``path`` (or call ``read``) and write the rows of every conversation under ``spool``."""
    fp = fingerprint(path)
    with reading_up_to(path, fp.size_bytes):  # a file still being written: the parent reads it again
        if read is None:
            from lcm_lab.io.transcripts import read_transcript

            result = read_transcript(path, reread=True)
        else:
            result = read()
        files: list[tuple[str, str, int]] = []
        starts = [Start(cid=index) for index in range(len(result.conversations))]
        counts = build_rows(result.conversations, starts, _spool_sink(spool, files), kind=result.kind, source_id=0)
        counts.warnings += load_warnings(counts, str(path))
    if not unchanged_since(fp, path):
        raise RuntimeError(f"{path}: changed while it was read")  # the parent reads it again
    issues = tuple(str(issue) for issue in result.issues)
    return Prepared(fp, result.kind, issues, result.skipped_lines, counts, files=tuple(files))


def _spool_sink(spool: str | os.PathLike[str], files: list[tuple[str, str, int]]) -> Sink:
    """A sink writing each table as an Arrow IPC file under ``spool``, listed in ``files``."""
    stem = os.path.join(spool, uuid.uuid4().hex)

    def write(table: str, arrow: pa.Table) -> None:
        name = f"{stem}-{len(files)}-{table}.arrow"
        with pa.OSFile(name, "wb") as sink, pa.ipc.new_file(sink, arrow.schema) as writer:
            writer.write_table(arrow)
        files.append((table, name, os.path.getsize(name)))

    return write


# What forked split workers project: set just before the pool forks, so nothing is pickled.
_SPLIT: tuple[LoadedConversation, Start, str, int, list[int], Path] | None = None
_SHIFTED = {"messages": ("seq",), "message_parts": ("seq",), "entries": ("seq", "position")}


def _build_part(index: int) -> tuple[tuple[tuple[str, str, int], ...], WriteCounts]:
    assert _SPLIT is not None
    item, start, kind, source_id, bounds, spool = _SPLIT
    conversation = replace(item.conversation, entries=item.conversation.entries[bounds[index] : bounds[index + 1]])
    if index == 0:  # the conversation row, its events, DAG and QA items come with the first part
        part, part_start = replace(item, conversation=conversation), start
    else:  # later parts: entries and messages only, numbered from 0 (the parent shifts them)
        part = LoadedConversation(conversation=conversation)
        part_start = Start(cid=start.cid, appended=True)
    files: list[tuple[str, str, int]] = []
    counts = build_rows([part], [part_start], _spool_sink(spool, files), kind=kind, source_id=source_id)
    return tuple(files), counts


def _shifted(table: str, arrow: pa.Table, shifts: dict[str, int]) -> pa.Table:
    for column in _SHIFTED.get(table, ()):
        if shifts[column] and column in arrow.column_names:
            index = arrow.column_names.index(column)
            arrow = arrow.set_column(index, column, pc.add(arrow.column(index).cast(pa.int64()), shifts[column]))
    return arrow


def worker_signals() -> None:
    """Initializer of forked load workers. A worker inherits the CLI's SIGTERM handler, which
    raises ``Terminated`` where the worker was: a pool stopping its workers printed a traceback
    for each. SIGTERM is back to its default here (the worker ends quietly), and SIGINT ignored:
    Ctrl-C is the parent's to handle, which stops the workers (:func:`stop_workers`)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the workers of ``pool`` at once and reap them (an interrupted load does not wait
    for the files they are reading). Pending futures are failed by the pool itself."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()
    pool.shutdown(wait=True)


@contextmanager
def forking() -> Iterator[None]:
    """Around the call that forks load workers. The parent's garbage (cycles the collector has
    not reached yet) is collected here, where it was made: a forked child would otherwise collect
    it, and running a DuckDB connection's finalizer in a process that has none of its threads
    kills the worker (SIGSEGV; the load then fell back to one process). What is left is frozen
    while the children fork, so their collections never touch what they inherit (nor write to,
    and so copy, every page of it)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def build_rows_split(item: LoadedConversation, start: Start, sink: Sink, *, kind: str, source_id: int,
                     workers: int) -> WriteCounts:  # fmt: skip
    """:func:`~lcm_lab.io.rows.build_rows` of one new conversation, its entries projected in parts
    by ``workers`` forked processes while this one hands finished parts to ``sink`` in order.

    Rows come out exactly as one process builds them: a part's message seqs and entry positions
    are numbered from 0 and shifted here by what the parts before it held (the projection of a
    message does not depend on its seq). Falls back to one process where fork is unavailable.
    """
    global _SPLIT
    entries = item.conversation.entries
    if start.appended or workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return build_rows([item], [start], sink, kind=kind, source_id=source_id)
    parts = workers * 3  # small parts: the parent inserts one while the workers project the next
    bounds = [len(entries) * k // parts for k in range(parts + 1)]
    total = WriteCounts()
    with scratch_directory("split") as spool:
        _SPLIT = (item, start, kind, source_id, bounds, spool)
        try:
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=worker_signals)
            with _stopped_on_interrupt(pool):
                with forking():  # the workers are forked on the first submit and keep their copy
                    futures = [pool.submit(_build_part, k) for k in range(parts)]
                _SPLIT = None
                seq = 0
                for k, future in enumerate(futures):
                    files, counts = future.result()
                    shifts = {"seq": seq if k else 0, "position": bounds[k] if k else 0}
                    for table, name, _ in files:
                        with pa.memory_map(name) as source:
                            arrow = pa.ipc.open_file(source).read_all()
                        os.unlink(name)
                        sink(table, _shifted(table, arrow, shifts))
                    seq += counts.messages if k else counts.messages + start.seq
                    _merge(total, counts, first=k == 0)
        finally:
            _SPLIT = None
    return total


@contextmanager
def _stopped_on_interrupt(pool: ProcessPoolExecutor) -> Iterator[None]:
    try:
        yield
    except BaseException:
        stop_workers(pool)
        raise
    pool.shutdown(wait=True)


def _merge(total: WriteCounts, part: WriteCounts, *, first: bool) -> None:
    for name in ("conversations", "messages", "entries", "summaries", "context_items", "qa_items", "events"):
        setattr(total, name, getattr(total, name) + getattr(part, name))
    if first:
        total.appended_conversations += part.appended_conversations
    for reason, count in part.not_stored.items():
        total.not_stored[reason] = total.not_stored.get(reason, 0) + count
    for role, count in part.not_stored_roles.items():
        total.not_stored_roles[role] = total.not_stored_roles.get(role, 0) + count
    total.note_unreadable_times(part.unreadable_times, part.unreadable_time_examples)
    total.lone_surrogates += part.lone_surrogates
    total.warnings.extend(part.warnings)
