"""A Claude Code file holding two main chains (issue 22 item 11) keeps both: the chain that holds
the last message is the main conversation, the other loads as ``<session>:chain-1``, with a warning
naming the line it starts on; a single-chain file loads exactly as before."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FIXTURES

from lcm_lab.cli import main
from lcm_lab.io.transcripts import read_transcript

MINI = FIXTURES / "transcripts" / "claude-code-mini.jsonl"


def _chain(prefix: str, turns: int, start: int) -> list[dict]:
    lines, parent = [], None
    for i in range(turns):
        for role in ("user", "assistant"):
            uuid = f"{prefix}-{role}-{i}"
            content = f"{prefix} {role} {i}" if role == "user" else [{"type": "text", "text": f"{prefix} reply {i}"}]
            message = {"role": role, "content": content} if role == "user" else \
                {"id": f"msg-{uuid}", "type": "message", "role": role, "model": "claude", "content": content, "stop_reason": "end_turn"}
            lines.append({"parentUuid": parent, "isSidechain": False, "type": role, "uuid": uuid, "sessionId": "two-chains",
                          "timestamp": f"2025-09-03T00:{start + len(lines):02d}:00.000Z", "message": message})  # fmt: skip
            parent = uuid
    return lines


def test_two_main_chains_load_as_two_conversations_with_a_warning(tmp_path: Path) -> None:
    first, second = _chain("alpha", 3, 0), _chain("beta", 4, 10)
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in first + second) + "\n")
    read = read_transcript(path)
    by_id = {c.conversation.session_id: c.conversation for c in read.conversations}
    assert sorted(by_id) == ["two-chains", "two-chains:chain-1"]
    assert len(by_id["two-chains"].entries) == 8 and len(by_id["two-chains:chain-1"].entries) == 6  # nothing dropped
    assert by_id["two-chains:chain-1"].meta["main_chain"] == "chain-1" and not by_id["two-chains:chain-1"].meta["sidechain"]
    (issue,) = read.issues
    assert issue.line == 1 and not issue.skipped and "second main chain" in issue.message and "two-chains:chain-1" in issue.message


def test_the_cli_load_reports_both_chains(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in _chain("alpha", 2, 0) + _chain("beta", 2, 10)) + "\n")
    assert main(["load", "--db", str(tmp_path / "lab.duckdb"), "--json", str(path)]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["conversations"] == 2 and row["messages"] == 8 and row["warnings"] == 1


def test_a_single_chain_file_is_unchanged() -> None:
    read = read_transcript(MINI)
    assert not any("main chain" in issue.message for issue in read.issues)
    assert read.conversations[0].conversation.session_id == "cc-mini-session"


def test_a_branch_left_behind_is_a_warning(tmp_path: Path) -> None:
    """An edited prompt forks the chain: the old fork is left out, as lossless-claw reads the file,
    and said so (it was 0 warnings)."""
    lines = _chain("main", 3, 0)
    fork = {**lines[2], "uuid": "main-user-1-edited", "message": {"role": "user", "content": "edited"}}
    reply = {**lines[3], "uuid": "main-assistant-1-edited", "parentUuid": "main-user-1-edited"}
    path = tmp_path / "fork.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [*lines, fork, reply]) + "\n")
    read = read_transcript(path)
    (conversation,) = read.conversations
    assert len(conversation.conversation.entries) == 4  # user 0, assistant 0, the edited prompt, its reply
    (issue,) = [i for i in read.issues if "other branches" in i.message]
    assert issue.line == 3 and "4 entries on other branches" in issue.message
