"""DAG export and layout (info step without plotly; one figure smoke test per mode)."""

from __future__ import annotations

import networkx as nx
import pytest
from viz_data import trace_replay

from lcm_lab.engine.types import Conversation, StoredMessage, Summary
from lcm_lab.viz.dag import WEBGL_ABOVE, _dag_figure, dag_info, plot_dag, to_networkx

RUNS_WITH_DEPTH = ["synth-1__C6-deep-reachable", "before-compaction__C6-deep-reachable", "synth-2__C2-tight"]


def small_dag() -> tuple[Summary, ...]:
    return (
        Summary("a", "leaf", 0, "first <b>leaf</b>", 10, "2026-01-01T00:00:00.000Z", "2026-01-01T00:10:00.000Z",
                source_message_seqs=(1, 2, 3), level="normal", created_turn=1),
        Summary("b", "leaf", 0, "second leaf", 20, "2026-01-01T00:20:00.000Z", "2026-01-01T00:30:00.000Z",
                source_message_seqs=(4, 5), level="fallback", created_turn=2),
        Summary("c", "condensed", 1, "<script>alert(1)</script>", 5, "2026-01-01T00:00:00.000Z",
                "2026-01-01T00:30:00.000Z", source_summary_ids=("a", "b"), level="normal", created_turn=3),
    )


def messages(n: int) -> tuple[StoredMessage, ...]:
    return tuple(
        StoredMessage(seq=i, role="user" if i % 2 else "assistant", content=f"m{i}", token_count=7,
                      created_at=f"2026-01-01 00:{i:02d}:00")
        for i in range(1, n + 1)
    )


@pytest.mark.parametrize("run", RUNS_WITH_DEPTH)
def test_networkx_descendants_match_the_plugins_descendant_count(run: str) -> None:
    replay = trace_replay(run)
    g = to_networkx(replay)
    assert g.number_of_nodes() == len(replay.summaries)
    assert nx.is_directed_acyclic_graph(g)
    for s in replay.summaries:
        assert len(nx.descendants(g, s.summary_id)) == s.descendant_count
        assert [b for _, b, _ in sorted(g.out_edges(s.summary_id, data="ordinal"), key=lambda e: e[2])] == list(
            s.source_summary_ids
        )


def test_networkx_with_messages_links_leaves_to_their_sources() -> None:
    conv = Conversation("s", stored_messages=messages(6), summaries=small_dag())
    g = to_networkx(conv, include_messages=True)
    assert {n for n, t in g.nodes(data="node_type") if t == "message"} == {1, 2, 3, 4, 5}
    assert sorted(g.successors("a")) == [1, 2, 3]
    assert g.nodes[4]["role"] == "assistant"
    assert nx.descendants(g, "c") == {"a", "b", 1, 2, 3, 4, 5}


def test_layout_places_summaries_over_the_messages_they_cover() -> None:
    conv = Conversation("s", stored_messages=messages(7), summaries=small_dag())
    info = dag_info(conv)
    x = {n.node_id: n.x for n in info.nodes}
    assert x == {"a": 2.0, "b": 4.5, "c": 3.0}
    assert [(n.node_id, n.depth) for n in info.nodes] == [("a", 0), ("b", 0), ("c", 1)]
    # one segment per source edge: parent point, child point, gap
    assert info.edge_y == (1.0, 0.0, None, 1.0, 0.0, None)
    assert info.edge_x == (3.0, 2.0, None, 3.0, 4.5, None)
    leaf_spans = [s for s in info.spans if s.kind == "leaf"]
    raw_spans = [s for s in info.spans if s.kind == "raw"]
    assert [(s.label, s.x0, s.x1) for s in leaf_spans] == [("a", 0.6, 3.4), ("b", 3.6, 5.4)]
    assert [(s.x0, s.x1) for s in raw_spans] == [(5.6, 7.4)]  # messages 6-7 are not summarised yet
    assert "2 messages, 14 tokens" in raw_spans[0].hover
    assert info.title == "s: 3 summaries (2 leaf, 1 condensed), max depth 1"


def test_node_size_grows_with_tokens_and_hover_is_escaped() -> None:
    info = dag_info(small_dag())
    size = {n.node_id: n.size for n in info.nodes}
    assert size["c"] < size["a"] < size["b"]
    hover = {n.node_id: n.hover for n in info.nodes}
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in hover["c"]
    assert "<script>" not in hover["c"]
    assert "&lt;b&gt;leaf&lt;/b&gt;" in hover["a"]
    assert "messages 1–5" in hover["c"] and "depth 1" in hover["c"] and "created in turn 3" in hover["c"]


