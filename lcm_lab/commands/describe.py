"""``lcm-lab describe ID [--run RUN_ID | --conversation ID] [--json]``: a summary or large file (lcm_describe).

For a summary: content, depth, kind, tokens, times, descendant count, input (``parentIds``) and
consuming (``childIds``) summaries, source messages and file ids; for a file: its payload (when
on disk), name, MIME type, size and exploration summary.
"""

from __future__ import annotations

import argparse
from typing import Any

from lcm_lab.cli import nonempty, print_json
from lcm_lab.commands._recall_args import add_scope_arguments, run_recall_command


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "describe", help="show a summary or large file by id (lcm_describe)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("id", type=nonempty, help="sum_… or file_…")
    add_scope_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    def body(rec: Any, scope: dict[str, Any]) -> int:
        info = rec.describe(args.id, **scope)
        if args.json:
            print_json(info)
            return 0
        for key, value in info.items():
            if key != "content":
                print(f"{key}: {value}")
        print("content:")
        print(info["content"])
        return 0

    return run_recall_command(args, body)
