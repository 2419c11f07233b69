"""``lcm-lab sweeps [--json]``: the sweeps in the lab store (status, configurations, runs, calls)."""

from __future__ import annotations

import json
from typing import Any

from lcm_lab.cli import add_db_argument


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("sweeps", help="list the sweeps in the lab store", description=__doc__)
    add_db_argument(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per sweep per line")
    parser.set_defaults(func=run)


def run(args: Any) -> int:
    from lcm_lab.store import open_store
    from lcm_lab.store.sweeps import sweeps_df

    frame = sweeps_df(open_store(args.db))
    if args.json:
        for row in frame.to_dict("records"):
            row["stats"] = json.loads(row["stats"])
            print(json.dumps(row, default=str))
        return 0
    if frame.empty:
        print("no sweeps yet (lcm-lab sweep --example > sweep.yaml; lcm-lab sweep sweep.yaml)")
        return 0
    frame["calls made/naive"] = [f"{json.loads(s).get('calls_made', 0)}/{json.loads(s).get('naive_calls', 0)}" for s in frame.stats]
    print(frame.drop(columns=["stats"]).to_string(index=False))
    return 0
