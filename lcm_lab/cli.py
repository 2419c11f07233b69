"""``lcm-lab``: a thin command-line shell over the library.

Conventions every command follows (new commands get the shared parts for free):

* Each subcommand lives in ``lcm_lab/commands/<name>.py`` and exposes
  ``register(subparsers) -> None``; the parser it adds sets ``func(args) -> int``. Modules are
  discovered automatically (``COMMANDS`` only fixes the help order).
* ``--json`` (:func:`add_json_argument`): the command prints only JSON on stdout — one object
  for a single result (:func:`print_json`), JSON Lines for lists (:func:`print_json_lines`).
  Progress and warnings go to stderr.
* User errors are raised, not printed: a :class:`lcm_lab.errors.UserError` subclass (bad file,
  bad option, unknown run id, a store that is not one, a missing API key; docs/errors.md lists
  the kinds) ends in :func:`main` as one line on stderr, ``lcm-lab <command>: <message>``, and
  exit status 2. An ``OSError`` the machine raised (disk full, read-only file system, permission
  denied, a missing file, with its path: :func:`lcm_lab.errors.os_fault`) is reported the same
  way. Nothing else is caught: any other exception is a bug and keeps its traceback.
* Ctrl-C ends a command with one line and status 130, SIGTERM with one line and 143; both are
  raised where the command was, so its cleanup runs (transactions roll back, sweeps stop their
  workers and record themselves as interrupted). They are handled from the first line of
  :func:`main`, and one that a C extension swallowed is raised again (:mod:`lcm_lab.io.interrupts`).
* ``--debug`` (or ``LCM_LAB_DEBUG=1``) re-raises user errors with their traceback, for bug reports.
* Shared argument types: :func:`positive_int` for budgets and counts, :func:`existing_file`
  for inputs that must be files.

Exit status: 0 success, 1 a completed check found differences or some inputs failed, 2 usage
or input error, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from lcm_lab.engine.tokens import MAX_TOKEN_BUDGET
from lcm_lab.errors import UserError, os_fault
from lcm_lab.io import interrupts

# Listed in help order; any other module in lcm_lab/commands/ with a register() is added after them.
COMMANDS = ("load", "replay", "prompts", "ledger", "doctor", "report", "demo")
DEBUG_ENV = "LCM_LAB_DEBUG"  # read by lcm_lab.io.env.flag
USAGE_ERROR = 2
INTERRUPTED = interrupts.INTERRUPTED  # 130: 128 + SIGINT, as shells report it
TERMINATED = interrupts.TERMINATED  # 143: 128 + SIGTERM


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (``lcm-lab replay: --token-budget: ...``), exit 2, and
    help in plain text (the command modules' docstrings are reStructuredText, see :func:`plain`)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: {_one_line(self._explained(message))} (see {self.prog} --help)\n")

    def _explained(self, message: str) -> str:
        """argparse's message, and for a path option left without its value how to pass a path
        that starts with a dash: argparse reads ``--db -x`` as two options, so ``-x`` never
        reaches the path (taking it anyway would also take ``--db --json`` as a store named
        ``--json``)."""
        missing = re.fullmatch(r"argument (\S+): expected one argument", message)
        if missing is None:
            return message
        names = set(missing.group(1).split("/"))
        action = next((a for a in self._actions if names & set(a.option_strings)), None)
        if action is None or action.type not in (path_argument, existing_file):
            return message
        option = max(action.option_strings, key=len)
        return f"argument {missing.group(1)}: expected a path; write one that starts with a dash as {option}=-x or {option} ./-x"

    def format_help(self) -> str:
        return plain(super().format_help())


_ROLE = re.compile(r":[a-z]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")


def plain(text: str) -> str:
    """reStructuredText inline markup as a terminal shows it: literals and roles become their text
    (a ``~`` role keeps the last name); single backticks, which read as quotes, stay.

    >>> plain("``lcm-lab sweep --example``; see :func:`~lcm_lab.sweeps.sweep` and :mod:`lcm_lab.store`")
    'lcm-lab sweep --example; see sweep and lcm_lab.store'
    """
    text = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1] if "~" in m.group(0) else m.group(1), text)
    return text.replace("``", "")


def command_names() -> list[str]:
    """The subcommand modules: COMMANDS first, then every other module of lcm_lab.commands."""
    import pkgutil

    import lcm_lab.commands as package

    found = [info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_")]
    return [n for n in COMMANDS if n in found] + sorted(n for n in found if n not in COMMANDS)


def build_parser() -> argparse.ArgumentParser:
    from lcm_lab import __version__

    parser = _Parser(prog="lcm-lab", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--version", action="version", version=f"lcm-lab {__version__}")
    parser.add_argument("--debug", action="store_true", help=f"show tracebacks for user errors (or set {DEBUG_ENV}=1)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in command_names():
        module = importlib.import_module(f"lcm_lab.commands.{name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(sub)
    return parser


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    """Every command takes ``--db FILE`` (default: the lab store, see lcm_lab.store)."""
    parser.add_argument("--db", metavar="FILE", type=path_argument, default=None, help="lab store (default: $LCM_LAB_HOME or .lcm_lab/lab.duckdb)")


def add_json_argument(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    """``--json``: print only JSON (``what`` says which shape, for the command's help)."""
    parser.add_argument("--json", action="store_true", help=f"print only JSON: {what}")


def add_list_arguments(parser: argparse.ArgumentParser, what: str = "one object per row") -> None:
    """``--json`` / ``--table`` (the default) / ``--csv`` for a command that prints a list:
    JSON Lines, an aligned text table, or CSV (:func:`print_rows`)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help=f"print only JSON: {what} (JSON Lines)")
    group.add_argument("--table", dest="table_format", action="store_const", const="table", default="table",
                       help="print an aligned text table (default)")
    group.add_argument("--csv", dest="table_format", action="store_const", const="csv", help="print CSV")


def print_rows(args: argparse.Namespace, rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """The rows as the list options of :func:`add_list_arguments` ask: every key as JSON Lines, or
    ``columns`` as a table or CSV (one formatter for every command: :mod:`lcm_lab.io.tables`)."""
    if getattr(args, "json", False):
        print_json_lines(rows)
        return
    from lcm_lab.io.tables import format_table

    text = format_table(rows, columns, fmt=getattr(args, "table_format", "table"))
    print(text, end="" if text.endswith("\n") else "\n")


def print_json(value: Any) -> None:
    """One JSON object on stdout (a single result). NaN and infinities, which JSON has no words
    for (``json.dumps`` would write ``NaN``, which parsers refuse), are written as ``null``.

    >>> print_json({"ms": float("inf"), "xs": [1.5, float("nan")]})
    {"ms": null, "xs": [1.5, null]}
    """
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, default=str, allow_nan=False)
    print(text)


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None (in dicts, lists and tuples)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def print_json_lines(values: Iterable[Any]) -> None:
    """One JSON object per line on stdout (a list of results)."""
    for value in values:
        print_json(value)


def add_deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept ``old`` as a hidden, deprecated spelling of option ``new`` (same type and action),
    with a one-line note on stderr when it is used."""
    target = next(a for a in parser._actions if new in a.option_strings)

    class Alias(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:
            print(f"{parser.prog}: {old} is deprecated; use {new}", file=sys.stderr)
            target(parser, namespace, values, new)

    parser.add_argument(old, dest=target.dest, type=target.type or str, metavar=target.metavar, action=Alias,
                        help=argparse.SUPPRESS)


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1 (token budgets, counts).

    >>> positive_int("8000")
    8000
    >>> positive_int("-5")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: -5 is not a positive integer up to 9,007,199,254,740,991 (a whole number of tokens, e.g. 8000)
    """
    digits = text.strip().replace("_", "")
    if not digits.isdigit() or not 1 <= int(digits) <= MAX_TOKEN_BUDGET:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer up to {MAX_TOKEN_BUDGET:,} (a whole number of tokens, e.g. 8000)")
    return int(digits)


def path_argument(text: str) -> str:
    """argparse type of every path argument: a path, not the empty string (``load ""`` loaded
    the current directory, and an empty ``--trace-out`` or ``-o`` was ignored)."""
    if text == "":
        raise argparse.ArgumentTypeError("an empty path; name a file or directory")
    return text


def nonempty(text: str) -> str:
    """argparse type: a name or id that is not the empty string (an empty one was ignored)."""
    if text.strip() == "":
        raise argparse.ArgumentTypeError("an empty value; name one or leave the option out")
    return text


def positive_count(text: str) -> int:
    """argparse type: a count ≥ 1 that is not a token budget (``--concurrency``, ``--last``).

    >>> positive_count("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 0 is not a positive integer (expected a whole number ≥ 1)
    """
    digits = text.strip().replace("_", "")
    if not digits.isdigit() or int(digits) < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer (expected a whole number ≥ 1)")
    return int(digits)


def non_negative_count(text: str) -> int:
    """argparse type: a count ≥ 0 (``--max-retries``, a summary depth).

    >>> non_negative_count("0")
    0
    >>> non_negative_count("-1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: -1 is not a whole number ≥ 0 (e.g. 0 or 3)
    """
    digits = text.strip().replace("_", "")
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"{text} is not a whole number ≥ 0 (e.g. 0 or 3)")
    return int(digits)


def _finite_number(text: str, *, at_least: float, strictly: bool, example: str) -> float:
    try:
        value = float(text.strip().replace("_", ""))
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < at_least or (strictly and value == at_least):
        bound = f"> {at_least:g}" if strictly else f"≥ {at_least:g}"
        raise argparse.ArgumentTypeError(f"{text} is not a finite number {bound} (e.g. {example})")
    return value


def positive_number(text: str) -> float:
    """argparse type: a finite number > 0 (seconds, dollars).

    >>> positive_number("0.5")
    0.5
    >>> positive_number("nan")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: nan is not a finite number > 0 (e.g. 600)
    """
    return _finite_number(text, at_least=0.0, strictly=True, example="600")


def non_negative_number(text: str) -> float:
    """argparse type: a finite number ≥ 0 (a sampling temperature).

    >>> non_negative_number("-0.1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: -0.1 is not a finite number ≥ 0 (e.g. 0.2)
    """
    return _finite_number(text, at_least=0.0, strictly=False, example="0.2")


def existing_file(text: str) -> str:
    """argparse type: a path that exists and is a file (not a directory)."""
    path = Path(path_argument(text))
    try:
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a directory; expected a file")
        if not path.exists():
            raise argparse.ArgumentTypeError(f"{text}: no such file")
    except OSError as exc:  # a name too long, a link loop: argparse would let it out as a traceback
        fault = os_fault(exc)
        if fault is None:
            raise
        raise argparse.ArgumentTypeError(str(fault)) from None
    return text


def _user_message(exc: BaseException) -> str | None:
    """The one-line message for an error that is the user's to fix, or None for a bug."""
    if isinstance(exc, UserError):
        return str(exc)
    if isinstance(exc, OSError) and (fault := os_fault(exc)) is not None:
        return str(fault)
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not {exc.encoding} text ({exc.reason} at byte {exc.start}); save it as UTF-8"
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``lcm-lab`` with ``argv``; return the exit status (see the module docstring).

    Everything it prints has control characters escaped (:mod:`lcm_lab.io.terminal`): text
    from a user's files never reaches the terminal raw."""
    # First of all: a signal from here on ends the command in one line.
    with interrupts.handled(whole_process=argv is None):
        try:
            try:
                return _main_with_streams(argv)
            finally:
                _release_stores()
        except KeyboardInterrupt as exc:  # in the moments before the streams are set up or after
            if "--debug" in (sys.argv[1:] if argv is None else argv):
                raise
            return interrupts.report("lcm-lab", exc)


def _release_stores() -> None:
    """Close the stores the command opened (their last checkpoint) while a signal is still one
    line (:func:`lcm_lab.store.core.release_all`); a command that opened none never loaded DuckDB."""
    core = sys.modules.get("lcm_lab.store.core")
    if core is not None:
        core.release_all()


def _main_with_streams(argv: Sequence[str] | None) -> int:
    from lcm_lab.io.terminal import TerminalStreams, escaping_excepthook, reserve_standard_descriptors

    # A traceback is printed after the with block has put the raw streams back: the hook redacts
    # and escapes it too (it quotes file names and messages).
    sys.excepthook = escaping_excepthook
    reserve_standard_descriptors()
    with TerminalStreams() as streams:
        return _main(argv, streams)


def _main(argv: Sequence[str] | None, streams: Any) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    from lcm_lab.io import env
    from lcm_lab.io.scratch import remove_orphans

    # --debug is accepted anywhere on the line, not only before the command.
    debug = "--debug" in arguments or env.flag(DEBUG_ENV)
    prefix = "lcm-lab"
    try:
        parser = build_parser()
        args = parser.parse_args([a for a in arguments if a != "--debug"])
        prefix = f"{parser.prog} {args.command}"
        streams.json_stdout = bool(getattr(args, "json", False))
        env.check()  # a bad LCM_LAB_* value ends the command before it opens or creates anything
        remove_orphans()  # scratch a killed lab process left in the temporary directory
        status = int(args.func(args) or 0)
        interrupts.raise_if_swallowed(0)  # a signal whose exception some C extension swallowed
        return status
    except KeyboardInterrupt as exc:
        if debug:
            raise
        return interrupts.report(prefix, exc)
    except Exception as exc:
        if interrupts.mark() and not debug:
            # The user stopped the command, and what failed after that is not the news: a C module
            # whose import a signal cut short raises ImportError (DuckDB's: "initialization failed").
            return interrupts.report(prefix, KeyboardInterrupt())
        if isinstance(exc, BrokenPipeError):
            return 0
        reason = _user_message(exc)
        if reason is None or debug:
            raise
        print(f"{prefix}: {_one_line(reason).removeprefix(f'{prefix}: ')}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
