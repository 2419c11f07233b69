"""The lab store: one DuckDB file (or ``:memory:``) with the lab schema.

Concurrency: DuckDB lets one process at a time open a file. A :class:`LabStore` therefore holds
its file only while it is being used (see :meth:`LabStore.hold`) and for ``idle_seconds`` after,
and a process that finds the file locked waits (``LCM_LAB_LOCK_TIMEOUT``) before raising
:class:`StoreBusyError` with the holder's PID and command line. Sweep workers never open the
file: their results are written by the one process that runs the sweep.

This package is the only place that imports duckdb. Other store modules (replays, ledger,
scores) take a :class:`LabStore` and use ``store.con`` or the small helpers below.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lcm_lab.errors import MemoryLimitError, NotFoundError, StoreError, require_extra, shown_path
from lcm_lab.io import env, interrupts
from lcm_lab.io.surrogates import has_lone, replace_lone
from lcm_lab.store import opening
from lcm_lab.store._duckdb import duckdb
from lcm_lab.store.opening import NO_DOWNLOADS, ReadOnlyStoreError, StoreBusyError, StoreLocked
from lcm_lab.store.reads import StoreReads
from lcm_lab.store.sql_tokens import install_token_macro

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

MEMORY = ":memory:"
HOME_ENV = env.HOME
STORE_FILE = "lab.duckdb"
MEMORY_LIMIT_ENV = env.MEMORY_LIMIT
# DuckDB's buffer pool during bulk loads: loads stream, so a small pool keeps peak memory flat
# as inputs grow (measured: no slowdown at 200 MB of JSONL or 500k lcm.db messages).
LOAD_MEMORY_LIMIT = "256MB"
# A load's write-ahead log may grow this far before DuckDB checkpoints (see LabStore.bulk_load):
# far enough that a directory's many small commits or a big file's commit steps do not rewrite
# the same row groups again and again, near enough that the open after a killed load replays it
# under the memory target (measured: a 542 MB log replays at a 797 MB peak; 976 MB at 1,284 MB).
_LOAD_CHECKPOINT_THRESHOLD = "512MB"
IDLE_ENV = env.IDLE_SECONDS
LOCK_TIMEOUT_ENV = env.LOCK_TIMEOUT
# A kernel gives the file back a quarter second after its last operation (a burst of calls
# keeps one connection); another process waits up to 30 s for it before saying who holds it.
DEFAULT_IDLE_SECONDS = env.DEFAULT_IDLE_SECONDS  # 0.25
DEFAULT_LOCK_TIMEOUT = env.DEFAULT_LOCK_TIMEOUT  # 30.0

# Idle-release threads are daemons; one closing a DuckDB connection while the interpreter tears
# DuckDB down aborts the process (seen as exit -6). At exit they are told to stop and joined first.
_EXITING = threading.Event()
_REAPERS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
_STORES: weakref.WeakSet[LabStore] = weakref.WeakSet()  # every store of this process, for release_all


@atexit.register
def _stop_reapers() -> None:
    _EXITING.set()
    for thread in list(_REAPERS):
        if thread.is_alive():  # not one whose start a Ctrl-C or SIGTERM cut short (join would raise)
            thread.join(timeout=5.0)


def release_all() -> None:
    """Close the connection of every store of this process that is not in use now (its last
    checkpoint runs here). The CLI calls it at the end of a command, while its signal handling is
    in force: left to the interpreter's exit, that checkpoint ran after the handlers were gone
    (a signal there killed the process and left the log), or in a DuckDB thread the exit cut short."""
    for store in list(_STORES):
        store.release()


def default_store_path() -> Path:
    """``$LCM_LAB_HOME/lab.duckdb`` if set, else ``./.lcm_lab/lab.duckdb``."""
    home = env.text(HOME_ENV)
    base = Path(home).expanduser() if home else Path.cwd() / ".lcm_lab"
    return base / STORE_FILE


def resolve_store_path(path: str | os.PathLike[str] | None) -> str:
    """The DuckDB database string for ``path`` (the default location when ``None``)."""
    if path is not None and str(path) == MEMORY:
        return MEMORY
    target = str(default_store_path() if path is None else Path(path).expanduser())
    if has_lone(target):  # a byte that is not UTF-8 in the name (Python keeps it as a lone surrogate)
        raise StoreError(f"{shown_path(target)}: DuckDB cannot open a file whose name is not valid UTF-8; give the store another name")
    return target


def extension_path(name: str) -> Path:
    """A DuckDB extension shipped in its PyPI package (``duckdb-extension-<name>``) of the same
    duckdb version: loaded offline with ``LOAD '<path>'``, never INSTALLed from the network."""
    package = resources.files(f"duckdb_extension_{name}")
    candidate = Path(str(package)) / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not candidate.is_file():
        raise FileNotFoundError(
            f"DuckDB extension {name} for duckdb {duckdb.__version__} not found at {candidate}; "
            f"install duckdb-extension-{name.replace('_', '-')}=={duckdb.__version__}"
        )
    return candidate


def sqlite_scanner_path() -> Path:
    """The SQLite scanner extension shipped in the PyPI package of the same duckdb version."""
    return extension_path("sqlite_scanner")


def lock_holder(message: str) -> str:
    """Who holds a DuckDB file lock, from DuckDB's error text (PID and command line if known).

    >>> lock_holder("Could not set lock on file: Conflicting lock is held in /usr/bin/python3 (PID 99999999)")
    'PID 99999999 (/usr/bin/python3)'
    """
    pid = re.search(r"PID (\d+)", message)
    if pid is None:
        return "another process"
    program = re.search(r"held in (.+?) \(PID", message)
    described = program.group(1) if program else "unknown program"
    try:
        cmdline = Path(f"/proc/{pid.group(1)}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmdline = ""
    return f"PID {pid.group(1)} ({cmdline or described})"


def _is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, duckdb.OutOfMemoryException):
        return True
    if isinstance(exc, duckdb.TransactionException):  # a commit that could not get a block
        return "could not allocate" in str(exc) or "Out of Memory" in str(exc)
    # An out-of-memory error during a rollback invalidates the database: it arrives as a fatal error.
    return isinstance(exc, duckdb.FatalException) and ("Out of Memory" in str(exc) or "failed to pin block" in str(exc))


def memory_limit_error(exc: BaseException, limit: str | None) -> MemoryLimitError:
    """The one-line error for DuckDB running out of memory under ``limit`` (None: DuckDB's default).

    >>> str(memory_limit_error(RuntimeError("x"), "256MB"))[:64]
    'the lab store ran out of memory: DuckDB may use 256MB here (LCM_'
    """
    first = next((line for line in str(exc).splitlines() if "Out of Memory" in line or "pin block" in line), "")
    detail = first.split("Error: ", 1)[-1].strip().rstrip(".")[:160]
    cap = env.text(MEMORY_LIMIT_ENV) or limit
    cap_text = f"DuckDB may use {cap} here" if cap else "DuckDB may use its default share of the RAM"
    return MemoryLimitError(
        f"the lab store ran out of memory: {cap_text} ({MEMORY_LIMIT_ENV}); set {MEMORY_LIMIT_ENV} higher "
        f"(e.g. {MEMORY_LIMIT_ENV}=2GB) or free memory, and run the command again" + (f" [{detail}]" if detail else "")
    )


@contextmanager
def _memory_errors(store: LabStore) -> Iterator[None]:
    """Turn DuckDB's out-of-memory errors into :class:`MemoryLimitError` (a one-line user error)."""
    try:
        yield
    except (duckdb.OutOfMemoryException, duckdb.FatalException, duckdb.TransactionException) as exc:
        if not _is_out_of_memory(exc):
            raise
        if isinstance(exc, duckdb.FatalException):
            store._invalidated = True
        raise memory_limit_error(exc, store._memory_limit) from exc


def _storable_params(params: Sequence[Any] | dict[str, Any]) -> Sequence[Any] | dict[str, Any]:
    if isinstance(params, dict):
        if any(isinstance(value, str) and has_lone(value) for value in params.values()):
            return {key: replace_lone(value)[0] if isinstance(value, str) else value for key, value in params.items()}
        return params
    if any(isinstance(value, str) and has_lone(value) for value in params):
        return [replace_lone(value)[0] if isinstance(value, str) else value for value in params]
    return params


class _Connection:
    """``store.con``: forwards to the DuckDB connection, opening it when needed and keeping it
    open for the duration of each call (results of ``execute`` are read through the same proxy)."""

    __slots__ = ("_store",)

    def __init__(self, store: LabStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        with self._store.hold() as raw:
            attribute = getattr(raw, name)
        if not callable(attribute):  # e.g. ``description`` of the last result
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._store.hold() as raw, _memory_errors(self._store):
                result = getattr(raw, name)(*args, **kwargs)
            return self if result is raw else result

        return call


class LabStore(StoreReads):
    """The lab's DuckDB database with the schema migrated to the newest version.

    A file store does not hold its file between operations: the connection opens on demand and
    closes after ``idle_seconds`` without use (a notebook kernel that opened the store does not
    lock out the CLI or a second kernel). Opening waits up to ``lock_timeout`` seconds while
    another process holds the file, then raises :class:`StoreBusyError` naming that process.
    ``:memory:`` stores keep their one connection for their lifetime.

    The file is looked at before DuckDB opens it (:mod:`lcm_lab.store.opening`): an lcm.db or any
    other file that is not a lab store is refused, a new store is built aside and linked into
    place. ``read_only=True`` opens the store for reading only (it must exist and be up to date);
    ``read_only=None`` (what the reading commands pass) opens it read-only when the file system
    does not let the lab write it or a newer lcm_lab wrote it, and read-write otherwise; like
    ``True``, it never creates a store. A store a newer lcm_lab wrote is never opened for writing
    (:class:`~lcm_lab.store.opening.NewerStoreError`); read, it says so once on stderr.

    >>> store = LabStore(":memory:")
    >>> int(store.fetch_all("SELECT count(*) FROM conversations")[0][0])
    0
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        idle_seconds: float | None = None,
        lock_timeout: float | None = None,
        read_only: bool | None = False,
    ) -> None:
        self.path = resolve_store_path(path)
        # The environment is checked before anything is opened or created (a typo is one line).
        self._user_memory_limit = env.memory_limit()
        self.idle_seconds = env.idle_seconds() if idle_seconds is None else idle_seconds
        self.lock_timeout = env.lock_timeout() if lock_timeout is None else lock_timeout
        kind = opening.inspect_store_file(self.path)
        self._created_with: list[str] = []
        if kind == "new":
            if read_only is not False:  # a reading command never creates a store (nor its directories)
                raise _no_store_here(self.path, default=path is None)
            self._created_with = opening.create_store(self.path, opening.build_new)
        elif kind == "duckdb":
            opening.remove_stale_builds(Path(self.path))
        self._reads_only = read_only is None  # a reading command: read-only where writing is refused
        if read_only is None:
            read_only = kind != "memory" and not _writable(self.path)
        self.read_only = bool(read_only) and kind != "memory"
        self.newer_migrations: list[str] = []  # set when a newer lcm_lab wrote the store (then read-only)
        self._lock = threading.RLock()
        self._raw: duckdb.DuckDBPyConnection | None = None
        self._pins = 0
        self._bulk_depth = 0
        self._last_used = time.monotonic()
        self._closed = False
        self._reaper: threading.Thread | None = None
        self._scanner_loaded = False
        self._fts_loaded = False  # extensions are per connection: reset whenever the connection reopens
        self._memory_limit: str | None = None  # the cap a bulk load set, named in out-of-memory errors
        self._invalidated = False  # DuckDB gave up on the database (a fatal error): nothing more may run
        self.con: Any = _Connection(self)
        _STORES.add(self)
        with self.hold():
            pass  # opens the file once: migrates it and says early if it is busy

    # -- connection lifetime ---------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether this store currently holds a DuckDB connection (and so the file lock)."""
        return self._raw is not None

    def _open(self) -> duckdb.DuckDBPyConnection:
        started = time.monotonic()
        delay, told = 0.02, False
        while True:
            try:
                if self.path == MEMORY:
                    raw = duckdb.connect(MEMORY, config=dict(NO_DOWNLOADS))
                else:
                    raw = opening.open_existing(self.path, read_only=self.read_only, look_first=self._reads_only)
                break
            except opening.NewerStoreError:
                if not self._reads_only:
                    raise
                self.read_only = True  # a reading command reads it as it is (nothing was written)
            except StoreLocked as exc:
                holder = lock_holder(str(exc))
                waited = time.monotonic() - started
                if waited >= self.lock_timeout:
                    raise StoreBusyError(
                        f"the lab store {shown_path(self.path)} is in use by {holder}: waited {self.lock_timeout:g} s. "
                        f"Close the store there (store.close(), or finish the running command) and retry, "
                        f"or wait longer with {LOCK_TIMEOUT_ENV}=SECONDS."
                    ) from None
                if not told and waited > 1.0:
                    print(f"lcm-lab: the lab store is busy ({holder}); waiting up to {self.lock_timeout:g} s",
                          file=sys.stderr)
                    told = True
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
        if limit := self._user_memory_limit:
            # Caps DuckDB's buffer pool so big loads spill to disk instead of growing RSS.
            raw.execute("SET memory_limit = ?", [limit])
        if self.applied_migrations_known:
            install_token_macro(raw)
        self._scanner_loaded = False
        self._fts_loaded = False
        return raw

    @property
    def invalidated(self) -> bool:
        """Whether DuckDB gave up on this database after a fatal error (reopen it to go on)."""
        return self._invalidated

    @property
    def applied_migrations_known(self) -> bool:
        return hasattr(self, "applied_migrations")

    def _migrate(self, raw: duckdb.DuckDBPyConnection) -> list[str]:
        if not self.read_only:
            return opening.migrate(raw, self.path)
        self.newer_migrations = opening.unknown_migrations(raw)
        if pending := opening.pending_migrations(raw):
            raw.close()
            self._raw = None
            raise ReadOnlyStoreError(
                f"{shown_path(self.path)}: the store needs a schema upgrade ({pending[0]}…) but is open read-only; "
                f"run one command that writes (e.g. lcm-lab load) where it is writable"
            )
        return []

    def _purge_dead_loads(self) -> None:
        """Remove what loads killed mid-way left (they commit in steps), once per store opened for
        writing: another process's load is over once this one holds the file, and reading
        commands would otherwise show its first part as if it were the whole."""
        from lcm_lab.store.sources import purge_unfinished

        if purged := purge_unfinished(self, other_processes=True):
            print(f"lcm-lab: removed the rows of {purged} load{'s' if purged > 1 else ''} that did not finish "
                  "(interrupted or failed); load those files again", file=sys.stderr)  # fmt: skip

    @contextmanager
    def hold(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Keep the connection open (and the file locked) for the block; yields the raw connection.

        A Ctrl-C or SIGTERM that DuckDB swallowed meanwhile (it arrived while DuckDB ran Python
        code, such as its first import of pandas) is raised again when the block ends
        (:mod:`lcm_lab.io.interrupts`)."""
        signals = interrupts.mark()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self!r} is closed; open a new LabStore")
            if self._raw is None:
                with _memory_errors(self):  # a small LCM_LAB_MEMORY_LIMIT can fail the open itself
                    self._raw = self._open()
                    if not self.applied_migrations_known:
                        migrated = self._created_with + self._migrate(self._raw)
                        try:
                            opening.require_complete(self._raw, self.path, newer=self.newer_migrations)
                        except (opening.DamagedStoreError, opening.NewerStoreError):
                            self._raw.close()
                            self._raw = None
                            raise
                        self.applied_migrations = migrated
                        install_token_macro(self._raw)
                        if unknown := self.newer_migrations:
                            print(f"lcm-lab: warning: {shown_path(self.path)}: the store was written by a newer lcm_lab "
                                  f"({', '.join(unknown[:3])}{' …' if len(unknown) > 3 else ''}); reading it "
                                  "read-only; upgrade lcm_lab to write to it", file=sys.stderr)
                        if not self.read_only:
                            self._purge_dead_loads()
                self._start_reaper()
            self._pins += 1
            raw = self._raw
        try:
            yield raw
        except (duckdb.Error, RuntimeError) as exc:
            fault = opening.newer_store_fault(self.path, exc, self.newer_migrations) if self.newer_migrations else None
            fault = fault or opening.fault_while_open(self.path, exc, read_only=self.read_only)
            if fault is None:
                raise
            raise fault from exc
        finally:
            with self._lock:
                self._pins -= 1
                self._last_used = time.monotonic()
        interrupts.raise_if_swallowed(signals)

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor of its own for the block (for use from another thread), closed afterwards."""
        with self.hold() as raw:
            cur = raw.cursor()
            try:
                yield cur
            finally:
                cur.close()

    def release(self) -> bool:
        """Close the connection now unless something is using it; returns whether it closed.

        The next operation reopens it (``:memory:`` stores never release)."""
        with self._lock:
            if self._raw is None or self._pins or self.path == MEMORY:
                return False
            with interrupts.deferred():  # closing checkpoints the log: never cut short (see interrupts)
                self._raw.close()
                self._raw = None
            return True

    def _start_reaper(self) -> None:
        if self.path == MEMORY or self.idle_seconds <= 0 or (self._reaper is not None and self._reaper.is_alive()):
            return
        ref = weakref.ref(self)
        period = max(0.05, min(0.25, self.idle_seconds / 2))

        def reap() -> None:
            while not _EXITING.wait(period):
                store = ref()
                if store is None or store._closed or store._raw is None:
                    return
                if not store._pins and time.monotonic() - store._last_used >= store.idle_seconds:
                    store.release()
                del store

        self._reaper = threading.Thread(target=reap, name="lcm-lab-store-release", daemon=True)
        _REAPERS.add(self._reaper)
        self._reaper.start()

    # -- plumbing ----------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Any:
        """Run one statement on the store's connection (a lone surrogate in a text parameter,
        which DuckDB cannot take, is passed as U+FFFD: :mod:`lcm_lab.io.surrogates`)."""
        if params is None:
            return self.con.execute(sql)
        return self.con.execute(sql, _storable_params(params))

    def fetch_all(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        with self.hold():
            return self.execute(sql, params).fetchall()

    def fetch_df(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> pd.DataFrame:
        """Query result as a pandas DataFrame."""
        with self.hold():
            return self.execute(sql, params).df()

    def fetch_pl(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> pl.DataFrame:
        """Query result as a polars DataFrame."""
        require_extra("polars", "polars", "polars frames (the *_pl readers)")
        with self.hold():
            return self.execute(sql, params).pl()

    @contextmanager
    def transaction(self, *, to_file: bool = False) -> Iterator[LabStore]:
        """Everything inside commits together or not at all.

        With ``to_file`` the commit writes its rows straight into the database file (DuckDB
        checkpoints instead of logging them first, as it does on its own for a commit past its
        ``checkpoint_threshold``). For the last commit of a big load: rows it logged are written
        a second time by the load's closing checkpoint (measured: 83 MB of log for a 28 MB
        session, and an lcm.db import 10% faster). A kill during that checkpoint loses the
        commit whole, as a kill before it would (``tests/test_big_inputs.py``)."""
        with self.hold() as raw:
            raw.execute("BEGIN TRANSACTION")
            try:
                yield self
            except BaseException:
                if not self._invalidated:
                    with _memory_errors(self), interrupts.deferred():  # never cut short (see interrupts)
                        raw.execute("ROLLBACK")
                        interrupts.rolled_back()
                raise
            commit = self.setting("checkpoint_threshold", "0B") if to_file else nullcontext()
            with _memory_errors(self), commit, interrupts.deferred():  # a signal is raised once it is done
                raw.execute("COMMIT")

    def commit_point(self) -> None:
        """Inside :meth:`transaction`: commit what is written so far and carry on in a new
        transaction.

        DuckDB keeps a transaction's rows in memory until it commits (a row group of 122,880 rows
        is far more than the load's memory cap for wide rows), so a big load commits every few
        tens of MB. Committed rows are the buffer manager's to evict, so no checkpoint is needed
        here: the load checkpoints at its end (:meth:`bulk_load`), and DuckDB on its own whenever
        the log passes the load's threshold (``_LOAD_CHECKPOINT_THRESHOLD``). A checkpoint at every
        step rewrote the tables' partly filled row groups each time (measured on a 200 MB pi
        session: 19.6 s instead of 13.3 s, peak RSS 731 MB instead of 538 MB, and a store file
        of 1,247 MB instead of 663 MB). The caller marks its work unfinished until the last
        commit (see ``store.sources``)."""
        with self.hold(), _memory_errors(self):
            with interrupts.deferred():  # a signal is raised once the commit is done (see interrupts)
                self.con.execute("COMMIT")
                self.con.execute("BEGIN TRANSACTION")  # so that transaction() has one to roll back

    @contextmanager
    def setting(self, name: str, value: Any) -> Iterator[LabStore]:
        """DuckDB setting ``name`` at ``value`` for the block (the connection is held; restored after)."""
        with self.hold():
            previous = self.fetch_all(f"SELECT current_setting('{name}')")[0][0]
            self.con.execute(f"SET {name} = ?", [value])
            try:
                yield self
            finally:
                if not self._invalidated:  # else the error that invalidated it is the one to see
                    self.con.execute(f"SET {name} = ?", [previous])

    @contextmanager
    def bulk_load(self, limit: str = LOAD_MEMORY_LIMIT) -> Iterator[LabStore]:
        """Hold the file for a bulk load: DuckDB's memory capped (unless the user set their own
        cap) and one checkpoint at the end instead of one per commit.

        DuckDB checkpoints whenever its write-ahead log passes ``checkpoint_threshold`` (16 MB by
        default), and each checkpoint compresses and writes the tables' last, partly filled row
        groups again. A load commits once per file, so a directory of sessions rewrote the same
        rows again and again (measured: 3.7x the insert time and a file 1.9x larger). Nested
        blocks join the outermost one.
        """
        with self.hold():
            self._bulk_depth += 1
            try:
                if self._bulk_depth > 1:
                    yield self
                    return
                with ExitStack() as settings:
                    if not self._user_memory_limit:
                        settings.enter_context(self.setting("memory_limit", limit))
                        self._memory_limit = limit
                        settings.callback(setattr, self, "_memory_limit", None)
                    settings.enter_context(self.setting("checkpoint_threshold", _LOAD_CHECKPOINT_THRESHOLD))
                    yield self
                    # Still under the load's memory cap: a checkpoint after the cap is lifted took
                    # what it liked (measured: +300 MB at the end of a 200 MB session).
                    if self.path != MEMORY:
                        try:
                            self.con.execute("CHECKPOINT")
                        except duckdb.TransactionException:
                            pass  # another cursor is writing: DuckDB checkpoints after it, the data is committed
            finally:
                self._bulk_depth -= 1

    def load_sqlite_scanner(self) -> None:
        """Load DuckDB's SQLite scanner from the local package (never INSTALL from the network)."""
        if not self._scanner_loaded:
            self.con.execute(f"LOAD '{sqlite_scanner_path()}'")
            self._scanner_loaded = True

    @contextmanager
    def attached_sqlite(self, path: str | os.PathLike[str], alias: str, *, read_only: bool) -> Iterator[str]:
        """ATTACH a SQLite file through the scanner for the duration of the block.

        Attach outside of a transaction: DuckDB cannot DETACH while one has pending work.
        """
        with self.hold():
            self.load_sqlite_scanner()
            quoted = str(path).replace("'", "''")
            mode = ", READ_ONLY" if read_only else ""
            self.con.execute(f"ATTACH '{quoted}' AS {alias} (TYPE sqlite{mode})")
            try:
                yield alias
            finally:
                self.con.execute(f"DETACH {alias}")

    def next_id(self, table: str, column: str) -> int:
        """One more than the largest ``column`` in ``table`` (single-writer allocation)."""
        return int(self.fetch_all(f"SELECT COALESCE(MAX({column}), 0) + 1 FROM {table}")[0][0])

    def close(self) -> None:
        """Close the connection for good (a closed store cannot be used again)."""
        with self._lock:
            self._closed = True
            if self._raw is not None:
                with interrupts.deferred():  # as in release()
                    self._raw.close()
                    self._raw = None

    def __enter__(self) -> LabStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LabStore({self.path!r})"


def _no_store_here(path: str, *, default: bool) -> NotFoundError:
    if default:
        return NotFoundError(
            f"no lab store yet at {shown_path(path)} (the default: ${HOME_ENV}/{STORE_FILE}, else ./.lcm_lab/{STORE_FILE}); "
            f"run `lcm-lab load PATH` first, or name an existing store with --db"
        )
    return NotFoundError(f"no lab store at {shown_path(path)}; check --db, or run `lcm-lab load PATH --db={shown_path(path)}` to make one")


def _writable(path: str) -> bool:
    """Whether the lab may write the store file and create its log beside it."""
    return os.access(path, os.W_OK) and os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


def open_store(db: str | os.PathLike[str] | None = None, *, reads_only: bool = False) -> LabStore:
    """The store a CLI command's ``--db`` names (default location when ``None``). A command that
    only reads passes ``reads_only=True``: a store on a read-only mount still serves it, and a
    path with no store is a :class:`NotFoundError` (nothing is created there)."""
    return LabStore(db, read_only=None if reads_only else False)


def scratch_store(db: str | os.PathLike[str] | None = None) -> LabStore:
    """The store of a command that saves nothing (``replay --no-save``, ``compare-versions``,
    ``cost``) for what it records on the way (the ledger of model calls, an lcm.db input's rows):
    the store ``db`` names, else the one ``$LCM_LAB_HOME`` names, else an in-memory store, so
    that such a command creates no ``./.lcm_lab/lab.duckdb`` nobody asked for."""
    if db is not None or env.text(HOME_ENV):
        return open_store(db)
    return LabStore(MEMORY)
