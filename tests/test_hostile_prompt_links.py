"""Symbolic links in prompt directories (issue 22 item 7): ``prompts show`` (and every reader of a
prompt directory) refuses a template linking out of the directory; ``prompts export`` never writes
through a link, dangling or not, and ``--force`` replaces the link itself, never its target."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lcm_lab.cli import main
from lcm_lab.prompts import default_prompt_set

SECRET = "outside the directory: not a prompt\n"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    return secret


def test_show_refuses_a_link_leaving_the_directory(tmp_path: Path, outside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "leaf.tmpl").symlink_to(outside)
    for argv in (["prompts", "show", "leaf", "--prompts", str(prompts)], ["prompts", "list", "--prompts", str(prompts)]):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2 and SECRET.strip() not in out + err
        assert "leaf.tmpl: a symbolic link to" in err and "outside" in err and len(err.strip().splitlines()) == 1
    (prompts / "leaf.tmpl").unlink()
    (prompts / "leaf.tmpl").symlink_to(tmp_path / "nothing.tmpl")
    assert main(["prompts", "show", "leaf", "--prompts", str(prompts)]) == 2
    assert "which does not exist" in capsys.readouterr().err


def test_a_link_inside_the_directory_is_followed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "prompts"
    (prompts / "shared").mkdir(parents=True)
    (prompts / "shared" / "leaf.txt").write_text("Summarize {{.SourceText}} briefly.\n")
    (prompts / "leaf.tmpl").symlink_to(Path("shared") / "leaf.txt")
    assert main(["prompts", "show", "leaf", "--prompts", str(prompts)]) == 0
    assert capsys.readouterr().out == "Summarize {{.SourceText}} briefly.\n"


def test_export_never_writes_through_a_link(tmp_path: Path, outside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "export"
    out_dir.mkdir()
    dangling_target = tmp_path / "created-elsewhere.tmpl"
    (out_dir / "leaf.tmpl").symlink_to(dangling_target)
    (out_dir / "system.tmpl").symlink_to(outside)
    before = _digest(outside)

    assert main(["prompts", "export", str(out_dir)]) == 2
    err = capsys.readouterr().err
    assert "is a symbolic link" in err and "--force" in err
    assert not dangling_target.exists() and _digest(outside) == before
    assert sorted(p.name for p in out_dir.iterdir()) == ["leaf.tmpl", "system.tmpl"]  # nothing half-written

    assert main(["prompts", "export", "--force", str(out_dir)]) == 0
    capsys.readouterr()
    assert not dangling_target.exists() and _digest(outside) == before and outside.read_text() == SECRET
    defaults = default_prompt_set()
    for name in ("leaf", "system", "condensed-d1"):
        written = out_dir / f"{name}.tmpl"
        assert not written.is_symlink() and written.read_text(encoding="utf-8") == defaults[name].text
    assert not [p for p in out_dir.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_export_into_a_fresh_directory_still_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prompts", "export", str(tmp_path / "new")]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 6
    assert (tmp_path / "new" / "leaf.tmpl").stat().st_mode & 0o777 == 0o644


def test_a_fifo_in_a_prompt_directory_is_refused_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    prompts = tmp_path / "prompts"
    prompts.mkdir()
    os.mkfifo(prompts / "leaf.tmpl")  # before: the read blocked for ever (no writer)
    assert main(["prompts", "show", "leaf", "--prompts", str(prompts)]) == 2
    err = capsys.readouterr().err
    assert "leaf.tmpl: a named pipe (FIFO), not a regular file" in err and len(err.strip().splitlines()) == 1


def test_a_template_past_the_size_cap_is_refused_unread(tmp_path: Path) -> None:
    import resource
    import subprocess
    import sys

    from faults import child_env

    from lcm_lab.prompts.promptset import MAX_TEMPLATE_BYTES

    prompts = tmp_path / "prompts"
    prompts.mkdir()
    with (prompts / "leaf.tmpl").open("w") as handle:  # 200 MB: read whole, it took over 600 MB of memory
        for _ in range(20):
            handle.write("A" * 10_000_000)

    def limit() -> None:  # 400 MB of address space: a whole read of the file fails
        resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))

    done = subprocess.run([sys.executable, "-m", "lcm_lab", "prompts", "list", "--prompts", str(prompts)],
                          capture_output=True, text=True, env=child_env(), preexec_fn=limit, timeout=120)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line == (f"lcm-lab prompts: {prompts / 'leaf.tmpl'}: larger than the {MAX_TEMPLATE_BYTES >> 20} MB "
                    "template size cap; not read (a prompt template is a few kilobytes of text)")


def test_a_template_with_windows_line_ends_reads_as_before(tmp_path: Path) -> None:
    from lcm_lab.prompts import load_prompt_set

    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "leaf.tmpl").write_bytes(b"Summarise:\r\n{{.Text}}\rend\n")
    assert load_prompt_set(prompts)["leaf"].text == "Summarise:\n{{.Text}}\nend\n"
