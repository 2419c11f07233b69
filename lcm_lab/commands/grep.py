"""``lcm-lab grep PATTERN [--run RUN_ID | --conversation ID] [--mode regex|full_text] [--scope …] [--sort …] [--json]``.

The plugin's ``lcm_grep`` over the lab store: regex (default; RE2, case-sensitive unless the
pattern starts with ``(?i)``) or full text (BM25; terms all required, "quoted phrases").
Without ``--run``/``--conversation`` it searches every loaded conversation and saved replay.
``--json`` prints one JSON object per match (JSON Lines) with the plugin's result fields.
"""

from __future__ import annotations

import argparse
from typing import Any

from lcm_lab.cli import nonempty, print_rows
from lcm_lab.commands._recall_args import add_scope_arguments, run_recall_command


def _iso_time(text: str) -> str:
    """argparse type for ``--since``/``--before``: a date or time the search accepts (kept as given)."""
    from lcm_lab.errors import OptionError
    from lcm_lab.store.recall_index import timestamp

    try:
        timestamp(text, "value")
    except OptionError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("value ")) from None
    return text


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "grep", help="search messages, summaries and large files (lcm_grep)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("pattern", type=nonempty)
    add_scope_arguments(parser, listing="match, with the plugin's result fields")
    parser.add_argument("--mode", choices=("regex", "full_text"), default="regex")
    parser.add_argument("--scope", choices=("both", "messages", "summaries", "files"), default="both")
    parser.add_argument("--sort", choices=("recency", "relevance", "hybrid"), default="recency")
    parser.add_argument("--since", type=_iso_time, default=None, metavar="ISO", help="only matches created at or after")
    parser.add_argument("--before", type=_iso_time, default=None, metavar="ISO", help="only matches created before")
    parser.add_argument("--limit", type=int, default=50, help="1-200 (default 50)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    def body(rec: Any, scope: dict[str, Any]) -> int:
        result = rec.grep(args.pattern, args.mode, args.scope, since=args.since, before=args.before,
                          limit=args.limit, sort=args.sort, **scope)  # fmt: skip
        if args.json:
            print_rows(args, [match.json() for match in result.matches])
            return 0
        rows = [{"target": m.target, "type": m.type, "id": m.id,
                 "what": f"d{m.depth} {m.kind}" if m.type == "summary" else m.role, "created_at": m.created_at,
                 "snippet": m.snippet} for m in result.matches]  # fmt: skip
        print_rows(args, rows, ["target", "type", "id", "what", "created_at", "snippet"])
        if args.table_format == "csv":
            return 0
        print(f"{len(result.matches)} shown of {result.total_matches} matches")
        for note in result.notes:
            print(f"note: {note}")
        return 0

    return run_recall_command(args, body)
