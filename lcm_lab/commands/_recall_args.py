"""Arguments and scoping shared by ``lcm-lab grep``, ``describe`` and ``expand``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lcm_lab.cli import add_db_argument, add_list_arguments, nonempty, print_json
from lcm_lab.errors import NotFoundError, UserError

if TYPE_CHECKING:
    from lcm_lab.recall_tools import Recall
    from lcm_lab.store import LabStore


def add_scope_arguments(parser: argparse.ArgumentParser, listing: str | None = None) -> None:
    """``--db``, ``--run RUN_ID | --conversation ID`` and ``--json`` (for a command that prints a
    list of ``listing``: ``--json | --table | --csv``)."""
    add_db_argument(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--run", type=nonempty, metavar="RUN_ID", default=None, help="search this replay (default: everything in the store)")
    where.add_argument("--conversation", metavar="ID", type=int, default=None, help="search this loaded conversation (lab id)")
    if listing is None:
        parser.add_argument("--json", action="store_true", help="print only JSON: one object")
    else:
        add_list_arguments(parser, f"one object per {listing}")


def open_recall(store: LabStore, args: argparse.Namespace) -> tuple[Recall, dict[str, Any]]:
    """The Recall object and the scoping keywords the command's flags ask for."""
    from lcm_lab.recall_tools import index_store, recall

    if args.run:
        return recall(args.run, store), {}
    if args.conversation is not None:
        return recall(args.conversation, store), {"conversation_id": args.conversation}
    targets = index_store(store)
    if not targets:
        raise NotFoundError("the lab store has no conversations or replays; run `lcm-lab load PATH` or `lcm-lab replay …` first")
    from lcm_lab.recall_tools import Recall

    return Recall(store, targets[0]), {"all_conversations": True}


def run_recall_command(args: argparse.Namespace, body: Callable[[Recall, dict[str, Any]], int]) -> int:
    """Open the store, scope the recall, run ``body``. A user error ends the command as in every
    other one (one line on stderr from :func:`lcm_lab.cli.main`, exit 2); ``--json`` callers also
    get it as ``{"error": ...}`` on stdout."""
    from lcm_lab.store import open_store

    try:
        with open_store(args.db, reads_only=True) as store:
            rec, scope = open_recall(store, args)
            return body(rec, scope)
    except UserError as exc:
        if getattr(args, "json", False):
            print_json({"error": str(exc)})
        raise
