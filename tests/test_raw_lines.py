"""Raw source lines kept by transcript readers live in ``raw_lines`` (one row per line), not in
``conversations.meta``; stores built before the table have theirs moved there by m012."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FIXTURES

from lcm_lab.io.transcripts.claude_code import read_claude_code_jsonl
from lcm_lab.loading.dispatch import load
from lcm_lab.store import LabStore

CC_MINI = FIXTURES / "transcripts" / "claude-code-mini.jsonl"


def _main_cid(store: LabStore) -> int:
    return int(store.fetch_all("SELECT min(conversation_id) FROM conversations")[0][0])


def test_raw_lines_round_trip_a_claude_code_load_and_leave_the_meta(tmp_path: Path) -> None:
    expected = read_claude_code_jsonl(CC_MINI).conversations[0].meta["raw_entries"]
    with LabStore(tmp_path / "lab.duckdb") as store:
        (result,) = load(CC_MINI, store, progress=False)
        assert result.status == "loaded", result.error
        cid = _main_cid(store)
        rows = store.raw_lines_df(cid)
        assert {int(line): json.loads(raw) for line, raw in zip(rows["line"], rows["raw"], strict=True)} == {
            int(line): raw for line, raw in expected.items()
        }
        metas = [json.loads(m) for (m,) in store.fetch_all("SELECT meta FROM conversations") if m is not None]
        assert metas and all("raw_entries" not in meta for meta in metas)


def test_every_conversation_of_a_file_has_its_own_raw_lines(tmp_path: Path) -> None:
    read = read_claude_code_jsonl(CC_MINI)
    expected = sorted(len(item.meta["raw_entries"]) for item in read.conversations)
    with LabStore(tmp_path / "lab.duckdb") as store:
        load(CC_MINI, store, progress=False)
        counts = dict(store.fetch_all("SELECT conversation_id, count(*) FROM raw_lines GROUP BY ALL"))
        cids = [cid for (cid,) in store.fetch_all("SELECT conversation_id FROM conversations")]
        assert sorted(counts.get(cid, 0) for cid in cids) == expected


def test_a_store_from_before_the_table_has_raw_entries_moved_out_of_the_meta(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with LabStore(path) as store:
        load(CC_MINI, store, progress=False)
        cid = _main_cid(store)
        moved = {int(line): json.loads(raw) for line, raw in store.fetch_all("SELECT line, raw FROM raw_lines WHERE conversation_id = ?", [cid])}
        (meta_text,) = store.fetch_all("SELECT meta FROM conversations WHERE conversation_id = ?", [cid])[0]
        old_meta = dict(json.loads(meta_text), raw_entries={str(line): raw for line, raw in moved.items()})
        # as the previous schema left it: raw entries in the meta, no table, no record of m012
        store.execute("UPDATE conversations SET meta = ? WHERE conversation_id = ?", [json.dumps(old_meta), cid])
        store.execute("DROP TABLE raw_lines")
        store.execute("DELETE FROM schema_migrations WHERE name = 'm012_raw_lines'")
    with LabStore(path) as store:
        assert "m012_raw_lines" in store.applied_migrations
        back = {int(line): json.loads(raw) for line, raw in store.fetch_all("SELECT line, raw FROM raw_lines WHERE conversation_id = ?", [cid])}
        assert back == moved
        (meta_text,) = store.fetch_all("SELECT meta FROM conversations WHERE conversation_id = ?", [cid])[0]
        assert "raw_entries" not in json.loads(meta_text)


def test_a_grown_session_file_appends_the_raw_lines_of_its_new_lines_only(tmp_path: Path) -> None:
    lines = CC_MINI.read_text().splitlines(keepends=True)
    session = tmp_path / "session.jsonl"
    session.write_text("".join(lines[:10]))
    query = "SELECT line, raw FROM raw_lines ORDER BY ALL"
    with LabStore(tmp_path / "grown.duckdb") as grown:
        assert [r.status for r in load(session, grown, progress=False)] == ["loaded"]
        before = grown.fetch_all(query)
        session.write_text("".join(lines))  # the host appended the rest of the session
        assert [r.status for r in load(session, grown, progress=False)] == ["appended"]
        after = grown.fetch_all(query)
    with LabStore(tmp_path / "fresh.duckdb") as fresh:
        load(session, fresh, progress=False)
        expected = fresh.fetch_all(query)
    assert set(before) < set(after)  # the earlier lines kept, the new ones added...
    assert after == expected  # ...each once: the same rows as loading the grown file afresh
