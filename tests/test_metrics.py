"""Offline metrics: fact extraction, shape/budget, fact retention, needles, score_replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.engine.types import Conversation, InputEntry, StoredMessage, StoredPart, Summary
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.metrics.base import Score, age_bucket, message_text
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.facts import Fact, TextIndex, extract_facts, fact_key
from lcm_lab.metrics.needles import plant_needles
from lcm_lab.metrics.retention import context_fact_scores, summary_fact_scores
from lcm_lab.metrics.score import score_conversation, score_replay
from lcm_lab.metrics.shape import summary_shape_scores
from lcm_lab.summarizers import get_summarizer
from lcm_lab.summarizers.stub import StubV1Summarizer

REPO = Path(__file__).resolve().parents[1]
INPUTS = REPO / "tests" / "fixtures" / "reference-runs" / "inputs"


def by(scores: list[Score], scope: str, metric: str) -> dict[str, float | None]:
    return {s.scope_id: s.value for s in scores if s.scope == scope and s.metric == metric}


# -- facts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "surface"),
    [
        ("see https://example.org/docs/a?b=1.", "url", "https://example.org/docs/a?b=1"),
        ("I edited src/lcm_lab/engine/replay/driver.py today", "path", "src/lcm_lab/engine/replay/driver.py"),
        ("open config.json please", "path", "config.json"),
        ("ran `git rebase -i HEAD~3` first", "command", "git rebase -i HEAD~3"),
        ("$ npm test -- --watch", "command", "npm test -- --watch"),
        ("it threw TypeError: x is undefined. Then", "error", "TypeError: x is undefined"),
        ("failed with ENOENT", "error", "ENOENT"),
        ("met on 7 May 2023 at noon", "datetime", "7 May 2023"),
        ("deadline 2026-03-10T12:00Z", "datetime", "2026-03-10T12:00Z"),
        ("the deal is worth $48K total", "money", "$48K"),
        ("upgrade to v0.15.3 now", "version", "v0.15.3"),
        ("latency went to 350 ms", "number_unit", "350 ms"),
        ("commit 4214b480 fixed it", "hash", "4214b480"),
        ("the summary sum_abc123 was capped", "identifier", "sum_abc123"),
        ("we set leafChunkTokens lower", "identifier", "leafChunkTokens"),
        ("then I talked to Emily Stone about it", "name", "Emily Stone"),
    ],
)
def test_extract_fact_types(text: str, kind: str, surface: str) -> None:
    facts = extract_facts(text)
    assert (kind, surface) in [(f.kind, f.text) for f in facts], facts


def test_extraction_does_not_double_count_and_skips_sentence_openers() -> None:
    facts = extract_facts("Yesterday we shipped. See https://x.io/a/b.py for details.")
    assert [(f.kind, f.text) for f in facts] == [("url", "https://x.io/a/b.py")]


def test_text_index_is_boundary_and_space_aware() -> None:
    index = TextIndex([(1, "it took 15 ms"), (2, "it took 5ms"), (3, "took 5 MS, then 50 ms")])
    fact = Fact("number_unit", "5 ms", fact_key("number_unit", "5 ms"))
    assert index.containing(fact) == frozenset({2, 3})


def test_message_text_includes_tool_commands() -> None:
    part = StoredPart("tool", 0, tool_name="exec", tool_input=json.dumps({"command": "ls -la /srv", "cwd": "/srv/app"}))
    msg = StoredMessage(1, "assistant", "", 20, parts=(part,))
    assert message_text(msg) == "$ ls -la /srv\n/srv/app"
    assert ("command", "ls -la /srv") in [(f.kind, f.text) for f in extract_facts(message_text(msg))]


def test_age_buckets() -> None:
    assert [age_bucket(a) for a in (0, 1, 3, 4, 15, 16, 63, 64, 255, 256)] == [
        "0", "1-3", "1-3", "4-15", "4-15", "16-63", "16-63", "64-255", "64-255", "256+",
    ]


# -- hand-built DAG ------------------------------------------------------------------------------


def _hand_dag() -> Dag:
    messages = (
        StoredMessage(1, "user", "Please fix src/app.py, it fails with KeyError: 'port'", 100),
        StoredMessage(2, "assistant", "Fixed src/app.py and bumped to v1.2.3; took 40 ms", 100),
        StoredMessage(3, "user", "Now deploy to https://deploy.example.com/prod", 100),
        StoredMessage(4, "assistant", "Deployed.", 50),
    )
    summaries = (
        Summary("sum_a", "leaf", 0, "Fixed src/app.py (KeyError: 'port'), v1.2.3.", 20, source_message_seqs=(1, 2)),
        Summary("sum_b", "leaf", 0, "Deploy requested.\n[Truncated from 30 tokens]", 30, source_message_seqs=(3,)),
        Summary("sum_c", "condensed", 1, "Fixed src/app.py; deploy requested.", 10, source_summary_ids=("sum_a", "sum_b")),
    )
    from lcm_lab.engine.types import ContextItem

    return Dag(messages, summaries, (ContextItem.summary("sum_c"), ContextItem.message(4)), label="hand")


def test_shape_scores_on_hand_dag() -> None:
    scores = summary_shape_scores(_hand_dag(), "r")
    assert by(scores, "summary", "compression_ratio") == {"sum_a": 0.1, "sum_b": 0.3, "sum_c": 0.2}
    assert by(scores, "summary", "coverage_compression")["sum_c"] == pytest.approx(10 / 300)
    assert by(scores, "run", "dag_depth") == {"": 1.0}
    assert by(scores, "run", "rate_fallback") == {"": pytest.approx(1 / 3)}
    assert by(scores, "run", "dag_balance") == {"": 0.5}  # inputs cover 2 and 1 messages
    assert by(scores, "depth", "summaries") == {"0": 2.0, "1": 1.0}


def test_summary_fact_retention_on_hand_dag() -> None:
    dag = _hand_dag()
    scores = summary_fact_scores(dag, "r")
    per = {s.scope_id: s for s in scores if s.scope == "summary" and s.metric == "fact_retention"}
    # sum_a sources: path, error, version, number_unit -> all but "40 ms" kept (weights 3, 3, 2 of 10)
    assert per["sum_a"].details["facts"] == 4
    assert per["sum_a"].value == pytest.approx(8 / 10) and per["sum_a"].details["unweighted"] == pytest.approx(3 / 4)
    assert "40 ms" in per["sum_a"].details["lost_sample"]
    assert per["sum_c"].value == pytest.approx(3 / 13)  # only the path (weight 3 of 13) survives condensation
    assert set(by(scores, "summary", "fact_pointer_rate").values()) == {0.0}
    assert by(scores, "fact_type", "summary_fact_retention")["url"] == 0.0


def test_score_conversation_uses_stored_context() -> None:
    dag = _hand_dag()
    conv = Conversation("hand", stored_messages=dag.messages, summaries=dag.summaries, context_items=dag.context)
    scores = score_conversation(conv, "loaded")
    run = {s.metric: s.value for s in scores if s.scope == "run"}
    assert run["context_compacted_fact_retention"] == pytest.approx(1 / 5)
    assert run["doctor_truncation_fallback"] == 1.0
    assert run["doctor_errors"] == 0.0


# -- replays -------------------------------------------------------------------------------------


def _tool_chat(turns: int = 12) -> Conversation:
    entries: list[InputEntry] = []
    line = 2
    for k in range(turns):
        user = f"Turn {k}: please update services/api/handler_{k}.py and check the 3{k}0 ms timeout. " + "Context sentence. " * 30
        entries.append(InputEntry(line, "message", {"role": "user", "content": user, "timestamp": 1_700_000_000_000 + k * 60_000}))
        reply = f"Done: edited services/api/handler_{k}.py, commit a1b2c3d{k}. " + "Detail sentence. " * 30
        entries.append(
            InputEntry(line + 1, "message", {"role": "assistant", "content": [{"type": "text", "text": reply}], "timestamp": 1_700_000_030_000 + k * 60_000})
        )
        line += 2
    return Conversation("tool-chat", entries=tuple(entries))


def test_context_fact_retention_per_turn_offline_vs_stub() -> None:
    config = LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=800, leaf_target_tokens=200)
    results = {}
    for name in ("offline", "stub-v1"):
        rep = replay(_tool_chat(), config, get_summarizer(name), token_budget=2000, run_id=name)
        scores = context_fact_scores(rep, name)
        turns = by(scores, "turn", "fact_retention")
        assert set(turns) == {str(t.turn) for t in rep.turns}
        assert all(v is not None and 0.0 <= v <= 1.0 for v in turns.values())
        assert turns["0"] == 1.0  # nothing compacted yet: everything raw
        results[name] = by(scores, "turn", "compacted_fact_retention")[str(rep.turns[-1].turn)]
    assert results["stub-v1"] == 0.0  # stub summaries carry no source facts
    assert results["offline"] is not None and results["offline"] > 0.2


def test_stored_and_assembled_modes_agree_when_budget_is_large() -> None:
    rep = replay(_tool_chat(6), LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=800), StubV1Summarizer(), token_budget=1500)
    assembled = context_fact_scores(rep, "a", mode="assembled", budget=10**6)
    stored = context_fact_scores(rep, "s", mode="stored")
    assert by(assembled, "turn", "fact_retention") == by(stored, "turn", "fact_retention")
    tight = by(context_fact_scores(rep, "t", mode="assembled", budget=300), "turn", "fact_retention")
    assert any(tight[k] < v for k, v in by(stored, "turn", "fact_retention").items())  # type: ignore[operator]
    with pytest.raises(ValueError, match="unknown context mode"):
        context_fact_scores(rep, "x", mode="bogus")  # type: ignore[arg-type]


def test_score_replay_end_to_end_is_deterministic() -> None:
    config = LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=800, leaf_target_tokens=200)
    a = score_replay(replay(_tool_chat(), config, get_summarizer("offline"), token_budget=2000, run_id="r"))
    b = score_replay(replay(_tool_chat(), config, get_summarizer("offline"), token_budget=2000, run_id="r"))
    assert [(s.scope, s.scope_id, s.metric, s.value) for s in a] == [(s.scope, s.scope_id, s.metric, s.value) for s in b]
    run = {s.metric: s.value for s in a if s.scope == "run"}
    assert run["summarizer_calls"] and run["summarizer_calls"] > 0
    assert run["peak_context_tokens"] and run["peak_context_tokens"] > run["mean_context_tokens"]  # type: ignore[operator]
    assert {s.scope for s in a} >= {"run", "summary", "depth", "turn", "fact_type", "age"}
    for score in a:
        json.loads(score.details_json())


# -- needles -------------------------------------------------------------------------------------


def test_needles_are_reproducible_and_survival_depends_on_summarizer() -> None:
    chat = _tool_chat(12)
    planted_a, needles_a = plant_needles(chat, 4, seed=7)
    planted_b, needles_b = plant_needles(chat, 4, seed=7)
    assert needles_a == needles_b and planted_a == planted_b
    assert plant_needles(chat, 4, seed=8)[1] != needles_a
    assert chat.entries[0].message["content"].count("NDL-") == 0  # type: ignore[index]  # input untouched
    config = LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=800, leaf_target_tokens=200)
    survival = {}
    for name in ("offline", "stub-v1"):
        rep = replay(planted_a, config, get_summarizer(name), token_budget=2000, run_id=name)
        scores = score_replay(rep, needles=needles_a)
        per = {s.scope_id: s for s in scores if s.metric == "needle_survived"}
        assert set(per) == {n.needle_id for n in needles_a}
        survival[name] = by(scores, "run", "needle_survival")[""]
        assert by(scores, "age", "needle_survival")["0"] == 1.0  # just planted: raw in context
        assert set(by(scores, "depth", "needle_survival_by_depth")) <= {"raw", "0", "1", "2", "dropped"}
    assert survival["offline"] is not None and survival["stub-v1"] is not None
    assert survival["offline"] >= survival["stub-v1"]


def test_needles_on_explicit_turns_and_errors() -> None:
    chat = _tool_chat(5)
    _, needles = plant_needles(chat, 3, seed=1, turns=[0, 2])
    assert [n.turn for n in needles] == [0, 2, 0]
    with pytest.raises(ValueError, match="have no user message"):
        plant_needles(chat, 1, turns=[99])
    with pytest.raises(ValueError, match="cannot plant"):
        plant_needles(chat, 50)
    with pytest.raises(ValueError, match="needs a transcript"):
        plant_needles(Conversation("x"), 1)


def test_score_replay_on_reference_input() -> None:
    path = INPUTS / "synth-1.jsonl.gz"
    conv = read_transcript(path).conversations[0].conversation
    config = LcmConfig.from_plugin_config({"freshTailCount": 8, "leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300})
    rep = replay(conv, config, get_summarizer("offline"), token_budget=8000, run_id="synth-1")
    scores = score_replay(rep, context_turns=[0, 10, 20])
    types = by(scores, "fact_type", "fact_retention")
    assert types["path"] is not None and types["command"] is not None
    turns = by(scores, "turn", "fact_retention")
    assert set(turns) == {"0", "10", "20", str(rep.turns[-1].turn)}
    assert by(scores, "run", "doctor_errors") == {"": 0.0}


def test_metrics_modules_import_no_duckdb_or_litellm() -> None:
    import subprocess
    import sys

    code = (
        "import importlib, pkgutil, sys, lcm_lab.metrics as m\n"
        "for info in pkgutil.iter_modules(m.__path__): importlib.import_module(f'lcm_lab.metrics.{info.name}')\n"
        "print(sorted(n for n in ('duckdb', 'litellm') if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
