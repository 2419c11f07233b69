"""Tool call / tool result pairing repair (spec §6 step 6, ``sanitizeToolUseResultPairing``).

Providers reject transcripts where an assistant tool call is not immediately followed by its
result. Before handing the assembled context over, the plugin (with OpenClaw's own repair):

* moves each tool result directly after the assistant turn that called it (results found up
  to the next tool-calling assistant, or later, are pulled forward);
* inserts a synthetic error result for every call that has none;
* drops duplicate results and results with no matching call (orphans);
* drops assistant tool calls whose id was already used earlier (keep-first), and strips all
  tool calls of ``stopReason: error|aborted`` turns, which are never paired;
* moves reasoning blocks that follow a single OpenAI function call in front of it.

The functions work on ``(message, tag)`` entries so callers can follow each output message
back to its context item; synthetic results carry the tag ``None``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from lcm_lab.engine.assembly.blocks import TOOL_CALL_TYPES
from lcm_lab.engine.js.json import js_trim

MISSING_TOOL_RESULT_TEXT = "[lossless-claw] missing tool result in session history; inserted synthetic error result for transcript repair."
_OPENAI_FUNCTION_CALL_TYPES = frozenset({"functionCall", "function_call"})
_THINKING_LIKE_TYPES = ("thinking", "redacted_thinking", "reasoning")

Message = Mapping[str, Any]


class Tagged(NamedTuple):
    """A message and an opaque tag that follows it through the repair."""

    message: Message
    tag: Hashable | None


@dataclass
class RepairReport:
    """What the repair changed (counts, for diagnostics)."""

    dropped_duplicate_results: int = 0
    dropped_orphan_results: int = 0
    dropped_duplicate_tool_uses: int = 0
    dropped_terminal_tool_uses: int = 0
    synthetic_results: int = 0
    moved: bool = False
    changed: bool = False


class _Call(NamedTuple):
    id: str
    name: str | None


class _Drop(NamedTuple):
    id: str
    name: str | None
    terminal: bool


def _call_id(block: Mapping[str, Any]) -> str | None:
    for key in ("id", "call_id"):
        value = block.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _is_tool_call_block(block: Any) -> bool:
    return (
        isinstance(block, Mapping) and isinstance(block.get("type"), str) and block["type"] in TOOL_CALL_TYPES
    )


def _normalize_reasoning_order(msg: Message) -> Message:
    """Put reasoning before the call in a single-function-call turn (the OpenAI shape only)."""
    content = msg.get("content")
    if not isinstance(content, list):
        return msg
    saw_call = reasoning_after_call = False
    function_calls = 0
    for block in content:
        if not isinstance(block, Mapping):
            return msg
        block_type = block.get("type")
        if block_type in ("reasoning", "thinking"):
            reasoning_after_call = reasoning_after_call or saw_call
            continue
        if isinstance(block_type, str) and block_type in TOOL_CALL_TYPES:
            saw_call = True
            function_calls += block_type in _OPENAI_FUNCTION_CALL_TYPES
            continue
        return msg
    if not reasoning_after_call or function_calls != 1:
        return msg
    reasoning = [b for b in content if b.get("type") in ("reasoning", "thinking")]
    calls = [b for b in content if _is_tool_call_block(b)]
    return {**msg, "content": reasoning + calls}


def _tool_calls(msg: Message) -> list[_Call]:
    content = msg.get("content")
    if not isinstance(content, list):
        return []
    calls: list[_Call] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        call_id = _call_id(block)
        if call_id and _is_tool_call_block(block):
            name = block.get("name")
            calls.append(_Call(call_id, name if isinstance(name, str) else None))
    return calls


def result_id(msg: Message) -> str | None:
    """The call id a tool-result message answers (``toolCallId``, else ``toolUseId``)."""
    for key in ("toolCallId", "toolUseId"):
        value = msg.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _is_terminal(msg: Message) -> bool:
    stop = msg.get("stopReason")
    if not isinstance(stop, str):
        stop = msg.get("stop_reason")
    return stop in ("error", "aborted")


def _is_blank_text_block(block: Any) -> bool:
    return (
        isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and not js_trim(block["text"])
    )


def _is_thinking_like(block: Any) -> bool:
    return (
        isinstance(block, Mapping)
        and str(block.get("type") if block.get("type") is not None else "") in _THINKING_LIKE_TYPES
    )


def _empty_after_tool_use_drop(content: Any) -> bool:
    if not isinstance(content, list):
        return False
    return all(_is_thinking_like(b) or _is_blank_text_block(b) for b in content)


def _filter_tool_uses(
    msg: Message, seen: set[str], *, drop_all: bool = False, record: bool = True
) -> tuple[Message, list[_Drop]]:
    content = msg.get("content")
    if not isinstance(content, list):
        return msg, []
    dropped: list[_Drop] = []
    kept: list[Any] = []
    for block in content:
        if isinstance(block, Mapping):
            call_id = _call_id(block)
            if call_id and _is_tool_call_block(block):
                if drop_all or call_id in seen:
                    name = block.get("name")
                    dropped.append(_Drop(call_id, name if isinstance(name, str) else None, drop_all))
                    continue
                if record:
                    seen.add(call_id)
        kept.append(block)
    if not dropped:
        return msg, dropped
    return {**msg, "content": kept}, dropped


def is_synthetic_missing_result(msg: Message) -> bool:
    """True for the placeholder result the repair inserts for a missing one."""
    content = msg.get("content")
    if msg.get("isError") is not True or not isinstance(content, list):
        return False
    return any(
        isinstance(b, Mapping) and b.get("type") == "text" and b.get("text") == MISSING_TOOL_RESULT_TEXT
        for b in content
    )


def missing_tool_result(call_id: str, tool_name: str | None) -> dict[str, Any]:
    """The synthetic error result inserted for a call without a result."""
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool_name if tool_name is not None else "unknown",
        "content": [{"type": "text", "text": MISSING_TOOL_RESULT_TEXT}],
        "isError": True,
    }


def _prefer(existing: Tagged | None, candidate: Tagged) -> bool:
    """Whether ``candidate`` should replace ``existing`` (a real result beats a synthetic one)."""
    return existing is None or (
        is_synthetic_missing_result(existing.message) and not is_synthetic_missing_result(candidate.message)
    )


def repair_tagged(entries: Sequence[Tagged]) -> tuple[list[Tagged], RepairReport]:
    """Repair tool call/result pairing of tagged messages (see module docstring).

    When nothing had to change the input order is returned as is, like the plugin (which
    returns its input array untouched even if the results of one turn were out of order).
    """
    report = RepairReport()
    out: list[Tagged] = []
    seen_result_ids: set[str] = set()
    result_positions: dict[str, int] = {}
    seen_tool_use_ids: set[str] = set()
    moved_indexes: set[int] = set()

    def record_drops(drops: list[_Drop]) -> None:
        for drop in drops:
            if drop.terminal:
                report.dropped_terminal_tool_uses += 1
            else:
                report.dropped_duplicate_tool_uses += 1

    def push_result(entry: Tagged) -> None:
        rid = result_id(entry.message)
        if rid and rid in seen_result_ids:
            index = result_positions.get(rid)
            if index is not None:
                existing = out[index]
                if is_synthetic_missing_result(existing.message) and not is_synthetic_missing_result(
                    entry.message
                ):
                    out[index] = entry
            report.dropped_duplicate_results += 1
            report.changed = True
            return
        if rid:
            seen_result_ids.add(rid)
            result_positions[rid] = len(out)
        out.append(entry)

    def preview(msg: Message, seen: set[str]) -> tuple[Message, list[_Drop], list[_Call]]:
        normalized = _normalize_reasoning_order(msg)
        terminal = _is_terminal(normalized)
        filtered, drops = _filter_tool_uses(normalized, set(seen), drop_all=terminal, record=not terminal)
        return filtered, drops, ([] if terminal else _tool_calls(filtered))

    i = 0
    n = len(entries)
    while i < n:
        entry = entries[i]
        msg = entry.message
        if i in moved_indexes:
            i += 1
            continue
        role = msg.get("role")
        if role != "assistant":
            if role != "toolResult":
                out.append(entry)
            else:
                report.dropped_orphan_results += 1
                report.changed = True
            i += 1
            continue

        normalized = _normalize_reasoning_order(msg)
        if normalized is not msg:
            report.changed = True
        terminal = _is_terminal(normalized)
        assistant, drops = _filter_tool_uses(
            normalized, seen_tool_use_ids, drop_all=terminal, record=not terminal
        )
        if drops:
            report.changed = True
            record_drops(drops)
            if _empty_after_tool_use_drop(assistant.get("content")):
                i += 1
                continue
        assistant_entry = Tagged(assistant, entry.tag)
        if terminal:
            out.append(assistant_entry)
            i += 1
            continue
        calls = _tool_calls(assistant)
        if not calls:
            out.append(assistant_entry)
            i += 1
            continue
        call_ids = {c.id for c in calls}
        span_results: dict[str, Tagged] = {}
        remainder: list[Tagged] = []

        j = i + 1
        while j < n:
            if j in moved_indexes:
                j += 1
                continue
            nxt = entries[j]
            next_role = nxt.message.get("role")
            if next_role == "assistant":
                next_msg, next_drops, next_calls = preview(nxt.message, seen_tool_use_ids)
                if next_calls:
                    if next_drops:
                        _pull_delayed_results(
                            entries,
                            j,
                            call_ids,
                            seen_tool_use_ids,
                            next_calls,
                            moved_indexes,
                            seen_result_ids,
                            span_results,
                            report,
                            preview,
                        )
                    break
                if next_drops:
                    report.changed = True
                    record_drops(next_drops)
                    if _empty_after_tool_use_drop(next_msg.get("content")):
                        j += 1
                        continue
                remainder.append(Tagged(next_msg, nxt.tag))
                j += 1
                continue
            if next_role == "toolResult":
                rid = result_id(nxt.message)
                if rid and rid in call_ids:
                    existing = span_results.get(rid)
                    if rid in seen_result_ids:
                        report.dropped_duplicate_results += 1
                        report.changed = True
                    elif existing is None:
                        span_results[rid] = nxt
                    else:
                        if _prefer(existing, nxt):
                            span_results[rid] = nxt
                        report.dropped_duplicate_results += 1
                        report.changed = True
                    j += 1
                    continue
                report.dropped_orphan_results += 1
                report.changed = True
                j += 1
                continue
            remainder.append(nxt)
            j += 1

        later: dict[str, tuple[Tagged, int]] = {}
        for k in range(j + 1, n):
            if k in moved_indexes:
                continue
            candidate = entries[k]
            if candidate.message.get("role") != "toolResult":
                continue
            rid = result_id(candidate.message)
            if not rid or rid not in call_ids or rid in seen_result_ids:
                continue
            earlier_result = later.get(rid)
            if _prefer(earlier_result[0] if earlier_result else None, candidate):
                later[rid] = (candidate, k)

        out.append(assistant_entry)
        if span_results and remainder:
            report.moved = report.changed = True
        for call in calls:
            chosen = span_results.get(call.id)
            found_later = later.get(call.id)
            if found_later and _prefer(chosen, found_later[0]):
                chosen = found_later[0]
                moved_indexes.add(found_later[1])
                report.moved = report.changed = True
            if chosen is not None:
                push_result(chosen)
            else:
                report.synthetic_results += 1
                report.changed = True
                push_result(Tagged(missing_tool_result(call.id, call.name), None))
        out.extend(remainder)
        i = j
    if report.changed or report.moved:
        return out, report
    return list(entries), report


def _pull_delayed_results(
    entries: Sequence[Tagged],
    j: int,
    call_ids: set[str],
    seen_tool_use_ids: set[str],
    next_calls: list[_Call],
    moved_indexes: set[int],
    seen_result_ids: set[str],
    span_results: dict[str, Tagged],
    report: RepairReport,
    preview: Any,
) -> None:
    """The next assistant re-uses stale call ids: look past it for results of this span."""
    lookahead = set(seen_tool_use_ids) | {c.id for c in next_calls}
    for k in range(j + 1, len(entries)):
        if k in moved_indexes:
            continue
        candidate = entries[k]
        role = candidate.message.get("role")
        if role == "assistant":
            if preview(candidate.message, lookahead)[2]:
                break
            continue
        if role != "toolResult":
            continue
        rid = result_id(candidate.message)
        if not rid or rid not in call_ids:
            continue
        moved_indexes.add(k)
        report.changed = True
        if rid in seen_result_ids:
            report.dropped_duplicate_results += 1
            continue
        existing = span_results.get(rid)
        if existing is None:
            span_results[rid] = candidate
        else:
            if _prefer(existing, candidate):
                span_results[rid] = candidate
            report.dropped_duplicate_results += 1
        report.moved = True


def sanitize_tool_use_result_pairing(messages: Sequence[Message]) -> list[Message]:
    """Repair tool call/result pairing of plain messages (see the module docstring).

    >>> call = {"role": "assistant", "content": [{"type": "toolCall", "id": "t1", "name": "ls"}]}
    >>> [m["role"] for m in sanitize_tool_use_result_pairing([call, {"role": "user", "content": "hi"}])]
    ['assistant', 'toolResult', 'user']
    """
    repaired, _ = repair_tagged([Tagged(m, None) for m in messages])
    return [entry.message for entry in repaired]
