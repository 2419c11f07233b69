"""Load sources into the lab store: ``load(path)`` detects the format and dispatches.

* lossless-claw ``lcm.db`` files (any release) → :func:`load_lcm_db`;
* transcripts (OpenClaw/pi JSONL v1–v3, Claude Code JSONL, LoCoMo JSON, OpenClaw's SQLite
  transcript store) → :func:`load_transcript` (readers in :mod:`lcm_lab.io.transcripts`);
* directories (e.g. an OpenClaw state dir with ``agents/*/sessions/*.jsonl`` and ``lcm.db``)
  → every loadable file below them, with a progress bar;
* any of the files gzip-compressed (``.gz``).

Loading is idempotent (identical bytes are recognised by sha256) and a session file that grew
gets only its new entries appended. Sources are never modified.

>>> from lcm_lab.store import LabStore
>>> results = load("datasets/lcm-v0.15.3.db.gz", LabStore(":memory:"))  # doctest: +SKIP
>>> results[0].messages  # doctest: +SKIP
217
"""

from __future__ import annotations

import gzip
import multiprocessing
import os
import sqlite3
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from lcm_lab.errors import EnvironmentFaultError, StoreError, UserError
from lcm_lab.io import env
from lcm_lab.io.file_kind import unreadable_reason
from lcm_lab.io.fingerprint import FileFingerprint, fingerprint, unchanged_since
from lcm_lab.io.growing import reading_up_to
from lcm_lab.io.lcmdb import LcmDbSchema, count_rows, open_lcmdb
from lcm_lab.io.prepare import Prepared, forking, read_and_build, stop_workers, worker_signals
from lcm_lab.io.scratch import scratch_directory
from lcm_lab.io.sqlite_read import (
    GZIP_MAGIC,
    SnapshotChanged,
    SqliteReadError,
    SqliteSnapshot,
    file_head,
    is_sqlite_file,
    sqlite_snapshot,
    sqlite_table_names,
)
from lcm_lab.store import LabStore
from lcm_lab.store.lcmdb_backends import DEFAULT_BACKEND
from lcm_lab.store.lcmdb_import import BACKENDS, ScannerFailed, import_lcm_db
from lcm_lab.store.sources import (
    UNFINISHED,
    add_source,
    find_loaded,
    finish_source,
    mark_loaded,
    purge_unfinished,
)
from lcm_lab.store.write_loaded import (
    COMMIT_BYTES,
    WriteCounts,
    insert_loaded,
    insert_prepared,
    loaded_before,
)

# Files a directory walk considers (with or without .gz); everything else is ignored silently.
LOADABLE_SUFFIXES = (".jsonl", ".json", ".db", ".sqlite", ".sqlite3")
_SIDE_FILE_SUFFIXES = ("-wal", "-shm", "-journal")
# A file this big makes its last commit straight into the store file (LabStore.transaction's
# ``to_file``): its rows outweigh the partly filled row groups a later checkpoint writes again.
# Smaller files log their rows and share the load's closing checkpoint (a checkpoint per small
# file of a directory rewrote the same row groups again and again: 3.7x the insert time).
TO_FILE_BYTES = 16 << 20


def _commits_to_file(fp: FileFingerprint) -> bool:
    """Whether the load of the file ``fp`` fingerprints makes its last commit into the store file."""
    return fp.size_bytes >= TO_FILE_BYTES


def loader_version() -> str:
    try:
        return f"lcm_lab {metadata.version('lcm_lab')}"
    except metadata.PackageNotFoundError:
        return "lcm_lab (not installed)"


