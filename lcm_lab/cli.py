"""``lcm-lab``: a thin command-line shell over the library.

Each subcommand lives in ``lcm_lab/commands/<name>.py`` and exposes
``register(subparsers) -> None``; the parser it adds sets ``func(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS = ("load", "replay", "prompts", "ledger", "doctor", "report", "demo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lcm-lab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"lcm_lab.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"lcm_lab.commands.{name}":
                raise
            continue
        module.register(sub)
    return parser


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    """Every command takes ``--db FILE`` (default: the lab store, see lcm_lab.store)."""
    parser.add_argument("--db", metavar="FILE", default=None, help="lab store (default: $LCM_LAB_HOME or .lcm_lab/lab.duckdb)")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
