"""``lcm-lab demo``: the main job on the bundled data (load, replay, score, compare, report).

The data ships with the package (:func:`lcm_lab.bundled.datasets_path`: ``datasets/`` of a
checkout, or its copy inside an installed wheel); ``--data DIR`` runs it on another copy of that
directory. ``--json`` prints one object: the report path, the loaded sources and one row per run
(the same columns as the printed comparison).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lcm_lab.cli import add_db_argument, add_json_argument, path_argument, print_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="run the main job on the bundled data", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", "--datasets", dest="datasets", default=None, type=path_argument, metavar="DIR",
                        help="a copy of the bundled datasets directory (default: the one installed with lcm_lab)")
    parser.add_argument("-o", "--output", default="reports/demo-report.html", type=path_argument, metavar="FILE", help="report path")
    add_db_argument(parser)
    add_json_argument(parser, "one object: report, sources, runs")
    parser.set_defaults(func=run)


def datasets_directory(option: str | None) -> Path:
    """The data the demo runs on: ``--data`` or the bundled datasets; a clear error otherwise."""
    from lcm_lab.bundled import datasets_path
    from lcm_lab.bundled.demo import CONVERSATIONS
    from lcm_lab.errors import OptionError

    directory = Path(option) if option else datasets_path()
    missing = [relative for _name, relative, _index in CONVERSATIONS if not (directory / relative).is_file()]
    if not missing:
        return directory
    if option is None:
        raise OptionError(f"the bundled datasets are missing from this installation of lcm_lab ({directory}: no "
                          f"{', '.join(missing)}); reinstall it, or pass --data with a copy of lcm_lab's datasets/")
    raise OptionError(f"--data {option}: missing {', '.join(missing)}; point it at lcm_lab's datasets/ directory")


def run(args: argparse.Namespace) -> int:
    from lcm_lab.bundled.demo import CONVERSATIONS, comparison_rows, run_demo
    from lcm_lab.io.atomic import check_output_path
    from lcm_lab.store import open_store

    datasets = datasets_directory(args.datasets)
    # Before anything is loaded: the report never replaces a conversation the demo replays; every
    # other file it loads there is an lcm.db, a transcript or a .gz, which the check knows by content.
    check_output_path(args.output, [datasets / relative for _name, relative, _index in CONVERSATIONS])
    store = open_store(args.db)
    say = (lambda _text: None) if args.json else print
    try:
        result = run_demo(store, datasets, Path(args.output), say=say, progress=not args.json and sys.stderr.isatty())
    finally:
        store.close()
    if args.json:
        print_json({
            "report": str(result.report),
            "sources": [r.as_json() for r in result.loaded],
            "runs": comparison_rows(result.runs),
        })
    return 0
