"""Every notebook runs top to bottom against the bundled data (nbclient, fresh kernel each).

The lab store, reports and "your lcm.db" are redirected to a temporary directory, so a run
never touches the repository's store, reports/ or a real ~/.openclaw/lcm.db.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NAMES = ["01_quickstart", "02_tune_parameters", "03_compare_summary_models", "04_explore_your_lcm_db", "05_compare_strategies",
         "06_recall", "07_cost", "08_upgrade_to_1_0"]


def test_all_notebooks_are_present_and_stripped() -> None:
    assert [p.stem for p in NOTEBOOKS] == NAMES
    for path in NOTEBOOKS:
        book = nbformat.read(path, as_version=4)
        for cell in book.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: outputs must be stripped"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbclient import NotebookClient

    monkeypatch.setenv("LCM_LAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LCM_LAB_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setenv("LCM_LAB_USER_DB", str(tmp_path / "no-such-lcm.db"))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    book = nbformat.read(path, as_version=4)
    # A cell timeout guards against hangs only: how fast a notebook runs depends on the machine's load,
    # so its speed is not asserted here (a timed unit test would be a coin flip on a busy machine).
    client = NotebookClient(book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=dict(os.environ))
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    check_figures(path.stem, book, tmp_path)
    figures = sum(1 for c in book.cells if c.cell_type == "code" for o in c.outputs
                  if o.output_type in ("display_data", "execute_result") and "application/vnd.plotly.v1+json" in o.get("data", {}))
    widgets = sum(1 for c in book.cells if c.cell_type == "code" for o in c.outputs
                  if "application/vnd.jupyter.widget-view+json" in o.get("data", {}))
    assert figures >= 1 and widgets >= 1, (figures, widgets)


def check_figures(name: str, book: nbformat.NotebookNode, tmp_path: Path) -> None:
    """Every plotly figure a notebook shows has data; with a browser, none is narrower than the
    page, clipped at its title or covered by its legend (the report's checks)."""
    from lcm_lab.report.browser import chromium_path, figure_problems, headless_browser, open_everything
    from lcm_lab.report.figures import figure_has_data, figures_page

    specs = [o["data"]["application/vnd.plotly.v1+json"] for c in book.cells if c.cell_type == "code" for o in c.outputs
             if o.output_type in ("display_data", "execute_result") and "application/vnd.plotly.v1+json" in o.get("data", {})]
    empty = [(s.get("layout", {}).get("title") or {}).get("text", "untitled") for s in specs if not figure_has_data(s)]
    assert empty == [], f"{name}: figures without data: {empty}"
    if chromium_path() is None:
        return
    pytest.importorskip("playwright.sync_api")
    page_file = tmp_path / f"{name}-figures.html"
    page_file.write_text(figures_page(specs, name), encoding="utf-8")
    with headless_browser() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(page_file.resolve().as_uri())
        open_everything(page)
        problems = figure_problems(page)
        page.close()
    assert problems == [], f"{name}: {problems}"


def test_notebooks_use_the_public_namespace_only() -> None:
    for path in NOTEBOOKS:
        code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert "import lcm_lab as lab" in code, path.name
        for forbidden in ("from lcm_lab", "import lcm_lab.", "tests", "sys.path"):
            assert forbidden not in code, f"{path.name} uses {forbidden!r}; use `import lcm_lab as lab`"
