"""The command-line shell: ``--help`` stays cheap (lazy imports), help reads as plain text, lists
print through one table formatter, and the README's command table is generated from ``--help``."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("duckdb", "numpy", "pandas", "pyarrow", "polars", "scipy", "plotly", "litellm", "optuna", "pydantic", "tqdm")


def test_building_the_parser_imports_no_heavy_library() -> None:
    # ``lcm-lab --help`` builds every subcommand's parser; what it imports is what it costs
    # (the timing itself is measured in benchmarks/bench_cli.py, not here).
    code = ("import sys, json; from lcm_lab.cli import build_parser; build_parser(); "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
