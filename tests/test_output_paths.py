"""Where a command writes what the user asked for (a report, a trace, a Markdown page): absent or
a regular file, replaced whole with its permissions; anything else refused before a byte is
written (before: a report over a FIFO or a link replaced it with a private 0600 file, and a
directory was named by the temporary file's path)."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from lcm_lab.cli import main
from lcm_lab.errors import OutputError
from lcm_lab.io.atomic import write_text_atomic

FIXTURE = Path(__file__).parent / "fixtures" / "transcripts"


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()


def _link(path: Path) -> None:
    (path.parent / "real.html").write_text("kept")
    path.symlink_to(path.parent / "real.html")


def _dangling(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere" / "x.html")


def _socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays


@pytest.mark.parametrize(("make", "said"), [(_fifo, r"a named pipe \(FIFO\)"), (_directory, "a directory"), (_link, "a symbolic link"),
                                            (_dangling, "a symbolic link"), (_socket, "a socket")])  # fmt: skip
def test_what_is_not_a_file_is_refused_and_left_as_it_was(tmp_path: Path, make: Callable[[Path], None], said: str) -> None:
    target = tmp_path / "out.html"
    make(target)
    before = os.lstat(target)
    with pytest.raises(OutputError, match=said):
        write_text_atomic(target, "<p>new</p>")
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file left
    if make is _link:
        assert (tmp_path / "real.html").read_text() == "kept"


def test_a_replaced_file_keeps_its_permissions_and_a_new_one_follows_the_umask(tmp_path: Path) -> None:
    kept = tmp_path / "kept.html"
    kept.write_text("old")
    kept.chmod(0o640)
    write_text_atomic(kept, "new")
    assert kept.read_text() == "new" and stat.S_IMODE(kept.stat().st_mode) == 0o640
    previous = os.umask(0o027)
    try:
        fresh = write_text_atomic(tmp_path / "fresh.html", "x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640  # 0666 less the umask, not mkstemp's 0600


def test_replay_refuses_a_trace_path_before_it_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    session = next(iter(sorted(FIXTURE.glob("*.jsonl"))))
    code = main(["replay", "--db", str(tmp_path / "lab.duckdb"), "--trace-out", str(fifo), "--no-save", str(session)])
    out, err = capsys.readouterr()
    assert code == 2 and "a named pipe (FIFO), not a file" in err and len(err.strip().splitlines()) == 1
    assert "turns" not in out  # refused before the replay ran
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_notebooks_copies_what_is_missing_and_never_writes_through_a_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lcm_lab.bundled import notebooks_path

    names = sorted(p.name for p in notebooks_path().glob("*.ipynb"))
    target = tmp_path / "books"
    target.mkdir()
    elsewhere = tmp_path / "elsewhere" / "planted.ipynb"  # a dangling link: exists() is False for it
    (target / names[0]).symlink_to(elsewhere)
    (target / names[1]).write_text("mine")
    assert main(["notebooks", str(target)]) == 0
    out = capsys.readouterr().out
    assert not elsewhere.exists() and (target / names[0]).is_symlink()
    assert (target / names[1]).read_text() == "mine" and out.count("(exists, left as it is)") == 2
    assert all((target / name).stat().st_size > 0 for name in names[2:])


# -- outputs over the command's own inputs, and over data files of the user's -----------------------

SESSION = FIXTURE / "branched.v3.jsonl"


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *needles: str) -> str:
    """Run ``lcm-lab ARGV``: exit 2 and one line on stderr holding every needle; returns stdout."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert all(needle in err for needle in needles), err
    return out


def _no_temporaries(directory: Path) -> None:
    assert [p.name for p in directory.iterdir() if p.name.startswith(".")] == []


@pytest.fixture()
def replayed(tmp_path: Path) -> Path:
    """A store holding one replay of ``SESSION`` (for ``report``)."""
    db = tmp_path / "lab.duckdb"
    assert main(["replay", str(SESSION), "--token-budget", "2000", "--db", str(db)]) == 0
    return db


