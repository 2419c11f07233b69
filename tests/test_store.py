"""The lab store: location, migrations, reads in pandas and polars, the SQL token estimator."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import ContextItem, Conversation, InputEntry, StoredMessage, StoredPart, Summary
from lcm_lab.io.model import LoadedConversation, QAItem, RecordedEvent
from lcm_lab.store import LabStore, default_store_path, open_store
from lcm_lab.store import migrations as migration_registry
from lcm_lab.store.sources import add_source
from lcm_lab.store.write_loaded import insert_loaded

M001_TABLES = {
    "sources", "conversations", "messages", "message_parts", "summaries", "summary_sources", "summary_messages",
    "context_items", "large_files", "entries", "recorded_events", "qa_items",
}


def test_default_location_is_dot_lcm_lab_under_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LCM_LAB_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_store_path() == tmp_path / ".lcm_lab" / "lab.duckdb"
    with open_store(None) as lab:
        assert Path(lab.path) == tmp_path / ".lcm_lab" / "lab.duckdb"
    assert (tmp_path / ".lcm_lab" / "lab.duckdb").is_file()


def test_lcm_lab_home_overrides_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LCM_LAB_HOME", str(tmp_path / "home"))
    with LabStore() as lab:
        assert Path(lab.path) == tmp_path / "home" / "lab.duckdb"


def test_migrations_are_recorded_once_and_reopening_applies_nothing(tmp_path: Path) -> None:
    path = tmp_path / "lab.duckdb"
    with LabStore(path) as first:
        assert "m001_initial" in first.applied_migrations
        tables = {r[0] for r in first.fetch_all("SELECT table_name FROM information_schema.tables")}
        assert M001_TABLES <= tables
        recorded = first.fetch_all("SELECT name FROM schema_migrations ORDER BY name")
    with LabStore(path) as second:
        assert second.applied_migrations == []
        assert second.fetch_all("SELECT name FROM schema_migrations ORDER BY name") == recorded
    names = [m.name for m in migration_registry.discover()]
    assert names == sorted(names) and names[0] == "m001_initial"


def test_failed_migration_rolls_back_and_is_not_recorded(store: LabStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(con: object) -> None:
        store.execute("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("boom")

    monkeypatch.setattr(migration_registry, "discover", lambda: [migration_registry.Migration("m999_broken", broken)])
    with pytest.raises(RuntimeError, match="boom"):
        migration_registry.apply_pending(store.con)
    tables = {r[0] for r in store.fetch_all("SELECT table_name FROM information_schema.tables")}
    assert "half_done" not in tables
    assert not store.fetch_all("SELECT * FROM schema_migrations WHERE name = 'm999_broken'")


TOKEN_VECTORS = {
    "Hello world": 3, "你好世界": 6, "こんにちは": 8, "カタカナ": 6, "안녕하세요": 8, "🔥🎉💯": 6,
    "Hello 你好 🔥": 7, "": 0, "𠮷": 2, "ＡＢＣ": 5, "、。！": 5,
}


def test_sql_token_macro_matches_plugin_test_vectors(store: LabStore) -> None:
    for text, expected in TOKEN_VECTORS.items():
        assert store.fetch_all("SELECT lcm_estimate_tokens(?)", [text])[0][0] == expected, text


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_sql_token_macro_equals_python_estimator(text: str) -> None:
    with LabStore(":memory:") as lab:
        assert lab.fetch_all("SELECT lcm_estimate_tokens(?)", [text])[0][0] == estimate_tokens(text)


def _stored_conversation() -> LoadedConversation:
    part = StoredPart("text", 0, text_content="hello")
    messages = tuple(
        StoredMessage(seq=i, role="user" if i % 2 else "assistant", content=f"m{i}", token_count=i, parts=(part,))
        for i in range(1, 6)
    )
    leaf_a = Summary("sum_a", "leaf", 0, "A", 1, source_message_seqs=(1, 2))
    leaf_b = Summary("sum_b", "leaf", 0, "B", 1, source_message_seqs=(3,))
    top = Summary("sum_c", "condensed", 1, "C", 1, source_summary_ids=("sum_a", "sum_b"))
    conversation = Conversation(
        session_id="s-1",
        stored_messages=messages,
        summaries=(leaf_a, leaf_b, top),
        context_items=(ContextItem.summary("sum_c"), ContextItem.message(4), ContextItem.message(5)),
    )
    return LoadedConversation(
        conversation,
        events=(RecordedEvent("compaction", 3, "e3", None, "so far", tokens_before=10),),
        qa_items=(QAItem("q1", "what?", "that", 1, evidence=("D1:1",)),),
    )


def _entries_conversation() -> LoadedConversation:
    entries = (
        InputEntry(1, "model_change", None, "a"),
        InputEntry(2, "message", {"role": "user", "content": "hi", "timestamp": 1767261600000}, "b"),
        InputEntry(3, "message", {"role": "bashExecution", "command": "ls", "output": ""}, "c"),
        InputEntry(4, "message", {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}, "d"),
    )
    return LoadedConversation(Conversation(session_id="s-2", entries=entries))


def _load_values(lab: LabStore) -> None:
    with lab.transaction():
        source_id = add_source(lab, path="/x/values", kind="test", status="loaded", loader_version="t")
        insert_loaded(lab, source_id, "/x/values", [_stored_conversation(), _entries_conversation()], kind="test")


def test_reads_come_back_as_pandas_and_polars(store: LabStore) -> None:
    _load_values(store)
    for name in ("conversations", "sources", "messages", "message_parts", "summaries", "summary_sources",
                 "summary_messages", "context_items", "large_files", "entries", "recorded_events", "qa_items"):
        frame = getattr(store, f"{name}_df")()
        assert isinstance(frame, pd.DataFrame)
        assert isinstance(getattr(store, f"{name}_pl")(), pl.DataFrame)
    conversations = store.conversations_df()
    assert list(conversations["message_count"]) == [5, 2]
    assert list(store.messages_df(1)["seq"]) == [1, 2, 3, 4, 5]
    assert store.qa_items_pl()["evidence"].to_list() == [["D1:1"]]


def test_conversation_round_trips_stored_rows_dag_and_context(store: LabStore) -> None:
    _load_values(store)
    original = _stored_conversation().conversation
    rebuilt = store.conversation(1)
    assert rebuilt.session_id == "s-1"
    assert [m.seq for m in rebuilt.stored_messages] == [1, 2, 3, 4, 5]
    assert rebuilt.stored_messages[0].parts == original.stored_messages[0].parts
    assert [(s.summary_id, s.source_message_seqs, s.source_summary_ids) for s in rebuilt.summaries] == [
        ("sum_a", (1, 2), ()), ("sum_b", (3,), ()), ("sum_c", (), ("sum_a", "sum_b")),
    ]
    assert rebuilt.context_items == original.context_items
    assert rebuilt.meta["conversation_id"] == 1


def test_conversation_round_trips_transcript_entries_in_order(store: LabStore) -> None:
    _load_values(store)
    rebuilt = store.conversation(2)
    original = _entries_conversation().conversation.entries
    assert rebuilt.entries == original  # non-message and non-persistable entries included
    assert rebuilt.stored_messages == ()
    messages = store.messages_df(2)
    assert list(messages["role"]) == ["user", "assistant"]  # bashExecution is not a stored role
    assert list(messages["content"]) == ["hi", "yo"]  # projected by the engine's ingest
    assert list(messages["token_estimate"]) == [1, 1]
    assert store.messages_df(2)["created_at"].iloc[0] == "2026-01-01 10:00:00"


def test_unknown_conversation_and_table_are_clear_errors(store: LabStore) -> None:
    with pytest.raises(KeyError, match="no conversation 42"):
        store.conversation(42)
    with pytest.raises(ValueError, match="unknown table"):
        store.read_df("nope")


def test_transaction_rolls_back_on_error(store: LabStore) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        add_source(store, path="/x", kind="test", status="loaded", loader_version="t")
        raise RuntimeError("stop")
    assert store.sources_df().empty


_EXIT_WHILE_RELEASING = """
import sys, time
from lcm_lab.store import LabStore
from lcm_lab.store import core
store = LabStore(sys.argv[1], idle_seconds=0.01)
store.fetch_all("SELECT count(*) FROM conversations")
time.sleep(0.02)  # the idle-release thread is about to close the connection
core._stop_reapers()
print(sum(t.is_alive() for t in core._REAPERS))
"""


def test_idle_release_threads_stop_before_the_interpreter_tears_duckdb_down(tmp_path: Path) -> None:
    # A daemon thread closing DuckDB during interpreter shutdown once aborted a CLI process (exit -6).
    import subprocess
    import sys

    for attempt in range(3):
        done = subprocess.run([sys.executable, "-c", _EXIT_WHILE_RELEASING, str(tmp_path / f"lab{attempt}.duckdb")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "0"
