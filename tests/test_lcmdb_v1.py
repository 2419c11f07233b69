"""lcm.db files written by lossless-claw 1.0: version detection, every table loaded with sqlite3's
counts, the file's bytes unchanged, and pending (unpublished) summaries kept apart from the DAG."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from conftest import FIXTURES, gunzip_to, sqlite_counts, unpacked

from lcm_lab.io.lcmdb import LCM_TABLES, V1_TABLES, read_lcmdb_schema
from lcm_lab.io.lcmdb_version import RELEASES_0X, detect_version
from lcm_lab.loading.dispatch import format_table, load_lcm_db
from lcm_lab.store import LabStore
from lcm_lab.store.lcmdb_import import BACKENDS

V1_DBS = sorted((FIXTURES / "lcm-db-v1").glob("*.db.gz"))
SYNTH = FIXTURES / "lcm-db-v1" / "synth-1__C2-tight.db.gz"
LAB_NAME = {"summary_parents": "summary_sources"}
READY_NODE_SOURCE = "src=b3d25e3a649d"  # only in the one prepared, unpublished node of synth-1


def lab_counts(lab: LabStore, source_id: int) -> dict[str, int]:
    out = {}
    for table in LCM_TABLES:
        name = LAB_NAME.get(table, table)
        where = ("source_id = ?" if name in ("conversations", "turn_advancements")
                 else "conversation_id IN (SELECT conversation_id FROM conversations WHERE source_id = ?)")  # fmt: skip
        out[name] = int(lab.fetch_all(f"SELECT count(*) FROM {name} WHERE {where}", [source_id])[0][0])
    return out


def schema_of(path: Path) -> object:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return read_lcmdb_schema(conn, str(path))
    finally:
        conn.close()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_both_reference_files_are_present() -> None:
    assert [p.name for p in V1_DBS] == ["locomo-conv-0__C2-tight.db.gz", "synth-1__C2-tight.db.gz"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("gz", V1_DBS, ids=lambda p: p.name.removesuffix(".db.gz"))
def test_v1_file_loads_every_table_with_sqlite_counts_and_stays_byte_identical(
    gz: Path, backend: str, store: LabStore, tmp_path: Path
) -> None:
    db = gunzip_to(gz, tmp_path)
    before, gz_before = sha256(db), sha256(gz)  # sha256 of the file before and after the load
    expected = sqlite_counts(db)
    assert set(V1_TABLES) <= set(expected)  # every 1.0 table is counted, empty ones included
    assert expected["pending_summary_nodes"] > 0 and expected["turn_advancements"] > 0
    result = load_lcm_db(db, store, backend=backend)
    assert result.status == "loaded" and not result.warnings, result.warnings
    assert result.details["lcm_version"] == "1.0" and result.details["backend"] == backend
    assert lab_counts(store, result.source_id) == {LAB_NAME.get(t, t): n for t, n in expected.items()}
    assert sha256(db) == before and sha256(gz) == gz_before
    assert sorted(p.name for p in tmp_path.iterdir()) == [db.name]  # no -wal/-shm/-journal left behind
    # 1.0 stores no sender metadata: the lab's column is empty, and the notes say why
    assert store.fetch_all("SELECT count(sender_metadata) FROM messages")[0][0] == 0
    assert any("1.0 no longer stores it" in n for n in result.details["schema_notes"])


def test_the_gz_file_itself_loads_unchanged_and_says_1_0(store: LabStore) -> None:
    before = sha256(SYNTH)
    result = load_lcm_db(SYNTH, store)
    assert result.status == "loaded" and result.details["lcm_version"] == "1.0"
    assert sha256(SYNTH) == before
    again = load_lcm_db(SYNTH, store)  # identical content: nothing added, the version still shown
    assert again.status == "unchanged" and again.as_json()["lcm_version"] == "1.0"
    assert "lcm_db 1.0" in format_table([result, again])


def test_version_detection_names_every_release_fixture_and_1_0(tmp_path: Path) -> None:
    for gz in sorted((FIXTURES / "lcm-db-versions").glob("*.db.gz")):
        tag = gz.name.removeprefix("lcm-v").removesuffix(".db.gz")
        version = schema_of(gunzip_to(gz, tmp_path)).version  # type: ignore[attr-defined]
        assert version.includes(tag) and not version.is_v1, (tag, version)
        assert not version.includes("1.0")
    for gz in V1_DBS:
        version = schema_of(gunzip_to(gz, tmp_path)).version  # type: ignore[attr-defined]
        assert version.label == "1.0" and version.includes("1.0") and not version.upgraded_from_0x
        assert not any(version.includes(r) for r in RELEASES_0X)
    # the 0.15.3 reference runs were written by main after the v0.15.3 tag (the engine the lab replays)
    reference = sorted(unpacked("reference-runs/lcm-dbs").glob("*.db"))[0]
    assert schema_of(reference).version.label == "0.15.3+"  # type: ignore[attr-defined]


def test_version_ranges_follow_the_first_release_of_each_marker() -> None:
    core = {"conversations": ("conversation_id",), "messages": ("message_id",), "summaries": ("summary_id",)}
    assert detect_version(core).label == "0.1.2–0.1.4"
    with_key = {**core, "conversations": ("conversation_id", "session_key")}
    assert detect_version(with_key).label == "0.4.0"
    newest = {**core, "messages": ("message_id", "openclaw_sender_metadata")}
    assert detect_version(newest).label == "0.15.2–0.15.3"
    upgraded = {**newest, "pending_compaction_batches": ("batch_id",)}
    assert detect_version(upgraded).label == "1.0" and detect_version(upgraded).upgraded_from_0x
    assert "upgraded from a 0.x file" in detect_version(upgraded).describe()


def test_pending_nodes_never_look_like_published_summaries(store: LabStore) -> None:
    result = load_lcm_db(SYNTH, store)
    (conversation_id,) = [int(c) for c in store.conversations_df()["conversation_id"]]
    # the summary DAG is exactly the canonical summaries: 23, no pending node among them
    conversation = store.conversation(conversation_id)
    assert len(conversation.summaries) == result.summaries == 23
    assert not any(s.summary_id.startswith("psn_") for s in conversation.summaries)
    assert not any(READY_NODE_SOURCE in s.content for s in conversation.summaries)
    assert len(store.summaries_df(conversation_id)) == 23
    # recall (lcm_grep) over the loaded conversation does not find the unpublished node's text
    from lcm_lab.recall_tools.api import recall

    tools = recall(conversation_id, store)
    assert tools.grep(READY_NODE_SOURCE, scope="both").total_matches == 0
    leaves = int((store.summaries_df(conversation_id)["kind"] == "leaf").sum())
    assert tools.grep("SUMMARY kind=leaf", scope="summaries").total_matches == leaves == 18  # control: it does search
    # ...but every node stays inspectable, published or not
    pending = store.pending_summaries_df(conversation_id)
    assert len(pending) == 19 and int(pending["published"].sum()) == 18
    published = pending[pending["published"]]
    assert published["content"].isna().all()  # 1.0 clears a promoted node's content by design
    assert set(published["canonical_summary_id"]) <= set(store.summaries_df(conversation_id)["summary_id"])
    (ready,) = pending[~pending["published"]].itertuples()
    assert ready.status == "ready" and ready.batch_status == "planning" and READY_NODE_SOURCE in ready.content
    assert ready.source_messages == 7 and pd.isna(ready.canonical_summary_id)
    # receipts are one per committed turn, found through the conversation's session
    receipts = store.read_df("turn_advancements", conversation_id)
    assert len(receipts) == 34 and int(receipts["message_count"].sum()) == 191


def test_transcript_anchor_tables_load_when_they_have_rows(store: LabStore, tmp_path: Path) -> None:
    """The reference files leave them empty (nothing read a transcript): rows crafted the 1.0 way."""
    db = gunzip_to(SYNTH, tmp_path)
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO message_transcript_anchor_trust (message_id, conversation_id, transcript_entry_id, trust_state, source)"
        " SELECT message_id, conversation_id, 'e' || seq, 'verified', 'test' FROM messages WHERE seq <= 3"
    )
    conn.execute(
        "INSERT INTO conversation_transcript_epochs (conversation_id, session_id, session_key, frontier_entry_id,"
        " frontier_seq, migration_mode) SELECT conversation_id, session_id, session_key, 'e3', 3, 'verified' FROM conversations"
    )
    conn.commit()
    conn.close()
    copy = shutil.copy(db, tmp_path / "copy.db")
    result = load_lcm_db(db, store)
    assert result.status == "loaded" and not result.warnings
    (conversation_id,) = [int(c) for c in store.conversations_df()["conversation_id"]]
    anchors = store.read_df("message_transcript_anchor_trust", conversation_id)
    assert list(anchors["seq"]) == [1, 2, 3] and set(anchors["trust_state"]) == {"verified"}
    epochs = store.read_df("conversation_transcript_epochs", conversation_id)
    assert list(epochs["frontier_seq"]) == [3] and list(epochs["migration_mode"]) == ["verified"]
    assert sha256(db) == sha256(Path(copy))
