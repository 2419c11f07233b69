"""Budget timeline and context-at-turn info steps, on real reference runs and hand-built values."""

from __future__ import annotations

import pytest
from conftest import DATASETS
from viz_data import trace_replay

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay
from lcm_lab.engine.types import (
    AssembledItem,
    Assembly,
    ContextItem,
    Conversation,
    StoredMessage,
    Summary,
    TurnRecord,
)
from lcm_lab.viz.budget import budget_df, budget_info, plot_budget_timeline, split_context
from lcm_lab.viz.context import context_df, context_info, plot_context_at

RUNS = ["synth-1__C6-deep-reachable", "before-compaction__C2-tight", "locomo-conv-0__C6-deep-reachable", "golden__G0-golden"]


@pytest.mark.parametrize("run", RUNS)
def test_categories_add_up_to_the_stored_tokens_after_each_turn(run: str) -> None:
    replay = trace_replay(run)
    info = budget_info(replay)
    assert info.turns == tuple(t.turn for t in replay.turns)
    for i, t in enumerate(replay.turns):
        summaries = sum(v[i] for v in info.summary_tokens_by_depth.values())
        assert summaries + info.fresh_tail_tokens[i] + info.evictable_tokens[i] == t.final_tokens
    assert info.sweep_turns == tuple(t.turn for t in replay.turns if t.sweeps)
    assert info.sweep_y == tuple(t.stored_tokens_before for t in replay.turns if t.sweeps)
    assert set(info.summary_tokens_by_depth) == {s.depth for s in replay.summaries}


def msg(seq: int, role: str, tokens: int) -> StoredMessage:
    return StoredMessage(seq=seq, role=role, content=f"<i>m{seq}</i>", token_count=tokens)  # type: ignore[arg-type]


def test_fresh_tail_follows_the_plugin_rule() -> None:
    messages = {m.seq: m for m in [msg(1, "user", 10), msg(2, "assistant", 20), msg(3, "user", 30), msg(4, "assistant", 40)]}
    summaries = {"s": Summary("s", "leaf", 0, "x", 5), "t": Summary("t", "condensed", 1, "y", 7)}
    items = (ContextItem.summary("t"), ContextItem.summary("s"), *(ContextItem.message(q) for q in (1, 2, 3, 4)))
    # count 1: the tail must still reach back to the newest user message (seq 3)
    split = split_context(items, messages, summaries, fresh_tail_count=1)
    assert split == ({1: 7, 0: 5}, 70, 30, 4)
    assert split_context(items, messages, summaries, fresh_tail_count=3).fresh_tail_tokens == 90
    assert split_context(items, messages, summaries, fresh_tail_count=0) == ({1: 7, 0: 5}, 0, 100, None)


def hand_replay(assemble: Assembly | None = None) -> Replay:
    messages = (msg(1, "user", 10), msg(2, "assistant", 20), msg(3, "user", 30))
    leaf = Summary("s1", "leaf", 0, "summary <script>x</script>", 6, source_message_seqs=(1, 2), created_turn=1)
    turns = (
        TurnRecord(0, (2, 3), 2, 2, (1, 2), 30, 40, False, False, (), (), (), 30,
                   (ContextItem.message(1), ContextItem.message(2))),
        TurnRecord(1, (4, 4), 1, 1, (3,), 60, 40, True, True, (), (), ("s1",), 36,
                   (ContextItem.summary("s1"), ContextItem.message(3))),
    )

    class HandReplay(Replay):
        def assemble(self, turn: int = -1, budget: int | None = None, prompt: str | None = None) -> Assembly:
            assert assemble is not None
            return assemble

    return HandReplay(
        conversation=Conversation("hand", stored_messages=messages), config=LcmConfig(fresh_tail_count=1),
        token_budget=53, summarizer="stub-v1", turns=turns, messages=messages, summaries=(leaf,),
    )


