"""``lcm-lab recommend SWEEP_ID [--json]``: the settings a sweep recommends, as the
``plugins.entries.lossless-claw.config`` of openclaw.json and as ``LCM_*`` environment lines,
with the trade-off against the plugin defaults on the same conversations (difference and 95%
paired interval per objective; warnings when within noise or from a single conversation).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from lcm_lab.cli import add_db_argument, add_json_argument


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "recommend", help="recommended plugin settings from a sweep, with the trade-off against the defaults",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_argument(parser)
    parser.add_argument("sweep_id", help="a sweep id (lcm-lab sweeps lists them)")
    add_json_argument(parser, "one object: openclaw_json, env, tradeoff, warnings")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lcm_lab.store import open_store
    from lcm_lab.sweeps import recommend

    rec = recommend(args.sweep_id, open_store(args.db, reads_only=True))  # unknown id, no result: UserErrors
    print(json.dumps(rec.as_json()) if args.json else rec.snippet())
    return 0
