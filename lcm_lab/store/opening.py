"""The one way into a lab store file: decide what the file is before anything can write to it,
build new stores aside, and migrate existing ones so that a crash at any point leaves a store
the next command opens.

What a ``--db`` path may be (:func:`inspect_store_file`):

* missing: a new store, built at a hidden sibling path, migrated, checkpointed and only then
  linked into place (:func:`create_store`), so a kill during the first command leaves no
  half-made store behind;
* a DuckDB database whose tables are the lab's (or that has none): opened;
* a lab store written by a newer lcm_lab (its ``schema_migrations`` names migrations this lab
  does not have): refused for writing with a :class:`NewerStoreError` before DuckDB opens it
  read-write, since this lab cannot know what the newer schema means; a reading command opens it
  read-only instead, with a warning (:class:`~lcm_lab.store.core.LabStore`);
* anything else (an lcm.db or any SQLite file, an empty file, a directory, random bytes, a DuckDB
  database of someone else's): refused with a :class:`NotAStoreError` *before* DuckDB opens it
  for writing. DuckDB would otherwise open a SQLite file through its scanner, read-write, and
  create the lab's tables inside the user's lcm.db.

Every connection is made with extension auto-install and auto-load off (:data:`NO_DOWNLOADS`),
passed to ``duckdb.connect`` itself so that they hold before the file is read: nothing is ever
fetched from the network.

Why migrations get a safe copy: DuckDB 1.5.5 cannot replay a write-ahead log holding
``ALTER TABLE … ADD COLUMN`` on the lab's tables (``INTERNAL Error: Failure while replaying
WAL``), so a store killed after a migration committed and before the next checkpoint could not
be opened again. Migrations on an existing store therefore run after a checkpoint, beside a copy
of the file taken then (``<store>.pre-migration``), and end in a checkpoint. If the log cannot be
replayed on a later open, the copy is put back and the log set aside (:func:`recover_unreplayable_wal`);
the migrations then run again. Outside migrations the log holds only row changes, which replay.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from lcm_lab.errors import EnvironmentFaultError, StoreError, shown_path
from lcm_lab.io import store_files
from lcm_lab.io.atomic import remove_if_writer_died
from lcm_lab.store import migrations
from lcm_lab.store._duckdb import duckdb

MEMORY = ":memory:"
SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKDB_MAGIC = store_files.DUCKDB_MAGIC
NO_DOWNLOADS: dict[str, Any] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
SAFE_COPY_SUFFIX = store_files.SAFE_COPY_SUFFIX
_CREATING = store_files.CREATING

StoreFileKind = Literal["memory", "new", "duckdb"]


class NotAStoreError(StoreError):
    """The file named as the lab store is something else (an lcm.db, an empty file, ...)."""


class DamagedStoreError(StoreError):
    """The file is a DuckDB database that DuckDB cannot read (truncated, corrupt)."""


class ReadOnlyStoreError(StoreError):
    """The store must be written (created, migrated, changed) but the file system refuses."""


class NewerStoreError(StoreError):
    """The store was written by a newer lcm_lab: it records migrations this lab does not have."""

    def __init__(self, message: str, unknown: list[str]) -> None:
        super().__init__(message)
        self.unknown = unknown


class StoreBusyError(StoreError, RuntimeError):
    """Another process kept the lab store's file locked for longer than the lock timeout."""


class StoreLocked(Exception):
    """DuckDB's file lock is held by another process (internal: the caller waits and retries)."""


def inspect_store_file(path: str) -> StoreFileKind:
    """What ``path`` is as a lab store, from the file system and its first bytes only.

    Raises :class:`NotAStoreError` for anything that must not be opened as a store.

    >>> inspect_store_file(":memory:")
    'memory'
    """
    if path == MEMORY:
        return "memory"
    target = Path(path)
    try:
        info = target.stat()
    except FileNotFoundError:
        if target.is_symlink():
            raise NotAStoreError(f"{shown_path(path)}: a symbolic link to a missing file; point --db at a lab store or a new path") from None
        return "new"
    except PermissionError:
        raise EnvironmentFaultError(f"{shown_path(path)}: permission denied (cannot look at the lab store)") from None
    except NotADirectoryError:
        raise NotAStoreError(f"{shown_path(path)}: a parent of this path is a file, not a directory") from None
    if stat.S_ISDIR(info.st_mode):
        raise NotAStoreError(f"{shown_path(path)}: is a directory; --db names the store file itself, e.g. {shown_path(target / 'lab.duckdb')}")
    if not stat.S_ISREG(info.st_mode):
        raise NotAStoreError(f"{shown_path(path)}: not a regular file, so not a lab store")
    if info.st_size == 0:
        raise NotAStoreError(f"{shown_path(path)}: an empty file, not a lab store; delete it to start a new store there")
    try:
        with target.open("rb") as handle:
            head = handle.read(16)
    except PermissionError:
        raise EnvironmentFaultError(f"{shown_path(path)}: permission denied (cannot read the lab store)") from None
    if head.startswith(SQLITE_MAGIC):
        raise NotAStoreError(
            f"{shown_path(path)}: a SQLite database (an lcm.db?), not a lab store; the lab never writes to it. "
            f"Read it with `lcm-lab load {shown_path(path)}` and let --db name the lab's own DuckDB file"
        )
    if head[8:12] != DUCKDB_MAGIC:
        raise NotAStoreError(f"{shown_path(path)}: not a lab store (not a DuckDB database file); pass a lab store or a new path")
    return "duckdb"


