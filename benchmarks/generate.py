"""Generators for load benchmarks (outputs go to ``benchmarks/_data/``, never committed).

* :func:`generate_lcm_db`: a lossless-claw ``lcm.db`` with the current (v0.15.3+) schema of the
  eight core tables, many conversations, a leaf + condensed summary DAG, message parts and
  context items, realistic text (mostly ASCII, some CJK/emoji).
* :func:`generate_session_dir`: an OpenClaw-style state directory of pi v3 session JSONL files,
  made from the real ``before-compaction`` session (ids renumbered per file, parent chain kept).
* :func:`generate_pi_file` / :func:`generate_claude_code_file`: one big session file made of
  copies of a real session chained end to end (ids renumbered per copy, one leaf path);
* :func:`generate_tiny_lines`: a pi session of many one-word messages;
* :func:`generate_long_line`: a pi session with one message line of a given size (``.gz`` too),
  written in chunks so the generator itself never holds the line.

Run ``python -m benchmarks.generate`` to (re)build the default inputs.
"""

from __future__ import annotations

import gzip
import json
import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "_data"
SESSION_SOURCE = REPO / "tests" / "fixtures" / "reference-runs" / "inputs" / "before-compaction.v3.jsonl.gz"

# The eight core tables of a fresh lcm.db (columns and constraints as spec §1.2 lists them).
LCM_DDL = """
CREATE TABLE conversations (
  conversation_id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, session_key TEXT,
  active INTEGER NOT NULL DEFAULT 1, archived_at TEXT, archive_cause TEXT, title TEXT, bootstrapped_at TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')), updated_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE messages (
  message_id INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  seq INTEGER NOT NULL, role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
  content TEXT NOT NULL, token_count INTEGER NOT NULL, identity_hash TEXT, openclaw_sender_metadata TEXT,
  transcript_entry_id TEXT, created_at TEXT NOT NULL DEFAULT (datetime('now')), large_content TEXT,
  stable_event_key TEXT, UNIQUE (conversation_id, seq));
CREATE TABLE message_parts (
  part_id TEXT PRIMARY KEY, message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL, part_type TEXT NOT NULL, ordinal INTEGER NOT NULL, text_content TEXT,
  is_ignored INTEGER, is_synthetic INTEGER, tool_call_id TEXT, tool_name TEXT, tool_status TEXT, tool_input TEXT,
  tool_output TEXT, tool_error TEXT, tool_title TEXT, patch_hash TEXT, patch_files TEXT, file_mime TEXT,
  file_name TEXT, file_url TEXT, subtask_prompt TEXT, subtask_desc TEXT, subtask_agent TEXT, step_reason TEXT,
  step_cost REAL, step_tokens_in INTEGER, step_tokens_out INTEGER, snapshot_hash TEXT, compaction_auto INTEGER,
  metadata TEXT, UNIQUE (message_id, ordinal));
CREATE TABLE summaries (
  summary_id TEXT PRIMARY KEY, conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id),
  kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')), depth INTEGER NOT NULL DEFAULT 0,
  content TEXT NOT NULL, token_count INTEGER NOT NULL, earliest_at TEXT, latest_at TEXT,
  descendant_count INTEGER NOT NULL DEFAULT 0, descendant_token_count INTEGER NOT NULL DEFAULT 0,
  source_message_token_count INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL DEFAULT (datetime('now')),
  file_ids TEXT NOT NULL DEFAULT '[]', model TEXT NOT NULL DEFAULT 'unknown');
CREATE TABLE summary_messages (
  summary_id TEXT NOT NULL, message_id INTEGER NOT NULL, ordinal INTEGER NOT NULL,
  PRIMARY KEY (summary_id, message_id));
CREATE TABLE summary_parents (
  summary_id TEXT NOT NULL, parent_summary_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
  PRIMARY KEY (summary_id, parent_summary_id));
CREATE TABLE context_items (
  conversation_id INTEGER NOT NULL, ordinal INTEGER NOT NULL,
  item_type TEXT NOT NULL CHECK (item_type IN ('message', 'summary')), message_id INTEGER, summary_id TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')), PRIMARY KEY (conversation_id, ordinal));
CREATE TABLE large_files (
  file_id TEXT PRIMARY KEY, conversation_id INTEGER NOT NULL, file_name TEXT, mime_type TEXT, byte_size INTEGER,
  line_count INTEGER, storage_uri TEXT NOT NULL, exploration_summary TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE INDEX messages_conv_seq_idx ON messages (conversation_id, seq);
CREATE INDEX summary_messages_message_idx ON summary_messages (message_id);
CREATE INDEX summary_parents_parent_summary_idx ON summary_parents (parent_summary_id);
CREATE INDEX message_parts_message_idx ON message_parts (message_id);
CREATE INDEX context_items_conv_idx ON context_items (conversation_id, ordinal);
"""

