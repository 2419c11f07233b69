"""Item 1 of issue 22: a file that is not a lab store, passed as ``--db``, is refused before DuckDB
opens it for writing; its bytes stay the same and nothing appears beside it; nothing downloads."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, gunzip_to
from faults import sha256, tree_state

from lcm_lab.cli import main
from lcm_lab.errors import StoreError, UserError
from lcm_lab.store import LabStore
from lcm_lab.store.opening import NotAStoreError, inspect_store_file


def _lcm_db(directory: Path) -> Path:
    return gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", directory)


def _empty(directory: Path) -> Path:
    path = directory / "empty.duckdb"
    path.touch()
    return path


def _random(directory: Path) -> Path:
    path = directory / "random.duckdb"
    path.write_bytes(os.urandom(100_000))
    return path


def _foreign_duckdb(directory: Path) -> Path:
    path = directory / "theirs.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE measurements AS SELECT range AS x FROM range(1000)")
    con.close()
    return path


def _empty_duckdb(directory: Path) -> Path:
    path = directory / "fresh.duckdb"  # a user's new, empty DuckDB database: adopted and migrated before
    duckdb.connect(str(path)).close()
    return path


def _text(directory: Path) -> Path:
    path = directory / "notes.txt"
    path.write_text("not a database\n" * 100)
    return path


def _damaged_store(directory: Path, keep: Callable[[int], int]) -> Path:
    path = directory / "lab.duckdb"
    LabStore(path, idle_seconds=0).close()
    data = path.read_bytes()
    path.write_bytes(data[: keep(len(data))])
    return path


REFUSED = {
    "lcm.db": (_lcm_db, "a SQLite database"),
    "empty file": (_empty, "an empty file"),
    "random bytes": (_random, "not a DuckDB database"),
    "text file": (_text, "not a DuckDB database"),
    "someone else's DuckDB file": (_foreign_duckdb, "not a lab store"),
    "someone else's empty DuckDB file": (_empty_duckdb, "not a lab store (no tables)"),
    "truncated store": (lambda d: _damaged_store(d, lambda n: n // 2), "damaged"),
    "store cut in its header": (lambda d: _damaged_store(d, lambda n: 5000), "damaged"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
@pytest.mark.parametrize("command", [["ledger"], ["load", "LCMDB"]])
def test_a_file_that_is_not_a_store_is_refused_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          case: str, command: list[str]) -> None:
    make, expected = REFUSED[case]
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    victim = make(victim_dir)
    source = _lcm_db(tmp_path)
    before = tree_state(victim_dir)
    argv = [str(source) if part == "LCMDB" else part for part in command] + ["--db", str(victim)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err and str(victim) in err, err
    assert tree_state(victim_dir) == before  # same bytes, no -wal, no .pre-migration, no build left over


def test_directory_and_dangling_link_as_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger", "--db", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    link = tmp_path / "gone.duckdb"
    link.symlink_to(tmp_path / "missing" / "target.duckdb")
    assert main(["ledger", "--db", str(link)]) == 2
    assert "symbolic link to a missing file" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("command", ["load", "ledger", "report"])
def test_a_store_name_that_is_not_utf8_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """DuckDB takes UTF-8 names only: a byte like 0xff in ``--db`` ended ``load`` in a
    UnicodeEncodeError traceback (the reading commands said there was no store); now every
    command says why, in one line, and nothing is created."""
    db = os.fsdecode(os.fsencode(str(tmp_path)) + b"/bad\xff.duckdb")
    extra = {"load": [str(FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl")], "report": ["-o", str(tmp_path / "r.html")]}
    assert main([command, *extra.get(command, []), "--db", db]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith("DuckDB cannot open a file whose name is not valid UTF-8; give the store another name")
    assert "\\udcff" in line  # the byte is shown escaped, not written raw to the terminal
    assert os.listdir(tmp_path) == []


def test_the_library_raises_a_store_error_a_user_can_catch(tmp_path: Path) -> None:
    lcm = _lcm_db(tmp_path)
    digest = sha256(lcm)
    with pytest.raises(UserError) as info:
        LabStore(lcm)
    assert isinstance(info.value, (StoreError, NotAStoreError))
    assert sha256(lcm) == digest
    assert inspect_store_file(str(tmp_path / "new.duckdb")) == "new"


def test_connections_never_download_extensions(tmp_path: Path) -> None:
    for store in (LabStore(":memory:"), LabStore(tmp_path / "lab.duckdb")):
        settings = store.fetch_all(
            "SELECT current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions')"
        )
        assert settings == [(False, False)]
        # an extension that is not loaded stays unloaded: no silent fetch on first use
        with pytest.raises(duckdb.Error):
            store.fetch_all("SELECT * FROM read_xlsx('nothing.xlsx')")
        store.close()


def test_a_new_store_appears_whole(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "lab.duckdb"
    with LabStore(path) as store:
        assert "m011_replay_engine" in store.applied_migrations
    assert sorted(p.name for p in path.parent.iterdir()) == ["lab.duckdb"]  # built aside, linked, no log
    with LabStore(path) as again:
        assert again.applied_migrations == []


# -- a store written by a newer lcm_lab -------------------------------------------------------------

NEWER = "m099_from_a_newer_lab"
TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz"


@pytest.fixture(scope="module")
def lab_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one loaded conversation, one saved replay and its search index built."""
    from faults import filled_store

    db, run_id = filled_store(tmp_path_factory.mktemp("filled"), TRANSCRIPT)
    assert main(["grep", "the", "--db", str(db)]) in (0, 1)
    return db, run_id


