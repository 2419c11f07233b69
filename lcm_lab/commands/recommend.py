"""``lcm-lab recommend SWEEP_ID [--folds K] [--json]``: the settings a sweep recommends, as the
``plugins.entries.lossless-claw.config`` of openclaw.json and as ``LCM_*`` environment lines.

With 4 or more conversations the choice is cross-validated over conversations (chosen on the
training folds, compared with the plugin defaults on the held-out one): it prints the
out-of-sample gain with a 95% interval over conversations and says "does not transfer" when the
interval covers 0 or the choice changes between folds. Then the in-sample trade-off against the
defaults on the conversations the choice was made on (difference and 95% paired interval per
objective; warnings when within noise or from a single conversation).
"""

from __future__ import annotations

import argparse
from typing import Any

from lcm_lab.cli import add_db_argument, add_json_argument, nonempty, print_json
from lcm_lab.errors import OptionError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "recommend", help="recommended plugin settings from a sweep, checked out of sample over conversations, with the trade-off against the defaults",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_argument(parser)
    parser.add_argument("sweep_id", type=nonempty, help="a sweep id (lcm-lab sweeps lists them)")
    parser.add_argument("--engine", default=None, metavar="VERSION",
                        help="the lossless-claw version to recommend for (needed when the sweep varies engine)")
    parser.add_argument("--folds", type=int, default=5, metavar="K",
                        help="folds of conversations for the out-of-sample check (at most one per conversation; default 5)")
    add_json_argument(parser, "one object: openclaw_json, env, tradeoff, warnings, "
                      "out_of_sample {folds, gain, ci_low, ci_high, transfers} (null below 4 conversations)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lcm_lab.store import open_store
    from lcm_lab.sweeps import recommend

    if args.folds < 2:
        raise OptionError("--folds must be at least 2")
    # unknown sweep id, no usable result: UserErrors
    rec = recommend(args.sweep_id, open_store(args.db, reads_only=True), folds=args.folds, engine=args.engine)
    if args.json:
        print_json(rec.as_json())
    else:
        print(rec.snippet())
    return 0