def test_an_output_is_never_a_file_the_command_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``replay X --trace-out X`` replaced the transcript it replayed, ``validate-metrics -o L
    --locomo L`` its own input: the same file, by its path, a hard link, or an input that is no
    data file by its content (a config, a reference trace) is refused before any work."""
    import gzip
    import shutil

    session, config, locomo = tmp_path / "session.jsonl", tmp_path / "config.json", tmp_path / "locomo.json"
    shutil.copyfile(SESSION, session)
    config.write_text("{}\n")
    with gzip.open(FIXTURE / "locomo10-samples-0-1.json.gz") as src, locomo.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    trace = tmp_path / "trace.json"
    replay = ["replay", str(session), "--token-budget", "2000", "--no-save", "--db", str(tmp_path / "lab.duckdb")]
    assert main([*replay, "--trace-out", str(trace)]) == 0
    capsys.readouterr()
    (tmp_path / "linked.jsonl").hardlink_to(session)
    (tmp_path / "linked.json").hardlink_to(config)
    files = (session, config, locomo, trace)
    before = {path: _sha(path) for path in files}
    cases = [
        ([*replay, "--trace-out", str(session)], str(session)),
        ([*replay, "--trace-out", str(tmp_path / "linked.jsonl")], str(session)),
        ([*replay, "--config", str(config), "--trace-out", str(tmp_path / "linked.json")], str(config)),
        ([*replay, "--check", str(trace), "--trace-out", str(trace)], str(trace)),
        (["validate-metrics", "--locomo", str(locomo), "--no-coding", "-o", str(locomo)], str(locomo)),
    ]
    for argv, source in cases:
        out = _refused(capsys, argv, "the same file as the input", source, "never writes an output over a file it reads")
        assert "turns" not in out and "written" not in out  # refused before the work
    assert {path: _sha(path) for path in files} == before
    _no_temporaries(tmp_path)


def test_a_data_file_of_yours_is_never_replaced_by_an_output(tmp_path: Path, replayed: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``report -o lcm.db`` replaced an lcm.db with HTML: an SQLite database, a gzip file or a
    transcript is a data file of the user's, whichever command writes over it (the library too)."""
    import gzip
    import shutil

    import lcm_lab as lab
    from lcm_lab.store import LabStore
    from lcm_lab.store.replays import latest_run_id, load_replay

    victims = {"lcm.db": "an SQLite database", "notes.jsonl.gz": "a gzip file", "session.jsonl": "a pi-jsonl transcript",
               "locomo.json": "a locomo-json transcript"}  # fmt: skip
    with gzip.open(Path(__file__).parent.parent / "datasets" / "lcm-db" / "lcm-v0.15.3.db.gz") as src:
        (tmp_path / "lcm.db").write_bytes(src.read())
    (tmp_path / "notes.jsonl.gz").write_bytes(gzip.compress(b"my notes\n"))
    shutil.copyfile(SESSION, tmp_path / "session.jsonl")
    (tmp_path / "locomo.json").write_bytes(gzip.decompress((FIXTURE / "locomo10-samples-0-1.json.gz").read_bytes()))
    before = {name: _sha(tmp_path / name) for name in victims}
    with LabStore(replayed) as store:
        run = load_replay(store, latest_run_id(store) or "")
    for name, said in victims.items():
        target = str(tmp_path / name)
        _refused(capsys, ["report", "--db", str(replayed), "-o", target], said, "a data file of yours")
        _refused(capsys, ["replay", str(SESSION), "--token-budget", "2000", "--no-save", "--db", str(replayed),
                          "--trace-out", target], said)  # fmt: skip
        with pytest.raises(OutputError, match=said):
            lab.write_report(run, target)
    assert {name: _sha(tmp_path / name) for name in victims} == before
    _no_temporaries(tmp_path)


def test_the_labs_own_earlier_outputs_are_replaced_as_before(tmp_path: Path, replayed: Path) -> None:
    """A report, a trace (both engines) and a Markdown page written again replace the earlier
    one: none of them reads as a data file of the user's."""
    page, report = tmp_path / "page.md", tmp_path / "report.html"
    for attempt in ("first", "second"):
        assert main(["report", "--db", str(replayed), "-o", str(report), "--title", attempt]) == 0
        assert attempt in report.read_text()
        for engine in ("0.15.3", "1.0"):
            trace = tmp_path / f"trace-{engine}.json"
            assert main(["replay", str(SESSION), "--token-budget", "2000", "--no-save", "--db", str(replayed),
                         "--engine", engine, "--label", attempt, "--trace-out", str(trace)]) == 0  # fmt: skip
            assert trace.stat().st_size > 0
        write_text_atomic(page, f"# {attempt}\n\n| a | b |\n|---|---|\n")
        assert page.read_text().startswith(f"# {attempt}")
