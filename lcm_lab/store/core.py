"""The lab store: one DuckDB file (or ``:memory:``) with the lab schema.

This package is the only place that imports duckdb. Other store modules (replays, ledger,
scores) take a :class:`LabStore` and use ``store.con`` or the small helpers below.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from lcm_lab.store import migrations
from lcm_lab.store.reads import StoreReads
from lcm_lab.store.sql_tokens import install_token_macro

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

MEMORY = ":memory:"
HOME_ENV = "LCM_LAB_HOME"
STORE_FILE = "lab.duckdb"
MEMORY_LIMIT_ENV = "LCM_LAB_MEMORY_LIMIT"
# DuckDB's buffer pool during bulk loads: loads stream, so a small pool keeps peak memory flat
# as inputs grow (measured: no slowdown at 200 MB of JSONL or 500k lcm.db messages).
LOAD_MEMORY_LIMIT = "256MB"


def default_store_path() -> Path:
    """``$LCM_LAB_HOME/lab.duckdb`` if set, else ``./.lcm_lab/lab.duckdb``."""
    home = os.environ.get(HOME_ENV)
    base = Path(home).expanduser() if home else Path.cwd() / ".lcm_lab"
    return base / STORE_FILE


def resolve_store_path(path: str | os.PathLike[str] | None) -> str:
    """The DuckDB database string for ``path`` (creating the parent directory of files)."""
    if path is not None and str(path) == MEMORY:
        return MEMORY
    target = default_store_path() if path is None else Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    return str(target)


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


class LabStore(StoreReads):
    """A connection to the lab's DuckDB database with the schema migrated to the newest version.

    >>> store = LabStore(":memory:")
    >>> int(store.fetch_all("SELECT count(*) FROM conversations")[0][0])
    0
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = resolve_store_path(path)
        self.con: duckdb.DuckDBPyConnection = duckdb.connect(self.path)
        # Nothing may be fetched from the network at run time.
        self.con.execute("SET autoinstall_known_extensions = false")
        self.con.execute("SET autoload_known_extensions = false")
        if limit := os.environ.get(MEMORY_LIMIT_ENV):
            # Caps DuckDB's buffer pool so big loads spill to disk instead of growing RSS.
            self.con.execute("SET memory_limit = ?", [limit])
        self.applied_migrations = migrations.apply_pending(self.con)
        install_token_macro(self.con)
        self._scanner_loaded = False

    # -- plumbing ----------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
        """Run one statement on the store's connection."""
        return self.con.execute(sql, params) if params is not None else self.con.execute(sql)

    def fetch_all(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return self.execute(sql, params).fetchall()

    def fetch_df(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> pd.DataFrame:
        """Query result as a pandas DataFrame."""
        return self.execute(sql, params).df()

    def fetch_pl(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> pl.DataFrame:
        """Query result as a polars DataFrame."""
        return self.execute(sql, params).pl()

    @contextmanager
    def transaction(self) -> Iterator[LabStore]:
        """Everything inside commits together or not at all."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield self
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    @contextmanager
    def bounded_memory(self, limit: str = LOAD_MEMORY_LIMIT) -> Iterator[LabStore]:
        """Cap DuckDB's memory for the block (bulk loads), unless the user set their own cap."""
        if os.environ.get(MEMORY_LIMIT_ENV):
            yield self
            return
        previous = self.fetch_all("SELECT current_setting('memory_limit')")[0][0]
        self.con.execute("SET memory_limit = ?", [limit])
        try:
            yield self
        finally:
            self.con.execute("SET memory_limit = ?", [previous])

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
        self.con.close()

    def __enter__(self) -> LabStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LabStore({self.path!r})"


def open_store(db: str | os.PathLike[str] | None = None) -> LabStore:
    """The store a CLI command's ``--db`` names (default location when ``None``)."""
    return LabStore(db)
