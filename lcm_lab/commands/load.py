"""``lcm-lab load PATH... [--db FILE] [--json]``: load lcm.db files, transcripts and directories.

Prints one row of counts per source (conversations, messages, summaries, context items, QA
items, skipped lines, warnings); ``--json`` prints one JSON object per source per line instead.
Sources are never modified; loading the same file again adds nothing. Exit status: 0 when every
path loaded (possibly with warnings), 1 when some path could not be loaded at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from lcm_lab.cli import add_db_argument
from lcm_lab.load import BACKENDS, DEFAULT_BACKEND, SourceResult, load
from lcm_lab.store import open_store

_COLUMNS = ("conversations", "messages", "summaries", "context_items", "qa_items", "skipped_lines", "warnings")
_HEADERS = ("conv", "msgs", "summ", "ctx", "qa", "skipped", "warn")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "load",
        help="load lcm.db files, transcripts or directories into the lab store",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="file or directory (.gz accepted)")
    add_db_argument(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per source per line")
    parser.add_argument(
        "--backend", choices=BACKENDS, default=DEFAULT_BACKEND,
        help=f"how lcm.db files are read (default: {DEFAULT_BACKEND})",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="print every warning, not just the first few")
    parser.set_defaults(func=run)


def format_table(results: Sequence[SourceResult]) -> str:
    """The per-source counts as an aligned text table."""
    rows = [("source", "kind", "status", *_HEADERS)]
    for result in results:
        record = result.as_json()
        rows.append((result.source, result.kind or "-", result.status, *(str(record[c]) for c in _COLUMNS)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].ljust(widths[2])]
        cells += [cell.rjust(width) for cell, width in zip(row[3:], widths[3:], strict=True)]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def failed_arguments(paths: Sequence[str], results: Sequence[SourceResult]) -> list[str]:
    """Path arguments of which nothing could be loaded."""
    bad = []
    for path in paths:
        mine = [r for r in results if r.details.get("argument") == path]
        if not mine or all(r.status in ("failed", "skipped") for r in mine):
            bad.append(path)
    return bad


def run(args: argparse.Namespace) -> int:
    store = open_store(args.db)
    try:
        results = load(args.paths, store, backend=args.backend, progress=not args.json and sys.stderr.isatty())
    finally:
        store.close()
    if args.json:
        for result in results:
            print(json.dumps(result.as_json(), ensure_ascii=False))
    else:
        print(format_table(results))
        for result in results:
            shown = result.warnings if args.verbose else result.warnings[:3]
            for warning in shown:
                print(f"  warning: {warning}", file=sys.stderr)
            if len(result.warnings) > len(shown):
                print(f"  ... {len(result.warnings) - len(shown)} more warnings for {result.source} (--verbose)",
                      file=sys.stderr)
    bad = failed_arguments(args.paths, results)
    for path in bad:
        reasons = [r.error for r in results if r.details.get("argument") == path and r.error]
        reason = reasons[0] if reasons else f"{path}: nothing loadable found"
        print(f"lcm-lab load: {reason}", file=sys.stderr)
    if bad:
        print(
            "lcm-lab load: check the path(s) above; supported: lossless-claw lcm.db, OpenClaw/pi or Claude Code "
            "JSONL, LoCoMo JSON, OpenClaw SQLite transcript store, or a directory holding them",
            file=sys.stderr,
        )
        return 1
    return 0
