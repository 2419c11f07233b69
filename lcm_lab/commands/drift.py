"""``lcm-lab drift --previous RUN --run RUN [--metric M ...] [--json | --csv]``: the drift alarm.

Compares the run-scope headlines of a new run with the previous run's value and 95 % interval
(scores as written by ``score_replay``). One line per headline: ``drop`` (below the previous
interval: alarm), ``rise``, ``within``, ``lost`` (alarm: now missing or withheld) or
``no-interval``; ``--json`` prints one object per headline (JSON Lines). Exit status: 0 no alarm, 1 alarm, 2 a run has no scores.
"""

from __future__ import annotations

import argparse
import sys

from lcm_lab.cli import add_db_argument, add_list_arguments, nonempty, print_rows


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("drift", help="flag headlines that fell outside the previous run's interval", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--previous", type=nonempty, required=True, metavar="RUN_ID", help="the reference run")
    parser.add_argument("--run", type=nonempty, required=True, metavar="RUN_ID", help="the new run")
    parser.add_argument("--metric", type=nonempty, action="append", default=None, help="headline(s) to check (default: every one with an interval)")
    add_list_arguments(parser, "one object per headline")
    add_db_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lcm_lab.metrics.stability import drift_checks
    from lcm_lab.store import open_store
    from lcm_lab.store.scores import read_scores

    store = open_store(args.db, reads_only=True)
    try:
        previous = read_scores(store, [args.previous], scope="run")
        current = read_scores(store, [args.run], scope="run")
    finally:
        store.close()
    missing = [rid for rid, rows in ((args.previous, previous), (args.run, current)) if not rows]
    if missing:
        print(f"lcm-lab drift: no run-scope scores for {', '.join(missing)}", file=sys.stderr)
        return 2
    checks = drift_checks(previous, current, args.metric)
    print_rows(args, [{**c._asdict(), "alarm": c.alarm} for c in checks])
    return 1 if any(c.alarm for c in checks) else 0
