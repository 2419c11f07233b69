"""Paths found in data are confined (issue 22 item 5): a crafted lcm.db whose ``large_files.storage_uri``
names /etc/passwd, a private file elsewhere, a ``../`` escape or a link leaving the payload
directory gets none of it read, printed or copied into the store; a payload inside the
``lcm-files`` directory beside the lcm.db is read as the plugin would (positive control)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import DATASETS

from lcm_lab.cli import main
from lcm_lab.io.data_paths import NOT_ON_DISK, payload_dir, resolve_data_path

PAYLOAD = "payload-inside-lcm-files"
SECRET = "private-secret-outside"


@pytest.fixture
def crafted(tmp_path: Path) -> dict[str, object]:
    """A state directory (lcm.db + lcm-files/) whose large files point everywhere."""
    state, outside = tmp_path / "state", tmp_path / "outside"
    (state / "lcm-files" / "2").mkdir(parents=True)
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(f"{SECRET}\n")
    secret.chmod(0o600)
    (state / "lcm-files" / "2" / "inside.txt").write_text(f"{PAYLOAD}\n")
    (state / "lcm-files" / "2" / "link.txt").symlink_to(secret)
    db = state / "lcm.db"
    with gzip.open(DATASETS / "lcm-db" / "lcm-v0.15.3.db.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    uris = {
        # recorded on the machine that ran the plugin; found again under the local lcm-files/
        "inside": "/home/user/lcm-v0.15.3/lcm-files/2/inside.txt",
        "passwd": "/etc/passwd",
        "absolute": str(secret),
        "dotdot": "../outside/secret.txt",
        "dotdot_in_files": "/home/user/lcm-v0.15.3/lcm-files/../../outside/secret.txt",
        "symlink": str(state / "lcm-files" / "2" / "link.txt"),
    }
    conn = sqlite3.connect(db)
    ids = [r[0] for r in conn.execute("SELECT file_id FROM large_files ORDER BY file_id").fetchall()]
    by_case = dict(zip(uris, ids, strict=False))
    for case, uri in uris.items():
        conn.execute("UPDATE large_files SET storage_uri = ?, mime_type = 'text/plain' WHERE file_id = ?", (uri, by_case[case]))
    conn.commit()
    conn.close()
    return {"db": db, "store": str(tmp_path / "lab.duckdb"), "ids": by_case, "uris": uris}


def test_the_resolver_confines_every_spelling(tmp_path: Path) -> None:
    root = tmp_path / "lcm-files"
    (root / "7").mkdir(parents=True)
    (root / "7" / "a.txt").write_text("a")
    (tmp_path / "elsewhere.txt").write_text("b")
    (root / "7" / "out").symlink_to(tmp_path / "elsewhere.txt")
    assert resolve_data_path(str(root / "7" / "a.txt"), root).path == (root / "7" / "a.txt").resolve()
    assert resolve_data_path("lcm-files/7/a.txt", root).path is not None  # relative to the lcm.db's directory
    assert resolve_data_path("/elsewhere/lcm-files/7/a.txt", root).path is not None  # a copied state directory
    for hostile in ("/etc/passwd", str(tmp_path / "elsewhere.txt"), "lcm-files/../elsewhere.txt", str(root / "7" / "out"),
                    "/x/lcm-files/../../" + str(tmp_path / "elsewhere.txt")):  # fmt: skip
        found = resolve_data_path(hostile, root)
        assert found.path is None and found.problem is not None and "outside the payload directory" in found.problem, hostile
    assert resolve_data_path(str(root / "7" / "missing.txt"), root) == (None, NOT_ON_DISK)
    assert payload_dir(tmp_path / "lcm.db") == tmp_path.absolute() / "lcm-files"


def test_grep_and_describe_read_only_the_payload_directory(crafted: dict, capsys: pytest.CaptureFixture[str]) -> None:
    store, ids, uris = crafted["store"], crafted["ids"], crafted["uris"]
    assert main(["load", "--db", store, str(crafted["db"])]) == 0
    capsys.readouterr()

    assert main(["grep", "--db", store, "--scope", "files", "--json", PAYLOAD]) == 0
    (match,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert match["id"] == ids["inside"]

    for needle in (SECRET, "root:"):
        assert main(["grep", "--db", store, "--scope", "files", needle]) == 0
        out = capsys.readouterr().out
        assert "0 shown of 0 matches" in out and SECRET not in out.split("note:")[0]
        for case in ("passwd", "absolute", "dotdot", "dotdot_in_files", "symlink"):
            assert f"large file {ids[case]} not read: its storage_uri {uris[case]!r} is outside the payload directory" in out

    assert main(["describe", "--db", store, ids["inside"]]) == 0
    assert PAYLOAD in capsys.readouterr().out
    for case in ("passwd", "absolute", "dotdot", "symlink"):
        assert main(["describe", "--db", store, ids[case]]) == 2
        out, err = capsys.readouterr()
        assert SECRET not in out + err and "root:x" not in out + err
        assert "outside the payload directory" in err and ids[case] in err

    import duckdb

    con = duckdb.connect(store, read_only=True)
    try:
        copied = con.execute("SELECT count(*) FROM recall_docs WHERE content LIKE ? OR content LIKE 'root:%'", [f"%{SECRET}%"]).fetchone()
    finally:
        con.close()
    assert copied == (0,)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without read permission")
def test_an_unreadable_payload_inside_is_missing_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "lcm-files"
    root.mkdir()
    private = root / "p.txt"
    private.write_text("x")
    private.chmod(0)
    from lcm_lab.store.recall_index import _read_payload

    assert _read_payload(str(private), root) is None


def test_a_store_indexed_before_confinement_forgets_what_it_copied(crafted: dict, capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    import lcm_lab.store.recall_index as ix
    from lcm_lab.io.data_paths import Resolved

    store, ids = crafted["store"], crafted["ids"]
    assert main(["load", "--db", store, str(crafted["db"])]) == 0
    with monkeypatch.context() as old_code:  # the unconfined reader of earlier versions
        old_code.setattr(ix, "resolve_data_path", lambda uri, root: Resolved(Path(uri) if Path(uri).is_absolute() else root.parent / uri, None))
        assert main(["grep", "--db", store, "--scope", "files", "--json", SECRET]) == 0
        assert SECRET in capsys.readouterr().out  # the leak as it was
    assert main(["grep", "--db", store, "--scope", "files", SECRET]) == 0
    out = capsys.readouterr().out
    assert "0 shown of 0 matches" in out and SECRET not in out
    assert f"large file {ids['absolute']} not read" in out and "-1 large file" not in out
    assert main(["describe", "--db", store, ids["absolute"]]) == 2
    out, err = capsys.readouterr()
    assert SECRET not in out + err and "outside the payload directory" in err


def test_paths_no_file_system_takes_are_refused_not_a_crash(crafted: dict, capsys: pytest.CaptureFixture[str]) -> None:
    """A NUL byte (os.path.realpath raised ValueError) or a name too long (OSError) in a
    storage_uri: a large file not read, with the reason, never a traceback; an empty one is a
    file without a payload."""
    store, ids = crafted["store"], list(crafted["ids"].values())
    hostile = {"lcm-files/2/in\x00side.txt": "holds a NUL byte", "lcm-files/" + "x" * 5000: "file name too long",
               "/" + "a/" * 3000: "file name too long", "": "is empty", "lcm-files/2/gone.txt": "is not on disk"}  # fmt: skip
    conn = sqlite3.connect(crafted["db"])
    spare = [r[0] for r in conn.execute("SELECT file_id FROM large_files ORDER BY file_id").fetchall()][len(ids):]
    for file_id, uri in zip(spare, hostile, strict=False):
        conn.execute("UPDATE large_files SET storage_uri = ? WHERE file_id = ?", (uri, file_id))
    conn.commit()
    conn.close()
    assert main(["load", "--db", store, str(crafted["db"])]) == 0
    assert main(["grep", "--db", store, "--scope", "files", "anything"]) == 0
    out = capsys.readouterr().out
    for file_id, why in zip(spare, hostile.values(), strict=False):
        refused = why not in ("is empty", "is not on disk")  # those two are files without a payload, counted in grep's note
        assert (f"large file {file_id} not read" in out) == refused and (why in out or not refused), (file_id, why, out)
        assert main(["describe", "--db", store, file_id]) == 2
        err = capsys.readouterr().err
        assert why in err and len(err.strip().splitlines()) == 1, err
        assert "not a summary or file id" not in err  # it is one: its payload is what is missing


@pytest.mark.parametrize("target", ["root", "secret directory"])
def test_a_payload_directory_that_is_a_link_is_not_read(target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``lcm-files -> /`` (or to a private directory elsewhere) would put every file "inside" the
    payload directory by the plugin's rule; the lab reads no payload through such a link."""
    state, secrets = tmp_path / "state", tmp_path / "secrets"
    state.mkdir()
    secrets.mkdir()
    (secrets / "key.txt").write_text(f"{SECRET}\n")
    (state / "lcm-files").symlink_to("/" if target == "root" else secrets)
    db = state / "lcm.db"
    with gzip.open(DATASETS / "lcm-db" / "lcm-v0.15.3.db.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    uri = "/etc/passwd" if target == "root" else str(secrets / "key.txt")
    conn = sqlite3.connect(db)
    file_id = conn.execute("SELECT file_id FROM large_files ORDER BY file_id").fetchone()[0]
    conn.execute("UPDATE large_files SET storage_uri = ?, mime_type = 'text/plain'", (uri,))
    conn.commit()
    conn.close()
    store = str(tmp_path / "lab.duckdb")
    assert main(["load", "--db", store, str(db)]) == 0
    capsys.readouterr()
    assert main(["describe", "--db", store, file_id]) == 2
    out, err = capsys.readouterr()
    assert SECRET not in out + err and "root:x" not in out + err
    assert "is a symbolic link" in err
    assert main(["grep", "--db", store, "--scope", "files", "root" if target == "root" else SECRET]) == 0
    out = capsys.readouterr().out
    assert "0 shown of 0 matches" in out and "is a symbolic link" in out
