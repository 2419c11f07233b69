"""The command-line shell: ``--help`` stays cheap (lazy imports), help reads as plain text, lists
print through one table formatter, and the README's command table is generated from ``--help``."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("duckdb", "numpy", "pandas", "pyarrow", "polars", "scipy", "plotly", "litellm", "optuna", "pydantic", "tqdm")


def test_building_the_parser_imports_no_heavy_library() -> None:
    # ``lcm-lab --help`` builds every subcommand's parser; what it imports is what it costs
    # (the timing itself is measured in benchmarks/bench_cli.py, not here).
    code = ("import sys, json; from lcm_lab.cli import build_parser; build_parser(); "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def _every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    from lcm_lab.cli import build_parser

    out, todo = [], [("lcm-lab", build_parser())]
    while todo:
        name, parser = todo.pop()
        out.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {n}", p) for n, p in action.choices.items()]
    return out


def test_help_is_plain_text() -> None:
    for name, parser in _every_parser():
        text = parser.format_help()
        assert "``" not in text and not re.search(r":[a-z]+:`", text), name
        assert "spec §" not in text, name


def test_the_readme_command_table_is_generated_from_help() -> None:
    from lcm_lab.commands._help_table import BEGIN, END, command_table

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    written = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert written == command_table(), "README.md's command table is stale: python -m lcm_lab.commands._help_table README.md"
    from lcm_lab.cli import command_names

    assert {line.split("`")[1].split()[1] for line in written.splitlines()[2:]} == {n.replace("_", "-") for n in command_names()}


def test_commands_that_print_lists_take_table_and_csv() -> None:
    lists = {"lcm-lab load", "lcm-lab ledger", "lcm-lab sweeps", "lcm-lab doctor", "lcm-lab drift", "lcm-lab grep",
             "lcm-lab prompts list", "lcm-lab whatif list", "lcm-lab whatif reassemble"}
    parsers = dict(_every_parser())
    for name in lists:
        options = {o for a in parsers[name]._actions for o in a.option_strings}
        assert {"--json", "--table", "--csv"} <= options, name
