"""``lcm-lab ledger [--db FILE] [--run RUN_ID] [--last N] [--json | --csv]``: the recorded model calls.

One line per call (oldest first): when, model, kind/depth, attempt, tokens in/out, cost,
latency, whether it was a cache hit, and the error class of failed calls; then totals.
``--json`` prints one JSON object per call per line, ``--csv`` the table as CSV (neither prints totals).
"""

from __future__ import annotations

import argparse
from typing import Any

from lcm_lab.cli import (
    add_db_argument,
    add_list_arguments,
    nonempty,
    positive_count,
    print_json_lines,
    print_rows,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ledger", help="list recorded model calls with tokens, cost, latency and cache hits",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_argument(parser)
    parser.add_argument("--run", type=nonempty, default=None, metavar="RUN_ID", help="only calls of this run id")
    parser.add_argument("--last", type=positive_count, default=None, metavar="N", help="only the N most recent calls")
    add_list_arguments(parser, "one object per call")
    parser.set_defaults(func=run)


def call_rows(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One display row per call (what the table shows; ``--json`` prints the calls as stored)."""
    return [{
        "time": str(c["created_at"])[:19], "model": c["model"],
        "call": c["purpose"] if c["kind"] is None else f"{c['kind']}/d{c['depth']}{'/aggr' if c['aggressive'] else ''}",
        "try": c["attempt"], "tokens_in": c["input_tokens"], "tokens_out": c["output_tokens"],
        "cost_usd": None if c["cost_usd"] is None else round(c["cost_usd"], 5),
        "ms": None if c["latency_ms"] is None else round(c["latency_ms"]),
        "cache": "hit" if c["cache_hit"] else ("stored" if c["cacheable"] else "-"), "error": c["error_class"] or "",
    } for c in calls]  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from lcm_lab.store import open_store
    from lcm_lab.store.ledger import Ledger

    with open_store(args.db, reads_only=True) as store:
        ledger = Ledger(store, "off")
        calls = ledger.calls(args.run)
        if args.last is not None:
            calls = calls[-args.last :] if args.last > 0 else []
        if args.json:
            print_json_lines(calls)
            return 0
        if not calls:
            print("no model calls recorded" + (f" for run {args.run}" if args.run else ""))
            return 0
        print_rows(args, call_rows(calls))
        if args.table_format == "csv":
            return 0
        t = ledger.totals(args.run)
        print(
            f"{t['calls']} calls ({t['cache_hits']} cache hits, {t['errors']} errors): "
            f"{t['input_tokens']} tokens in, {t['output_tokens']} out, {_cost(t)}, "
            f"{t['latency_ms'] / 1000:.1f} s of model time"
        )
    return 0


def _cost(totals: dict[str, Any]) -> str:
    """The calls' cost: unknown (``-``, as each row shows it) when no call sent has a price, and
    how many have one when some do not (a model without an entry in litellm's price map)."""
    priced, sent = totals["priced"], totals["sent"]
    if not priced:
        return "cost - (no call priced)" if sent else "$0.0000"
    return f"${totals['cost_usd']:.4f}" + (f" ({priced} of {sent} calls priced)" if priced < sent else "")
