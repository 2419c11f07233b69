"""Crafted lcm.db files whose values lossless-claw never writes: ``load`` (both backends) and
``doctor`` end in one line naming the table, exit 2, and the file is unchanged.

Each case takes the 0.15.3 fixture, drops its triggers and rebuilds a table without its
constraints where the value needs it (SQLite would refuse a NULL ``seq`` otherwise).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, gunzip_to
from faults import sha256

from lcm_lab.cli import main

_UNCONSTRAINED = ("CREATE TABLE m2 AS SELECT * FROM messages", "DROP TABLE messages", "ALTER TABLE m2 RENAME TO messages")
_REAL_COUNT = ("values of the wrong type in number columns (messages.token_count 217 row(s); the first: "
               "messages.token_count of message_id 1 is real 12.7)")  # fmt: skip
_TEXT_NUMBERS = ("values of the wrong type in number columns (messages.seq 1 row(s), summaries.depth 2 row(s); the "
                 "first: messages.seq of message_id 7 is text 'x')")  # fmt: skip

# case -> (statements run on the copy, what load's line says, what doctor's line says)
CASES = {
    "token count past 32 bits": (
        ["UPDATE messages SET token_count = 9223372036854775807"], "table messages holds a value the lab cannot store",
        None,  # the doctor reads it as a number: nothing wrong to say
    ),
    "NULL seq": (
        [_UNCONSTRAINED[0], "UPDATE m2 SET seq = NULL WHERE rowid = 1", *_UNCONSTRAINED[1:]],
        "table messages holds a value the lab cannot store", "table messages holds a value of the wrong type (seq is NULL)",
    ),
    "repeated message ids": (
        [_UNCONSTRAINED[0], "INSERT INTO m2 SELECT * FROM m2", *_UNCONSTRAINED[1:]],
        "table messages holds a value the lab cannot store", None,
    ),
    "blob content": (
        [_UNCONSTRAINED[0], "UPDATE m2 SET content = X'DEADBEEF' WHERE rowid = 1", *_UNCONSTRAINED[1:]],
        None, "table messages holds a value of the wrong type (content is a blob)",
    ),
    "messages of another shape": (
        ["DROP TABLE messages", "CREATE TABLE messages(a, b, c)", "INSERT INTO messages VALUES (1, 2, 3)"],
        "not a lossless-claw lcm.db (table messages has no message_id", "not a lossless-claw lcm.db (table messages has no",
    ),
    "summaries of another shape": (
        ["DROP TABLE summaries", "CREATE TABLE summaries(a, b, c)"],
        "not a lossless-claw lcm.db (table summaries has no", "not a lossless-claw lcm.db (table summaries has no",
    ),
    # SQLite keeps what its INTEGER affinity cannot convert without loss; the stdlib reader's
    # Arrow column read 12.7 as 12, silently (and the replay ran on those counts)
    "a real token count": (["UPDATE messages SET token_count = 12.7"], _REAL_COUNT, _REAL_COUNT),
    "text in integer columns": (
        ["UPDATE summaries SET depth = 'deep' WHERE rowid <= 2", "UPDATE messages SET seq = 'x' WHERE message_id = 7"],
        _TEXT_NUMBERS, _TEXT_NUMBERS,
    ),
    "no summary_parents": (["DROP TABLE summary_parents"], None, "not an lcm.db (missing tables: summary_parents)"),
}


def _crafted(tmp_path: Path, statements: list[str]) -> Path:
    db = gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", tmp_path)
    con = sqlite3.connect(db)
    for (trigger,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        con.execute(f'DROP TRIGGER "{trigger}"')
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()
    return db


def _one_line(capsys: pytest.CaptureFixture[str], needle: str) -> None:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert needle in err, err


@pytest.mark.parametrize("backend", ["scanner", "sqlite3"])
@pytest.mark.parametrize("case", [c for c, (_, load_says, _) in CASES.items() if load_says])
def test_load_refuses_values_the_plugin_never_writes(
    case: str, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    statements, load_says, _ = CASES[case]
    db = _crafted(tmp_path, statements)
    before = sha256(db)
    assert load_says is not None
    assert main(["load", "--backend", backend, "--db", str(tmp_path / "lab.duckdb"), str(db)]) == 2
    _one_line(capsys, load_says)
    assert sha256(db) == before
    # the failed file left nothing behind: the store still loads a good file
    (tmp_path / "good").mkdir()
    good = gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.14.0.db.gz", tmp_path / "good")
    assert main(["load", "--backend", backend, "--db", str(tmp_path / "lab.duckdb"), str(good)]) == 0


@pytest.mark.parametrize("case", [c for c, (_, _, doctor_says) in CASES.items() if doctor_says])
def test_doctor_names_the_value(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    statements, _, doctor_says = CASES[case]
    db = _crafted(tmp_path, statements)
    before = sha256(db)
    assert main(["doctor", str(db)]) == 2
    assert doctor_says is not None
    _one_line(capsys, doctor_says)
    assert sha256(db) == before


def test_a_huge_token_count_is_a_finding_for_the_doctor_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _crafted(tmp_path, CASES["token count past 32 bits"][0])
    assert main(["doctor", str(db)]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


def test_a_gzip_bomb_is_not_decompressed_to_the_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An SQLite header and 200 MB of zeros in 200 KB of gzip: refused once the copy passes the
    ratio cap (64 MB here), where it filled the temporary directory before."""
    import gzip

    from lcm_lab.io import sqlite_read

    bomb = tmp_path / "lcm.db.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        out.write(b"SQLite format 3\x00" + b"\x00" * 84)
        zeros = b"\x00" * (1 << 20)
        for _ in range(200):
            out.write(zeros)
    assert bomb.stat().st_size * sqlite_read.MAX_GUNZIP_RATIO < 200 << 20
    for command in (["doctor", str(bomb)], ["load", "--db", str(tmp_path / "lab.duckdb"), str(bomb)]):
        assert main(command) == 2
        _one_line(capsys, "decompresses to more than 200 times its size")


