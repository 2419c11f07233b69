"""Export writes the schema of the engine a run used: a 1.0 run gives an lcm.db with 1.0's schema
(equal to the reference file's tables, columns, indexes), which the lab's own 1.0 loader accepts."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest
from conftest import FIXTURES, gunzip_to

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.io.lcmdb import V1_TABLES, count_rows
from lcm_lab.io.lcmdb_export import export_lcm_db, has_fts5
from lcm_lab.io.lcmdb_rows import read_lcmdb_rows
from lcm_lab.loading.dispatch import load_lcm_db
from lcm_lab.metrics.doctor import diagnose
from lcm_lab.store import LabStore
from lcm_lab.summarizers import get_summarizer

SYNTH = FIXTURES / "lcm-db-v1" / "synth-1__C2-tight.db.gz"
TIGHT = LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400, condensed_target_tokens=300)


@pytest.fixture(scope="module")
def v1_run() -> Replay:
    """A run labelled 1.0 built from what 1.0 wrote (until the 1.0 engine lands): the loaded synth-1
    conversation replayed from its recorded state, ``engine`` set to 1.0."""
    with LabStore(":memory:") as lab:
        load_lcm_db(SYNTH, lab)
        conversation = lab.conversation(1)
    run = replay(conversation, TIGHT, get_summarizer("stub-v1"), token_budget=8000, from_recorded=True)
    assert run.summaries and any(s.kind == "condensed" for s in run.summaries)
    return dataclasses.replace(run, engine="1.0")


def master(path: Path) -> set[tuple[str, str, str, str | None]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return set(con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall())


def columns(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Per table: (name, type, notnull, default, pk) of every column."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: [tuple(r[1:]) for r in con.execute(f'PRAGMA table_info("{t}")')] for t in tables}


def test_1_0_run_exports_the_reference_1_0_schema(v1_run: Replay, tmp_path: Path) -> None:
    out = tmp_path / "v1.db"
    result = export_lcm_db(v1_run, out)
    assert result.schema == "1.0"
    if not has_fts5():
        pytest.skip("this SQLite has no FTS5: the export leaves the FTS tables out, as the plugin does")
    reference = gunzip_to(SYNTH, tmp_path)
    assert columns(out) == columns(reference)  # every table with its columns (name, type, not null, default, key)
    assert master(out) == master(reference)  # and the exact DDL of tables, indexes, FTS5 tables
    with sqlite3.connect(f"file:{out}?mode=ro", uri=True) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        message_columns = {r[1] for r in con.execute("PRAGMA table_info(messages)")}
        assert "openclaw_sender_metadata" not in message_columns
        assert "conversation_bootstrap_state" not in {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        # the pending, receipt and anchor tables exist and are empty (see lcm_lab.io.lcmdb_export)
        assert {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in V1_TABLES} == dict.fromkeys(V1_TABLES, 0)


def test_exported_1_0_file_is_accepted_by_the_1_0_loader_and_doctor(v1_run: Replay, tmp_path: Path) -> None:
    out = tmp_path / "v1.db"
    export_lcm_db(v1_run, out)
    with sqlite3.connect(f"file:{out}?mode=ro", uri=True) as con:
        expected = count_rows(con)
    assert set(V1_TABLES) <= set(expected)
    with LabStore(":memory:") as lab:
        result = load_lcm_db(out, lab)
        assert result.status == "loaded" and not result.warnings, result.warnings
        assert result.details["lcm_version"] == "1.0"
        assert result.details["rows"] == {("summary_sources" if t == "summary_parents" else t): n for t, n in expected.items()}
        back = lab.conversation(1)
    assert [(m.seq, m.role, m.content, m.token_count) for m in back.stored_messages] == [
        (m.seq, m.role, m.content, m.token_count) for m in v1_run.messages
    ]
    assert {s.summary_id: (s.kind, s.depth, s.content, s.source_summary_ids, s.source_message_seqs) for s in back.summaries} == {
        s.summary_id: (s.kind, s.depth, s.content, s.source_summary_ids, s.source_message_seqs) for s in v1_run.summaries
    }
    assert back.context_items == v1_run.final_context
    assert not [f for f in diagnose(read_lcmdb_rows(out)) if f.severity == "error"]


def test_0_15_3_run_of_the_same_data_keeps_the_0_15_3_schema(v1_run: Replay, tmp_path: Path) -> None:
    out = tmp_path / "v0153.db"
    result = export_lcm_db(dataclasses.replace(v1_run, engine="0.15.3"), out)
    assert result.schema == "0.15.3"
    tables = set(columns(out))
    assert "conversation_bootstrap_state" in tables and not tables & set(V1_TABLES)
    assert any(c[0] == "openclaw_sender_metadata" for c in columns(out)["messages"])


def test_an_unknown_engine_is_an_error_and_writes_nothing(v1_run: Replay, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no lcm.db schema for engine '2.0'; known: 0.15.3, 1.0"):
        export_lcm_db(dataclasses.replace(v1_run, engine="2.0"), tmp_path / "x.db")
    assert list(tmp_path.iterdir()) == []