def _newer_store(lab_store: tuple[Path, str], directory: Path, *, log: bool = False) -> Path:
    """A copy of ``lab_store`` as a newer lab leaves it: a migration this lab does not know, with a
    column and a table of its own (checkpointed into the file); with ``log``, one more committed
    change still in the store's write-ahead log (its writer was killed before a checkpoint)."""
    import subprocess
    import sys

    from faults import copy_store

    db = copy_store(lab_store, directory)
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_migrations (name) VALUES (?)", [NEWER])
    con.execute("ALTER TABLE replays ADD COLUMN written_by_newer_lab VARCHAR")
    con.execute("CREATE TABLE newer_lab_things (x INTEGER)")
    con.execute("CHECKPOINT")
    con.close()
    if log:
        subprocess.run([sys.executable, "-c", "import duckdb, os, sys; c = duckdb.connect(sys.argv[1]); "
                        "c.execute('INSERT INTO newer_lab_things VALUES (1)'); os._exit(0)", str(db)], check=True)
        assert Path(f"{db}.wal").exists()
    return db


@pytest.mark.parametrize("log", [False, True], ids=["checkpointed", "with a log"])
@pytest.mark.parametrize("command", [["load", "TRANSCRIPT"], ["replay", "TRANSCRIPT", "--token-budget", "2000",
                                                              "--summarizer", "stub-v1"]], ids=["load", "replay"])
def test_a_store_from_a_newer_lab_is_never_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    lab_store: tuple[Path, str], command: list[str], log: bool) -> None:
    db = _newer_store(lab_store, tmp_path / "store", log=log)
    before = tree_state(db.parent)
    argv = [str(TRANSCRIPT) if part == "TRANSCRIPT" else part for part in command] + ["--db", str(db)]
    assert main(argv) == 2  # before: loaded and replayed into it, exit 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "written by a newer lcm_lab" in err and NEWER in err, err
    assert "upgrade lcm_lab" in err and str(db) in err
    assert tree_state(db.parent) == before  # same bytes, the log not replayed, no .pre-migration


@pytest.mark.parametrize("log", [False, True], ids=["checkpointed", "with a log"])
def test_reading_commands_read_a_newer_labs_store_read_only(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            lab_store: tuple[Path, str], log: bool) -> None:
    db = _newer_store(lab_store, tmp_path / "store", log=log)
    before = tree_state(db.parent)
    for argv in (["ledger"], ["sweeps"], ["grep", "the"], ["ledger", "--json"],
                 ["report", "-o", str(tmp_path / "report.html")]):
        code = main([*argv, "--db", str(db)])
        err = capsys.readouterr().err.strip()
        assert code in (0, 1), err  # grep exits 1 when nothing matches
        assert err.splitlines()[0] == (f"lcm-lab: warning: {db}: the store was written by a newer lcm_lab ({NEWER}); "
                                       "reading it read-only; upgrade lcm_lab to write to it"), err
        assert "Traceback" not in err
    assert (tmp_path / "report.html").stat().st_size > 0
    assert tree_state(db.parent) == before
    with LabStore(db, read_only=True) as store:  # the library reads it the same way
        assert store.newer_migrations == [NEWER] and store.read_only
        assert store.fetch_all("SELECT count(*) FROM replays")[0][0] == 1
    capsys.readouterr()
    from lcm_lab.store.opening import NewerStoreError

    with pytest.raises(NewerStoreError) as info:  # and refuses to open it for writing
        LabStore(db)
    assert info.value.unknown == [NEWER] and isinstance(info.value, StoreError)
    assert tree_state(db.parent) == before


@pytest.mark.parametrize(("change", "expected"), [
    ("DROP TABLE llm_calls", "and it has no table llm_calls that this lab reads"),
    ("ALTER TABLE llm_calls RENAME COLUMN model TO model_name", "and this lab cannot read it (Binder Error"),
], ids=["a table gone", "a column renamed"])
def test_a_newer_labs_store_a_reading_command_cannot_read_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                     lab_store: tuple[Path, str], change: str,
                                                                     expected: str) -> None:
    db = _newer_store(lab_store, tmp_path / "store")
    con = duckdb.connect(str(db))
    con.execute(change)  # what the newer lab's schema did
    con.execute("CHECKPOINT")
    con.close()
    before = tree_state(db.parent)
    assert main(["ledger", "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and "written by a newer lcm_lab" in err.splitlines()[-1], err
    assert expected in err.splitlines()[-1] and "upgrade lcm_lab" in err.splitlines()[-1], err
    assert tree_state(db.parent) == before


# -- a store name holding a line break ----------------------------------------------------------------

FORGING = "lab\nlcm-lab: all good\x1b[2J"  # a line break and an escape sequence in the store's name


@pytest.mark.parametrize("case", ["missing", "directory", "text file", "newer lab"])
def test_a_store_name_with_a_line_break_stays_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          lab_store: tuple[Path, str], case: str) -> None:
    """A newline in ``--db`` was printed raw (in warnings) or as a space (in errors): either way
    the line read as something else. Every message naming the store shows it escaped."""
    if case == "missing":
        db, expected, code = tmp_path / f"{FORGING}.duckdb", "no lab store at", 2
    elif case == "directory":
        db, expected, code = tmp_path / FORGING, "is a directory", 2
        db.mkdir()
    elif case == "text file":
        (tmp_path / FORGING).mkdir()
        db, expected, code = _text(tmp_path / FORGING), "not a DuckDB database", 2
    else:
        db, expected, code = _newer_store(lab_store, tmp_path / FORGING), "written by a newer lcm_lab", 0
    assert main(["ledger", "--db", str(db)]) == code
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert expected in line and "lab\\nlcm-lab: all good\\x1b[2J" in line, err
    assert "\x1b" not in err