@dataclass(frozen=True)
class SourceResult:
    """What loading one source did.

    Counts are rows added to the store by this load; for an ``unchanged`` source (identical
    content loaded before) they are the rows the store already holds for it.
    """

    source: str
    kind: str | None
    status: str  # loaded | appended | unchanged | failed | skipped
    source_id: int | None = None
    conversations: int = 0
    messages: int = 0
    summaries: int = 0
    context_items: int = 0
    qa_items: int = 0
    skipped_lines: int = 0
    warnings: tuple[str, ...] = ()
    error: str | None = None  # one line that starts with the file it is about
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status not in ("failed",)

    def as_json(self) -> dict[str, Any]:
        """The ``lcm-lab load --json`` record: path and counts under plain names."""
        return {
            "source": self.source,
            "kind": self.kind,
            "lcm_version": self.details.get("lcm_version"),  # lossless-claw release(s) of an lcm.db's schema
            "status": self.status,
            "conversations": self.conversations,
            "messages": self.messages,
            "summaries": self.summaries,
            "context_items": self.context_items,
            "qa_items": self.qa_items,
            "skipped_lines": self.skipped_lines,
            "warnings": len(self.warnings),
            "warning_messages": list(self.warnings),
            "error": self.error,
        }


@contextmanager
def _store_for(store: LabStore | None) -> Iterator[LabStore]:
    """The given store (or the default one, opened for the load) with load-time memory bounds;
    rows an unfinished earlier load left behind are removed first."""
    if store is not None:
        with store.bulk_load():
            purge_unfinished(store)
            yield store
        return
    opened = LabStore()
    try:
        with opened.bulk_load():
            purge_unfinished(opened)
            yield opened
    finally:
        opened.close()


@contextmanager
def _undone_on_failure(lab: LabStore) -> Iterator[None]:
    """A load that commits in steps is undone by hand when it fails after a commit point (the
    rollback covers only the last step); a store DuckDB invalidated is cleaned by the next load."""
    try:
        yield
    except BaseException:
        if not lab.invalidated:
            purge_unfinished(lab)
        raise


def _failed(store: LabStore, path: Path, kind: str | None, message: str, status: str = "failed") -> SourceResult:
    source_id = None
    if status == "failed":
        with store.transaction():
            source_id = add_source(
                store, path=str(path.absolute()), kind=kind or "unknown", status="failed",
                loader_version=loader_version(), warnings=[message],
            )
    return SourceResult(str(path), kind, status, source_id=source_id, warnings=(message,), error=message)


