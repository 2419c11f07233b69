"""``lcm-lab``: a thin command-line shell over the library.

Each subcommand lives in ``lcm_lab/commands/<name>.py`` and exposes
``register(subparsers) -> None``; the parser it adds sets ``func(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Listed in help order; any other module in lcm_lab/commands/ with a register() is added after them.
COMMANDS = ("load", "replay", "prompts", "ledger", "doctor", "report", "demo")


def command_names() -> list[str]:
    """The subcommand modules: COMMANDS first, then every other module of lcm_lab.commands."""
    import pkgutil

    import lcm_lab.commands as package

    found = [info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_")]
    return [n for n in COMMANDS if n in found] + sorted(n for n in found if n not in COMMANDS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lcm-lab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in command_names():
        module = importlib.import_module(f"lcm_lab.commands.{name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(sub)
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
