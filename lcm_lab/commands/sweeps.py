"""``lcm-lab sweeps [--json | --csv]``: the sweeps in the lab store (status, configurations, runs, calls)."""

from __future__ import annotations

from typing import Any

from lcm_lab.cli import add_db_argument, add_list_arguments, print_json_lines, print_rows


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("sweeps", help="list the sweeps in the lab store", description=__doc__)
    add_db_argument(parser)
    add_list_arguments(parser, "one object per sweep")
    parser.set_defaults(func=run)


def run(args: Any) -> int:
    from lcm_lab.store import open_store
    from lcm_lab.store.stored import stored_json
    from lcm_lab.store.sweeps import sweeps_df

    frame = sweeps_df(open_store(args.db, reads_only=True))
    rows = [{**row, "stats": stored_json(row["stats"], f"sweep {row['sweep_id']}'s stats")} for row in frame.to_dict("records")]
    if args.json:
        print_json_lines(rows)
        return 0
    if not rows:
        print("no sweeps yet (lcm-lab sweep --example > sweep.yaml; lcm-lab sweep sweep.yaml)")
        return 0
    for row in rows:
        row["calls_made"], row["naive_calls"] = row["stats"].get("calls_made", 0), row["stats"].get("naive_calls", 0)
    print_rows(args, rows, [c for c in rows[0] if c != "stats"])
    return 0
