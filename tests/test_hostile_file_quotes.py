"""A path (or a link) that leads to a file that is not a transcript (``/etc/passwd``, a key file)
gets an error naming the file and saying what it looks like, never quoting its content: not from
``load``, ``demo --data`` or a sweep spec's conversation path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from faults import child_env

from lcm_lab.io.transcripts import describe_file

SECRET = "root:x:0:0:SECRET-FIRST-LINE:/root:/bin/bash"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside" / "passwd"
    outside.parent.mkdir()
    outside.write_text(SECRET + "\ndaemon:x:1:1::/:/bin/false\n")
    return outside


def lab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lcm_lab", *args], capture_output=True, text=True, cwd=cwd,
                          env=child_env(), timeout=300)


def _assert_named_not_quoted(done: subprocess.CompletedProcess[str], name: str, *, described: bool = True) -> None:
    assert done.returncode == 2, done.stderr
    assert "SECRET" not in done.stderr + done.stdout and "root:x" not in done.stderr + done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert name in last, last
    if described:
        assert "text that is not JSON lines" in last and "line 1 is not JSON" in last, last


def test_load_of_a_link_to_a_text_file_does_not_print_its_first_line(tmp_path: Path, secret: Path) -> None:
    (tmp_path / "x.jsonl").symlink_to(secret)
    _assert_named_not_quoted(lab("load", "--db", "lab.duckdb", "x.jsonl", cwd=tmp_path), "x.jsonl", described=False)


def test_demo_data_with_a_link_to_a_text_file_does_not_print_its_first_line(tmp_path: Path, secret: Path) -> None:
    data = tmp_path / "d"
    (data / "pi-mono").mkdir(parents=True)
    (data / "locomo").mkdir()
    (data / "pi-mono" / "before-compaction.jsonl").symlink_to(secret)
    (data / "locomo" / "locomo10.json").symlink_to(secret)
    _assert_named_not_quoted(lab("demo", "--data", "d", cwd=tmp_path), "before-compaction.jsonl")


def test_a_sweep_spec_path_to_a_link_does_not_print_its_first_line(tmp_path: Path, secret: Path) -> None:
    (tmp_path / "x.jsonl").symlink_to(secret)
    spec = {"name": "t", "conversations": [{"path": "x.jsonl"}], "token_budget": 6000, "summarizer": {"name": "offline"},
            "space": {"freshTailCount": [8]}, "search": {"method": "grid"},
            "objectives": [{"metric": "mean_sent_tokens", "direction": "minimize"}], "executor": "serial"}
    (tmp_path / "s.yaml").write_text(json.dumps(spec))
    _assert_named_not_quoted(lab("sweep", "s.yaml", "--db", "lab.duckdb", cwd=tmp_path), "x.jsonl")


def test_json_keys_that_are_data_are_counted_not_listed(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"sk-live secret value": 1, "another secret key!": 2}))
    assert describe_file(path) == "JSON whose first object has 2 keys"
    path.write_text(json.dumps({"name": "x", "version": 1, "a secret as a key": 3}))
    assert describe_file(path) == "JSON whose first object has keys: name, version (1 more)"
