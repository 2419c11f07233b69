"""``lcm-lab load PATH... [--db FILE] [--json]``: load lcm.db files, transcripts and directories.

Prints one row of counts per source (conversations, messages, summaries, context items, QA
items, skipped lines, warnings); ``--json`` prints one JSON object per source per line instead.
Sources are never modified; loading the same file again adds nothing (its row shows what the
store holds). Exit status: 0 when every file loaded (possibly with warnings), 1 when some paths
could not be loaded at all or some files of a directory failed (the rest loaded), 2 when none
could (each failure is one line on stderr naming the file).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lcm_lab.cli import add_db_argument, add_list_arguments, path_argument, print_json
from lcm_lab.store.lcmdb_backends import BACKENDS, DEFAULT_BACKEND

if TYPE_CHECKING:
    from lcm_lab.loading.dispatch import SourceResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "load",
        help="load lcm.db files, transcripts or directories into the lab store",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", type=path_argument, metavar="PATH", help="file or directory (.gz accepted)")
    add_db_argument(parser)
    add_list_arguments(parser, "one object per source")
    parser.add_argument(
        "--backend", choices=BACKENDS, default=DEFAULT_BACKEND,
        help=f"how lcm.db files are read (default: {DEFAULT_BACKEND})",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="print every warning, not just the first few")
    parser.set_defaults(func=run)


def failed_arguments(paths: Sequence[str], results: Sequence[SourceResult]) -> list[str]:
    """Path arguments of which nothing could be loaded."""
    bad = []
    for path in paths:
        mine = [r for r in results if r.details.get("argument") == path]
        if not mine or all(r.status in ("failed", "skipped") for r in mine):
            bad.append(path)
    return bad


def run(args: argparse.Namespace) -> int:
    from lcm_lab.loading.dispatch import format_table, load
    from lcm_lab.store import open_store

    store = open_store(args.db)
    try:
        results = load(args.paths, store, backend=args.backend, progress=not args.json and sys.stderr.isatty())
    finally:
        store.close()
    if args.json:
        for result in results:
            print_json(result.as_json())
    else:
        # (the warnings follow on stderr, bounded: not listed under the table a second time)
        print(format_table(results, args.table_format, with_warnings=False), end="" if args.table_format == "csv" else "\n")
        for result in results:
            warnings = [w for w in result.warnings if w != result.error]  # the error is printed below
            shown = warnings if args.verbose else warnings[:3]
            for warning in shown:
                print(f"  warning: {warning}", file=sys.stderr)
            if len(warnings) > len(shown):
                print(f"  ... {len(warnings) - len(shown)} more warnings for {result.source} (--verbose)",
                      file=sys.stderr)
    bad = failed_arguments(args.paths, results)
    for path in bad:
        reasons = [r.error for r in results if r.details.get("argument") == path and r.error]
        reason = reasons[0] if reasons else f"{path}: nothing loadable found"
        print(f"lcm-lab load: {' '.join(reason.split())}", file=sys.stderr)
    if bad:
        return 2 if len(bad) == len(args.paths) else 1
    failed = [r for r in results if r.status == "failed"]
    if failed:  # inside a directory: the rest loaded, but not everything asked for
        print(f"lcm-lab load: {len(failed)} of {len(results)} sources failed to load (the failed rows above say why)",
              file=sys.stderr)
        return 1
    return 0
