"""Markup in data (a summary kind from an lcm.db, a session id from a transcript, run labels)
shows as text in every HTML and markdown the lab renders for a notebook."""

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
