"""Export a replay as an lcm.db: round trip, schema equality with v0.15.3, integrity, never overwrite."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import DATASETS, FIXTURES, gunzip_to

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.io.lcmdb_export import ExportExistsError, export_lcm_db, has_fts5
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.summarizers import get_summarizer

TIGHT = LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400, condensed_target_tokens=300)


@pytest.fixture(scope="module")
def run() -> Replay:
    """A bundled replay with condensed summaries: the pi coding session at a tight setting."""
    conversation = read_transcript(DATASETS / "pi-mono" / "before-compaction.jsonl").conversations[0].conversation
    result = replay(conversation, TIGHT, get_summarizer("offline"), token_budget=8000)
    assert any(s.kind == "condensed" for s in result.summaries)
    return result


@pytest.fixture(scope="module")
def exported(run: Replay, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("export") / "run.db"
    export_lcm_db(run, path)
    return path


def _master(path: Path) -> set[tuple[str, str, str, str | None]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return set(con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall())


def test_schema_equals_the_bundled_v0153_lcm_db(exported: Path, tmp_path: Path) -> None:
    if not has_fts5():
        pytest.skip("this SQLite has no FTS5: the export leaves the FTS tables out, as the plugin does")
    reference = gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", tmp_path)
    assert _master(exported) == _master(reference)
    with sqlite3.connect(f"file:{exported}?mode=ro", uri=True) as con:
        steps = con.execute("SELECT step_name, algorithm_version FROM lcm_migration_state ORDER BY step_name").fetchall()
    with sqlite3.connect(f"file:{reference}?mode=ro", uri=True) as con:
        assert steps == con.execute("SELECT step_name, algorithm_version FROM lcm_migration_state ORDER BY step_name").fetchall()


def test_exported_file_opens_read_only_with_integrity_and_row_counts(run: Replay, exported: Path) -> None:
    with sqlite3.connect(f"file:{exported}?mode=ro", uri=True) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        count = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in
                 ("conversations", "messages", "message_parts", "summaries", "summary_messages", "summary_parents",
                  "context_items", "large_files")}  # fmt: skip
        assert count["conversations"] == 1
        assert count["messages"] == len(run.messages)
        assert count["message_parts"] == sum(len(m.parts) for m in run.messages)
        assert count["summaries"] == len(run.summaries)
        assert count["summary_messages"] == sum(len(s.source_message_seqs) for s in run.summaries)
        assert count["summary_parents"] == sum(len(s.source_summary_ids) for s in run.summaries) > 0
        assert count["context_items"] == len(run.final_context)
        assert count["large_files"] == len(run.large_files)
        if has_fts5():
            hits = con.execute("SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH 'expand'").fetchone()[0]
            assert hits == sum(1 for s in run.summaries if re.search(r"\bexpand\b", s.content, re.IGNORECASE))
            assert con.execute("SELECT count(*) FROM messages_fts").fetchone()[0] == len(run.messages)


def test_round_trip_through_load_lcm_db(run: Replay, exported: Path, store) -> None:  # type: ignore[no-untyped-def]
    from lcm_lab.loading.dispatch import load_lcm_db

    result = load_lcm_db(exported, store)
    assert result.status == "loaded"
    (conversation_id,) = [int(c) for c in store.conversations_df()["conversation_id"]]
    back = store.conversation(conversation_id)
    def rows(messages):  # type: ignore[no-untyped-def]
        # part ids: the replay has none, the export derives them (the plugin uses random UUIDs)
        return [(m.seq, m.role, m.content, m.token_count, tuple(replace(p, part_id=None) for p in m.parts)) for m in messages]

    assert rows(back.stored_messages) == rows(run.messages)
    assert all(p.part_id for m in back.stored_messages for p in m.parts)
    dag = {s.summary_id: (s.kind, s.depth, s.content, s.token_count, s.source_message_seqs, s.source_summary_ids,
                          s.earliest_at, s.latest_at, s.descendant_count, s.file_ids, s.model) for s in run.summaries}  # fmt: skip
    assert {s.summary_id: (s.kind, s.depth, s.content, s.token_count, s.source_message_seqs, s.source_summary_ids,
                           s.earliest_at, s.latest_at, s.descendant_count, s.file_ids, s.model)
            for s in back.summaries} == dag  # fmt: skip
    assert back.context_items == run.final_context


def test_never_overwrites_and_leaves_no_temp_files(run: Replay, exported: Path) -> None:
    before = exported.read_bytes()
    with pytest.raises(ExportExistsError, match="never overwrites"):
        export_lcm_db(run, exported)
    assert exported.read_bytes() == before
    assert sorted(p.name for p in exported.parent.iterdir()) == ["run.db"]


def test_cli_export_of_a_saved_run(run: Replay, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from lcm_lab.cli import main
    from lcm_lab.store import LabStore
    from lcm_lab.store.replays import save_replay

    db = tmp_path / "lab.duckdb"
    with LabStore(db) as lab:
        run_id = save_replay(lab, run)
    out = tmp_path / "out.db"
    assert main(["export", run_id, "-o", str(out), "--db", str(db), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["summaries"] == len(run.summaries) and Path(counts["path"]) == out
    assert main(["export", run_id, "-o", str(out), "--db", str(db)]) == 2
    assert "never overwrites" in capsys.readouterr().err