def test_colour_modes() -> None:
    by = {mode: {n.node_id: n.color for n in dag_info(small_dag(), color_by=mode).nodes}
          for mode in ("kind", "depth", "level", "turn")}
    assert by["kind"] == {"a": "leaf", "b": "leaf", "c": "condensed"}
    assert by["depth"] == {"a": "depth 0", "b": "depth 0", "c": "depth 1"}
    assert by["level"] == {"a": "normal", "b": "fallback", "c": "normal"}
    assert by["turn"] == {"a": 1.0, "b": 2.0, "c": 3.0}
    scored = dag_info(small_dag(), color_by="score", scores={"a": 0.5, "c": 0.9})
    assert {n.node_id: n.color for n in scored.nodes} == {"a": 0.5, "b": None, "c": 0.9}
    assert not scored.categorical
    with pytest.raises(ValueError, match="needs scores"):
        dag_info(small_dag(), color_by="score")
    with pytest.raises(ValueError, match="unknown color_by"):
        dag_info(small_dag(), color_by="colour")  # type: ignore[arg-type]


def test_time_axis_and_until_turn() -> None:
    conv = Conversation("s", stored_messages=messages(5), summaries=small_dag())
    info = dag_info(conv, x_axis="time")
    x = {n.node_id: n.x for n in info.nodes}
    assert x["a"] < x["c"] < x["b"]
    assert x["a"].isoformat() == "2026-01-01T00:05:00"
    grown = dag_info(small_dag(), until_turn=2)
    assert [n.node_id for n in grown.nodes] == ["a", "b"] and grown.edge_x == ()
    bare = (Summary("x", "leaf", 0, "t", 1, source_message_seqs=(1,)),)
    with pytest.raises(ValueError, match="x_axis='seq'"):
        dag_info(bare, x_axis="time")


def test_cycles_are_reported() -> None:
    cyclic = (
        Summary("a", "condensed", 1, "", 1, source_summary_ids=("b",)),
        Summary("b", "condensed", 1, "", 1, source_summary_ids=("a",)),
    )
    with pytest.raises(ValueError, match="cycle"):
        dag_info(cyclic)


def test_summaries_with_pruned_sources_still_get_a_position() -> None:
    orphan = (Summary("z", "condensed", 2, "orphan", 4, source_summary_ids=("gone",)),)
    info = dag_info(orphan)
    assert "span unknown" in info.nodes[0].hover and info.edge_x == ()


def test_level_of_detail_bins_crowded_depths_and_keeps_tokens() -> None:
    replay = trace_replay("before-compaction__C6-deep-reachable")
    full = dag_info(replay)
    binned = dag_info(replay, max_nodes=60)
    assert binned.aggregated and len(binned.nodes) <= 60
    assert sum(n.tokens for n in binned.nodes) == sum(n.tokens for n in full.nodes)
    assert sum(n.members for n in binned.nodes) == len(replay.summaries)
    assert {n.depth for n in binned.nodes} == {0, 1, 2}
    assert len(binned.edge_x) < len(full.edge_x)
    assert binned.edge_x.count(None) * 3 == len(binned.edge_x)
    assert "binned to" in binned.title
    with pytest.raises(ValueError):
        dag_info(replay, max_nodes=0)


def synthetic_dag(n_leaves: int, fanout: int = 4) -> tuple[Summary, ...]:
    out: list[Summary] = []
    level = []
    for i in range(n_leaves):
        s = Summary(f"l{i}", "leaf", 0, "leaf text " * 20, 50 + i % 30, source_message_seqs=(2 * i + 1, 2 * i + 2))
        out.append(s)
        level.append(s.summary_id)
    depth = 1
    while len(level) > 1:
        nxt = []
        for j in range(0, len(level), fanout):
            s = Summary(f"d{depth}-{j}", "condensed", depth, "c", 40, source_summary_ids=tuple(level[j : j + fanout]))
            out.append(s)
            nxt.append(s.summary_id)
        level, depth = nxt, depth + 1
    return tuple(out)


def test_figure_uses_webgl_and_one_batched_edge_trace_when_large() -> None:
    big = synthetic_dag(WEBGL_ABOVE + 200)
    fig = plot_dag(big)
    types = {t.type for t in fig.data}
    assert types == {"scattergl"}
    edges = [t for t in fig.data if t.name == "sources"]
    assert len(edges) == 1 and len(edges[0].x) == 3 * (len(big) - 1)  # a tree: every node but the root is a source once
    small = _dag_figure(dag_info(small_dag(), color_by="score", scores={"a": 1.0}))
    assert {t.type for t in small.data} == {"scatter"}
    assert small.data[-1].marker.showscale



def test_summary_detail_lists_sources_users_and_messages() -> None:
    from lcm_lab.viz.detail import summary_detail_html, summary_detail_info

    conv = Conversation("s", stored_messages=messages(5), summaries=small_dag())
    top = summary_detail_info(conv, "c", max_messages=3)
    assert [s.summary_id for s in top.sources] == ["a", "b"] and top.used_by == ()
    assert [m.seq for m in top.messages] == [1, 2, 3] and top.more_messages == 2 and top.call is None
    html = summary_detail_html(top)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    assert "… and 2 more messages" in html and "Summarizer input" not in html
    leaf = summary_detail_info(conv, "a")
    assert [s.summary_id for s in leaf.used_by] == ["c"] and leaf.span == (1, 3)
    with pytest.raises(KeyError, match="no summary 'zz'"):
        summary_detail_info(conv, "zz")
