"""``lcm-lab doctor``: every marker format found in hand-made lcm.db files, nothing in clean ones,
structural breakage reported as errors, exit codes, and read-only on every bundled lcm.db."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, gunzip_to, unpacked

from lcm_lab.cli import main
from lcm_lab.io.lcmdb_rows import read_lcmdb_rows
from lcm_lab.metrics.doctor import CHECKS, diagnose
from lcm_lab.metrics.markers import MARKERS

REPO = Path(__file__).resolve().parents[1]

# A current-schema subset of the plugin's DDL (spec §1.2): the tables the doctor reads.
SCHEMA = """
CREATE TABLE conversations (conversation_id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
  session_key TEXT, title TEXT, created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE messages (message_id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id INTEGER NOT NULL,
  seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, token_count INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE summaries (summary_id TEXT PRIMARY KEY, conversation_id INTEGER NOT NULL, kind TEXT NOT NULL,
  depth INTEGER NOT NULL DEFAULT 0, content TEXT NOT NULL, token_count INTEGER NOT NULL,
  source_message_token_count INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL DEFAULT (datetime('now')),
  file_ids TEXT NOT NULL DEFAULT '[]', model TEXT NOT NULL DEFAULT 'unknown');
CREATE TABLE summary_messages (summary_id TEXT NOT NULL, message_id INTEGER NOT NULL, ordinal INTEGER NOT NULL,
  PRIMARY KEY (summary_id, message_id));
CREATE TABLE summary_parents (summary_id TEXT NOT NULL, parent_summary_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
  PRIMARY KEY (summary_id, parent_summary_id));
CREATE TABLE context_items (conversation_id INTEGER NOT NULL, ordinal INTEGER NOT NULL, item_type TEXT NOT NULL,
  message_id INTEGER, summary_id TEXT, created_at TEXT NOT NULL DEFAULT (datetime('now')),
  PRIMARY KEY (conversation_id, ordinal));
"""

CLEAN_LEAF = "Decided to keep the retry loop in src/net/client.py; tests pass.\nExpand for details about: retry timings"

# Every marker format of spec §5.9 (all versions), as the plugin writes it.
MARKER_CONTENTS: dict[str, str] = {
    "truncation-fallback": "[2026-01-01 10:00 UTC | user]\nplease check item 1\n[Truncated from 18 tokens]",
    "directive-omitted-fallback": (
        "ok so far [LCM fallback summary omitted directive-shaped untrusted content]. more\n"
        "[LCM fallback summary; directive-shaped untrusted content omitted]\n[Truncated from 640 tokens]"
    ),
    "summarizer-fallback": "source prefix text\n[LCM fallback summary; truncated for context management]",
    "legacy-emergency-fallback": "old source prefix\n[Truncated for context management]",
    "capped-summary": "long summary text\n[Capped from 7311 tokens to ~7200]",
    "directive-omitted-inline": "a [LCM fallback summary omitted directive-shaped untrusted content]. b\n[Truncated from 90 tokens]",
}
CAP_VARIANTS = ("text\n[Capped to ~600]", "text\n[Capped]")
EMPTY_SOURCE_FALLBACK = "[Truncated from 0 tokens]"


def build_db(path: Path, summaries: list[dict[str, Any]], *, extra_sql: str = "") -> Path:
    """One conversation with 4 messages; each summary dict is a leaf over messages 1-2 unless
    it says otherwise; all summaries go into the context after the two tail messages."""
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.execute("INSERT INTO conversations (conversation_id, session_id) VALUES (1, 'sess-1')")
    for seq in range(1, 5):
        con.execute(
            "INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count) VALUES (?, 1, ?, ?, ?, 400)",
            (seq, seq, "user" if seq % 2 else "assistant", f"message {seq} about src/app.py"),
        )
    ordinal = 0
    for spec in summaries:
        sid = str(spec["id"])
        kind = str(spec.get("kind", "leaf"))
        con.execute(
            "INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count, model) VALUES (?, 1, ?, ?, ?, ?, ?)",
            (sid, kind, int(spec.get("depth", 0)), str(spec["content"]), int(spec.get("tokens", 20)), str(spec.get("model", "m1"))),
        )
        for i, mid in enumerate(spec.get("messages", [1, 2] if kind == "leaf" else [])):
            con.execute("INSERT INTO summary_messages VALUES (?, ?, ?)", (sid, mid, i))
        for i, parent in enumerate(spec.get("parents", [])):
            con.execute("INSERT INTO summary_parents VALUES (?, ?, ?)", (sid, parent, i))
        if spec.get("in_context", True):
            con.execute("INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id) VALUES (1, ?, 'summary', ?)", (ordinal, sid))
            ordinal += 1
    for mid in (3, 4):
        con.execute("INSERT INTO context_items (conversation_id, ordinal, item_type, message_id) VALUES (1, ?, 'message', ?)", (ordinal, mid))
        ordinal += 1
    if extra_sql:
        con.executescript(extra_sql)
    con.commit()
    con.close()
    return path


def checks_of(path: Path) -> list[tuple[str | None, str]]:
    return [(f.summary_id, f.check) for f in diagnose(read_lcmdb_rows(path))]


def test_clean_db_has_no_findings(tmp_path: Path) -> None:
    db = build_db(
        tmp_path / "clean.db",
        [
            {"id": "sum_a", "content": CLEAN_LEAF, "in_context": False},
            {"id": "sum_b", "content": CLEAN_LEAF, "messages": [3], "in_context": False},
            {"id": "sum_c", "kind": "condensed", "depth": 1, "content": "Condensed: kept retry loop.", "parents": ["sum_a", "sum_b"]},
        ],
    )
    assert checks_of(db) == []
    assert main(["doctor", str(db)]) == 0


@pytest.mark.parametrize("check", sorted(MARKER_CONTENTS))
def test_every_marker_format_is_found(tmp_path: Path, check: str) -> None:
    db = build_db(tmp_path / f"{check}.db", [{"id": "sum_x", "content": MARKER_CONTENTS[check]}])
    assert ("sum_x", check) in checks_of(db)


def test_marker_table_covers_spec_formats() -> None:
    assert {m.check for m in MARKERS} == set(MARKER_CONTENTS)


@pytest.mark.parametrize("content", CAP_VARIANTS)
def test_all_cap_suffix_variants(tmp_path: Path, content: str) -> None:
    db = build_db(tmp_path / "cap.db", [{"id": "sum_x", "content": content}])
    assert ("sum_x", "capped-summary") in checks_of(db)


def test_empty_source_fallback_and_emergency_model(tmp_path: Path) -> None:
    db = build_db(
        tmp_path / "e.db",
        [
            {"id": "sum_empty_src", "content": EMPTY_SOURCE_FALLBACK},
            {"id": "sum_emerg", "content": "prefix\n[LCM fallback summary; truncated for context management]", "model": "emergency-fallback"},
        ],
    )
    found = checks_of(db)
    assert ("sum_empty_src", "truncation-fallback") in found
    assert ("sum_emerg", "emergency-fallback-model") in found
    assert ("sum_emerg", "summarizer-fallback") in found


def test_content_problems(tmp_path: Path) -> None:
    b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk" * 6
    db = build_db(
        tmp_path / "c.db",
        [
            {"id": "sum_empty", "content": "   \n"},
            {"id": "sum_think", "content": "<think>I should summarise the work.</think>"},
            {"id": "sum_think2", "content": "[thinking] planning the summary"},
            {"id": "sum_tool", "content": 'Result: {"type":"toolResult","toolCallId":"call_1","content":"ls output"}'},
            {"id": "sum_part", "content": "Tool output (exec):\na.txt\nb.txt"},
            {"id": "sum_b64", "content": f"Screenshot data {b64} end"},
            {"id": "sum_dataurl", "content": "img data:image/png;base64,iVBORw0KGgoAAAANSUhEUg== shown"},
            {"id": "sum_big", "content": "x", "tokens": 900},
        ],
    )
    found = set(checks_of(db))
    assert {
        ("sum_empty", "empty-summary"),
        ("sum_think", "reasoning-only-summary"),
        ("sum_think2", "reasoning-only-summary"),
        ("sum_tool", "leaked-tool-output"),
        ("sum_part", "leaked-tool-output"),
        ("sum_b64", "leaked-base64"),
        ("sum_dataurl", "leaked-base64"),
        ("sum_big", "summary-larger-than-source"),
    } <= found
    assert not any(sid == "sum_think" and c == "empty-summary" for sid, c in found)


def test_structural_errors(tmp_path: Path) -> None:
    db = build_db(
        tmp_path / "s.db",
        [
            {"id": "sum_leaf", "content": CLEAN_LEAF, "in_context": False},
            {"id": "sum_c1", "kind": "condensed", "depth": 1, "content": "c1", "parents": ["sum_c2"]},
            {"id": "sum_c2", "kind": "condensed", "depth": 1, "content": "c2", "parents": ["sum_c1", "sum_leaf"]},
            {"id": "sum_ghost_src", "kind": "condensed", "depth": 1, "content": "g", "parents": ["sum_missing"]},
            {"id": "sum_nosrc", "content": "leaf without sources", "messages": []},
            {"id": "sum_badmsg", "content": "leaf over a missing message", "messages": [99]},
            {"id": "sum_lost", "content": CLEAN_LEAF, "in_context": False},
        ],
        extra_sql="""
        INSERT INTO context_items (conversation_id, ordinal, item_type, message_id) VALUES (1, 50, 'message', 77);
        INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id) VALUES (1, 51, 'summary', 'sum_nowhere');
        INSERT INTO context_items (conversation_id, ordinal, item_type, message_id) VALUES (9, 0, 'message', 1);
        """,
    )
    found = checks_of(db)
    by_check = {c for _, c in found}
    assert {"cyclic-dag", "broken-link", "leaf-without-sources", "orphaned-context-item", "unreachable-summary"} <= by_check
    assert ("sum_ghost_src", "broken-link") in found
    assert ("sum_badmsg", "broken-link") in found
    assert ("sum_nosrc", "leaf-without-sources") in found
    assert ("sum_lost", "unreachable-summary") in found
    assert ("sum_nowhere", "orphaned-context-item") in found
    assert sum(1 for _, c in found if c == "cyclic-dag") == 1
    severities = {f.check: f.severity for f in diagnose(read_lcmdb_rows(db))}
    assert severities["cyclic-dag"] == "error" and severities["unreachable-summary"] == "info"


def test_a_cycle_through_an_empty_id_says_the_id_is_empty(tmp_path: Path) -> None:
    """A self-loop on the summary id ``''`` read as evidence ``->``, naming nothing."""
    db = build_db(tmp_path / "e.db", [{"id": "", "kind": "condensed", "depth": 1, "content": "c", "parents": [""]}])
    (cycle,) = [f for f in diagnose(read_lcmdb_rows(db)) if f.check == "cyclic-dag"]
    assert cycle.evidence == "'' -> '' (the id '' is empty)"
    assert main(["doctor", str(db), "--fail-on", "error"]) == 1  # an error finding


def test_negative_token_counts_are_their_own_finding(tmp_path: Path) -> None:
    """A count below zero is something the plugin never writes; it was reported as a summary
    larger than its source ("-500 tokens from -2000 source tokens"). Now each is an error naming
    the rows, and no size comparison is made with it."""
    db = build_db(
        tmp_path / "n.db",
        [
            {"id": "sum_neg", "content": CLEAN_LEAF, "tokens": -500},
            {"id": "sum_over_neg", "content": CLEAN_LEAF, "tokens": 30, "messages": [1, 3]},
            {"id": "sum_big", "content": CLEAN_LEAF, "tokens": 5000, "messages": [2, 4]},
        ],
        extra_sql="UPDATE messages SET token_count = -2000 WHERE message_id IN (1, 3);",
    )
    found = [(f.summary_id, f.check, f.evidence) for f in diagnose(read_lcmdb_rows(db))]
    assert (None, "negative-token-count", "message_id 1 (-2000), message_id 3 (-2000)") in found
    assert ("sum_neg", "negative-token-count", "token_count -500") in found
    assert ("sum_big", "summary-larger-than-source", "5000 tokens from 800 source tokens") in found
    larger = [sid for sid, check, _ in found if check == "summary-larger-than-source"]
    assert larger == ["sum_big"]  # not sum_neg (-500 over a negative source), not sum_over_neg
    assert CHECKS["negative-token-count"] == "error"


def test_load_and_replay_warn_once_about_negative_token_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only ``doctor`` said that an lcm.db holds negative token counts; ``load`` (both backends) and
    ``replay`` took them silently. Each now gives one warning counting them, as doctor finds them."""
    db = gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE messages SET token_count = -7 WHERE message_id IN (SELECT message_id FROM messages LIMIT 5)")
    con.execute("UPDATE summaries SET token_count = -1 WHERE summary_id = (SELECT min(summary_id) FROM summaries)")
    con.commit()
    con.close()
    expected = (f"warning: {db}: token_count is negative in 5 messages and 1 summary: lossless-claw never writes a "
                "count below zero, so the file was changed by something else, and budgets and size checks built on "
                "it mean nothing; `lcm-lab doctor` on the file names the rows (negative-token-count)")
    runs = [["load", "--backend", "scanner", "--db", str(tmp_path / "a.duckdb")],
            ["load", "--backend", "sqlite3", "--db", str(tmp_path / "b.duckdb")],
            ["replay", "--no-save", "--token-budget", "8000"]]
    for argv in runs:
        assert main([*argv, str(db)]) == 0
        said = [line.strip() for line in capsys.readouterr().err.splitlines() if "negative" in line]
        assert said == [expected], (argv, said)
    findings = [f for f in diagnose(read_lcmdb_rows(db)) if f.check == "negative-token-count"]
    assert sorted(f.summary_id is None for f in findings) == [False, True]  # the same rows, one by one
    assert "and 2 more messages" in next(f.evidence for f in findings if f.summary_id is None)


def test_cli_output_json_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = build_db(tmp_path / "m.db", [{"id": "sum_x", "content": MARKER_CONTENTS["capped-summary"]}])
    assert main(["doctor", str(db), "--json"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        {
            "conversation_id": 1,
            "session_id": "sess-1",
            "summary_id": "sum_x",
            "check": "capped-summary",
            "severity": "warning",
            "evidence": "[Capped from 7311 tokens to ~7200]",
        }
    ]
    assert main(["doctor", str(db)]) == 1
    header, rule, row = capsys.readouterr().out.strip().splitlines()
    assert header.split() == ["conversation_id", "session_id", "summary_id", "check", "severity", "evidence"]
    assert row.split(maxsplit=5) == ["1", "sess-1", "sum_x", "capped-summary", "warning", "[Capped from 7311 tokens to ~7200]"]
    assert main(["doctor", str(db), "--csv"]) == 1
    assert capsys.readouterr().out.splitlines()[1] == "1,sess-1,sum_x,capped-summary,warning,[Capped from 7311 tokens to ~7200]"
    assert main(["doctor", str(db), "--fail-on", "error"]) == 0
    capsys.readouterr()
    not_db = tmp_path / "notes.txt"
    not_db.write_text("hello")
    assert main(["doctor", str(not_db)]) == 2
    assert "not a SQLite database" in capsys.readouterr().err
    assert main(["doctor", str(tmp_path / "missing.db")]) == 2
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    assert main(["doctor", str(other)]) == 2
    assert "not a lossless-claw lcm.db (missing tables" in capsys.readouterr().err


def test_every_check_has_a_severity(capsys: pytest.CaptureFixture[str]) -> None:
    assert set(CHECKS.values()) <= {"error", "warning", "info"}
    assert main(["doctor", "--list-checks"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(CHECKS) + 2  # header and rule
    assert main(["doctor"]) == 2


def test_runs_read_only_on_every_bundled_lcm_db(tmp_path: Path) -> None:
    dbs = sorted(FIXTURES.glob("lcm-db-versions/*.db.gz")) + sorted(unpacked("reference-runs/lcm-dbs").glob("*.db"))
    assert len(dbs) > 30
    expected = {  # from the reference-runs inventory (fallback / capped counts per run)
        "before-compaction__C2-tight": {"truncation-fallback": 7},
        "before-compaction__C6-deep-reachable": {"truncation-fallback": 9},
        "synth-1__C2-tight": {"truncation-fallback": 2, "capped-summary": 1},
        "synth-2__C2-tight": {"capped-summary": 1},
    }
    for gz in dbs:
        plain = tmp_path / gz.name.removesuffix(".gz")
        if gz.suffix == ".gz":
            with gzip.open(gz, "rb") as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            shutil.copyfile(gz, plain)
        before = hashlib.sha256(plain.read_bytes()).hexdigest()
        listing_before = sorted(p.name for p in tmp_path.iterdir())
        findings = diagnose(read_lcmdb_rows(plain))
        assert hashlib.sha256(plain.read_bytes()).hexdigest() == before, gz.name
        assert sorted(p.name for p in tmp_path.iterdir()) == listing_before, f"side files created for {gz.name}"
        assert not [f for f in findings if f.severity == "error"], (gz.name, findings[:3])
        run = gz.name.removesuffix(".gz").removesuffix(".db")
        for check, count in expected.get(run, {}).items():
            assert sum(1 for f in findings if f.check == check) == count, (run, check)
        plain.unlink()