def load_lcm_db(path: str | os.PathLike[str], store: LabStore | None = None, *, backend: str = DEFAULT_BACKEND) -> SourceResult:
    """Load every conversation (archived ones included) of a lossless-claw ``lcm.db``.

    The file is never modified (see :mod:`lcm_lab.io.sqlite_read`); ``.gz`` is accepted.
    ``backend`` is ``"scanner"`` (DuckDB's SQLite scanner, default) or ``"sqlite3"``; when the
    scanner cannot read a file the stdlib reader is used and a warning says so.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    target = Path(path)
    with _store_for(store) as lab:
        reason = unreadable_reason(target)
        if reason:
            return _failed(lab, target, "lcm_db", f"{target}: {reason}; nothing loaded")
        try:
            fp = fingerprint(target)
        except OSError as exc:
            return _failed(lab, target, "lcm_db", f"{target}: cannot read ({exc.strerror or exc})")
        if (earlier := find_loaded(lab, fp.sha256)) is not None:
            return _unchanged(lab, target, "lcm_db", earlier)
        try:
            return _load_lcm_db_once(lab, target, fp, backend, force_copy=False)
        except SnapshotChanged:
            return _load_lcm_db_once(lab, target, fp, backend, force_copy=True)
        except SqliteReadError as exc:
            return _failed(lab, target, "lcm_db", str(exc))


def _stored_counts(lab: LabStore, source_id: int) -> dict[str, int]:
    """What the store holds for one source (shown again when an identical file is loaded twice)."""
    counts = {"conversations": 0, "messages": 0, "summaries": 0, "context_items": 0, "qa_items": 0}
    for column in counts:
        if column == "conversations":
            sql = "SELECT count(*) FROM conversations WHERE source_id = ?"
        else:
            sql = (f"SELECT count(*) FROM {column} WHERE conversation_id IN "
                   "(SELECT conversation_id FROM conversations WHERE source_id = ?)")
        row = lab.fetch_all(sql, [source_id])
        counts[column] = int(row[0][0]) if row else 0
    return counts


def _unchanged(lab: LabStore, path: Path, kind: str, earlier: tuple[int, str]) -> SourceResult:
    note = f"{path}: identical content already loaded (source {earlier[0]}, {earlier[1]}); counts are what the store holds"
    counts = _stored_counts(lab, earlier[0])
    version = lab.fetch_all("SELECT meta->>'lcm_version' FROM sources WHERE source_id = ?", [earlier[0]])
    details = {"note": note, **({"lcm_version": version[0][0]} if version and version[0][0] else {})}
    return SourceResult(str(path), kind, "unchanged", source_id=earlier[0], details=details,
                        conversations=counts["conversations"], messages=counts["messages"], summaries=counts["summaries"],
                        context_items=counts["context_items"], qa_items=counts["qa_items"])


def _load_lcm_db_once(lab: LabStore, target: Path, fp: FileFingerprint, backend: str, *, force_copy: bool) -> SourceResult:
    with sqlite_snapshot(target, force_copy=force_copy) as snap:
        conn, schema = open_lcmdb(snap)
        try:
            expected = count_rows(conn)
            job = _LcmDbJob(lab, target, fp, snap, conn, schema, expected)
            if backend == "scanner":
                try:
                    return job.run(scanner=True)
                except ScannerFailed as exc:
                    return job.run(scanner=False, warnings=[f"{exc}; read it with Python's sqlite3 reader instead"])
            return job.run(scanner=False)
        finally:
            conn.close()


@dataclass
class _LcmDbJob:
    lab: LabStore
    target: Path
    fp: FileFingerprint
    snap: SqliteSnapshot
    conn: sqlite3.Connection
    schema: LcmDbSchema
    expected: dict[str, int]

    def run(self, *, scanner: bool, warnings: list[str] | None = None) -> SourceResult:
        notes = self.schema.describe_gaps()
        meta = {
            "lcm_version": self.schema.version.label,
            "tables": {t: list(c) for t, c in self.schema.tables.items()},
            "schema_notes": notes,
            "snapshot_copied": self.snap.copied,
            "backend": "scanner" if scanner else "sqlite3",
        }
        attached = (
            self.lab.attached_sqlite(self.snap.path, "_lcm_src", read_only=self.snap.read_only)
            if scanner else nullcontext(None)
        )
        with attached as alias, self.lab.transaction(to_file=_commits_to_file(self.fp)):
            source_id = add_source(
                self.lab, path=str(self.target), kind="lcm_db", status="loaded", loader_version=loader_version(),
                fp=self.fp, meta=meta,
            )
            imported = import_lcm_db(self.lab, self.conn, self.schema, source_id, scanner_alias=alias)
            self.snap.verify_unchanged()
            all_warnings = list(warnings or []) + _count_mismatches(self.target, self.expected, imported.counts)
            all_warnings += [f"{self.target}: {w}" for w in imported.warnings]
            self.lab.execute("UPDATE sources SET warnings = ? WHERE source_id = ?", [all_warnings, source_id])
        counts = imported.counts
        return SourceResult(
            str(self.target), "lcm_db", "loaded", source_id=source_id,
            conversations=counts.get("conversations", 0), messages=counts.get("messages", 0),
            summaries=counts.get("summaries", 0), context_items=counts.get("context_items", 0),
            warnings=tuple(all_warnings),
            details={"backend": meta["backend"], "lcm_version": meta["lcm_version"], "rows": counts,
                     "source_rows": self.expected, "schema_notes": notes},
        )


def _count_mismatches(path: Path, expected: dict[str, int], imported: dict[str, int]) -> list[str]:
    notes = []
    for table, count in expected.items():
        lab_table = "summary_sources" if table == "summary_parents" else table
        got = imported.get(lab_table, 0)
        if got != count:
            notes.append(
                f"{path}: {table}: {count - got} of {count} rows not loaded (they reference missing "
                "conversations, messages or summaries)"
            )
    return notes


def load_transcript(
    path: str | os.PathLike[str], store: LabStore | None = None, *, read: Callable[[], Any] | None = None
) -> SourceResult:
    """Load one transcript file (format auto-detected by :mod:`lcm_lab.io.transcripts`).

    ``read`` may supply the reader call (a state-directory item stamped with its session key).
    A file that grew since it was loaded gets only its new entries appended.
    """
    with _store_for(store) as lab:
        result = _load_transcript(lab, Path(path), read)
        assert result is not None  # nothing is queued without rows
        return result


def _load_transcript(
    lab: LabStore,
    target: Path,
    read: Callable[[], Any] | None,
    rows: Prepared | None = None,
    batch: _RowBatch | None = None,
    key: int = 0,
) -> SourceResult | None:
    """Load ``target``; or, given the ``rows`` a load worker built from it, queue them in ``batch``
    under ``key`` and return None. The rows are used when they were built from the bytes
    fingerprinted here and nothing was loaded from this path before (else this process reads
    the file and works out what to append)."""
    reason = unreadable_reason(target)
    if rows is not None and (reason or not unchanged_since(rows.fp, target)):
        rows.discard()  # the file changed since the worker read it
        rows = None
    if reason:
        return _failed(lab, target, "transcript", f"{target}: {reason}; nothing loaded")
    try:
        fp = rows.fp if rows is not None else fingerprint(target)
    except OSError as exc:
        return _failed(lab, target, "transcript", f"{target}: cannot read ({exc.strerror or exc})")
    if batch is not None and batch.holds(fp):
        batch.flush()  # the same bytes or path queued: what follows must see it stored
    earlier = find_loaded(lab, fp.sha256)
    if batch is not None and rows is not None and earlier is None and not loaded_before(lab, fp.path):
        batch.add(key, target, fp, rows)  # the batch removes the spool files once they are stored
        return None
    if rows is not None:
        rows.discard()  # unchanged, or this process works out what to append
    if earlier is not None:
        return _unchanged(lab, target, "transcript", earlier)
    # A file still being written is read up to the size fingerprinted (lcm_lab.io.growing).
    with reading_up_to(target, fp.size_bytes) as bound:
        try:
            result = read() if read is not None else _transcripts_module().read_transcript(target, reread=True)
        except (OSError, ValueError) as exc:
            return _failed(lab, target, "transcript", str(exc) if str(target) in str(exc) else f"{target}: {exc}")
        issues = [str(issue) for issue in result.issues]
        grown = bound.warning(target)
        if grown:
            issues.append(grown)
        return _store_transcript(lab, target, fp, result, issues, batch)


def _store_transcript(lab: LabStore, target: Path, fp: FileFingerprint, result: Any, issues: list[str],
                      batch: _RowBatch | None) -> SourceResult:  # fmt: skip
    with _undone_on_failure(lab), lab.transaction(to_file=_commits_to_file(fp)):
        source_id = add_source(lab, path=str(target), kind=result.kind, status=UNFINISHED,
                               loader_version=loader_version(), fp=fp)
        counts = insert_loaded(lab, source_id, fp.path, result.conversations, kind=result.kind, commit_bytes=COMMIT_BYTES,
                               workers=split_workers() if batch is None else 1)  # fmt: skip
        warnings = issues + counts.warnings
        status = "appended" if counts.appended_conversations and not counts.conversations else "loaded"
        finish_source(lab, source_id, status=status, warnings=warnings, skipped_lines=result.skipped_lines)
    return _transcript_result(target, result.kind, status, source_id, counts, result.skipped_lines, warnings)


def _transcript_result(
    target: Path, kind: str, status: str, source_id: int, counts: WriteCounts, skipped_lines: int, warnings: list[str]
) -> SourceResult:
    return SourceResult(
        str(target), kind, status, source_id=source_id, conversations=counts.conversations,
        messages=counts.messages, summaries=counts.summaries, context_items=counts.context_items,
        qa_items=counts.qa_items, skipped_lines=skipped_lines, warnings=tuple(warnings),
        details={"entries": counts.entries, "events": counts.events, "not_stored": counts.not_stored,
                 "appended_conversations": counts.appended_conversations},
    )  # fmt: skip


@dataclass(frozen=True)
class _Queued:
    key: int
    target: Path
    fp: FileFingerprint
    rows: Prepared


class _RowBatch:
    """Transcripts whose rows load workers built, stored together: one transaction and one INSERT
    per table for up to ``max_bytes`` of rows. A statement and a commit cost milliseconds each
    whatever their size, which dominated loads of many session files. If the shared transaction
    fails, each file is stored on its own, so only a failing file is reported failed."""

    def __init__(self, lab: LabStore, deliver: Callable[[int, SourceResult], None], max_bytes: int = 64 << 20) -> None:
        self.lab = lab
        self.deliver = deliver
        self.max_bytes = max_bytes
        self.queued: list[_Queued] = []
        self.nbytes = 0

    def holds(self, fp: FileFingerprint) -> bool:
        return any(q.fp.sha256 == fp.sha256 or q.fp.path == fp.path for q in self.queued)

    def add(self, key: int, target: Path, fp: FileFingerprint, rows: Prepared) -> None:
        self.queued.append(_Queued(key, target, fp, rows))
        self.nbytes += rows.nbytes
        if self.nbytes >= self.max_bytes:
            self.flush()

    def flush(self) -> None:
        queued, self.queued, self.nbytes = self.queued, [], 0
        if not queued:
            return
        try:
            results = self._store(queued)
        except Exception:
            results = []
            for item in queued:
                try:
                    results += self._store([item])
                except Exception as exc:
                    message = f"{item.target}: could not be stored ({type(exc).__name__}: {exc}); nothing loaded"
                    results.append(_failed(self.lab, item.target, item.rows.kind, message))
        for item, result in zip(queued, results, strict=True):
            item.rows.discard()
            self.deliver(item.key, result)

    def _store(self, queued: Sequence[_Queued]) -> list[SourceResult]:
        with _undone_on_failure(self.lab), self.lab.transaction():
            ids = [
                add_source(self.lab, path=str(q.target), kind=q.rows.kind, status=UNFINISHED, loader_version=loader_version(),
                           fp=q.fp, warnings=[*q.rows.issues, *q.rows.counts.warnings], skipped_lines=q.rows.skipped_lines)
                for q in queued
            ]  # fmt: skip
            insert_prepared(self.lab, [(source_id, q.rows) for source_id, q in zip(ids, queued, strict=True)],
                            commit_bytes=COMMIT_BYTES)  # fmt: skip
            mark_loaded(self.lab, ids)
        return [
            _transcript_result(q.target, q.rows.kind, "loaded", source_id, q.rows.counts, q.rows.skipped_lines,
                               [*q.rows.issues, *q.rows.counts.warnings])
            for source_id, q in zip(ids, queued, strict=True)
        ]  # fmt: skip


def _collect(prepared: Future[Prepared] | None) -> Prepared | None:
    """The worker's rows, or None (no worker, or it failed: this process reads the file and
    reports what is wrong with it)."""
    if prepared is None:
        return None
    try:
        return prepared.result()
    except Exception:
        return None


def _transcripts_module() -> Any:
    import lcm_lab.io.transcripts as transcripts

    return transcripts


def detect_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``load`` would do with ``path``: ``"directory"``, ``"lcm_db"``, ``"openclaw-sqlite"``,
    a transcript kind (``"pi-jsonl"``, ``"claude-code-jsonl"``, ``"locomo-json"``), or ``None``."""
    target = Path(path)
    if target.is_dir():
        return "directory"
    if unreadable_reason(target):
        return None
    if is_sqlite_file(target):
        try:
            tables = sqlite_table_names(target)
        except SqliteReadError:
            return None
        if "transcript_events" in tables:
            return "openclaw-sqlite"
        return "lcm_db" if {"conversations", "messages", "summaries"} <= tables else None
    try:
        kind = _transcripts_module().detect_format(target)
    except OSError:
        return None
    return kind if kind in _transcripts_module().TRANSCRIPT_KINDS else None