def connect(path: str, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to ``path`` with downloads off, DuckDB's errors turned into store errors
    (a held lock raises :class:`StoreLocked` for the caller's wait loop)."""
    try:
        return duckdb.connect(path, read_only=read_only, config=dict(NO_DOWNLOADS))
    except duckdb.Error as exc:
        raise _store_error(path, exc) from None


def _store_error(path: str, exc: duckdb.Error) -> Exception:
    text = str(exc)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    lowered = text.lower()
    if "lock" in lowered and ("conflicting" in lowered or "could not set lock" in lowered):
        return StoreLocked(text)
    if "different configuration" in lowered:
        return StoreError(f"{shown_path(path)}: already open in this process in another mode (read-only vs read-write); close that store first")
    if "replaying wal" in lowered:
        return _UnreplayableWal(first)
    if "read-only file system" in lowered or "readonly" in lowered.replace("-", ""):
        return ReadOnlyStoreError(f"{shown_path(path)}: the file system is read-only; the store cannot be written here")
    if "permission denied" in lowered:
        return EnvironmentFaultError(f"{shown_path(path)}: permission denied (the lab store or its directory)")
    if "no space left" in lowered:
        return EnvironmentFaultError(f"{shown_path(path)}: disk full (no space left on device); free space and retry")
    return DamagedStoreError(
        f"{shown_path(path)}: the lab store is damaged and DuckDB cannot read it ({first}); restore a backup, "
        f"or move the file aside to start a new store"
    )


def fault_while_open(path: str, exc: Exception, *, read_only: bool) -> BaseException | None:
    """The user-facing error for a DuckDB error raised while the store is in use, when the
    machine is at fault (disk full, a write to a read-only store, Ctrl-C); ``None`` for the rest."""
    if isinstance(exc, duckdb.InterruptException) or (type(exc) is RuntimeError and str(exc) == "Query interrupted"):
        return KeyboardInterrupt()  # Ctrl-C reached DuckDB mid-statement; the transaction rolls back
    text = str(exc)
    lowered = text.lower()
    if "no space left" in lowered or "disk is full" in lowered:
        return EnvironmentFaultError(f"{shown_path(path)}: disk full (no space left on device); free space and run the command again")
    if read_only and "read-only mode" in lowered:
        return ReadOnlyStoreError(
            f"{shown_path(path)}: the store is open read-only (its file system is not writable) and this step must write "
            f"to it; run it once where the store is writable"
        )
    return None


class _UnreplayableWal(Exception):
    """DuckDB failed to replay the store's write-ahead log."""


def require_lab_tables(raw: duckdb.DuckDBPyConnection, path: str, *, allow_empty: bool = False) -> None:
    """Refuse a DuckDB database that is not a lab store, an empty one included (the lab never
    leaves an empty database at a store's path: a new store is built aside and linked into place
    whole, so an empty file there is someone else's)."""
    names = {row[0] for row in raw.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND NOT temporary"
    ).fetchall()}
    if "schema_migrations" not in names and not (allow_empty and not names):
        held = f"tables {', '.join(sorted(names)[:3])}…" if names else "no tables"
        raise NotAStoreError(
            f"{shown_path(path)}: a DuckDB database that is not a lab store ({held}); the lab will not write to it. "
            f"Pass a lab store or a new path"
        )


# Every table of a store migrated to the newest schema (tests/test_faults_hostile_cli.py checks
# this list against a store the migrations build).
LAB_TABLES = frozenset({
    "context_items", "conversation_transcript_epochs", "conversations", "entries", "large_files", "llm_calls",
    "message_parts", "message_transcript_anchor_trust", "messages", "pending_compaction_batches",
    "pending_summary_node_children", "pending_summary_node_messages", "pending_summary_nodes", "qa_items", "raw_lines",
    "recall_docs", "recall_edges", "recall_fts_state", "recall_targets", "recorded_events", "replay_calls", "replay_sent",
    "replay_summaries", "replay_summary_sources", "replay_turns", "replays", "run_edits", "schema_migrations", "scores",
    "sources", "strategy_turns", "summaries", "summary_messages", "summary_sources", "sweep_configs", "sweep_runs",
    "sweeps", "turn_advancements",
})  # fmt: skip


def require_complete(raw: duckdb.DuckDBPyConnection, path: str, *, newer: Sequence[str] = ()) -> None:
    """Refuse a migrated store that lacks one of the lab's tables (dropped by hand, or a damaged
    file): every command would fail on it later with DuckDB's catalog error. In a store a newer
    lab wrote (``newer``: its unknown migrations) a missing table is that lab's change, not damage."""
    names = {row[0] for row in raw.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'"
        " AND NOT temporary"
    ).fetchall()}
    if missing := sorted(LAB_TABLES - names):
        tables = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        if newer:
            raise NewerStoreError(
                f"{shown_path(path)}: {_written_by_newer(newer)}, and it has no table {tables} that this lab reads; "
                f"upgrade lcm_lab to use this store", list(newer)
            )
        raise DamagedStoreError(
            f"{shown_path(path)}: the lab store is damaged: table{'s' if len(missing) > 1 else ''} {tables} "
            f"{'are' if len(missing) > 1 else 'is'} missing; restore a backup, or move the file aside and load "
            f"your data again into a new store"
        )


