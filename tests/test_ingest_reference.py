"""Ingest projection vs. the real lossless-claw engine on every reference input.

Always on: the in-repo traces (``messages[]``, ``large_files[]``) of one run per input.
Deep: the ``lcm.db`` each run wrote (bundled in tests/fixtures/reference-runs/lcm-dbs.tar.xz) — every ``messages``,
``message_parts`` and ``large_files`` column the projection produces, byte for byte, with the
plugin's random file ids canonicalised.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import reference_db

from lcm_lab.engine.ingest.identity import identity_hash
from lcm_lab.engine.ingest.message import IngestResult, is_persistable, to_stored_message
from lcm_lab.engine.types import LargeFile, StoredMessage

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "reference-runs"
FILE_ID = re.compile(r"\bfile_[a-f0-9]{16}\b", re.I)

# input file → one run whose trace/db shows the ingested rows (ingest does not depend on config).
RUNS = {
    "golden-session": "golden__C1-defaults-32k",
    "before-compaction.v3": "before-compaction__C1-defaults-32k",
    "locomo-conv-0": "locomo-conv-0__C1-defaults-32k",
    "locomo-conv-1": "locomo-conv-1__C1-defaults-32k",
    "synth-1": "synth-1__C1-defaults-32k",
    "synth-2": "synth-2__C1-defaults-32k",
}


def canon(text: str | None) -> str | None:
    return None if text is None else FILE_ID.sub("file_0000000000000000", text)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def messages_of(input_name: str) -> Iterator[dict[str, Any]]:
    with gzip.open(FIXTURES / "inputs" / f"{input_name}.jsonl.gz", "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            entry = json.loads(line)
            if entry.get("type") == "message":
                assert isinstance(entry.get("message"), dict), f"{input_name}: line {number} has no message"
                yield entry["message"]


def ingest_all(input_name: str) -> tuple[list[StoredMessage], list[LargeFile], list[IngestResult]]:
    rows: list[StoredMessage] = []
    files: list[LargeFile] = []
    skipped: list[IngestResult] = []
    for message in messages_of(input_name):
        if not is_persistable(message):
            continue
        result = to_stored_message(message, len(rows) + 1)
        if result.stored is None:
            skipped.append(result)
            continue
        rows.append(result.stored)
        files.extend(result.large_files)
    return rows, files, skipped


@pytest.fixture(scope="module")
def ingested() -> dict[str, tuple[list[StoredMessage], list[LargeFile], list[IngestResult]]]:
    return {name: ingest_all(name) for name in RUNS}


def load_trace(run_id: str) -> dict[str, Any]:
    with gzip.open(FIXTURES / "traces" / f"{run_id}.trace.json.gz", "rt", encoding="utf-8") as handle:
        return json.load(handle)


@pytest.mark.parametrize("input_name", sorted(RUNS))
def test_rows_match_reference_trace(input_name: str, ingested: dict) -> None:
    rows, files, _ = ingested[input_name]
    trace = load_trace(RUNS[input_name])
    expected = trace["messages"]
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected, strict=True):
        content = canon(row.content)
        assert content is not None
        got = {
            "seq": row.seq,
            "role": row.role,
            "token_count": row.token_count,
            "content_sha256": sha(content),
            "content_chars": len(row.content),
            "created_at": row.created_at,
            "transcript_entry_id": row.transcript_entry_id,
            "sender": row.sender_metadata,
            "stable_event_key": row.stable_event_key,
            "parts": len(row.parts),
        }
        assert got == {k: want[k] for k in got}, f"seq {row.seq}"
        if "content_canonical" in want:
            assert content == want["content_canonical"]
    want_files = trace["large_files"]
    got_files = [
        {
            "file_id": canon(f.file_id),
            "file_name": f.file_name,
            "mime_type": f.mime_type,
            "byte_size": f.byte_size,
            "line_count": f.line_count,
            "exploration_summary_sha256": sha(canon(f.exploration_summary) or ""),
        }
        for f in files
    ]
    assert got_files == want_files


def test_skips_match_reference(ingested: dict) -> None:
    # synth-2 holds one empty stopReason:"error" assistant; before-compaction has 13 of them.
    skipped = {name: [r.skip_reason for r in result[2]] for name, result in ingested.items()}
    assert skipped["synth-2"] == ["error-or-aborted-empty-assistant"]
    assert skipped["before-compaction.v3"] == ["error-or-aborted-empty-assistant"] * 13
    assert all(not skipped[name] for name in ("golden-session", "locomo-conv-0", "locomo-conv-1", "synth-1"))


def test_large_tool_output_externalised(ingested: dict) -> None:
    for name in ("synth-1", "synth-2"):
        rows, files, _ = ingested[name]
        outputs = [r for r in rows if r.content.startswith("[LCM Tool Output: ")]
        assert len(outputs) == 1, name
        assert outputs[0].role == "tool" and outputs[0].token_count < 400
        assert [f.file_name for f in files].count("exec.txt") == 1


# -- deep comparison with the real lcm.db -----------------------------------------------------


@pytest.fixture(scope="module")
def db_dir() -> Path:
    return reference_db(RUNS["golden-session"]).parent


def canon_row(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(canon(v) if isinstance(v, str) else v for v in values)


@pytest.mark.parametrize("input_name", sorted(RUNS))
def test_rows_parts_and_files_match_reference_db(input_name: str, ingested: dict, db_dir: Path) -> None:
    rows, files, _ = ingested[input_name]
    with sqlite3.connect(f"file:{db_dir / (RUNS[input_name] + '.db')}?mode=ro", uri=True) as db:
        db_rows = db.execute(
            "SELECT message_id, seq, role, content, token_count, identity_hash, openclaw_sender_metadata,"
            " transcript_entry_id, created_at, stable_event_key, large_content FROM messages"
            " WHERE conversation_id = 1 ORDER BY seq"
        ).fetchall()
        assert len(rows) == len(db_rows)
        for row, db_row in zip(rows, db_rows, strict=True):
            message_id, *want = db_row
            got = (
                row.seq,
                row.role,
                canon(row.content),
                row.token_count,
                # The plugin hashed its own random file ids; check the hash function on its content.
                identity_hash(row.role, db_row[3]),
                row.sender_metadata,
                row.transcript_entry_id,
                row.created_at,
                row.stable_event_key,
                row.large_content,
            )
            assert got == canon_row(tuple(want)), f"{input_name} seq {row.seq}"
            if not FILE_ID.search(db_row[3]):
                assert row.identity_hash == db_row[5]
            db_parts = db.execute(
                "SELECT part_type, ordinal, text_content, tool_call_id, tool_name, tool_input, tool_output,"
                " metadata FROM message_parts WHERE message_id = ? ORDER BY ordinal",
                (message_id,),
            ).fetchall()
            got_parts = [
                canon_row(
                    (
                        p.part_type,
                        p.ordinal,
                        p.text_content,
                        p.tool_call_id,
                        p.tool_name,
                        p.tool_input,
                        p.tool_output,
                        p.metadata,
                    )
                )
                for p in row.parts
            ]
            assert got_parts == [canon_row(p) for p in db_parts], f"{input_name} seq {row.seq} parts"
        db_files = db.execute(
            "SELECT file_id, file_name, mime_type, byte_size, line_count, exploration_summary"
            " FROM large_files ORDER BY rowid"
        ).fetchall()
    got_files = [
        canon_row((f.file_id, f.file_name, f.mime_type, f.byte_size, f.line_count, f.exploration_summary))
        for f in files
    ]
    assert got_files == [canon_row(f) for f in db_files]


def test_file_ids_are_deterministic_and_distinct(ingested: dict) -> None:
    _, files, _ = ingested["synth-1"]
    again = ingest_all("synth-1")[1]
    assert [f.file_id for f in files] == [f.file_id for f in again]
    assert len({f.file_id for f in files}) == len(files)
    assert all(FILE_ID.fullmatch(f.file_id) for f in files)
