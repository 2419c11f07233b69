"""A Claude Code session read with ``reread`` (what the loader does) holds no message content:
entries are built again from their lines when used, raw lines are parsed again. It must give
exactly what the held read gives, refuse a file changed in between by name, and hold far less."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO
from test_hostile_claude_chains import _chain

from lcm_lab.errors import InputFileError
from lcm_lab.io.transcripts import read_claude_code_jsonl, read_transcript

MINI = FIXTURES / "transcripts" / "claude-code-mini.jsonl"
SAMPLE = next((REPO / "datasets" / "claude-code").glob("*.jsonl"))


def _same(path: Path) -> None:
    held, again = read_claude_code_jsonl(path), read_claude_code_jsonl(path, reread=True)
    assert held.issues == again.issues and held.skipped_lines == again.skipped_lines
    assert len(held.conversations) == len(again.conversations)
    for a, b in zip(held.conversations, again.conversations, strict=True):
        assert list(a.conversation.entries) == list(b.conversation.entries)
        assert b.conversation.entries == a.conversation.entries  # the lazy sequence compares as one
        assert list(b.conversation.entries[2:5]) == list(a.conversation.entries[2:5])
        assert type(b.conversation.entries[1:]) is type(b.conversation.entries)  # a slice stays lazy
        assert b.conversation.entries[-1] == a.conversation.entries[-1]
        assert a.conversation.meta == b.conversation.meta and a.events == b.events
        assert dict(a.meta["raw_entries"]) == dict(b.meta["raw_entries"])
        assert {k: v for k, v in a.meta.items() if k != "raw_entries"} == {k: v for k, v in b.meta.items() if k != "raw_entries"}


def _two_results_on_one_line() -> list[dict[str, object]]:
    """An assistant calling two tools and one user line answering both: that line gives two
    runtime messages (the second is "pick" 1 of its line)."""
    base = {"sessionId": "s", "cwd": "/w", "version": "1.0", "isSidechain": False, "timestamp": "2026-01-01T00:00:00Z"}
    calls = [{"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"n": n}} for n in (1, 2)]
    results = [{"type": "tool_result", "tool_use_id": f"t{n}", "content": f"result {n}"} for n in (1, 2)]
    return [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "go"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"id": "m1", "role": "assistant", "model": "x", "content": calls}},
        {**base, "type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": results}},
        {**base, "type": "user", "uuid": "u3", "parentUuid": "u2", "message": {"role": "user", "content": "thanks"}},
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["mini", "sample", "two-chains", "gzip", "utf-16", "two-results"])
def test_a_reread_session_equals_the_held_one(tmp_path: Path, name: str) -> None:
    if name == "mini":
        path = MINI
    elif name == "sample":
        path = SAMPLE  # a real session: main chain and five sub-agent sidechains
    elif name == "two-chains":
        path = tmp_path / "two.jsonl"
        path.write_text("\n".join(json.dumps(line) for line in _chain("alpha", 3, 0) + _chain("beta", 4, 10)) + "\n")
    elif name == "two-results":
        path = tmp_path / "results.jsonl"
        path.write_text("\n".join(json.dumps(line) for line in _two_results_on_one_line()) + "\n")
        held = read_claude_code_jsonl(path).conversations[0].conversation.entries
        again = read_claude_code_jsonl(path, reread=True).conversations[0].conversation.entries
        assert [e.message["role"] for e in held if e.message] == ["user", "assistant", "toolResult", "toolResult", "user"]
        for start in range(len(held)):  # every part from every start (the second result is pick 1 of its line)
            assert list(again[start:]) == list(held[start:]) and list(again[start : start + 2]) == list(held[start : start + 2])
    elif name == "gzip":
        path = tmp_path / "mini.jsonl.gz"
        path.write_bytes(gzip.compress(MINI.read_bytes()))
    else:
        path = tmp_path / "mini-utf16.jsonl"
        path.write_bytes(MINI.read_text(encoding="utf-8").encode("utf-16"))
    _same(path)


def test_the_loader_reads_claude_code_sessions_again() -> None:
    read = read_transcript(MINI, reread=True)
    assert type(read.conversations[0].conversation.entries).__name__ == "_RebuiltEntries"


def test_a_file_rewritten_between_reading_and_building_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(MINI.read_bytes())
    read = read_claude_code_jsonl(path, reread=True)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(reversed(lines)) + "\n")  # same bytes, other lines at each offset
    with pytest.raises(InputFileError, match=r"session\.jsonl: line \d+ changed while the file was loaded"):
        list(read.conversations[0].conversation.entries)


def test_a_reread_session_holds_a_fraction_of_the_held_one(tmp_path: Path) -> None:
    # 40 copies of the real session chained into one main conversation (as benchmarks.generate does)
    lines = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    body = [line for line in lines if line.get("type") in ("user", "assistant") and not line.get("isSidechain")]
    path = tmp_path / "big.jsonl"
    parent = None
    with path.open("w") as out:
        for copy in range(40):
            for line in body:
                line = dict(line, uuid=f"{copy}-{line['uuid']}", parentUuid=parent)
                if isinstance(line["message"].get("id"), str):
                    line["message"] = dict(line["message"], id=f"{copy}-{line['message']['id']}")
                parent = line["uuid"]
                out.write(json.dumps(line) + "\n")
    held_bytes = []
    for reread in (False, True):
        tracemalloc.start()
        read = read_claude_code_jsonl(path, reread=reread)
        held_bytes.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.stop()
        assert len(read.conversations[0].conversation.entries) > 500
        del read
    held, again = held_bytes
    assert again < held / 4, (held, again)
