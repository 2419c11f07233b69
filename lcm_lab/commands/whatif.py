"""``lcm-lab whatif``: edit a saved run in the lab (never the user's lcm.db); each edit is a new derived run.

    lcm-lab whatif dissolve RUN_ID SUMMARY_ID [--json]
    lcm-lab whatif rewrite RUN_ID (--depth N | --summary-id ID ...) [--model M [--api-base URL] [--prompts DIR] [--max-retries N] ...] [--json]
    lcm-lab whatif reassemble RUN_ID [--token-budget N] [--json]
    lcm-lab whatif list [--parent RUN_ID] [--json]

``dissolve`` puts a summary's inputs back into the final context; ``rewrite`` writes summaries
again with another summarizer, model or prompt set (model calls go through the ledger and its
cache; the summarizer options are those of ``replay``, and ``--model`` alone means
``--summarizer litellm``); both print the derived run's id and the original and derived run side
by side (what the model receives after the run, stored tokens, fact retention; ``--no-scores``
skips the scores).
``reassemble`` shows what the model receives from a run's final context at a budget.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from lcm_lab.cli import (
    add_db_argument,
    add_json_argument,
    add_list_arguments,
    non_negative_count,
    nonempty,
    positive_int,
    print_json,
    print_rows,
)
from lcm_lab.commands._summarizer_args import add_summarizer_arguments, named_summarizer, summarizer_from_args
from lcm_lab.summarizers import DEFAULT_SUMMARIZER


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("whatif", help="what-if edits of a saved run (dissolve, rewrite, reassemble) as derived runs",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="whatif_command", required=True)

    dissolve = sub.add_parser("dissolve", help="replace a summary in the final context by its inputs")
    dissolve.add_argument("run_id", type=nonempty, metavar="RUN_ID")
    dissolve.add_argument("summary_id", type=nonempty, metavar="SUMMARY_ID")
    _common(dissolve)
    dissolve.set_defaults(func=_dissolve)

    rewrite = sub.add_parser("rewrite", help="write summaries again with another summarizer, model or prompt set")
    rewrite.add_argument("run_id", type=nonempty, metavar="RUN_ID")
    which = rewrite.add_mutually_exclusive_group(required=True)
    which.add_argument("--depth", type=non_negative_count, metavar="N", help="every summary of this depth (0 = leaves)")
    which.add_argument("--summary-id", type=nonempty, action="append", metavar="ID", help="one summary (repeat for several)")
    add_summarizer_arguments(rewrite)  # the options every model command takes (--max-retries, --cache, ...)
    rewrite.set_defaults(summarizer=None)  # none given: --model chooses litellm, else offline (_rewrite)
    _common(rewrite)
    rewrite.set_defaults(func=_rewrite)

    reassemble = sub.add_parser("reassemble", help="what the model receives from a run's final context")
    reassemble.add_argument("run_id", type=nonempty, metavar="RUN_ID")
    reassemble.add_argument("--token-budget", type=positive_int, default=None, metavar="N", help="default: the run's budget")
    add_db_argument(reassemble)
    add_list_arguments(reassemble, "one object per item the model receives")
    reassemble.set_defaults(func=_reassemble)

    listing = sub.add_parser("list", help="derived runs in the store with their parent and edit")
    listing.add_argument("--parent", type=nonempty, default=None, metavar="RUN_ID", help="only runs derived from this run")
    add_db_argument(listing)
    add_list_arguments(listing, "one object per derived run")
    listing.set_defaults(func=_list)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--label", default=None, help="label of the derived run (default: describes the edit)")
    parser.add_argument("--no-scores", action="store_true", help="skip fact retention in the side-by-side table (faster)")
    add_db_argument(parser)
    add_json_argument(parser, "one object: the derived run, its edit and the side-by-side rows")


def _dissolve(args: argparse.Namespace) -> int:
    from lcm_lab import whatif
    from lcm_lab.store import open_store

    with open_store(args.db) as store:
        result = whatif.dissolve(args.run_id, args.summary_id, store=store, label=args.label)
        return _report(result, args)


def _rewrite(args: argparse.Namespace) -> int:
    from lcm_lab import whatif
    from lcm_lab.store import open_store
    from lcm_lab.summarizers.call_checks import collected_call_warnings

    args.summarizer = named_summarizer(args) or DEFAULT_SUMMARIZER
    with open_store(args.db) as store:
        writer = summarizer_from_args(args, store=store)  # the ledger of its model calls is this store's
        with collected_call_warnings():  # the library's warning, said once by _report as the result's warnings
            result = whatif.rewrite(args.run_id, args.summary_id, depth=args.depth, summarizer=writer, store=store, label=args.label)
        return _report(result, args)


def _report(result: Any, args: argparse.Namespace) -> int:
    from lcm_lab import whatif
    from lcm_lab.summarizers.call_checks import ledger_note

    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)

    table = _rows(whatif.compare(result.parent, result.run, labels=["original", result.edit["op"]], scores=not args.no_scores))
    if args.json:
        print_json({**result.json(), "compare": table})
        return 0
    edit = result.edit
    what = (f"{edit['summary_id']} ({edit['kind']}, depth {edit['depth']}) -> {len(edit['restored'])} inputs restored"
            if edit["op"] == "dissolve" else
            f"{len(edit['summary_ids'])} summaries by {edit.get('model') or edit['summarizer']}, {len(result.calls)} summarizer calls"
            f"{ledger_note(result.calls)}, "
            f"{len(result.changed_summary_ids)} changed")  # fmt: skip
    print(f"{result.run_id}: {edit['op']} of {result.parent_run_id}: {what}")
    keys = [k for k in ("sent_tokens", "sent_items", "sent_summaries", "stored_tokens", "path", "fact_retention", "fact_retention_raw") if k in table[0]]
    width = max(len(k) for k in keys)
    print(f"{'':{width}}  {table[0]['run']:>22}  {table[1]['run']:>22}")
    from lcm_lab.io.tables import cell

    for key in keys:
        print(f"{key:{width}}  {cell(table[0][key]):>22}  {cell(table[1][key]):>22}")
    return 0


def _rows(frame: Any) -> list[dict[str, Any]]:
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()} for row in frame.to_dict("records")]




def _reassemble(args: argparse.Namespace) -> int:
    from lcm_lab import whatif
    from lcm_lab.store import open_store

    with open_store(args.db) as store:
        sent = whatif.reassemble(args.run_id, args.token_budget, store=store)
    rows = [{"position": i, "kind": item.kind, "ref": item.ref, "role": item.role, "tokens": item.tokens} for i, item in enumerate(sent.items)]
    if not args.json and args.table_format == "table":
        print(f"{sent.path}: {sent.estimated_tokens:,} of {sent.token_budget:,} tokens in {len(rows)} items"
              f" ({sum(1 for r in rows if r['kind'] == 'summary')} summaries)")
    print_rows(args, rows)
    return 0


def _list(args: argparse.Namespace) -> int:
    from lcm_lab import whatif
    from lcm_lab.store import open_store

    with open_store(args.db) as store:
        frame = whatif.edits_df(store, args.parent)
    rows = _rows(frame)
    if not rows and not args.json:
        print("no derived runs")
        return 0
    print_rows(args, rows, None if args.json else ["run_id", "parent_run_id", "op", "engine", "label"])
    return 0