@pytest.mark.parametrize("backend", ["scanner", "sqlite3"])
@pytest.mark.parametrize("value", ["not json", "5", '{"a": 1}', "null"])
def test_file_ids_that_are_no_json_array_are_said(
    value: str, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # they were read as no file without a word
    db = _crafted(tmp_path, [f"UPDATE summaries SET file_ids = '{value}' WHERE rowid = (SELECT min(rowid) FROM summaries)"])
    assert main(["load", "--backend", backend, "--db", str(tmp_path / "lab.duckdb"), str(db)]) == 0
    err = capsys.readouterr().err
    assert "summaries.file_ids of sum_" in err and "is not a JSON array of file ids" in err, err
    assert err.count("is not a JSON array") == 1  # one summary, one warning


@pytest.mark.parametrize("backend", ["scanner", "sqlite3"])
def test_a_role_the_schema_refuses_is_kept_with_one_warning_and_a_doctor_finding(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``role = 'developer'`` breaks the messages table's CHECK: lossless-claw never writes it but
    reads it back as it is (assembly and the leaf header use the stored role), so the lab keeps
    it and says so; before, neither load, replay nor doctor said a word."""
    db = _crafted(tmp_path, ["PRAGMA ignore_check_constraints = ON",
                             "UPDATE messages SET role = 'developer' WHERE message_id IN (4, 9)"])  # fmt: skip
    said = (f"warning: {db}: messages.role holds a value the table's CHECK does not allow (system, user, assistant, "
            "tool): 'developer' in 2 row(s) (the first: message_id 4); lossless-claw never writes one but reads it "
            "back as it is, and so does the lab")  # fmt: skip
    store = tmp_path / "lab.duckdb"
    assert main(["load", "--backend", backend, "--db", str(store), str(db)]) == 0
    assert [line.strip() for line in capsys.readouterr().err.splitlines() if "messages.role" in line] == [said]
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT role, count(*) FROM messages WHERE role = 'developer' GROUP BY 1").fetchall() == [("developer", 2)]
    assert main(["replay", "--no-save", str(db)]) == 0
    assert [line for line in capsys.readouterr().err.splitlines() if "messages.role" in line] == [said]
    assert main(["doctor", str(db), "--json"]) == 1
    (finding,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (finding["check"], finding["severity"]) == ("unknown-message-role", "error")
    assert finding["evidence"] == "role 'developer' (the schema allows system, user, assistant, tool) in 2 message(s): message_id 4, 9"
