"""Named, append-only schema migrations for the lab store.

Each module ``mNNN_<name>.py`` in this package defines ``up(con) -> None``. Migrations run in
name order, each exactly once, inside a transaction, and are recorded in
``schema_migrations(name, applied_at)``. Never edit an applied migration: add a new module.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from typing import Any, NamedTuple

_NAME = re.compile(r"^m\d{3}_[a-z0-9_]+$")


class Migration(NamedTuple):
    name: str
    up: Callable[[Any], None]


def discover() -> list[Migration]:
    """All migration modules of this package, in name order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if not _NAME.match(info.name):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        up = getattr(module, "up", None)
        if not callable(up):
            raise TypeError(f"migration {info.name} has no up(con) function")
        found.append(Migration(info.name, up))
    return sorted(found, key=lambda m: m.name)


def applied(con: Any) -> set[str]:
    """Names already recorded in ``schema_migrations``."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
    )
    return {row[0] for row in con.execute("SELECT name FROM schema_migrations").fetchall()}


def apply_pending(con: Any) -> list[str]:
    """Apply every migration not yet recorded; returns the names applied now."""
    done = applied(con)
    newly = []
    for migration in discover():
        if migration.name in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            migration.up(con)
            con.execute("INSERT INTO schema_migrations (name) VALUES (?)", [migration.name])
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
        newly.append(migration.name)
    return newly
