"""The README's command table, generated from the parser that ``lcm-lab --help`` prints, so the
two cannot drift (``tests/test_cli_shell.py`` compares them).

    python -m lcm_lab.commands._help_table README.md    # rewrite the table between its markers
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

BEGIN = "<!-- command table: generated from `lcm-lab --help` by lcm_lab/commands/_help_table.py; do not edit -->"
END = "<!-- end of command table -->"


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _synopsis(name: str, parser: argparse.ArgumentParser) -> str:
    """``lcm-lab NAME`` with its positional arguments, required options and subcommands."""
    words = [f"lcm-lab {name}"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            words.append("|".join(action.choices))
        elif not action.option_strings:
            metavar = str(action.metavar or action.dest).upper() if action.metavar is None else str(action.metavar)
            words.append({"?": f"[{metavar}]", "*": f"[{metavar} ...]", "+": f"{metavar} ..."}.get(str(action.nargs), metavar))
        elif action.required:
            words.append(f"{action.option_strings[0]} {action.metavar or action.dest.upper()}")
    return " ".join(words)


def _json_output(parser: argparse.ArgumentParser) -> str:
    """What ``--json`` prints, from its help (a command group: what its subcommands' print)."""
    found = next((a for a in parser._actions if "--json" in a.option_strings), None)
    if found is not None:
        return (found.help or "").removeprefix("print only JSON: ").removeprefix("print ")
    sub = _subparsers(parser)
    if sub is None:
        return "-"
    outputs = {f"`{n}`: {_json_output(p)}" for n, p in sub.choices.items() if _json_output(p) != "-"}
    return "; ".join(sorted(outputs)) or "-"


def command_table(parser: argparse.ArgumentParser | None = None) -> str:
    """The Markdown table of every ``lcm-lab`` command: synopsis, what it does, what ``--json`` prints."""
    from lcm_lab.cli import build_parser, plain

    parser = parser or build_parser()
    sub = _subparsers(parser)
    assert sub is not None
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    lines = ["| command | what it does | `--json` prints |", "|---|---|---|"]
    for name, command in sub.choices.items():
        cells = (f"`{_synopsis(name, command)}`", plain(helps[name]), plain(_json_output(command)))
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def replace_table(text: str, table: str) -> str:
    """``text`` with the lines between :data:`BEGIN` and :data:`END` replaced by ``table``."""
    head, rest = text.split(BEGIN, 1)
    _old, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"


if __name__ == "__main__":
    readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    readme.write_text(replace_table(readme.read_text(encoding="utf-8"), command_table()), encoding="utf-8")
