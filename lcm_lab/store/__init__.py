"""The lab store (DuckDB): schema, migrations, bulk writes and read helpers.

This package is the only importer of duckdb in lcm_lab.

>>> from lcm_lab.store import LabStore
>>> store = LabStore(":memory:")
>>> store.conversations_df().shape[0]
0
"""

from lcm_lab.store.core import LabStore, StoreBusyError, default_store_path, open_store, sqlite_scanner_path

__all__ = ["LabStore", "StoreBusyError", "default_store_path", "open_store", "sqlite_scanner_path"]
