"""The Claude Code reader groups, walks and rebuilds from columns (no object per line). Checked
against what it must equal: the grouping against a plain walk over a dict of uuids (the rule the
reader had before, cycles and dangling parents included), the re-read path against the held one
on random sessions with every kind of line, and what a line costs."""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

from lcm_lab.io.transcripts.claude_code import _group_chains, _Rows


def _plain_groups(nodes: list[dict[str, Any]]) -> list[tuple[str | None, list[int]]]:
    """The grouping rule over objects: a sidechain line goes to ``agent-<agentId>`` or to the
    root its uuid chain leads to (walks share what they found); main lines are split by tree."""
    parent_of = {n["id"]: n["parent"] for n in nodes}
    cache: dict[str, str] = {}

    def root(entry_id: str) -> str:
        trail: list[str] = []
        current = entry_id
        while current in parent_of and current not in cache and current not in trail:
            trail.append(current)
            parent = parent_of[current]
            if parent is None:
                break
            current = parent
        found = cache.get(current, current)
        for visited in trail:
            cache[visited] = found
        return found

    main, sidechains = [], {}
    for n in nodes:
        if not n["side"]:
            main.append(n)
            continue
        key = f"agent-{n['agent']}" if n.get("agent") else root(n["id"])
        sidechains.setdefault(key, []).append(n["row"])
    groups: list[tuple[str | None, list[int]]] = []
    if main:
        trees: dict[str, list[dict[str, Any]]] = {}
        for n in main:
            trees.setdefault(root(n["id"]), []).append(n)
        with_messages = [t for t in trees.values() if any(n["type"] in ("user", "assistant") for n in t)]
        if len(with_messages) < 2:
            groups.append((None, [n["row"] for n in main]))
        else:
            last = max((n for t in with_messages for n in t if n["type"] in ("user", "assistant")), key=lambda n: n["row"])
            others = sorted((t for t in with_messages if last not in t), key=lambda t: t[0]["row"])
            moved = {n["row"] for t in others for n in t}
            groups.append((None, [n["row"] for n in main if n["row"] not in moved]))
            groups.extend((f"chain-{i}", [n["row"] for n in t]) for i, t in enumerate(others, start=1))
    groups.extend(sidechains.items())
    return groups


def _random_nodes(rng: random.Random) -> list[dict[str, Any]]:
    count = rng.randint(1, 30)
    names = [f"u{i}" for i in range(count)] + ["ghost"]
    nodes = []
    for row in range(count):
        parent = None if rng.random() < 0.2 else rng.choice(names) if rng.random() < 0.4 else f"u{row - 1}" if row else None
        nodes.append({"row": row, "id": rng.choice(names) if rng.random() < 0.1 else f"u{row}", "parent": parent,
                      "side": rng.random() < 0.4, "agent": rng.choice([None, None, "", "A"]),
                      "type": rng.choice(["user", "assistant", "system"])})  # fmt: skip
    return nodes


def test_the_grouping_equals_the_walk_over_a_dict_of_uuids() -> None:
    for seed in range(400):
        nodes = _random_nodes(random.Random(seed))
        rows = _Rows()
        for n in nodes:
            value = {"isSidechain": n["side"], **({"agentId": n["agent"]} if n["agent"] is not None else {})}
            rows.append(n["row"] + 1, n["type"], n["id"], n["parent"], value)
        got = [(key, members.tolist()) for key, members in _group_chains(rows)]
        assert got == _plain_groups(nodes), seed


