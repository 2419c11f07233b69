"""Every view of "what the model sees" reads ``Replay.sent`` (the engine-level assembly), never the bare assembler.

Statically: the only ``.assemble(`` call in viz/, widgets/ and report/ is the explicitly labelled
bare-assembly diagnostic of the context view. Dynamically: with ``Replay.assemble`` made to fail,
the context view, the budget timeline, the scrubber, the playground and the report still build,
so none of them reads it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from report_data import planted_replay

from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.report import report
from lcm_lab.summarizers import get_summarizer
from lcm_lab.viz import plot_budget_timeline, plot_context_at
from lcm_lab.viz.context import context_info
from lcm_lab.widgets import ParameterPlayground, ReplayScrubber

PACKAGE = Path(__file__).resolve().parents[1] / "lcm_lab"


def _assemble_calls(folder: str) -> list[str]:
    found = []
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "assemble":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_only_the_labelled_bare_diagnostic_calls_the_bare_assembler() -> None:
    calls = [c for folder in ("viz", "widgets", "report") for c in _assemble_calls(folder)]
    assert [c.split(":")[0] for c in calls] == ["viz/context.py"]
    source = (PACKAGE / "viz" / "context.py").read_text(encoding="utf-8").splitlines()
    line = int(calls[0].split(":")[1])
    assert 'source == "bare"' in "\n".join(source[line - 4 : line])  # inside the bare branch only


def test_views_widgets_and_report_build_without_the_bare_assembler(monkeypatch: pytest.MonkeyPatch) -> None:
    run = planted_replay()

    def forbidden(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a view read Replay.assemble (the bare assembler) for what the model sees")

    monkeypatch.setattr(Replay, "assemble", forbidden)
    assert context_info(run).source == "sent"
    plot_context_at(run, 3)
    budget = plot_budget_timeline(run)
    assert any(t.name == "sent to the model" for t in budget.data)
    scrubber = ReplayScrubber(run)
    scrubber.slider.value = 2
    assert "sent to the model" in scrubber.context.layout.title.text
    playground = ParameterPlayground(run.conversation, config=run.config, token_budget=1200)
    playground.sliders["fresh_tail_count"].value = 3
    assert "model context clamped on" in playground.stats.value
    page = report(run)
    assert "degraded model context" in page
    with pytest.raises(AssertionError, match="bare assembler"):
        context_info(run, source="bare")  # the diagnostic still is the bare assembler


def test_deferred_debt_changes_what_the_model_receives_where_inline_does_not() -> None:
    deferred = planted_replay()
    inline = replay(deferred.conversation, deferred.config.replace(proactive_threshold_compaction_mode="inline"),
                    get_summarizer("offline"), token_budget=deferred.token_budget)  # fmt: skip
    assert deferred.compaction_mode == "deferred" and inline.compaction_mode == "inline"
    # The post-turn drains ended over target and backed off, so the debt is still pending over
    # the budget after the run: the engine degrades to the live history. Inline compaction has no
    # pending debt and compacted further. (With the statement-writing offline summarizer the
    # inline run's end-of-run context is near the budget too, so it also degrades, for that reason.)
    assert deferred.sent().path == "degraded:emergency-debt-still-pending" and not deferred.sent().has_summaries
    assert inline.sent().path != "degraded:emergency-debt-still-pending"
    assert len(inline.summaries) > len(deferred.summaries)
