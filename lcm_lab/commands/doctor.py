"""``lcm-lab doctor path/to/lcm.db [--json | --csv]``: check an lcm.db for degraded or broken summaries.

Read-only: the file is never modified (WAL databases are read from a private copy). One finding
per row (conversation, summary id, severity, check, evidence); ``--json`` prints one JSON object
per line instead, ``--csv`` the rows as CSV. Exit status: 0 clean, 1 findings at or above ``--fail-on``
(by default any finding; an error finding always), 2 unreadable input.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import TYPE_CHECKING

from lcm_lab.cli import add_list_arguments, print_rows
from lcm_lab.errors import OptionError

if TYPE_CHECKING:
    from lcm_lab.io.lcmdb_rows import LcmDbRows


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check an lcm.db for fallback summaries, leaks and broken DAG links (read-only)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", nargs="?", help="lcm.db file (also .db.gz)")
    add_list_arguments(parser, "one object per finding (--list-checks: per check)")
    parser.add_argument(
        "--fail-on",
        choices=("info", "warning", "error"),
        default="info",
        help="lowest severity that makes the exit status 1 (default: info, i.e. any finding; errors always do)",
    )
    parser.add_argument("--list-checks", action="store_true", help="print every check with its severity and exit")
    parser.set_defaults(func=run)


def _v1_counts(rows: LcmDbRows) -> str:
    """The rows only lossless-claw 1.0 writes (empty for older files), in words."""
    if not rows.pending_nodes and not rows.receipts:
        return ""
    unpublished = sum(1 for n in rows.pending_nodes if n.status != "promoted")
    return (f", {len(rows.pending_nodes)} pending summary nodes ({unpublished} not published), "
            f"{len(rows.receipts)} turn receipts")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from lcm_lab.io.lcmdb import unreadable_time_warnings
    from lcm_lab.io.lcmdb_rows import read_lcmdb_rows
    from lcm_lab.metrics.doctor import CHECKS, SEVERITY_RANK, diagnose

    if args.list_checks:
        print_rows(args, [{"severity": severity, "check": check} for check, severity in CHECKS.items()])
        return 0
    if not args.path:
        raise OptionError("give the path of an lcm.db (or --list-checks)")
    rows = read_lcmdb_rows(args.path)
    for warning in unreadable_time_warnings(list(rows.unreadable_times)):
        print(f"warning: {args.path}: {warning}", file=sys.stderr)
    findings = diagnose(rows)
    if findings or args.json:
        print_rows(args, [f.as_dict() for f in findings])
    if not args.json:
        counts = Counter(f.severity for f in findings)
        summary = ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info")) if findings else "no findings"
        print(f"{args.path}: {len(rows.conversations)} conversations, {len(rows.summaries)} summaries{_v1_counts(rows)}; {summary}",
              file=sys.stderr)  # fmt: skip
    threshold = SEVERITY_RANK[args.fail_on]
    return 1 if any(SEVERITY_RANK[f.severity] >= threshold for f in findings) else 0