def _walk(directory: Path, unreadable: list[OSError] | None = None) -> list[Path]:
    """The loadable files under ``directory``; a directory that cannot be listed is appended to
    ``unreadable`` (before, it was passed over without a word)."""
    found = []
    for root, dirs, files in os.walk(directory, followlinks=False, onerror=None if unreadable is None else unreadable.append):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or name.endswith(_SIDE_FILE_SUFFIXES):
                continue
            bare = name[:-3] if name.endswith(".gz") else name
            if bare.endswith(LOADABLE_SUFFIXES):
                found.append(Path(root) / name)
    return found


def load_file(
    path: Path,
    store: LabStore,
    *,
    backend: str = DEFAULT_BACKEND,
    in_directory: bool = False,
) -> SourceResult:
    """Load one file of any supported kind (``.gz`` included)."""
    reason = unreadable_reason(path)
    if reason:
        return _failed(store, path, None, f"{path}: {reason}; nothing loaded")
    try:
        if file_head(path, 2) == GZIP_MAGIC:
            with gzip.open(path, "rb") as handle:
                handle.read(1)
    except (OSError, EOFError) as exc:
        return _failed(store, path, None, f"{path}: cannot read ({exc})")
    if is_sqlite_file(path):
        if detect_kind(path) == "openclaw-sqlite":
            return load_transcript(path, store)
        return load_lcm_db(path, store, backend=backend)
    if detect_kind(path) is not None:
        return load_transcript(path, store)
    message = (
        f"{path}: not a recognised format (lossless-claw lcm.db, OpenClaw/pi or Claude Code JSONL, "
        "LoCoMo JSON, OpenClaw SQLite transcript store)"
    )
    if in_directory:
        return SourceResult(str(path), None, "skipped", warnings=(message,))
    return _failed(store, path, None, message)


