"""Replays saved to and rebuilt from the lab store, and the ``lcm-lab replay`` command."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from reference_runs import FIXTURES, config_for, conversation_for, load_trace

from lcm_lab.cli import main
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.store import LabStore
from lcm_lab.store.replays import latest_run_id, load_replay, replays_df, save_replay
from lcm_lab.summarizers.stub import StubV1Summarizer

RUN = "golden__G0-golden"


@pytest.fixture()
def golden(tmp_path: Path):
    trace = load_trace(RUN)
    result = replay(conversation_for(RUN, tmp_path), config_for(trace), StubV1Summarizer(), token_budget=trace["token_budget"])
    return trace, result


def test_saved_replay_is_rebuilt_identically(golden) -> None:
    _, result = golden
    store = LabStore(":memory:")
    run_id = save_replay(store, result, label="golden")
    assert save_replay(store, result, label="golden") == run_id  # saving again adds nothing
    rebuilt = load_replay(store, run_id)
    assert rebuilt.run_id == run_id
    assert rebuilt.turns == result.turns and rebuilt.summaries == result.summaries
    assert rebuilt.messages == result.messages and rebuilt.config == result.config
    assert rebuilt.assemble(budget=600) == result.assemble(budget=600)
    assert latest_run_id(store) == run_id
    frame = replays_df(store)
    assert frame.loc[0, "summaries"] == 3 and frame.loc[0, "final_stored_tokens"] == 1394
    counts = store.fetch_all("SELECT count(*) FROM replay_calls WHERE run_id = ?", [run_id])[0][0]
    assert counts == 3


def test_unknown_run_id_names_the_store_and_recent_runs(golden) -> None:
    store = LabStore(":memory:")
    run_id = save_replay(store, golden[1])
    with pytest.raises(KeyError, match=run_id):
        load_replay(store, "run_nope")


def _gunzip(src: Path, dst: Path) -> Path:
    with gzip.open(src) as f, open(dst, "wb") as out:
        shutil.copyfileobj(f, out)
    return dst


def test_cli_replay_checks_a_reference_run_and_writes_its_trace(tmp_path: Path, capsys) -> None:
    transcript = _gunzip(FIXTURES / "inputs" / "golden-session.jsonl.gz", tmp_path / "golden.jsonl")
    expected = _gunzip(FIXTURES / "traces" / f"{RUN}.trace.json.gz", tmp_path / "expected.json")
    out = tmp_path / "trace.json"
    db = tmp_path / "lab.duckdb"
    status = main(["replay", str(transcript), "--config", str(expected), "--token-budget", "2000",
                   "--tight-budget", "600", "--summarizer", "stub-v1", "--trace-out", str(out),
                   "--check", str(expected), "--db", str(db)])  # fmt: skip
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "identical to" in printed and printed.startswith("run_")
    trace = json.loads(out.read_text())
    assert trace["trace_format"] == "lcref-trace-v1" and trace["totals"]["final_stored_tokens"] == 1394
    with LabStore(db) as store:
        assert latest_run_id(store) == printed.split()[0]


def test_cli_replay_reports_a_difference(tmp_path: Path, capsys) -> None:
    transcript = _gunzip(FIXTURES / "inputs" / "golden-session.jsonl.gz", tmp_path / "golden.jsonl")
    expected = _gunzip(FIXTURES / "traces" / f"{RUN}.trace.json.gz", tmp_path / "expected.json")
    # A different threshold changes the run, so the check must fail with a readable diff.
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**load_trace(RUN)["plugin_config"], "contextThreshold": 0.5}))
    status = main(["replay", str(transcript), "--config", str(config), "--token-budget", "2000", "--summarizer",
                   "stub-v1", "--check", str(expected), "--no-save", "--db", str(tmp_path / "lab.duckdb")])  # fmt: skip
    assert status == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_cli_replay_bad_config_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    transcript = _gunzip(FIXTURES / "inputs" / "golden-session.jsonl.gz", tmp_path / "golden.jsonl")
    config = tmp_path / "config.json"
    config.write_text('{"freshTailCount": 4,\n "leafChunkTokens": }')
    assert main(["replay", str(transcript), "--config", str(config), "--db", str(tmp_path / "lab.duckdb")]) == 2
    assert "config.json:2: not valid JSON" in capsys.readouterr().err


def test_cli_replay_recompacts_an_lcm_db_conversation(tmp_path: Path, capsys) -> None:
    db = Path(__file__).parent / "fixtures" / "lcm-db-versions" / "lcm-v0.15.3.db.gz"
    if not db.exists():
        pytest.skip("lcm-db-versions fixtures not bundled")
    status = main(["replay", str(db), "--conversation", "1", "--token-budget", "2000", "--summarizer", "stub-v1",
                   "--db", str(tmp_path / "lab.duckdb")])  # fmt: skip
    printed = capsys.readouterr().out
    assert status == 0 and "golden-session" in printed


def test_replay_continues_from_recorded_lcm_db_state(tmp_path: Path) -> None:
    db = Path(__file__).parent / "fixtures" / "lcm-db-versions" / "lcm-v0.15.3.db.gz"
    if not db.exists():
        pytest.skip("lcm-db-versions fixtures not bundled")
    from lcm_lab.loading.dispatch import load_lcm_db

    store = LabStore(":memory:")
    load_lcm_db(db, store)
    conversation_id = store.fetch_all("SELECT conversation_id FROM messages GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")[0][0]
    conversation = store.conversation(int(conversation_id))
    assert conversation.summaries and conversation.context_items
    recorded_tokens = sum(
        (next(m.token_count for m in conversation.stored_messages if m.seq == i.ref) if i.kind == "message"
         else next(s.token_count for s in conversation.summaries if s.summary_id == i.ref))
        for i in conversation.context_items
    )  # fmt: skip
    result = replay(conversation, LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000), StubV1Summarizer(),
                    token_budget=4000, from_recorded=True)  # fmt: skip
    first = result.turns[0]
    assert first.stored_tokens_before == recorded_tokens
    assert first.should_compact and first.final_tokens < recorded_tokens  # after the post-turn drain (deferred)
    assert {s.summary_id for s in conversation.summaries} <= {s.summary_id for s in result.summaries}


def test_saved_deferred_replay_rebuilds_the_same_model_contexts(tmp_path: Path) -> None:
    from reference_sets import load_trace as load_set_trace
    from reference_sets import replay_of

    from lcm_lab.engine.replay.trace import CanonicalJson, sent_record, summary_keys
    from lcm_lab.store.replays import replay_sent_df

    expected = load_set_trace("deferred", "synth-2__C2-tight")
    result = replay_of(expected, tmp_path)
    store = LabStore(":memory:")
    run_id = save_replay(store, result)
    rebuilt = load_replay(store, run_id)
    assert rebuilt.turns == result.turns  # drains, debt snapshots and clocks round-trip
    canonical = CanonicalJson(summary_keys(result))
    for k in range(len(result.turns)):
        assert sent_record(rebuilt.sent(k), canonical) == sent_record(result.sent(k), canonical)
    assert sent_record(rebuilt.sent(None, 2000), canonical) == sent_record(result.sent(None, 2000), canonical)
    rows = replay_sent_df(store, run_id)
    assert len(rows) == len(result.turns) + 1 and rows["turn"].iloc[-1] == -1
    assert list(rows["path"][:-1]) == [r["path"] for r in expected["engine_assembled_per_turn"]]
    assert int(rows["degraded"].sum()) == expected["totals"]["deferred"]["degraded_turns"]
    mode = store.fetch_all("SELECT compaction_mode, final_stored_tokens FROM replays WHERE run_id = ?", [run_id])
    assert mode == [("deferred", expected["totals"]["final_stored_tokens"])]


@pytest.mark.parametrize("reference_set", ["engine", "deferred"])
def test_cli_checks_the_engine_level_and_deferred_fields(reference_set: str, tmp_path: Path, capsys) -> None:
    run = "synth-1__C2-tight"
    transcript = _gunzip(FIXTURES / "inputs" / "synth-1.jsonl.gz", tmp_path / "synth-1.jsonl")
    expected = _gunzip(FIXTURES.parent / f"reference-runs-{reference_set}" / "traces" / f"{run}.trace.json.gz",
                       tmp_path / "expected.json")  # fmt: skip
    out = tmp_path / "trace.json"
    status = main(["replay", str(transcript), "--config", str(expected), "--token-budget", "8000",
                   "--tight-budget", "2000", "--summarizer", "stub-v1", "--trace-out", str(out),
                   "--check", str(expected), "--no-save", "--db", str(tmp_path / "lab.duckdb")])  # fmt: skip
    printed = capsys.readouterr().out
    assert status == 0, printed
    mode = "inline" if reference_set == "engine" else "deferred"
    assert f"({mode} compaction)" in printed and "identical to" in printed
    trace = json.loads(out.read_text())
    assert len(trace["engine_assembled_per_turn"]) == trace["turn_count"] == 34
    assert len(trace["engine_assembled"]) == 2 and trace["engine_assembled"][1]["tokenBudget"] == 2000
    assert ("drain" in trace["turns"][0]) == (reference_set == "deferred")
