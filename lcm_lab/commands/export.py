"""``lcm-lab export RUN_ID -o FILE.db [--db STORE] [--json]``: a saved replay as an lcm.db.

The file has the schema (tables, indexes, FTS5 tables, migration state) of the lossless-claw version
the run replayed — 0.15.3 or 1.0 (whose pending-summary and receipt tables are then empty) — and
opens in ``lcm-tui`` and the ``lcm`` CLI. An existing FILE is never overwritten. A run of another
context strategy (``replay --strategy truncate``, ClawVault, ...) keeps no summaries and no stored
context, which is what an lcm.db holds: it is refused in one line.
"""

from __future__ import annotations

import argparse
from typing import Any

from lcm_lab.cli import add_db_argument, add_json_argument, nonempty, path_argument, print_json
from lcm_lab.errors import UserError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export", help="write a saved replay as an lcm.db (the schema of the lossless-claw version it ran)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_id", type=nonempty, metavar="RUN_ID")
    parser.add_argument("-o", "--output", required=True, type=path_argument, metavar="FILE.db", help="new file to write (must not exist)")
    add_db_argument(parser)
    add_json_argument(parser, "one object: path and row counts")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lcm_lab.io.lcmdb_export import export_lcm_db
    from lcm_lab.store import open_store
    from lcm_lab.store.replays import load_replay

    try:
        with open_store(args.db, reads_only=True) as store:
            replay = load_replay(store, args.run_id)
        result = export_lcm_db(replay, args.output)
    except UserError as exc:  # --json callers get the error as JSON on stdout too; the CLI prints its line
        if args.json:
            print_json({"error": str(exc)})
        raise
    counts = {k: v for k, v in result._asdict().items() if k not in ("path", "schema")}
    if args.json:
        print_json({"path": str(result.path), "schema": result.schema, **counts})
    else:
        print(f"wrote {result.path} (lossless-claw {result.schema} schema): "
              + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if k != "fts")
              + ("" if result.fts else " (no FTS5 in this SQLite: full-text tables left out)"))  # fmt: skip
    return 0