@dataclass(frozen=True)
class _Job:
    path: Path
    argument: str
    in_directory: bool
    read: Callable[[], Any] | None = None
    kind: str | None = None


def _jobs_for(argument: str | os.PathLike[str], store: LabStore) -> tuple[list[_Job], list[SourceResult]]:
    target = Path(argument)
    if not target.is_dir():
        return [_Job(target, str(argument), False)], []
    transcripts = _transcripts_module()
    if transcripts.detect_format(target) != transcripts.OPENCLAW_STATE_DIR:
        unreadable: list[OSError] = []
        jobs = [_Job(p, str(argument), True) for p in _walk(target, unreadable)]
        failed = [
            _failed(store, Path(error.filename or target), None,
                    f"{error.filename or target}: cannot read the directory ({error.strerror or error}); "
                    "the files in it were not loaded")
            for error in unreadable
        ]  # fmt: skip
        return jobs, failed
    scan = transcripts.scan_state_dir(target)
    # A skipped file fails; a warning that lost something else (the session index's keys) comes
    # back as a skipped result for its file, so every issue of the scan reaches the user.
    failed = [_failed(store, Path(issue.path), None, str(issue)) if issue.skipped
              else SourceResult(issue.path, None, "skipped", warnings=(str(issue),))
              for issue in scan.issues]  # fmt: skip
    jobs = []
    for item in scan.items:
        if item.kind == transcripts.LCM_DB:
            jobs.append(_Job(item.path, str(argument), True, kind="lcm_db"))
        else:
            jobs.append(_Job(item.path, str(argument), True, read=partial(transcripts.read_state_dir_item, item, reread=True)))
    return jobs, failed