def _random_session(rng: random.Random) -> str:
    """Every kind of line: branches, duplicates, cycles, dangling parents, sidechains with and
    without an agent id, compact boundaries bridged by logicalParentUuid, summary lines, lines
    without a uuid or that are not objects, assistant lines merged by message id, user lines
    with several tool results, sub-agent prompts."""
    count = rng.randint(1, 40)
    ids = [f"u{i}" for i in range(count)]
    pool = [*ids, "ghost"]
    tools = ["t0", "t1", "t2"]
    lines = []
    for i in range(count):
        line: dict[str, Any] = {
            "uuid": rng.choice(pool) if rng.random() < 0.05 else ids[i], "sessionId": rng.choice(["s1", "s1", "s2"]),
            "parentUuid": None if rng.random() < 0.1 else rng.choice(pool) if rng.random() < 0.15 else ids[i - 1] if i else None,
            "isSidechain": rng.random() < 0.2, "timestamp": f"2025-01-01T00:00:{i % 60:02d}.000Z", "cwd": rng.choice(["/a", "/b"]),
        }  # fmt: skip
        if line["isSidechain"] and rng.random() < 0.5:
            line["agentId"] = rng.choice(["A", ""])
        if line["parentUuid"] is None and rng.random() < 0.5:
            line["logicalParentUuid"] = rng.choice(pool)
        kind = rng.random()
        if kind < 0.4:
            content: Any = [{"type": "text", "text": f"a{i}"}]
            if rng.random() < 0.4:
                content.append({"type": "tool_use", "id": rng.choice(tools), "name": "Task", "input": {"prompt": f"p{i % 3}"}})
            line.update(type="assistant", message={"id": f"m{rng.randint(0, count // 3)}", "role": "assistant", "model": "c",
                                                   "content": content, "stop_reason": rng.choice(["end_turn", "tool_use"])})  # fmt: skip
        elif kind < 0.75:
            results = [{"type": "tool_result", "tool_use_id": rng.choice([*tools, "zz"]), "content": "ok"}
                       for _ in range(rng.randint(0, 2))]  # fmt: skip
            content = f"p{i % 3}" if rng.random() < 0.4 else results + [{"type": "text", "text": "x"}] * rng.randint(0, 1)
            line.update(type="user", message={"role": "user", "content": content}, isCompactSummary=rng.random() < 0.1)
        elif kind < 0.85:
            line.update(type="system", subtype=rng.choice(["compact_boundary", "other"]), compactMetadata={"preTokens": 9})
        elif kind < 0.9:
            line = {"type": "summary", "summary": f"s{i}", "leafUuid": rng.choice(pool), **({"uuid": ids[i]} if rng.random() < 0.5 else {})}
        elif kind < 0.93:
            line = {"parentUuid": None, "uuid": ids[i]} if rng.random() < 0.5 else [1, 2]  # type: ignore[assignment]
        else:
            line.update(type="assistant", message="not an object")
        lines.append(json.dumps(line))
    return "\n".join(lines) + "\n"


def _prompt_calls(entries: Any) -> dict[str, object]:
    """Each prompt a tool call carries → the last such call's id, over held entries in order."""
    found: dict[str, object] = {}
    for entry in entries:
        content = entry.message.get("content") if entry.message else None
        for block in content if isinstance(content, list) else ():
            arguments = block.get("arguments") if isinstance(block, dict) and block.get("type") == "toolCall" else None
            if isinstance(arguments, dict) and isinstance(arguments.get("prompt"), str):
                found[arguments["prompt"]] = block.get("id")
    return found


def test_a_reread_random_session_equals_the_held_one(tmp_path: Path) -> None:
    from lcm_lab.io.transcripts import read_claude_code_jsonl
    from lcm_lab.io.transcripts.claude_code import _first_user_text

    linked = 0
    for seed in range(250):
        path = tmp_path / f"session-{seed}.jsonl"
        path.write_text(_random_session(random.Random(seed)))
        held, again = read_claude_code_jsonl(path), read_claude_code_jsonl(path, reread=True)
        assert (held.issues, held.skipped_lines) == (again.issues, again.skipped_lines), seed
        assert len(held.conversations) == len(again.conversations), seed
        for a, b in zip(held.conversations, again.conversations, strict=True):
            assert list(a.conversation.entries) == list(b.conversation.entries), seed
            assert list(a.conversation.entries[1:3]) == list(b.conversation.entries[1:3]), seed
            assert a.conversation.meta == b.conversation.meta and a.events == b.events, seed
            assert list(a.conversation.meta.get("source_lines", {})) == list(b.conversation.meta.get("source_lines", {})), seed
            assert dict(a.meta["raw_entries"]) == dict(b.meta["raw_entries"]), seed
        # a sub-agent is tied to the last main-chain call that carried its prompt, in entry order
        calls = _prompt_calls(held.conversations[0].conversation.entries)
        for c in held.conversations[1:]:
            if c.conversation.meta["sidechain"]:
                prompt = _first_user_text(tuple(c.conversation.entries))
                assert c.conversation.meta.get("parent_tool_call_id") == calls.get(prompt), seed
                linked += "parent_tool_call_id" in c.conversation.meta
    assert linked > 10  # the sessions do tie sub-agents to calls


def _tiny_session(path: Path, lines: int) -> Path:
    from benchmarks.generate import generate_claude_code_tiny_lines

    return generate_claude_code_tiny_lines(path, lines=lines)


def test_a_reread_line_costs_a_few_dozen_bytes_not_an_object(tmp_path: Path) -> None:
    """Before the columns: 450 bytes a line kept after the read and 1,530 at its peak (tracemalloc,
    40k short lines); now about 120 and 270."""
    from lcm_lab.io.transcripts import read_claude_code_jsonl

    path = _tiny_session(tmp_path / "tiny.jsonl", 20_000)
    read_claude_code_jsonl(path, reread=True)  # imports and caches first
    gc.collect()
    tracemalloc.start()
    read = read_claude_code_jsonl(path, reread=True)
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(read.conversations[0].conversation.entries) == 20_000
    assert kept / 20_000 < 200 and peak / 20_000 < 450, (kept / 20_000, peak / 20_000)
