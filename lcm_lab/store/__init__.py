"""The lab store (DuckDB): schema, migrations, bulk writes and read helpers.

This package is the only importer of duckdb in lcm_lab.

>>> from lcm_lab.store import LabStore
>>> store = LabStore(":memory:")
>>> store.conversations_df().shape[0]
0
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lcm_lab.store.core import (
        LabStore,
        StoreBusyError,
        default_store_path,
        open_store,
        scratch_store,
        sqlite_scanner_path,
    )


def __getattr__(name: str) -> Any:
    # lazy, so importing a light submodule (lcm_lab.store.lcmdb_backends) does not import duckdb
    if name in __all__:
        return getattr(importlib.import_module("lcm_lab.store.core"), name)
    raise AttributeError(f"module 'lcm_lab.store' has no attribute {name!r}")


__all__ = ["LabStore", "StoreBusyError", "default_store_path", "open_store", "scratch_store", "sqlite_scanner_path"]