def open_existing(path: str, *, read_only: bool, look_first: bool = False) -> duckdb.DuckDBPyConnection:
    """Connect to an existing store file, recovering once from a log DuckDB cannot replay.

    Before a read-write open the store is looked at read-only when it has a log (a read-write
    open replays the log into the file) or when ``look_first`` (a reading command, which reads a
    newer lab's store read-only: it then never holds it read-write, and a read-only connection
    this process still holds does not clash with one of another mode)."""
    if not read_only and (look_first or Path(path + ".wal").exists()):
        try:
            probe = connect(path, read_only=True)
        except (StoreLocked, _UnreplayableWal, StoreError):
            pass  # held by a writer (maybe this process), or recovered or reported below
        else:
            try:
                require_lab_tables(probe, path)
                refuse_newer(probe, path)  # before the read-write open below replays the log into the file
            finally:
                probe.close()
    recovered = False
    try:
        raw = connect(path, read_only=read_only)
    except _UnreplayableWal as exc:
        if read_only:
            raise DamagedStoreError(
                f"{shown_path(path)}: DuckDB cannot replay the store's log ({exc}); run any command that writes "
                f"(e.g. `lcm-lab load`) where the store is writable to recover it"
            ) from None
        recover_unreplayable_wal(path)
        raw = connect(path, read_only=read_only)
        recovered = True
    try:
        # A store an earlier lab version created in place and lost before its first checkpoint
        # is empty once its log is set aside: it is the lab's, and is migrated again.
        require_lab_tables(raw, path, allow_empty=recovered)
        if not read_only:
            refuse_newer(raw, path)
    except BaseException:
        raw.close()
        raise
    return raw


def recover_unreplayable_wal(path: str) -> None:
    """Put the pre-migration copy back if there is one, set the log aside, and say so on stderr."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    wal = Path(path + ".wal")
    aside = Path(f"{path}{store_files.UNREPLAYABLE}{stamp}")
    copy = Path(path + SAFE_COPY_SUFFIX)
    if wal.exists():
        os.replace(wal, aside)
    if copy.exists():
        os.replace(copy, path)
        what = f"restored the copy taken before the interrupted migration; the log is kept as {shown_path(aside.name)}"
    else:
        what = f"changes after the last checkpoint were set aside in {shown_path(aside.name)}"
    print(f"lcm-lab: recovered the lab store {shown_path(path)} after an interrupted write (DuckDB could not replay "
          f"its log): {what}", file=sys.stderr)


def create_store(path: str, prepare: Any) -> list[str]:
    """Build a new store at a hidden sibling path, run ``prepare(raw)`` (the migrations) on it,
    checkpoint, close, and link it to ``path`` (another process that got there first wins).
    Returns what ``prepare`` returned (the migrations applied)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _os_store_error(path, exc, "create the store's directory") from None
    remove_stale_builds(target)
    building = target.with_name(f".{target.name}{_CREATING}{os.getpid()}")
    for leftover in (building, Path(f"{building}.wal")):
        leftover.unlink(missing_ok=True)
    try:
        raw = connect(str(building))
        try:
            applied = list(prepare(raw))
            raw.execute("CHECKPOINT")
        finally:
            raw.close()
        _fsync(building)
        try:
            os.link(building, target)
        except FileExistsError:
            applied = []  # another process created the store meanwhile: use theirs
    except OSError as exc:
        raise _os_store_error(path, exc, "create the store") from None
    finally:
        for leftover in (building, Path(f"{building}.wal")):
            try:
                leftover.unlink(missing_ok=True)
            except OSError:
                pass
    return applied


