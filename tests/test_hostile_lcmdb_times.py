"""Crafted lcm.db files whose time columns hold values lossless-claw's parser cannot read
('yesterday', a year 99999, a negative number, an empty string, a float, a blob, 30 February):
``load`` (both backends), ``replay``, ``doctor``, ``grep`` and ``describe`` read each as missing
(NULL) with one warning per table and column naming the row, where ``replay`` ended in a
``ValueError`` traceback (exit 1). The spec does not say what the plugin does with such a value
(its parser, src/store/parse-utc-timestamp.ts, yields an invalid date)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, gunzip_to
from faults import sha256

from lcm_lab.cli import main
from lcm_lab.engine.timefmt import readable_time
from lcm_lab.io.lcmdb import ROW_KEYS, TIME_COLUMNS, plain_time_sql, row_key_sql
from lcm_lab.store import LabStore

HOSTILE: list[Any] = ["yesterday", "99999-01-01 00:00:00", -5, "", 1.5, b"\x00\x01", "2026-02-30 10:00:00"]
FILES = {"0.15.3": FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", "1.0": FIXTURES / "lcm-db-v1" / "synth-1__C2-tight.db.gz"}


def _crafted(tmp_path: Path, version: str, only: tuple[str, str] | None = None, value: Any = None) -> tuple[Path, dict[tuple[str, str], tuple[str, Any]]]:
    """A copy of a real lcm.db with the first row's value of every time column (or of ``only``)
    set to a hostile value; returns the file and ``(table, column) -> (row key, value)``."""
    db = gunzip_to(FILES[version], tmp_path)
    con = sqlite3.connect(db)
    set_: dict[tuple[str, str], tuple[str, Any]] = {}
    for table, columns in TIME_COLUMNS.items():
        present = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        first = con.execute(f"SELECT min(rowid) FROM {table}").fetchone() if present else None
        if not first or first[0] is None:
            continue
        for column in columns:
            if column not in present or (only and (table, column) != only):
                continue
            bad = value if only else HOSTILE[len(set_) % len(HOSTILE)]
            con.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (bad, first[0]))
            key = con.execute(f"SELECT {row_key_sql(table)} FROM {table} WHERE rowid = ?", (first[0],)).fetchone()[0]
            set_[(table, column)] = (str(key), bad)
    con.commit()
    con.close()
    return db, set_


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "not a time lossless-claw can read" in line]


@pytest.mark.parametrize("backend", ["scanner", "sqlite3"])
@pytest.mark.parametrize("version", sorted(FILES))
def test_every_time_column_of_every_table_reads_unreadable_values_as_null(
    version: str, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, crafted = _crafted(tmp_path, version)
    assert {t for t, _ in crafted} >= {"conversations", "messages", "summaries", "context_items"}
    if version == "1.0":
        assert {t for t, _ in crafted} >= {"pending_compaction_batches", "pending_summary_nodes", "turn_advancements"}
    before = sha256(db)
    store = tmp_path / "lab.duckdb"
    assert main(["load", "--backend", backend, "--db", str(store), "--json", str(db)]) == 0
    loaded = json.loads(capsys.readouterr().out)
    warnings = _warnings("\n".join(loaded["warning_messages"]))
    assert len(warnings) == len(crafted)  # one per table and column
    for (table, column), (key, _bad) in crafted.items():
        said = [w for w in warnings if f"{table}.{column} of {'/'.join(ROW_KEYS[table])} {key} is " in w]
        assert len(said) == 1 and said[0].endswith("treated as missing (NULL)"), (table, column, warnings)
    assert sha256(db) == before
    with LabStore(store) as lab:
        times = lab.fetch_all("SELECT created_at FROM messages ORDER BY origin_message_id")
        assert times[0][0] is None and all(t is not None for (t,) in times[1:])  # only the crafted row
        summary = crafted[("summaries", "created_at")][0]
        assert lab.fetch_all("SELECT created_at FROM summaries WHERE summary_id = ?", [summary]) == [(None,)]


@pytest.mark.parametrize("value", HOSTILE[:5], ids=["word", "year-99999", "negative-number", "empty", "float"])
def test_replay_doctor_grep_and_describe_read_an_unreadable_message_time_as_missing(
    value: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, crafted = _crafted(tmp_path, "1.0", ("messages", "created_at"), value)
    (key, _), = crafted.values()
    assert main(["replay", str(db), "--no-save", "--token-budget", "8000"]) == 0
    out, err = capsys.readouterr()
    assert "summaries" in out and "Traceback" not in err
    stored = repr(str(value))  # the column's text affinity stores -5 and 1.5 as text
    assert _warnings(err) == [f"warning: {db}: messages.created_at of message_id {key} is {stored}, "
                              f"not a time lossless-claw can read: treated as missing (NULL)"]  # fmt: skip
    assert main(["doctor", str(db)]) == 0
    assert len(_warnings(capsys.readouterr().err)) == 1
    store = str(tmp_path / "lab.duckdb")
    assert main(["load", "--db", store, str(db)]) == 0
    capsys.readouterr()
    assert main(["grep", "--db", store, "(?s).", "--scope", "messages", "--sort", "recency", "--limit", "200", "--json"]) == 0
    hits = {h["id"]: h for h in map(json.loads, capsys.readouterr().out.splitlines())}
    assert hits[key]["createdAt"] is None and sum(h["createdAt"] is None for h in hits.values()) == 1


def test_describe_reads_unreadable_summary_times_as_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, crafted = _crafted(tmp_path, "1.0", ("summaries", "earliest_at"), "yesterday")
    (summary, _), = crafted.values()
    store = str(tmp_path / "lab.duckdb")
    assert main(["load", "--db", store, str(db)]) == 0
    capsys.readouterr()
    assert main(["describe", summary, "--db", store, "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["earliestAt"] is None and described["latestAt"] is not None
    assert main(["replay", str(db), "--from-recorded", "--no-save", "--token-budget", "8000"]) == 0
    assert len(_warnings(capsys.readouterr().err)) == 1


def test_the_fast_path_for_plain_times_accepts_only_what_the_parser_reads() -> None:
    """The SQL predicate that spares the parser the plugin's own two shapes never passes a value
    the parser refuses (it sends days 29 to 31, hour 24, month 0 or 13 and year 0 to the parser)."""
    con = sqlite3.connect(":memory:")
    values = [f"{y}-{m}-{d}{sep}{h}:{mi}:{s}{tail}" for y in ("0000", "0001", "2026", "9999") for m in ("00", "01", "02", "12", "13")
              for d in ("00", "01", "28", "29", "30", "31", "32") for h in ("00", "23", "24") for mi in ("00", "59", "60")
              for s in ("00", "60") for sep, tail in ((" ", ""), ("T", ".000Z"), ("T", ""))]  # fmt: skip
    con.execute("CREATE TABLE t (v)")
    con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in [*values, 5, 1.5, b"2026-01-01 00:00:00"]])
    passed = [v for (v,) in con.execute(f"SELECT v FROM t WHERE {plain_time_sql('v')}")]
    assert passed and all(readable_time(v) for v in passed)
    assert "2026-01-01 23:59:00" in passed and "2026-01-29 23:59:00" not in passed  # a 29th is left to the parser