def test_budget_df_and_figure() -> None:
    replay = hand_replay()
    df = budget_df(replay)
    assert list(df.columns) == ["turn", "summaries_d0", "fresh_tail", "evictable", "tokens_after", "stored_before",
                                "threshold", "budget", "swept", "sent_tokens", "bare_tokens", "sent_path", "clamped",
                                "degraded"]  # fmt: skip
    # Turn 1 starts from turn 0's two messages: 12 stored-estimate tokens, 63 serialized (over the
    # 53 budget, so the clamp fires; it keeps the assistant reply and re-seats the user message).
    assert df.to_dict("records")[1] == {"turn": 1, "summaries_d0": 6, "fresh_tail": 30, "evictable": 0, "tokens_after": 36,
                                        "stored_before": 60, "threshold": 40, "budget": 53, "swept": False,
                                        "sent_tokens": 63, "bare_tokens": 12, "sent_path": "assembled", "clamped": True,
                                        "degraded": False}  # fmt: skip
    assert df["sent_path"][0] == "live-fallback:no-conversation"
    fig = plot_budget_timeline(replay, marker_turn=1)
    names = [t.name for t in fig.data]
    assert names[:3] == ["summaries depth 0", "evictable messages", "fresh tail"]
    assert {"threshold", "budget", "stored before compaction"} <= set(names)
    assert all(t.stackgroup == "context" for t in fig.data[:3])
    assert fig.layout.shapes and fig.layout.shapes[0].x0 == 1
    with pytest.raises(ValueError, match="no turns"):
        budget_info(Replay(Conversation("e"), LcmConfig(), 10, "x", (), (), ()))


def test_context_from_stored_items() -> None:
    replay = trace_replay("synth-1__C6-deep-reachable")
    for turn in (0, 10, -1):
        info = context_info(replay, turn, source="stored")
        items = replay.context_at(turn)
        assert [(r.kind, r.ref) for r in info.rows] == [(c.kind, c.ref) for c in items]
        assert info.total_tokens == replay.turns[turn].tokens_after == info.rows[-1].cumulative
    info = context_info(hand_replay(), 1, source="stored")
    assert [r.category for r in info.rows] == ["summary depth 0", "user"]
    assert "&lt;script&gt;" in info.rows[0].preview and "<script>" not in info.rows[0].preview
    assert info.title == "Turn 1: stored context, 2 items, 36 / 53 tokens"
    assert list(context_df(hand_replay(), 0, source="stored")["ref"]) == [1, 2]


def test_context_from_assembly() -> None:
    assembly = Assembly(
        token_budget=50, estimated_tokens=21, selection_mode="full-fit", fresh_tail_ordinal=1, tail_tokens=9,
        remaining_budget=29, evictable_total_tokens=12, stats={},
        items=(
            AssembledItem("user", "summary", "s1", {"role": "user", "content": "<summary>s</summary>"}, 12),
            AssembledItem("assistant", "message", 3, {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}, 7),
            AssembledItem("toolResult", "synthetic", None, {"role": "toolResult", "content": []}, 2),
        ),
    )
    info = context_info(hand_replay(assembly), -1, source="bare")
    assert [r.category for r in info.rows] == ["summary depth 0", "assistant", "synthetic"]
    assert [r.cumulative for r in info.rows] == [12, 19, 21]
    assert info.rows[0].preview == "&lt;summary&gt;s&lt;/summary&gt;"
    assert info.token_budget == 50 and "bare assembly" in info.title
    fig = plot_context_at(hand_replay(assembly), source="bare")
    assert [t.type for t in fig.data] == ["bar", "bar", "bar", "scatter"]
    with pytest.raises(ValueError, match="unknown source"):
        context_info(hand_replay(), source="model")  # type: ignore[arg-type]


def test_a_shell_run_without_content_shows_its_command_and_output_escaped() -> None:
    bash = {"role": "bashExecution", "command": "cat <b>x</b>", "output": "<script>1</script>\n" + "y" * 500, "exitCode": 0}
    assembly = Assembly(
        token_budget=50, estimated_tokens=9, selection_mode="full-fit", fresh_tail_ordinal=0, tail_tokens=9,
        remaining_budget=41, evictable_total_tokens=0, stats={},
        items=(AssembledItem("bashExecution", "live", 1, bash, 9),),
    )
    (row,) = context_info(hand_replay(assembly), -1, source="bare").rows
    assert row.preview.startswith("$ cat &lt;b&gt;x&lt;/b&gt; &lt;script&gt;1&lt;/script&gt; yyy")
    assert "<script>" not in row.preview and row.preview.endswith("…") and len(row.preview) < 200


