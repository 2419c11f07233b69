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
import os
import sqlite3
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from lcm_lab.io.lcmdb import LcmDbSchema, NotAnLcmDb, count_rows, open_lcmdb
from lcm_lab.io.sqlite_read import (
    GZIP_MAGIC,
    SnapshotChanged,
    SqliteReadError,
    SqliteSnapshot,
    file_head,
    is_sqlite_file,
    sqlite_snapshot,
)
from lcm_lab.store import LabStore
from lcm_lab.store.lcmdb_import import BACKENDS, ScannerFailed, import_lcm_db
from lcm_lab.store.sources import FileFingerprint, add_source, find_loaded, fingerprint
from lcm_lab.store.write_loaded import insert_loaded

DEFAULT_BACKEND = "scanner"
# Files a directory walk considers (with or without .gz); everything else is ignored silently.
LOADABLE_SUFFIXES = (".jsonl", ".json", ".db", ".sqlite", ".sqlite3")
_SIDE_FILE_SUFFIXES = ("-wal", "-shm", "-journal")


def loader_version() -> str:
    try:
        return f"lcm_lab {metadata.version('lcm_lab')}"
    except metadata.PackageNotFoundError:
        return "lcm_lab (not installed)"


@dataclass(frozen=True)
class SourceResult:
    """What loading one source did (counts are rows added to the store by this load)."""

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
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status not in ("failed",)

    def as_json(self) -> dict[str, Any]:
        """The ``lcm-lab load --json`` record: path and counts under plain names."""
        return {
            "source": self.source,
            "kind": self.kind,
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
    if store is not None:
        yield store
        return
    opened = LabStore()
    try:
        yield opened
    finally:
        opened.close()


def _failed(store: LabStore, path: Path, kind: str | None, message: str, status: str = "failed") -> SourceResult:
    source_id = None
    if status == "failed":
        with store.transaction():
            source_id = add_source(
                store, path=str(path.absolute()), kind=kind or "unknown", status="failed",
                loader_version=loader_version(), warnings=[message],
            )
    return SourceResult(str(path), kind, status, source_id=source_id, warnings=(message,), error=message)


def _unreadable_reason(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file, without ever opening it (a FIFO would block)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "broken symbolic link" if path.is_symlink() else "no such file"
    except OSError as exc:
        return f"cannot stat ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return None
    if not stat.S_ISREG(st.st_mode):
        kind = "named pipe (FIFO)" if stat.S_ISFIFO(st.st_mode) else "special file"
        return f"{kind}, not a regular file"
    if st.st_size == 0:
        return "empty file"
    return None


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
        reason = _unreadable_reason(target)
        if reason:
            return _failed(lab, target, "lcm_db", f"{target}: {reason}; nothing loaded")
        try:
            fp = fingerprint(target)
        except OSError as exc:
            return _failed(lab, target, "lcm_db", f"{target}: cannot read ({exc.strerror or exc})")
        if (earlier := find_loaded(lab, fp.sha256)) is not None:
            return _unchanged(target, "lcm_db", earlier)
        try:
            return _load_lcm_db_once(lab, target, fp, backend, force_copy=False)
        except SnapshotChanged:
            return _load_lcm_db_once(lab, target, fp, backend, force_copy=True)
        except SqliteReadError as exc:
            return _failed(lab, target, "lcm_db", str(exc))


def _unchanged(path: Path, kind: str, earlier: tuple[int, str]) -> SourceResult:
    note = f"{path}: identical content already loaded (source {earlier[0]}, {earlier[1]}); nothing added"
    return SourceResult(str(path), kind, "unchanged", source_id=earlier[0], details={"note": note})


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
                    return job.run(scanner=False, warnings=[f"{exc}; read with the stdlib sqlite3 reader instead"])
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
            "tables": {t: list(c) for t, c in self.schema.tables.items()},
            "schema_notes": notes,
            "snapshot_copied": self.snap.copied,
            "backend": "scanner" if scanner else "sqlite3",
        }
        attached = (
            self.lab.attached_sqlite(self.snap.path, "_lcm_src", read_only=self.snap.read_only)
            if scanner else nullcontext(None)
        )
        with attached as alias, self.lab.transaction():
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
            details={"backend": meta["backend"], "rows": counts, "source_rows": self.expected, "schema_notes": notes},
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


def load_transcript(path: str | os.PathLike[str], store: LabStore | None = None) -> SourceResult:
    """Load one transcript file (format auto-detected by :mod:`lcm_lab.io.transcripts`)."""
    target = Path(path)
    with _store_for(store) as lab:
        reason = _unreadable_reason(target)
        if reason:
            return _failed(lab, target, "transcript", f"{target}: {reason}; nothing loaded")
        try:
            transcripts = _transcripts_module()
        except ModuleNotFoundError as exc:
            return _failed(lab, target, "transcript", f"{target}: transcript readers unavailable ({exc})")
        try:
            fp = fingerprint(target)
        except OSError as exc:
            return _failed(lab, target, "transcript", f"{target}: cannot read ({exc.strerror or exc})")
        if (earlier := find_loaded(lab, fp.sha256)) is not None:
            return _unchanged(target, "transcript", earlier)
        try:
            read = transcripts.read_transcript(target)
        except (OSError, ValueError) as exc:
            return _failed(lab, target, "transcript", f"{target}: {exc}")
        with lab.transaction():
            source_id = add_source(lab, path=str(target), kind=read.kind, status="loaded",
                                   loader_version=loader_version(), fp=fp)
            counts = insert_loaded(lab, source_id, fp.path, read.conversations, kind=read.kind)
            issues = [str(issue) for issue in read.issues]
            warnings = issues + counts.warnings
            status = "appended" if counts.appended_conversations and not counts.conversations else "loaded"
            lab.execute(
                "UPDATE sources SET status = ?, warnings = ?, skipped_lines = ? WHERE source_id = ?",
                [status, warnings, read.skipped_lines, source_id],
            )
        return SourceResult(
            str(target), read.kind, status, source_id=source_id, conversations=counts.conversations,
            messages=counts.messages, summaries=counts.summaries, context_items=counts.context_items,
            qa_items=counts.qa_items, skipped_lines=read.skipped_lines, warnings=tuple(warnings),
            details={"entries": counts.entries, "events": counts.events,
                     "appended_conversations": counts.appended_conversations},
        )


def _transcripts_module() -> Any:
    import importlib

    return importlib.import_module("lcm_lab.io.transcripts")


def detect_kind(path: str | os.PathLike[str]) -> str | None:
    """``"directory"``, ``"lcm_db"``, ``"sqlite"`` (other SQLite, e.g. an OpenClaw transcript
    store: handed to the transcript readers), ``"transcript"``, or ``None`` if unrecognised."""
    target = Path(path)
    if target.is_dir():
        return "directory"
    if is_sqlite_file(target):
        try:
            with sqlite_snapshot(target) as snap:
                conn, _schema = open_lcmdb(snap)
                conn.close()
            return "lcm_db"
        except NotAnLcmDb:
            return "sqlite"
        except SqliteReadError:
            return "sqlite"
    try:
        transcripts = _transcripts_module()
    except ModuleNotFoundError:
        return None
    return "transcript" if transcripts.detect_format(target) else None


def _walk(directory: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(directory, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or name.endswith(_SIDE_FILE_SUFFIXES):
                continue
            bare = name[:-3] if name.endswith(".gz") else name
            if bare.endswith(LOADABLE_SUFFIXES):
                found.append(Path(root) / name)
    return found


def load_file(path: Path, store: LabStore, *, backend: str = DEFAULT_BACKEND, in_directory: bool = False) -> SourceResult:
    """Load one file of any supported kind."""
    reason = _unreadable_reason(path)
    if reason:
        return _failed(store, path, None, f"{path}: {reason}; nothing loaded")
    try:
        head = file_head(path, 2)
        if head == GZIP_MAGIC and not is_sqlite_file(path):
            with gzip.open(path, "rb") as handle:
                handle.read(1)
    except (OSError, EOFError) as exc:
        return _failed(store, path, None, f"{path}: cannot read ({exc})")
    if is_sqlite_file(path):
        result = load_lcm_db(path, store, backend=backend)
        if result.status == "failed" and result.error and "not a lossless-claw lcm.db" in result.error:
            transcript = _try_sqlite_transcript(path, store)
            if transcript is not None:
                _drop_failed(store, result)
                return transcript
        return result
    if detect_kind(path) == "transcript":
        return load_transcript(path, store)
    message = f"{path}: not a recognised format (lcm.db, OpenClaw/pi or Claude Code JSONL, LoCoMo JSON)"
    if in_directory:
        return SourceResult(str(path), None, "skipped", warnings=(message,))
    return _failed(store, path, None, message)


def _try_sqlite_transcript(path: Path, store: LabStore) -> SourceResult | None:
    try:
        transcripts = _transcripts_module()
    except ModuleNotFoundError:
        return None
    if not transcripts.detect_format(path):
        return None
    return load_transcript(path, store)


def _drop_failed(store: LabStore, result: SourceResult) -> None:
    if result.source_id is not None:
        store.execute("DELETE FROM sources WHERE source_id = ? AND status = 'failed'", [result.source_id])


def load(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    store: LabStore | None = None,
    *,
    backend: str = DEFAULT_BACKEND,
    progress: bool = True,
) -> list[SourceResult]:
    """Load files and directories into the lab store; one :class:`SourceResult` per file.

    Files that cannot be loaded at all come back with ``status == "failed"`` and a message
    naming the file; everything loadable is still loaded.
    """
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    with _store_for(store) as lab:
        work: list[tuple[Path, bool]] = []
        results: list[SourceResult] = []
        for item in items:
            target = Path(item)
            if target.is_dir():
                work.extend((p, True) for p in _walk(target))
            else:
                work.append((target, False))
        bar = tqdm(work, desc="loading", unit="file", disable=not progress or len(work) < 2, leave=False)
        for target, in_directory in bar:
            bar.set_postfix_str(target.name[-40:], refresh=False)
            results.append(load_file(target, lab, backend=backend, in_directory=in_directory))
        return results
