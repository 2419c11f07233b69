"""``lcm-lab report``: write a self-contained HTML report of saved replays (one run or a comparison).

Without ``--run`` the most recent replay in the store is reported; ``lcm-lab replay`` saves
each replay and prints its run id. Scores saved for those runs are tabled and charted.
The page works offline (plotly.js is inlined).

A comparison asks every run questions, and a question turn may have to compact (an emergency
drain). A run the offline or a stub summarizer wrote is rebuilt with that summarizer; for a run a
model wrote, ``--model`` (or ``--summarizer``) names the summarizer of those drains, its calls
recorded in the store's ledger.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lcm_lab.cli import (
    add_db_argument,
    add_json_argument,
    nonempty,
    path_argument,
    positive_count,
    print_json,
)
from lcm_lab.commands._summarizer_args import add_summarizer_arguments, named_summarizer, summarizer_from_args
from lcm_lab.errors import NotFoundError, UnknownNameError, shown_path

DRAINS = ("for the emergency drains of question turns of stored runs a model wrote (a run of the offline\n"
          "or a stub summarizer is rebuilt with its own); the calls are recorded in the store's ledger")  # fmt: skip


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write an HTML report of saved replays",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--run", type=nonempty, dest="runs", action="append", metavar="RUN_ID",
                        help="run id to include (repeat to compare runs; default: the most recent replay)")
    parser.add_argument("-o", "--output", type=path_argument, metavar="FILE.html", default=None,
                        help="where to write the page (default: reports/<run id>.html)")
    parser.add_argument("--title", default=None, help="page title")
    parser.add_argument("--sweep", type=nonempty, default=None, metavar="SWEEP_ID",
                        help="add a sweep section (table, Pareto plot, recommendation); default run: the recommended one")
    parser.add_argument("--max-summaries", type=positive_count, default=300, metavar="N",
                        help="rows of the summary table per run (default 300)")
    add_summarizer_arguments(parser, DRAINS, "the summarizer of those drains (default: none; --model alone means litellm)")
    add_db_argument(parser)
    add_json_argument(parser, "one object: path, runs")
    parser.set_defaults(func=run, summarizer=None)


def run(args: argparse.Namespace) -> int:
    from lcm_lab.report import write_report
    from lcm_lab.store.core import open_store
    from lcm_lab.store.replays import latest_run_id, load_replay
    from lcm_lab.store.scores import scores_df
    from lcm_lab.summarizers.call_checks import collected_call_warnings

    if args.output:  # before the replays are read, not after (the page reads no file but the store)
        from lcm_lab.io.atomic import check_output_path

        check_output_path(args.output)
    args.summarizer = named_summarizer(args)
    with open_store(args.db, reads_only=args.summarizer != "litellm") as store:  # a model's calls go to its ledger
        drains = None if args.summarizer is None else summarizer_from_args(args, store=store)
        runs = list(args.runs or [])
        sweep = None
        if args.sweep:
            from lcm_lab.report.sweep_section import sweep_section

            sweep = sweep_section(args.sweep, store)  # an unknown sweep id raises UnknownNameError
            if not runs and sweep["recommended_run"]:
                runs = [sweep["recommended_run"]]
        if not runs:
            latest = latest_run_id(store)
            if latest is None:
                raise NotFoundError(f"the store {shown_path(store.path)} has no replays yet; run `lcm-lab replay FILE` first")
            runs = [latest]
        try:
            replays = [load_replay(store, run_id) for run_id in runs]
        except UnknownNameError as exc:
            raise UnknownNameError(f"--run: {exc}") from None
        scores = scores_df(store, run_ids=runs)  # saved scores of these runs (may be none)
        output = Path(args.output) if args.output else Path("reports") / f"{'-vs-'.join(runs)}.html"
        with collected_call_warnings() as call_warnings:
            path = write_report(replays, output, title=args.title, max_summaries=args.max_summaries,
                                scores=scores if not scores.empty else None, sweep=sweep, summarizer=drains)
    for warning in call_warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print_json({"path": str(path), "runs": runs})
    else:
        print(path)
    return 0
