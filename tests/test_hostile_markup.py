"""Markup in data (a summary kind from an lcm.db, a session id from a transcript, run labels)
shows as text in every HTML, markdown and plot the lab renders for a notebook."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import lcm_lab as lab
from lcm_lab.io.markup import markdown_text
from lcm_lab.viz import plot_dag, summary_detail_html, summary_detail_info

FIXTURE = Path(__file__).parent / "fixtures" / "lcm-db-v1" / "synth-1__C2-tight.db.gz"
IMG = "<img src=x onerror=alert(1)>"


def test_a_summary_kind_with_markup_is_escaped_in_the_detail_pane_and_the_dag(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    db.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    con = sqlite3.connect(db)
    con.execute("pragma ignore_check_constraints=1")
    sid = con.execute("select summary_id from summaries where kind='leaf' limit 1").fetchone()[0]
    con.execute("update summaries set kind=? where summary_id=?", (IMG, sid))
    con.commit()
    con.close()
    store = lab.open_store(tmp_path / "lab.duckdb")
    lab.load(db, store, progress=False)
    conv = store.conversation(int(store.conversations_df().iloc[0]["conversation_id"]))
    page = summary_detail_html(summary_detail_info(conv, sid))
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    parents = [s.summary_id for s in conv.summaries if sid in s.source_summary_ids]
    if parents:  # the "Sources" list of the summary it was condensed into shows the kind too
        assert "<img" not in summary_detail_html(summary_detail_info(conv, parents[0]))
    fig = plot_dag(conv, color_by="kind")
    shown = json.dumps(fig.to_plotly_json(), default=str)
    assert "<img" not in shown and "&lt;img" in shown


def _session(path: Path, session_id: str) -> Path:
    lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T09:59:00.000Z", "cwd": "/x"}]
    parent = None
    for i in range(6):
        lines.append({"type": "message", "id": f"e{i}", "parentId": parent, "timestamp": "2026-01-01T10:00:00.000Z",
                      "message": {"role": "user" if i % 2 == 0 else "assistant",
                                  "content": [{"type": "text", "text": f"hello {i} " * 50}], "timestamp": 1767261660000 + i}})
        parent = f"e{i}"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_a_session_id_with_markup_is_text_in_the_version_comparison_markdown(tmp_path: Path) -> None:
    cmp = lab.compare_versions(_session(tmp_path / "s.jsonl", "<img src=x onerror=alert(document.domain)> *b* [l](u)"),
                               token_budget=2000)
    md = cmp._repr_markdown_()
    head = md.splitlines()[0]
    assert "<img" not in md
    assert head.startswith("**&lt;img src=x onerror=alert(document.domain)&gt; \\*b\\* \\[l\\](u)** at 2,000 tokens")


def test_markdown_text_escapes_tags_and_inline_markup() -> None:
    assert markdown_text("a|b\nc `d` ~e~ _f_") == "a\\|b c \\`d\\` \\~e\\~ \\_f\\_"
    assert markdown_text("<script>&") == "&lt;script&gt;&amp;"


# -- plot text: titles, axis titles, legend names, tick labels and annotations from data ----------


def _shows_only_escaped(fig: object) -> str:
    """The figure's JSON (what a notebook or the report sends to plotly.js) holds the hostile name
    only escaped: plotly renders tags in titles, legends, ticks and annotations as it does in hovers."""
    shown = json.dumps(fig.to_plotly_json(), default=str)  # type: ignore[attr-defined]
    assert "<img" not in shown, [part for part in shown.split('"') if "<img" in part][:5]
    assert "&lt;img src=x onerror=alert(1)&gt;" in shown
    return shown


def test_hostile_run_metric_and_column_names_are_escaped_in_every_quality_plot() -> None:
    import pandas as pd

    from lcm_lab.viz import (
        plot_fact_survival,
        plot_metric_by_depth,
        plot_parallel_coordinates,
        plot_pareto,
        plot_qa_retention,
        plot_run_comparison,
        plot_sweep_heatmap,
    )

    runs = [IMG, "plain"] * 3
    scores = pd.DataFrame({"run_id": runs, "metric": [IMG] * 6, "value": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]})
    fig = plot_run_comparison(scores, title=IMG)
    shown = _shows_only_escaped(fig)
    assert fig.layout.title.text == "&lt;img src=x onerror=alert(1)&gt;"
    assert {t.name for t in fig.data} == {"&lt;img src=x onerror=alert(1)&gt;", "plain"}
    assert "<b>" not in shown  # the subplot title (the metric) is escaped too

    _shows_only_escaped(plot_metric_by_depth(scores.assign(depth=[0, 1] * 3), value="value"))
    by_depth = plot_metric_by_depth(pd.DataFrame({"run_id": runs, "depth": [0] * 6, IMG: [1.0] * 6}), value=IMG)
    assert by_depth.layout.yaxis.title.text == "&lt;img src=x onerror=alert(1)&gt;"
    _shows_only_escaped(by_depth)

    qa = pd.DataFrame({"run_id": runs, IMG: [IMG, "single-hop"] * 3, "correct": [1, 0, 1, 1, 0, 1]})
    bars = plot_qa_retention(qa, category=IMG)
    _shows_only_escaped(bars)
    assert bars.layout.xaxis.title.text == "&lt;img src=x onerror=alert(1)&gt;"
    _shows_only_escaped(plot_fact_survival(pd.DataFrame({"run_id": runs, "age": [0, 3, 20] * 2, "survived": [1, 0] * 3})))

    sweep = pd.DataFrame({IMG: [IMG, "b"] * 3, "freshTailCount": [8, 8, 16, 16, 32, 32], "m": range(6)})
    heat = plot_sweep_heatmap(sweep, x=IMG, y="freshTailCount", value="m")
    _shows_only_escaped(heat)
    assert list(heat.data[0].x) == ["&lt;img src=x onerror=alert(1)&gt;", "b"]  # the tick labels

    front = pd.DataFrame({"run_id": runs, IMG: [0.1, 0.5, 0.9, 0.3, 0.2, 0.4], "tokens": [1, 2, 3, 4, 5, 6]})
    pareto = plot_pareto(front, quality=IMG, tokens="tokens", cost=None)
    _shows_only_escaped(pareto)
    assert pareto.layout.title.text == "Pareto front: &lt;img src=x onerror=alert(1)&gt; vs tokens"

    parallel = plot_parallel_coordinates(front.assign(**{"run": runs}), color=IMG)
    _shows_only_escaped(parallel)
    assert "&lt;img src=x onerror=alert(1)&gt;" in parallel.data[0].dimensions[0].ticktext


def test_hostile_labels_are_escaped_in_the_recall_version_strategy_context_and_cost_plots() -> None:
    from types import SimpleNamespace

    from lcm_lab.cost.model import CallCost
    from lcm_lab.viz import plot_cost_breakdown, plot_recoverability, plot_tokens_per_turn, plot_version_turns
    from lcm_lab.viz.context import ContextInfo, ContextRow, _context_figure

    row = {"run_id": "r1", "label": IMG, "recovered_share": 0.5, "ceiling": 1.0, "chance": 0.1}
    _shows_only_escaped(plot_recoverability([row]))

    turns = [{"engine": "0.15.3", "turn": t, "sent_tokens": 100 * t, "summaries_sent": 0, "path": "assembled",
              "clamped": False, "degraded": False, "differs_bytes": False} for t in range(3)]
    versions = SimpleNamespace(versions=("0.15.3",), turns=turns, title=None, session_id=IMG, token_budget=1000)
    _shows_only_escaped(plot_version_turns(versions))

    run = SimpleNamespace(turns=[SimpleNamespace(turn=t, context_tokens=10 * t, calls=[1]) for t in range(3)])
    strategies = SimpleNamespace(runs={(IMG, 1000, IMG): run})
    _shows_only_escaped(plot_tokens_per_turn(strategies, IMG, 1000))

    item = ContextRow(0, "message", 1, IMG, 10, 10, IMG, "preview")  # a transcript's role names the legend entry
    _shows_only_escaped(_context_figure(ContextInfo((item,), None, 100, 10, "stored", "End of run")))

    call = CallCost(0, 0.0, "main", 100, 50, 30, 20, 10, 0.01)
    _shows_only_escaped(plot_cost_breakdown([call], title=f"{IMG}: prompt tokens per call"))
