"""``lcm-lab export-study SWEEP_ID [--storage URL] [--study-name NAME] [--replace]``: a sweep as an Optuna study.

Writes one trial per configuration into an Optuna storage (default ``sqlite:///optuna.db``), so
Optuna's tools open it: ``optuna-dashboard sqlite:///optuna.db``, ``optuna.load_study(...)`` and
``optuna.visualization``. The study's best trials are the Pareto front the recommendation
chooses from (:mod:`lcm_lab.sweeps.optuna_study`).
"""

from __future__ import annotations

import argparse
from typing import Any

from lcm_lab.cli import add_db_argument, add_json_argument, nonempty, print_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("export-study", help="write a sweep as an Optuna study (for optuna-dashboard and load_study)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep_id", type=nonempty, metavar="SWEEP_ID", help="a sweep id (lcm-lab sweeps lists them)")
    parser.add_argument("--storage", default="sqlite:///optuna.db", metavar="URL", help="Optuna storage URL (default: %(default)s)")
    parser.add_argument("--study-name", type=nonempty, default=None, metavar="NAME", help="study name (default: the sweep id)")
    parser.add_argument("--replace", action="store_true", help="replace a study of that name in the storage")
    add_db_argument(parser)
    add_json_argument(parser, "one object: storage, study_name, trials, best_trials (config ids)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lcm_lab.store import open_store
    from lcm_lab.sweeps import sweep_study

    with open_store(args.db, reads_only=True) as store:
        study = sweep_study(args.sweep_id, store, storage=args.storage, study_name=args.study_name, replace=args.replace)
    best = [t.user_attrs["config_id"] for t in study.best_trials]
    if args.json:
        print_json({"storage": args.storage, "study_name": study.study_name, "trials": len(study.trials), "best_trials": best})
        return 0
    print(f"study {study.study_name} in {args.storage}: {len(study.trials)} trials (one per configuration), "
          f"Pareto front {', '.join(best) or '(empty)'}")
    print(f"open it with: optuna-dashboard {args.storage}")
    return 0