def load(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    store: LabStore | None = None,
    *,
    backend: str = DEFAULT_BACKEND,
    progress: bool = True,
) -> list[SourceResult]:
    """Load files and directories into the lab store; one :class:`SourceResult` per file.

    Directories are walked recursively (an OpenClaw state directory through its session
    index, so session keys and archive flags are kept). Files that cannot be loaded come back
    with ``status == "failed"`` and a message naming the file; everything else still loads.
    ``details["argument"]`` names the path argument each result came from.
    """
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    with _store_for(store) as lab:
        jobs: list[_Job] = []
        results: list[SourceResult] = []
        for item in items:
            try:
                found, failed = _jobs_for(item, lab)
            except (StoreError, EnvironmentFaultError):
                raise
            except UserError as exc:
                found, failed = [], [_failed_by(lab, Path(item), exc)]
            jobs.extend(found)
            results.extend(_tag(r, str(item)) for r in failed)
        done: dict[int, SourceResult] = {}

        def deliver(index: int, result: SourceResult) -> None:
            done[index] = _tag(result, jobs[index].argument)

        bar = tqdm(jobs, desc="loading", unit="file", disable=not progress or len(jobs) < 2, leave=False)
        batch = _RowBatch(lab, deliver)
        with _Prefetcher(jobs, load_workers(len(jobs))) as prefetch, ExitStack() as settings:
            if prefetch.pool is not None:
                # The CPUs belong to the workers: DuckDB's own threads only contend with them here
                # (measured: the parent's CPU time drops by a quarter, the wall time by ~8%).
                settings.enter_context(lab.setting("threads", 1))
            for index, job in enumerate(bar):
                bar.set_postfix_str(job.path.name[-40:], refresh=False)
                future = prefetch.take(index)
                if future is not None and not future.done():
                    batch.flush()  # store what is queued while the worker finishes this file
                rows = _collect(future)
                result = _per_file(lab, job.path, partial(_load_job, lab, job, rows, batch, index, backend))
                if result is not None:
                    deliver(index, result)
            batch.flush()
        return results + [done[index] for index in range(len(jobs))]


