"""``lcm-lab demo``: the main job on the bundled data (load, replay, score, compare, report)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lcm_lab.cli import add_db_argument

REPO_ROOT = Path(__file__).resolve().parents[2]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="run the main job on the bundled data", description=__doc__)
    parser.add_argument("--datasets", default=str(REPO_ROOT / "datasets"), metavar="DIR", help="bundled data (default: datasets/)")
    parser.add_argument("-o", "--output", default="reports/demo-report.html", metavar="FILE", help="report path")
    add_db_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lcm_lab.demo import run_demo
    from lcm_lab.store import open_store

    store = open_store(args.db)
    try:
        run_demo(store, Path(args.datasets), Path(args.output), progress=sys.stderr.isatty())
    finally:
        store.close()
    return 0