def test_the_pi_sessions_last_shell_output_is_shown_not_null() -> None:
    # The demo's first run ends degraded on one live bashExecution message (`find .`, 13,104 tokens).
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.report.build import _run_section
    from lcm_lab.summarizers import get_summarizer

    session = read_transcript(DATASETS / "pi-mono" / "before-compaction.jsonl").conversations[0]
    run = replay(session.conversation, LcmConfig(), get_summarizer("offline"), token_budget=8000)
    live = [i for i in run.sent().items if i.role == "bashExecution"]
    assert live and "content" not in live[-1].message
    info = context_info(run)
    shell = [r for r in info.rows if r.role == "bashExecution"]
    assert shell[-1].preview.startswith("$ find . ./.git/")
    rows = _run_section(run, "defaults", "r0", 10)["context_rows"]
    text = [r["text"] for r in rows if r["role"] == "bashExecution"][-1]
    assert text.startswith("$ find .\n./") and text.endswith("more characters)") and "null" not in text


def test_default_context_is_what_the_engine_sent() -> None:
    from report_data import planted_replay

    run = planted_replay()
    info = context_info(run)  # after the run
    sent = run.sent()
    assert info.source == "sent" and info.turn is None and info.path == sent.path
    assert [(r.kind, r.ref) for r in info.rows] == [(i.kind, i.ref) for i in sent.items]
    assert info.total_tokens == sent.estimated_tokens  # the engine's serialized estimate, row by row
    # Deferred compaction left debt pending near the budget: the model got the raw live history.
    assert sent.path.startswith("degraded:") and {r.kind for r in info.rows} == {"live"}
    assert {r.kind for r in context_info(run, 4).rows} >= {"summary", "message", "prompt"}
    at_turn = context_info(run, 3)
    per_turn = run.sent(3)
    assert at_turn.rows[-1].kind == "prompt" and at_turn.rows[-1].ref == per_turn.prompt.ref  # type: ignore[union-attr]
    assert at_turn.total_tokens == per_turn.prompt_tokens
    assert "start of turn 3" in at_turn.title


def test_budget_timeline_marks_clamped_degraded_and_compaction_turns() -> None:
    replay = trace_replay("before-compaction__C2-tight")
    info = budget_info(replay)
    sent = [replay.sent(t.turn) for t in replay.turns]
    assert info.sent_tokens == tuple(s.estimated_tokens for s in sent)
    assert info.degraded_turns == tuple(t.turn for t, s in zip(replay.turns, sent, strict=True) if s.degraded)
    assert info.degraded_turns  # this run has pending compaction debt near the budget
    assert info.clamped_turns == tuple(t.turn for t, s in zip(replay.turns, sent, strict=True) if s.clamped)
    names = {t.name for t in plot_budget_timeline(replay).data}
    assert {"sent to the model", "bare assembly (diagnostic)", "degraded (no summaries)", "budget"} <= names


def test_roles_and_depths_never_share_a_colour_and_runs_keep_theirs() -> None:
    from lcm_lab.viz._style import DEPTH_COLORS, ROLE_COLORS, run_colors

    assert not set(ROLE_COLORS.values()) & set(DEPTH_COLORS)
    assert run_colors(["tight", "defaults"]) == run_colors(["tight", "defaults", "tight"])


def test_context_over_budget_says_so_in_the_title() -> None:
    import lcm_lab as lab

    session = lab.read_transcript(DATASETS / "lossless-claw-ref" / "golden-session.jsonl").conversations[0].conversation
    config = lab.LcmConfig(fresh_tail_count=64)  # a tail larger than the budget: protected, so over it
    run = lab.replay(session, config, lab.get_summarizer("offline"), token_budget=500)
    info = lab.viz.context_info(run, -1, source="stored", budget=500)
    assert info.total_tokens > 500 and "over budget by" in info.title and "never evicted" in info.title
