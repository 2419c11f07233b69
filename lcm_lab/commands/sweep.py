"""``lcm-lab sweep SPEC.yaml [--executor E] [--workers N] [--retry-failed] [--json]``: run or resume a sweep.

Running the same spec again resumes it (finished runs are kept, model calls come from the
ledger); runs that failed stay failed unless ``--retry-failed`` runs them again. Prints the comparison table and the recommended settings; with ``--json`` one JSON
object (``sweep_id``, counts, calls made vs naive). ``--example`` prints a commented spec that
runs on the bundled data.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from typing import Any

from lcm_lab.cli import add_db_argument, add_json_argument, positive_count, print_json
from lcm_lab.errors import DataError, OptionError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sweep", help="run (or resume) a parameter sweep from a YAML spec", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_argument(parser)
    parser.add_argument("spec", nargs="?", help="sweep spec (YAML; see --example and docs/sweeps.md)")
    parser.add_argument("--example", action="store_true", help="print a commented example spec and exit")
    parser.add_argument("--executor", default=None, help="auto, serial, threads, processes, ray or ray://HOST:PORT (overrides the spec)")
    parser.add_argument("--workers", type=positive_count, default=None, metavar="N", help="parallel workers (overrides the spec)")
    parser.add_argument("--retry-failed", action="store_true",
                        help="run again the runs that failed in an earlier session (e.g. after fixing the model server)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_argument(parser, "one object: sweep_id and counts")
    parser.set_defaults(func=run)


def example_spec() -> str:
    """The commented example spec shipped with the package."""
    return resources.files("lcm_lab.sweeps").joinpath("example.yaml").read_text(encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    if args.example:
        sys.stdout.write(example_spec())
        return 0
    if not args.spec:
        raise OptionError("give a spec file (lcm-lab sweep --example > sweep.yaml prints one)")
    from lcm_lab.store import open_store
    from lcm_lab.sweeps import load_spec, recommend, sweep

    spec = load_spec(args.spec)  # a spec that cannot run is refused before the store is opened (and locked)
    store = open_store(args.db)
    result = sweep(spec, store=store, executor=args.executor, workers=args.workers, progress=not args.no_progress,
                   retry_failed=args.retry_failed)
    status = _failures(result, store)
    if args.json:
        print_json(result._asdict())
        return status
    print(f"sweep {result.sweep_id}: {result.configs} configurations, {result.runs_ok} runs ok, {result.runs_failed} failed, "
          f"{result.skipped} already done; {result.seconds:.1f} s {_where(result.executor, result.workers)}")
    print(f"summarizer requests: {result.naive_calls} in a naive sweep, {result.calls_made} sent to a model, "
          f"{result.cache_hits} served from the ledger")
    try:
        rec = recommend(result.sweep_id, store)
    except (DataError, OptionError) as exc:
        print(f"no recommendation: {exc}")
        return status
    from lcm_lab.io.tables import format_table

    with_cols = [c for c in rec.table.columns if not c.endswith(("_ci_low", "_ci_high"))]
    print(format_table(rec.table[with_cols].to_dict("records"), with_cols))
    print()
    print(rec.snippet())
    return status


def _failures(result: Any, store: Any) -> int:
    """Say on stderr what went wrong in this run of the sweep: runs that failed (exit 1; every run
    failed: a :class:`DataError`, exit 2) and summaries that are the fallback because the model
    gave none or one not shorter than its input."""
    from lcm_lab.store.sweeps import first_run_error

    first = first_run_error(store, result.sweep_id) if result.runs_failed else None
    why = f"; the first: {first}" if first else ""
    if result.runs_failed and not result.runs_ok:
        raise DataError(f"sweep {result.sweep_id}: all {result.runs_failed} runs failed{why}")
    if result.failed_model_calls:
        print(f"warning: sweep {result.sweep_id}: {result.failed_model_calls} summaries in finished runs are the truncation "
              "fallback because the model gave none or one not shorter than its input; those runs' scores are partly the "
              "fallback's", file=sys.stderr)  # fmt: skip
    if result.runs_failed:
        print(f"warning: sweep {result.sweep_id}: {result.runs_failed} runs failed{why}; they stay failed on resume "
              "unless --retry-failed (sweep_df shows each error)", file=sys.stderr)  # fmt: skip
        return 1
    if result.failed_before:
        print(f"warning: sweep {result.sweep_id}: {result.failed_before} runs that failed in an earlier session were not "
              "run again; --retry-failed runs them (sweep_df shows each error)", file=sys.stderr)  # fmt: skip
    return 0


def _where(executor: str, workers: int) -> str:
    """Where the runs ran, in words.

    >>> _where("serial", 1), _where("processes", 1), _where("processes", 4), _where("threads", 16), _where("ray", 2)
    ('serially, one run at a time', 'on 1 worker process', 'on 4 worker processes', 'on 16 threads', 'on 2 ray workers')
    """
    if executor == "serial":
        return "serially, one run at a time"
    kind = {"processes": "worker process", "threads": "thread"}.get(executor, f"{executor} worker")
    return f"on {workers} {kind}{'' if workers == 1 else 'es' if kind.endswith('process') else 's'}"
