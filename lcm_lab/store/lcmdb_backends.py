"""How an lcm.db is read into the store: DuckDB's SQLite scanner (the default) or the stdlib
``sqlite3`` reader (:mod:`lcm_lab.store.lcmdb_import`). Names only, so the CLI can offer them
without importing DuckDB."""

BACKENDS = ("scanner", "sqlite3")
DEFAULT_BACKEND = "scanner"