_WORDS = (
    "the build failed because the config file was missing so I reran the tests after fixing the import path "
    "and now every module loads cleanly except the parser which still chokes on trailing commas in JSON input"
).split()
_EXTRA = ["你好", "世界", "🔥", "テスト", "데이터"]
_LEAF_FANOUT = 10  # messages per leaf summary (summaries ≈ messages / 10)
_CONDENSED_FANOUT = 4


def _text(rng: random.Random, words: int) -> str:
    picked = rng.choices(_WORDS, k=words)
    if rng.random() < 0.05:
        picked.insert(rng.randrange(len(picked)), rng.choice(_EXTRA))
    return " ".join(picked)


def generate_lcm_db(path: Path, *, messages: int = 500_000, per_conversation: int = 2_500, seed: int = 7) -> Path:
    """Write an lcm.db with ``messages`` messages (≥ messages/10 summaries); returns ``path``."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    rng = random.Random(seed)
    conn = sqlite3.connect(tmp)
    conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + LCM_DDL)
    conversations = max(1, messages // per_conversation)
    message_id = 0
    for conv in range(1, conversations + 1):
        conn.execute(
            "INSERT INTO conversations (conversation_id, session_id, session_key, active, created_at) VALUES (?, ?, ?, ?, ?)",
            (conv, f"session-{conv:06d}", f"agent:main:{conv % 50}", int(conv % 7 != 0), "2026-01-01 00:00:00"),
        )
        rows, parts, ids = [], [], []
        for seq in range(1, per_conversation + 1):
            message_id += 1
            role = ("user", "assistant", "assistant", "tool")[seq % 4]
            content = _text(rng, rng.randint(20, 140))
            rows.append((message_id, conv, seq, role, content, len(content) // 4 + 1, f"{message_id:064x}",
                         f"e{message_id:08x}", f"2026-01-{1 + seq // 1000:02d} {seq % 24:02d}:{seq % 60:02d}:00"))
            parts.append((f"part-{message_id}", message_id, f"session-{conv:06d}", "text", 0, content,
                           json.dumps({"originalRole": role, "rawType": "text"})))
            ids.append(message_id)
        conn.executemany(
            "INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count, identity_hash,"
            " transcript_entry_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.executemany(
            "INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal, text_content, metadata)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)", parts)
        _summaries_for(conn, rng, conv, ids)
    conn.commit()
    conn.close()
    tmp.rename(path)
    return path


def _summaries_for(conn: sqlite3.Connection, rng: random.Random, conv: int, ids: list[int]) -> None:
    leaves, edges, parents_rows, summaries = [], [], [], []
    covered = len(ids) - 64  # fresh tail stays raw
    for start in range(0, covered - covered % _LEAF_FANOUT, _LEAF_FANOUT):
        sid = f"sum_{conv:06d}l{start:06d}"
        content = "SUMMARY " + _text(rng, 60)
        summaries.append((sid, conv, "leaf", 0, content, len(content) // 4, 0, 0, 400))
        edges.extend((sid, mid, k) for k, mid in enumerate(ids[start:start + _LEAF_FANOUT]))
        leaves.append(sid)
    level, depth = leaves, 0
    while len(level) >= _CONDENSED_FANOUT:
        depth += 1
        nxt = []
        for start in range(0, len(level) - len(level) % _CONDENSED_FANOUT, _CONDENSED_FANOUT):
            sid = f"sum_{conv:06d}d{depth}{start:06d}"
            content = "CONDENSED " + _text(rng, 40)
            summaries.append((sid, conv, "condensed", depth, content, len(content) // 4, 4, 4 * 15, 1600))
            parents_rows.extend((sid, src, k) for k, src in enumerate(level[start:start + _CONDENSED_FANOUT]))
            nxt.append(sid)
        level = nxt
    conn.executemany(
        "INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count, descendant_count,"
        " descendant_token_count, source_message_token_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", summaries)
    conn.executemany("INSERT INTO summary_messages VALUES (?, ?, ?)", edges)
    conn.executemany("INSERT INTO summary_parents VALUES (?, ?, ?)", parents_rows)
    context = [(conv, i, "summary", None, sid) for i, sid in enumerate(level)]
    context += [(conv, len(level) + k, "message", mid, None) for k, mid in enumerate(ids[covered:])]
    conn.executemany("INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id)"
                     " VALUES (?, ?, ?, ?, ?)", context)


def _source_lines() -> list[dict[str, object]]:
    with gzip.open(SESSION_SOURCE, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _renumbered(lines: list[dict[str, object]], index: int) -> Iterator[dict[str, object]]:
    prefix = f"{index:04x}"
    for line in lines:
        copy = dict(line)
        if copy.get("type") == "session":
            copy["id"] = f"{index:08d}-0000-4000-8000-{index:012d}"
        else:
            if isinstance(copy.get("id"), str):
                copy["id"] = prefix + str(copy["id"])
            if isinstance(copy.get("parentId"), str):
                copy["parentId"] = prefix + str(copy["parentId"])
        yield copy


def generate_session_dir(root: Path, *, target_mb: int = 200) -> Path:
    """Write ``root/agents/main/sessions/*.jsonl`` totalling at least ``target_mb`` MB."""
    sessions = root / "agents" / "main" / "sessions"
    marker = root / ".complete"
    if marker.exists():
        return root
    sessions.mkdir(parents=True, exist_ok=True)
    lines = _source_lines()
    total, index = 0, 0
    while total < target_mb * 1_000_000:
        path = sessions / f"session-{index:04d}.jsonl"
        with open(path, "w", encoding="utf-8") as handle:
            for entry in _renumbered(lines, index):
                handle.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        total += path.stat().st_size
        index += 1
    marker.write_text(str(total))
    return root


CLAUDE_CODE_SOURCE = REPO / "datasets" / "claude-code" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"


def _chained_copies(
    lines: list[dict[str, object]], id_key: str, parent_key: str, target_bytes: int, handle: IO[str]
) -> int:
    """Write copies of ``lines`` (no header) until ``target_bytes``; each copy's ids get a prefix
    and its first root hangs under the previous copy's last entry. Returns bytes written."""
    written, copy, last = 0, 0, None
    while written < target_bytes:
        prefix = f"c{copy:06d}-"
        first_root = True
        for line in lines:
            entry = dict(line)
            if isinstance(entry.get(id_key), str):
                entry[id_key] = prefix + str(entry[id_key])
            if isinstance(entry.get("firstKeptEntryId"), str):
                entry["firstKeptEntryId"] = prefix + str(entry["firstKeptEntryId"])
            if isinstance(entry.get(parent_key), str):
                entry[parent_key] = prefix + str(entry[parent_key])
            elif id_key in entry and first_root:
                entry[parent_key] = last
                first_root = False
            if isinstance(entry.get(id_key), str):
                last = entry[id_key]
            text = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
            handle.write(text)
            written += len(text.encode())
        copy += 1
    return written


def generate_pi_file(path: Path, *, target_mb: int = 200) -> Path:
    """One pi v3 session of at least ``target_mb`` MB (copies of ``before-compaction``)."""
    if path.exists():
        return path
    lines = _source_lines()
    header, body = lines[0], [line for line in lines[1:] if line.get("type") != "session"]
    with _atomic_text(path) as handle:
        handle.write(json.dumps(header, separators=(",", ":")) + "\n")
        _chained_copies(body, "id", "parentId", target_mb * 1_000_000, handle)
    return path


def generate_claude_code_file(path: Path, *, target_mb: int = 200) -> Path:
    """One Claude Code session of at least ``target_mb`` MB (copies of the bundled session)."""
    if path.exists():
        return path
    with open(CLAUDE_CODE_SOURCE, encoding="utf-8") as source:
        lines = [json.loads(line) for line in source if line.strip()]
    body = [line for line in lines if line.get("type") in ("user", "assistant")]
    with _atomic_text(path) as handle:
        _chained_copies(body, "uuid", "parentUuid", target_mb * 1_000_000, handle)
    return path


def generate_tiny_lines(path: Path, *, lines: int = 1_000_000) -> Path:
    """A pi v3 session of ``lines`` lines: a header and one-word user/assistant messages."""
    if path.exists():
        return path
    with _atomic_text(path) as handle:
        handle.write('{"type":"session","version":3,"id":"tiny-lines","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n')
        parent = "null"
        for index in range(1, lines):
            role = "user" if index % 2 else "assistant"
            entry_id = f"{index:08x}"
            handle.write(
                f'{{"type":"message","id":"{entry_id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z",'
                f'"message":{{"role":"{role}","content":[{{"type":"text","text":"w{index}"}}]}}}}\n'
            )
            parent = f'"{entry_id}"'
    return path


def generate_claude_code_tiny_lines(path: Path, *, lines: int = 1_000_000) -> Path:
    """One Claude Code session of ``lines`` short user/assistant lines in one chain."""
    if path.exists():
        return path
    envelope = '"isSidechain":false,"sessionId":"tiny-cc","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","version":"1.0.0"'
    with _atomic_text(path) as handle:
        parent = "null"
        for index in range(lines):
            entry_id = f'"00000000-0000-4000-8000-{index:012x}"'
            if index % 2 == 0:
                message = f'{{"role":"user","content":"w{index}"}}'
                kind = "user"
            else:
                message = (f'{{"id":"msg_{index:012x}","type":"message","role":"assistant","model":"claude","content":'
                           f'[{{"type":"text","text":"w{index}"}}],"stop_reason":"end_turn","usage":{{"input_tokens":1,"output_tokens":1}}}}')  # fmt: skip
                kind = "assistant"
            handle.write(f'{{"parentUuid":{parent},{envelope},"type":"{kind}","uuid":{entry_id},"message":{message}}}\n')
            parent = entry_id
    return path


def generate_long_line(path: Path, *, line_mb: int, gz: bool = False) -> Path:
    """A pi v3 session whose second line is one user message of ``line_mb`` MB, then a short reply."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    opener = (lambda: gzip.open(tmp, "wb", compresslevel=1)) if gz else (lambda: open(tmp, "wb"))
    chunk = (b"all work and no play " * 50_000)[: 1 << 20]
    with opener() as handle:
        handle.write(b'{"type":"session","version":3,"id":"long-line","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n')
        handle.write(b'{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
                     b'"message":{"role":"user","content":"')
        for _ in range(line_mb):
            handle.write(chunk)
        handle.write(b'"}}\n')
        handle.write(b'{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z",'
                     b'"message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}\n')
    tmp.rename(path)
    return path


@contextmanager
def _atomic_text(path: Path) -> Iterator[IO[str]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        yield handle
    tmp.rename(path)


def main() -> None:
    for messages in (100_000, 500_000):
        print(generate_lcm_db(DATA / f"lcm-{messages // 1000}k.db", messages=messages))
    for mb in (50, 200):
        print(generate_session_dir(DATA / f"sessions-{mb}mb", target_mb=mb))


if __name__ == "__main__":
    main()
