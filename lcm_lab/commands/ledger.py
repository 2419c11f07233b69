"""``lcm-lab ledger [--db FILE] [--run RUN_ID] [--last N] [--json]``: the recorded model calls.

One line per call (oldest first): when, model, kind/depth, attempt, tokens in/out, cost,
latency, whether it was a cache hit, and the error class of failed calls; then totals.
``--json`` prints one JSON object per call per line (and no totals).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from lcm_lab.cli import add_db_argument


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ledger", help="list recorded model calls with tokens, cost, latency and cache hits",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_argument(parser)
    parser.add_argument("--run", default=None, metavar="RUN_ID", help="only calls of this run id")
    parser.add_argument("--last", type=int, default=None, metavar="N", help="only the N most recent calls")
    parser.add_argument("--json", action="store_true", help="one JSON object per call per line")
    parser.set_defaults(func=run)


def _cell(value: Any, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)


def format_calls(calls: list[dict[str, Any]]) -> str:
    """The calls as an aligned text table."""
    header = ("time", "model", "call", "try", "in", "out", "cost$", "ms", "cache", "error")
    rows = [header]
    for c in calls:
        what = c["purpose"] if c["kind"] is None else f"{c['kind']}/d{c['depth']}{'/aggr' if c['aggressive'] else ''}"
        rows.append((
            str(c["created_at"])[:19], c["model"], what, str(c["attempt"]), _cell(c["input_tokens"]),
            _cell(c["output_tokens"]), _cell(c["cost_usd"], "{:.5f}"), _cell(c["latency_ms"], "{:.0f}"),
            "hit" if c["cache_hit"] else ("stored" if c["cacheable"] else "-"), c["error_class"] or "",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    numeric = {3, 4, 5, 6, 7}
    return "\n".join(
        "  ".join(cell.rjust(w) if i in numeric else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
        for row in rows
    )


def run(args: argparse.Namespace) -> int:
    from lcm_lab.store import open_store
    from lcm_lab.store.ledger import Ledger

    with open_store(args.db) as store:
        ledger = Ledger(store, "off")
        calls = ledger.calls(args.run)
        if args.last is not None:
            calls = calls[-args.last :] if args.last > 0 else []
        if args.json:
            for call in calls:
                print(json.dumps(call, default=str))
            return 0
        if not calls:
            print("no model calls recorded" + (f" for run {args.run}" if args.run else ""))
            return 0
        print(format_calls(calls))
        t = ledger.totals(args.run)
        print(
            f"{t['calls']} calls ({t['cache_hits']} cache hits, {t['errors']} errors): "
            f"{t['input_tokens']} tokens in, {t['output_tokens']} out, ${t['cost_usd']:.4f}, "
            f"{t['latency_ms'] / 1000:.1f} s of model time"
        )
    return 0
