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