def remove_stale_builds(target: Path) -> None:
    """Delete builds of this store left by processes that died (their PID is gone)."""
    for leftover in target.parent.glob(f".{target.name}{_CREATING}*"):
        remove_if_writer_died(leftover, leftover.name.rsplit(_CREATING, 1)[-1].removesuffix(".wal"))


def _fsync(path: Path) -> None:
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


def _os_store_error(path: str, exc: OSError, doing: str) -> StoreError | EnvironmentFaultError:
    import errno

    if exc.errno == errno.EROFS:
        return ReadOnlyStoreError(f"{shown_path(path)}: cannot {doing}: the file system is read-only")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return EnvironmentFaultError(f"{shown_path(path)}: cannot {doing}: permission denied")
    if exc.errno == errno.ENOSPC:
        return EnvironmentFaultError(f"{shown_path(path)}: cannot {doing}: disk full (no space left on device)")
    return EnvironmentFaultError(f"{shown_path(path)}: cannot {doing}: {exc.strerror or exc}")



def _recorded_migrations(raw: duckdb.DuckDBPyConnection) -> set[str]:
    """The migrations the store's ``schema_migrations`` records (none if it has no such table)."""
    has_table = raw.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = 'schema_migrations'"
    ).fetchall()[0][0]
    return {row[0] for row in raw.execute("SELECT name FROM schema_migrations").fetchall()} if has_table else set()


def pending_migrations(raw: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of the migrations this store still needs (reads only: works on a read-only store)."""
    done = _recorded_migrations(raw)
    return [m.name for m in migrations.discover() if m.name not in done]


def unknown_migrations(raw: duckdb.DuckDBPyConnection) -> list[str]:
    """Migrations the store records that this lab does not have, in name order: a newer lcm_lab
    wrote the store (reads only)."""
    known = {m.name for m in migrations.discover()}
    return sorted(_recorded_migrations(raw) - known)


def _written_by_newer(unknown: Sequence[str]) -> str:
    names = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
    return f"the store was written by a newer lcm_lab (its schema has migration{'s' if len(unknown) > 1 else ''} {names}, unknown here)"


def refuse_newer(raw: duckdb.DuckDBPyConnection, path: str) -> None:
    """Refuse to write a store a newer lcm_lab wrote: this lab cannot know what its newer schema
    means, so its own writes (and its migrations, and the clean-up of killed loads) could break it."""
    if unknown := unknown_migrations(raw):
        raise NewerStoreError(
            f"{shown_path(path)}: {_written_by_newer(unknown)}; this lab will not write to it: upgrade lcm_lab "
            f"(reading commands such as `lcm-lab report` still read it)", unknown
        )


def newer_store_fault(path: str, exc: Exception, unknown: Sequence[str]) -> NewerStoreError | None:
    """The user-facing error for a DuckDB error while a newer lab's store is open read-only: a
    step that must write, or a table or column this lab expects that the newer schema changed."""
    if isinstance(exc, (duckdb.CatalogException, duckdb.BinderException)):
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return NewerStoreError(f"{shown_path(path)}: {_written_by_newer(unknown)}, and this lab cannot read it ({first}); "
                               f"upgrade lcm_lab", list(unknown))
    if "read-only mode" in str(exc).lower():
        return NewerStoreError(f"{shown_path(path)}: {_written_by_newer(unknown)}, so it is open read-only, and this step "
                               f"must write to it; upgrade lcm_lab", list(unknown))
    return None


def migrate(raw: duckdb.DuckDBPyConnection, path: str) -> list[str]:
    """Apply pending migrations to an open read-write store. A file store gets a safe copy for
    the duration (see the module docstring) and a checkpoint at the end."""
    if path == MEMORY:
        return migrations.apply_pending(raw)
    copy = Path(path + SAFE_COPY_SUFFIX)
    if not pending_migrations(raw):
        copy.unlink(missing_ok=True)  # left by a crash after the last checkpoint of a finished upgrade
        return []
    try:
        raw.execute("CHECKPOINT")
        shutil.copyfile(path, copy)
        _fsync(copy)
    except OSError as exc:
        copy.unlink(missing_ok=True)
        raise _os_store_error(path, exc, "copy the store before upgrading its schema") from None
    applied = migrations.apply_pending(raw)
    raw.execute("CHECKPOINT")
    copy.unlink(missing_ok=True)
    return applied


def build_new(raw: duckdb.DuckDBPyConnection) -> list[str]:
    """What a new store gets before it is linked into place: the whole schema."""
    return migrations.apply_pending(raw)