def _load_job(lab: LabStore, job: _Job, rows: Prepared | None, batch: _RowBatch, index: int,
              backend: str) -> SourceResult | None:  # fmt: skip
    if rows is not None:  # a transcript a worker read: its rows may join the batch
        return _load_transcript(lab, job.path, job.read, rows, batch, index)
    batch.flush()  # loads below see every file before them stored
    if job.kind == "lcm_db":
        return load_lcm_db(job.path, lab, backend=backend)
    if job.read is not None:
        return load_transcript(job.path, lab, read=job.read)
    return load_file(job.path, lab, backend=backend, in_directory=job.in_directory)


def _per_file(lab: LabStore, path: Path, load_one: Callable[[], SourceResult | None]) -> SourceResult | None:
    """``load_one()``, or a ``failed`` result for ``path`` when it raises a user error that is
    the file's (the rest of a multi-file load goes on). The store's and the machine's faults
    (:class:`StoreError`, :class:`EnvironmentFaultError`: a busy or read-only store, a full disk)
    would fail every file after it too: they end the load as one line."""
    try:
        return load_one()
    except (StoreError, EnvironmentFaultError):
        raise
    except UserError as exc:
        return _failed_by(lab, path, exc)


def _failed_by(lab: LabStore, path: Path, exc: UserError) -> SourceResult:
    """The failed result of ``path`` for a user error (its line names the file once)."""
    text = str(exc)
    return _failed(lab, path, None, text if str(path) in text else f"{path}: {text}")


WORKERS_ENV = env.LOAD_WORKERS


def load_workers(jobs: int) -> int:
    """Worker processes that read and project transcripts while this one inserts (1: none).

    ``LCM_LAB_LOAD_WORKERS`` overrides the default: one per CPU up to 2, but none for fewer than
    two transcript files (a worker's start-up would cost more than it saves) or on a machine
    whose CPUs are already busy (load average ≥ CPUs): workers shorten the wall time only with
    idle CPUs, and they cost extra CPU (a second read of each file, sending projections back).
    """
    if (configured := env.load_workers()) is not None:
        return configured
    return _idle_workers() if jobs >= 2 else 1


def split_workers() -> int:
    """Worker processes that project one big session in parts (:func:`load_workers`' rule, for a
    single file: ``LCM_LAB_LOAD_WORKERS``, else one per idle CPU up to 2)."""
    return load_workers(2) if env.load_workers() is not None else _idle_workers()


def _idle_workers() -> int:
    cpus = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0] >= cpus
    except (AttributeError, OSError):  # no load average on this platform
        busy = False
    return min(2, cpus) if cpus > 1 and not busy else 1


def _worker_context() -> multiprocessing.context.BaseContext | None:
    """How load workers start, or None for no workers.

    On Linux they are forked: nothing is re-imported and the caller's script is not re-run (spawn
    and forkserver re-import ``__main__``, which re-runs a script without a main guard). A worker
    only parses and projects: it never touches the store, and it leaves through ``os._exit``, so
    the parent's DuckDB connection is neither used nor closed there. Elsewhere workers are
    spawned only when ``__main__`` is not a script (a notebook, the REPL).
    """
    if sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    if getattr(sys.modules.get("__main__"), "__file__", None) is None:
        return multiprocessing.get_context("spawn")
    return None


