"""Context assembly: what the model sees, exactly as lossless-claw builds it (spec §6).

``assemble`` is the plugin's bare ``ContextAssembler.assemble`` (steps 1-6): resolve every
context item into a runtime message, protect the fresh tail, fill the rest of the budget
(everything, newest-first chronological, or prompt-aware), strip tool calls whose results
were evicted, drop empty messages and repair tool call/result pairing. What the model receives
is the engine-level assembly around it (step 7, :mod:`lcm_lab.engine.assembly.sent`), priced with
``estimate_serialized_message_tokens``.

Context items are addressed by position: ``context[i]`` has ordinal ``i`` (the plugin's
ordinals are contiguous after every compaction; only their order matters for assembly).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lcm_lab.engine.assembly.blocks import (
    TOOL_CALL_TYPES,
    RuntimeRole,
    content_from_parts,
    model_identity,
    parse_sender_metadata,
    pick_tool_call_id,
    pick_tool_is_error,
    pick_tool_name,
    runtime_role,
    top_level_reasoning,
)
from lcm_lab.engine.assembly.repair import Tagged, repair_tagged, result_id
from lcm_lab.engine.assembly.summary_xml import summary_xml
from lcm_lab.engine.js.json import js_stringify, js_trim
from lcm_lab.engine.tail import NO_TAIL, fresh_tail_start
from lcm_lab.engine.tokens import estimate_tokens, utf16_length
from lcm_lab.engine.types import AssembledItem, Assembly, ContextItem, StoredMessage, Summary

__all__ = [
    "assemble",
    "estimate_serialized_message_tokens",
    "relevance_score",
    "summary_xml",
    "tokenize_prompt_terms",
]

SelectionMode = Literal["full-fit", "chronological", "prompt-aware"]


@dataclass
class _Resolved:
    """A context item turned into a runtime message (the plugin's ``ResolvedItem``)."""

    ordinal: int
    kind: Literal["message", "summary"]
    ref: int | str
    message: dict[str, Any]
    tokens: int
    text: str  # what prompt-aware scoring reads
    source_is_user: bool  # DB role 'user' (the fresh-tail rule looks at the stored role)


# -- step 1: resolving items ------------------------------------------------------------------


def _zero_cost_usage(tokens: int) -> dict[str, Any]:
    return {
        "input": 0,
        "output": tokens,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": tokens,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def resolve_message(message: StoredMessage, ordinal: int) -> _Resolved | None:
    """The runtime message for a stored message, or None for an empty assistant row."""
    parts = tuple(sorted(message.parts, key=lambda p: p.ordinal))
    if message.role == "assistant" and not js_trim(message.content or "") and not parts:
        return None  # left behind by an error/aborted response
    role_from_store = runtime_role(message.role, parts)
    is_tool_result = role_from_store == "toolResult"
    tool_call_id = pick_tool_call_id(parts) if is_tool_result else None
    tool_name = (pick_tool_name(parts) or "unknown") if is_tool_result else None
    tool_is_error = pick_tool_is_error(parts) if is_tool_result else None
    # A tool result without a call id cannot be sent as one; it degrades to assistant text.
    role: RuntimeRole = "assistant" if is_tool_result and not tool_call_id else role_from_store
    content = content_from_parts(parts, role, message.content)
    reasoning = top_level_reasoning(parts) if role == "assistant" else {}
    identity = model_identity(parts) if role == "assistant" else None
    content_text = content if isinstance(content, str) else js_stringify(content)
    sender = parse_sender_metadata(message.sender_metadata) if role == "user" else None
    sender_text = js_stringify(sender) if sender else ""
    token_text = "\n".join(t for t in (content_text, "\n".join(reasoning.values()), sender_text) if t)
    tokens = estimate_tokens(token_text)
    runtime: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        runtime.update(identity or {})
        runtime.update(reasoning)
        runtime["usage"] = _zero_cost_usage(tokens)
    else:
        if role == "user" and sender:
            runtime["__openclaw"] = sender
        if tool_call_id:
            runtime["toolCallId"] = tool_call_id
        if tool_name:
            runtime["toolName"] = tool_name
        if role == "toolResult" and tool_is_error is not None:
            runtime["isError"] = tool_is_error
    return _Resolved(ordinal, "message", message.seq, runtime, tokens, content_text, message.role == "user")


def resolve_summary(summary: Summary, ordinal: int, timezone: str) -> _Resolved:
    """A summary item: a user message holding the summary XML."""
    xml = summary_xml(summary, timezone)
    return _Resolved(
        ordinal,
        "summary",
        summary.summary_id,
        {"role": "user", "content": xml},
        estimate_tokens(xml),
        summary.content,
        False,
    )


ResolveCache = dict[tuple[str, int | str], "_Resolved | None"]


def _resolve_all(
    messages: Mapping[int, StoredMessage],
    summaries: Mapping[str, Summary],
    context: Sequence[ContextItem],
    timezone: str,
    cache: ResolveCache | None = None,
) -> list[_Resolved]:
    resolved: list[_Resolved] = []
    for ordinal, item in enumerate(context):
        key = (item.kind, item.ref)
        if cache is not None and key in cache:
            cached = cache[key]
            if cached is not None:
                resolved.append(_Resolved(ordinal, cached.kind, cached.ref, cached.message, cached.tokens,
                                          cached.text, cached.source_is_user))  # fmt: skip
            continue
        # Like the plugin, an item whose row is gone is skipped rather than fatal.
        if item.kind == "message":
            stored = messages.get(int(item.ref))
            entry = resolve_message(stored, ordinal) if stored is not None else None
        else:
            found = summaries.get(str(item.ref))
            entry = resolve_summary(found, ordinal, timezone) if found is not None else None
        if cache is not None:
            cache[key] = entry
        if entry is not None:
            resolved.append(entry)
    return resolved


# -- step 5: prompt-aware scoring ---------------------------------------------------------------

_NON_TERM = re.compile(r"[^a-z0-9]+")


def tokenize_prompt_terms(text: str) -> list[str]:
    """Lower-cased ``[a-z0-9]+`` runs longer than one character.

    >>> tokenize_prompt_terms("Fix the DB-migration in v2, a x")
    ['fix', 'the', 'db', 'migration', 'in', 'v2']
    """
    return [t for t in _NON_TERM.split(text.lower()) if len(t) > 1]


def relevance_score(item_text: str, prompt: str) -> float:
    """Σ over unique prompt terms of term frequency / number of item terms (0 if either is empty)."""
    prompt_terms = tokenize_prompt_terms(prompt)
    item_terms = tokenize_prompt_terms(item_text)
    if not prompt_terms or not item_terms:
        return 0.0
    freq: dict[str, int] = {}
    for term in item_terms:
        freq[term] = freq.get(term, 0) + 1
    score = 0.0
    for term in dict.fromkeys(prompt_terms):
        tf = freq.get(term, 0)
        if tf:
            score += tf / len(item_terms)
    return score


# -- step 6: cleaning the selection -------------------------------------------------------------


def _strip_orphan_tool_calls(
    selected: list[_Resolved], tail_start: int, all_results: Mapping[str, list[int]]
) -> list[_Resolved]:
    """Drop assistant tool calls whose result is not selected after them.

    Outside the fresh tail such a call always goes; inside it only when its result exists
    somewhere in the context (i.e. was evicted). A message left with no blocks is dropped.
    """
    selected_results: dict[str, list[int]] = {}
    for item in selected:
        rid = result_id(item.message)
        if rid:
            selected_results.setdefault(rid, []).append(item.ordinal)
    kept_items: list[_Resolved] = []
    for item in selected:
        content = item.message.get("content")
        if item.message.get("role") != "assistant" or not isinstance(content, list):
            kept_items.append(item)
            continue
        removed_any = False
        kept_blocks: list[Any] = []
        for block in content:
            if (
                isinstance(block, Mapping)
                and isinstance(block.get("type"), str)
                and block["type"] in TOOL_CALL_TYPES
            ):
                call_id = next(
                    (block[k] for k in ("id", "call_id") if isinstance(block.get(k), str) and block[k]), None
                )
                if call_id is not None and not any(
                    o > item.ordinal for o in selected_results.get(call_id, ())
                ):
                    if item.ordinal < tail_start or all_results.get(call_id):
                        removed_any = True
                        continue
            kept_blocks.append(block)
        if not kept_blocks:
            continue
        if removed_any:
            item = _replace_message(item, {**item.message, "content": kept_blocks})
        kept_items.append(item)
    return kept_items


def _replace_message(item: _Resolved, message: dict[str, Any]) -> _Resolved:
    return _Resolved(item.ordinal, item.kind, item.ref, message, item.tokens, item.text, item.source_is_user)


def _is_blank_text_block(block: Any) -> bool:
    return (
        isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and not js_trim(block["text"])
    )


def _normalize_assistant(item: _Resolved) -> _Resolved:
    message = item.message
    content = message.get("content")
    if message.get("role") != "assistant":
        return item
    if isinstance(content, str):
        return _replace_message(item, {**message, "content": [{"type": "text", "text": content}]})
    if isinstance(content, list):
        kept = [b for b in content if not _is_blank_text_block(b)]
        if len(kept) != len(content):
            return _replace_message(item, {**message, "content": kept})
    return item


def is_empty_message_content(message: Mapping[str, Any]) -> bool:
    """Content providers reject as empty: missing, blank string, ``[]``, or (assistant)
    only thinking blocks or only blank text blocks."""
    content = message.get("content")
    if content is None:
        return True
    if isinstance(content, list):
        if not content:
            return True
        if message.get("role") == "assistant":
            thinking_only = all(
                isinstance(b, Mapping) and b.get("type") in ("thinking", "redacted_thinking", "reasoning")
                for b in content
            )
            return thinking_only or all(_is_blank_text_block(b) for b in content)
        return False
    if isinstance(content, str):
        return not js_trim(content)
    return False


# -- the assembler ------------------------------------------------------------------------------


def assemble(
    messages: Mapping[int, StoredMessage],
    summaries: Mapping[str, Summary],
    context: Sequence[ContextItem],
    *,
    token_budget: int,
    fresh_tail_count: int,
    fresh_tail_max_tokens: int | None = None,
    timezone: str = "UTC",
    prompt: str | None = None,
    prompt_aware_eviction: bool = False,
    cache: ResolveCache | None = None,
) -> Assembly:
    """Build the model context from the engine state under ``token_budget`` (spec §6 steps 1-6).

    ``messages`` maps seq → stored message, ``summaries`` maps summary_id → summary, and
    ``context`` is the ordered list of context items. The fresh tail (§4.4, measured with item
    tokens) is always kept; older items are kept whole if they fit, else chosen newest-first
    until one does not fit (``chronological``), or, with ``prompt_aware_eviction`` and a
    prompt containing a searchable term, by relevance to the prompt (``prompt-aware``).
    ``cache`` (one per message/summary set) keeps resolved items between calls.
    """
    resolved = _resolve_all(messages, summaries, context, timezone, cache)
    stats = {
        "rawMessageCount": sum(1 for r in resolved if r.kind == "message"),
        "summaryCount": sum(1 for r in resolved if r.kind == "summary"),
        "totalContextItems": len(resolved),
    }
    raw_items = [r for r in resolved if r.kind == "message"]
    max_tokens = (
        math.floor(fresh_tail_max_tokens)
        if fresh_tail_max_tokens is not None and fresh_tail_max_tokens >= 0
        else None
    )
    tail_start = fresh_tail_start(
        [(r.ordinal, r.source_is_user) for r in raw_items],
        lambda i: raw_items[i].tokens,
        fresh_tail_count,
        max_tokens,
    )
    all_results: dict[str, list[int]] = {}
    for r in resolved:
        rid = result_id(r.message)
        if rid:
            all_results.setdefault(rid, []).append(r.ordinal)

    tail = [r for r in resolved if r.ordinal >= tail_start]
    evictable = [r for r in resolved if r.ordinal < tail_start]
    tail_tokens = sum(r.tokens for r in tail)
    remaining = max(0, token_budget - tail_tokens)
    evictable_total = sum(r.tokens for r in evictable)

    mode: SelectionMode
    if evictable_total <= remaining:
        mode, kept = "full-fit", list(evictable)
    elif prompt_aware_eviction and prompt is not None and tokenize_prompt_terms(prompt):
        mode, kept = "prompt-aware", _select_by_relevance(evictable, remaining, prompt)
    else:
        mode, kept = "chronological", _select_newest(evictable, remaining)
    kept_tokens = sum(r.tokens for r in kept)

    selected = sorted(kept + tail, key=lambda r: r.ordinal)
    cleaned = [_normalize_assistant(r) for r in _strip_orphan_tool_calls(selected, tail_start, all_results)]
    cleaned = [r for r in cleaned if not is_empty_message_content(r.message)]
    by_ordinal = {r.ordinal: r for r in cleaned}
    repaired, _ = repair_tagged([Tagged(r.message, r.ordinal) for r in cleaned])

    items = tuple(_output_item(entry, by_ordinal) for entry in repaired)
    return Assembly(
        token_budget=token_budget,
        estimated_tokens=kept_tokens + tail_tokens,
        selection_mode=mode,
        fresh_tail_ordinal=None if tail_start == NO_TAIL else tail_start,
        tail_tokens=tail_tokens,
        remaining_budget=remaining,
        evictable_total_tokens=evictable_total,
        stats=stats,
        items=items,
    )


def _select_newest(evictable: Sequence[_Resolved], budget: int) -> list[_Resolved]:
    kept: list[_Resolved] = []
    total = 0
    for item in reversed(evictable):
        if total + item.tokens > budget:
            break  # everything older goes too
        kept.append(item)
        total += item.tokens
    kept.reverse()
    return kept


def _select_by_relevance(evictable: Sequence[_Resolved], budget: int, prompt: str) -> list[_Resolved]:
    scored = sorted(
        ((relevance_score(item.text, prompt), index, item) for index, item in enumerate(evictable)),
        key=lambda s: (-s[0], -s[1]),  # most relevant first, newer first on ties
    )
    kept: list[_Resolved] = []
    total = 0
    for _, _, item in scored:
        if total + item.tokens <= budget:  # skip what does not fit, keep trying smaller ones
            kept.append(item)
            total += item.tokens
    return sorted(kept, key=lambda r: r.ordinal)


def _output_item(entry: Tagged, by_ordinal: Mapping[int, _Resolved]) -> AssembledItem:
    message = dict(entry.message)
    role = str(message.get("role"))
    if entry.tag is None:
        return AssembledItem(
            role, "synthetic", None, message, estimate_tokens(js_stringify(message.get("content")))
        )
    source = by_ordinal[int(entry.tag)]  # type: ignore[call-overload]
    return AssembledItem(role, source.kind, source.ref, message, source.tokens)


# -- step 7: the final clamp by serialized size -------------------------------------------------

OPAQUE_BINARY_PART_TOKENS = 1600
_OPAQUE_MIN_UTF16 = 4096
_OPAQUE_FIELD_KEYS = frozenset({"data", "image", "imageData", "image_data", "base64", "bytes", "source"})
_BASE64_HEAD = re.compile(r"[A-Za-z0-9+/=\r\n]+")


def _is_opaque_binary(key: str, value: str) -> bool:
    if utf16_length(value) < _OPAQUE_MIN_UTF16:
        return False
    if value.startswith("data:"):
        return True
    if key not in _OPAQUE_FIELD_KEYS:
        return False
    head = value[:512]
    return (
        bool(_BASE64_HEAD.fullmatch(head))
        and any(c.isdigit() for c in head)
        and any(c.isascii() and c.isalpha() for c in head)
    )


def estimate_serialized_message_tokens(message: Mapping[str, Any]) -> int:
    """Tokens of ``JSON.stringify(message)`` with binary payloads priced at 1,600 each.

    Strings of ≥ 4,096 UTF-16 units that are ``data:`` URLs, or base64-looking values under
    a binary field key (``data``, ``image``, ``source``, …), count as one opaque part. The whole
    message is priced, the ``__openclaw`` sender envelope included, as the engine does.

    >>> estimate_serialized_message_tokens({"role": "user", "content": "hi", "__openclaw": {"senderId": "x"}})
    15
    """
    opaque = 0

    def walk(key: str, value: Any) -> Any:
        nonlocal opaque
        if isinstance(value, str):
            if _is_opaque_binary(key, value):
                opaque += 1
                return "[opaque binary payload]"
            return value
        if isinstance(value, Mapping):
            return {k: walk(str(k), v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(str(i), v) for i, v in enumerate(value)]
        return value

    top = {k: walk(str(k), v) for k, v in message.items()}
    return estimate_tokens(js_stringify(top)) + opaque * OPAQUE_BINARY_PART_TOKENS
