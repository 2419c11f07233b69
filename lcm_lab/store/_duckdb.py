"""DuckDB for the store's modules, imported with Ctrl-C and SIGTERM held back: a signal that
landed while DuckDB's C module initialised itself made the import fail and left a half-made
module behind, and the interpreter crashed at exit (SIGSEGV; :mod:`lcm_lab.io.interrupts`)."""

from lcm_lab.io.interrupts import deferred

with deferred():
    import duckdb

__all__ = ["duckdb"]