def _is_transcript_job(job: _Job) -> bool:
    if job.kind == "lcm_db":
        return False
    try:
        if not stat.S_ISREG(os.stat(job.path).st_mode):
            return False  # FIFOs, devices, dangling links: the serial path reports them, never opens them
        if job.read is not None:
            return True
        return not is_sqlite_file(job.path) and detect_kind(job.path) in _transcripts_module().TRANSCRIPT_KINDS
    except (OSError, UserError):  # the serial path reports what is wrong with the file
        return False


class _Prefetcher:
    """Runs :func:`lcm_lab.io.prepare.read_and_build` for upcoming transcript jobs in worker
    processes, a few files ahead of the job being inserted (bounded memory), in job order."""

    def __init__(self, jobs: Sequence[_Job], workers: int) -> None:
        self.jobs = jobs
        self.workers = workers
        self.eligible = [i for i, job in enumerate(jobs) if _is_transcript_job(job)] if workers > 1 else []
        self.pool: ProcessPoolExecutor | None = None
        self.futures: dict[int, Future[Prepared]] = {}
        self.submitted = 0
        self.forked = False
        self.spool: Path | None = None
        self._scratch = ExitStack()

    def __enter__(self) -> _Prefetcher:
        context = _worker_context()
        if len(self.eligible) >= 2 and context is not None:
            self.spool = self._scratch.enter_context(scratch_directory("load"))
            self.pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=worker_signals)
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if self.pool is not None and kind is not None and not issubclass(kind, Exception):
            stop_workers(self.pool)  # Ctrl-C, SIGTERM: the workers stop now, the parent reports it
        elif self.pool is not None:
            for future in self.futures.values():
                future.cancel()
            self.pool.shutdown(wait=True, cancel_futures=True)
        self._scratch.close()

    def take(self, index: int) -> Future[Prepared] | None:
        """The prepared read of job ``index`` (None: read it in this process), topping up the queue."""
        if self.pool is None or self.spool is None:
            return None
        ahead = self.workers + 1
        while self.submitted < len(self.eligible) and len(self.futures) < ahead:
            position = self.eligible[self.submitted]
            self.submitted += 1
            if position < index:
                continue
            job = self.jobs[position]
            try:
                with forking() if not self.forked else nullcontext():  # the first submit forks the workers
                    self.futures[position] = self.pool.submit(read_and_build, job.path, job.read, spool=self.spool)
                self.forked = True
            except Exception:  # a broken pool: the remaining files load in this process
                self.pool.shutdown(wait=False, cancel_futures=True)
                self.pool = None
                return self.futures.pop(index, None)
        return self.futures.pop(index, None)


def _tag(result: SourceResult, argument: str) -> SourceResult:
    return replace(result, details={**result.details, "argument": argument})


TABLE_COLUMNS = ("source", "kind", "status", "conversations", "messages", "summaries", "context_items", "qa_items",
                 "skipped_lines", "warnings")


def format_table(results: Sequence[SourceResult], fmt: str = "table", *, with_warnings: bool = True) -> str:
    """The per-source counts as a table (``fmt``: ``table`` or ``csv``, :mod:`lcm_lab.io.tables`);
    ``kind`` names an lcm.db's plugin release (``lcm_db 1.0``). A ``table`` lists the warnings it
    counts under it, unless ``with_warnings`` is false (a caller that prints them itself)."""
    from lcm_lab.io.tables import format_table as table

    rows = [{**r.as_json(), "kind": " ".join(filter(None, (r.kind or "-", r.as_json().get("lcm_version"))))} for r in results]
    text = table(rows, TABLE_COLUMNS, fmt=fmt)
    if fmt != "table" or not with_warnings:
        return text
    # the warnings counted in the table, in words (a count alone says nothing a user can act on)
    said = [f"  {w}" for r in results for w in r.warnings]
    return "\n".join([text, "warnings:", *said]) if said else text
