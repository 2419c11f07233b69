"""What the model receives: the engine-level ``LcmContextEngine.assemble`` (spec §6 step 7).

The bare assembler (:func:`lcm_lab.engine.assembly.bare.assemble`) is only one branch of it. Around
it the engine falls back to the host's live messages (no conversation yet, no context items,
stored coverage trailing the live history, an empty or user-less bare output), degrades to the
raw live history cut to the budget while a deferred-compaction debt is pending near or over the
budget (no summaries at all), strips assistant prefill, and clamps the result by its
*serialized* size (reference-runs-engine README §2). Every rule here was checked against the
real engine's per-turn and end-of-run calls.

Live messages are :class:`AssembledItem` values of kind ``"live"`` whose ``ref`` is the 1-based
input line; their ``message`` is the host's message object, untouched.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lcm_lab.engine.assembly.bare import estimate_serialized_message_tokens
from lcm_lab.engine.assembly.blocks import TOOL_CALL_TYPES
from lcm_lab.engine.js.json import js_trim
from lcm_lab.engine.types import AssembledItem, Assembly, SentContext

__all__ = [
    "CLAMP_SAFETY_RATIO",
    "NEAR_BUDGET_RATIO",
    "clamp_serialized",
    "engine_assemble",
    "is_substantive_assistant",
    "memoized_cost",
    "prompt_recall_identifiers",
    "prompt_text",
    "strip_prefill",
]

_RECALL_IDENTIFIER = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b", re.ASCII)
_SECRET_LIKE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH|CREDENTIAL")
CLAMP_SAFETY_RATIO = 0.9  # the clamp keeps a suffix within floor(0.9 × budget)
NEAR_BUDGET_RATIO = 0.75  # pending debt above floor(0.75 × budget) degrades (fixed, not contextThreshold)
_REASONING_BLOCKS = frozenset({"thinking", "redacted_thinking", "reasoning"})

Cost = Callable[[AssembledItem], int]


def serialized_cost(item: AssembledItem) -> int:
    """Tokens of ``JSON.stringify(item.message)`` with the opaque-binary rule.

    Live and prompt items carry this cost in ``tokens`` already (computed once per message);
    assembled items carry the stored-content estimate there, so theirs is computed here.
    """
    if item.kind in ("live", "prompt"):
        return item.tokens
    return estimate_serialized_message_tokens(item.message)


def memoized_cost(*, v1: bool = False) -> Cost:
    """:func:`serialized_cost` remembering each (kind, ref) message it priced (``v1``: with 1.0's
    tool-result boundary estimate, :mod:`lcm_lab.engine.assembly.tool_estimate`).

    Per-turn calls see the same messages again and again; an entry is reused only while the
    message is equal to the one priced (assembly may rewrite a message, e.g. strip a tool call).
    """
    from lcm_lab.engine.assembly.tool_estimate import estimate_serialized_message_tokens_v1

    estimate = estimate_serialized_message_tokens_v1 if v1 else estimate_serialized_message_tokens
    seen: dict[tuple[str, Any], tuple[Mapping[str, Any], int]] = {}

    def cost(item: AssembledItem) -> int:
        if item.kind in ("live", "prompt"):
            return item.tokens
        key = (item.kind, item.ref)
        hit = seen.get(key)
        if hit is not None and hit[0] == item.message:
            return hit[1]
        value = estimate(item.message)
        seen[key] = (item.message, value)
        return value

    return cost


def _is_tool_result(role: str) -> bool:
    return role in ("tool", "toolResult")


def _is_user_class(role: str) -> bool:
    return role in ("user", "system")


def prompt_text(message: Mapping[str, Any]) -> str | None:
    """The ``prompt`` a host passes for a user message: the string, or its text blocks joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return None


def prompt_recall_identifiers(prompt: str) -> tuple[str, ...]:
    """Identifiers in a prompt that make the engine's prompt recall search its index (up to 4).

    Prompt recall (a ``<lossless_claw_prompt_recall>`` message of FTS snippets prepended when it
    fits) is not modelled by the lab: calls whose prompt yields identifiers here are flagged on
    :attr:`SentContext.prompt_recall_identifiers` instead of silently assumed recall-free.

    >>> prompt_recall_identifiers("Where is MAX_RETRIES set? Not API_KEY. MAX_RETRIES again")
    ('MAX_RETRIES',)
    """
    found: list[str] = []
    for name in _RECALL_IDENTIFIER.findall(prompt):
        if name not in found and not _SECRET_LIKE.search(name):
            found.append(name)
    return tuple(found[:4])


def is_substantive_assistant(message: Mapping[str, Any]) -> bool:
    """Non-blank text outside thinking/reasoning blocks, or a tool call."""
    content = message.get("content")
    if isinstance(content, str):
        return bool(js_trim(content))
    if not isinstance(content, list):
        return False
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind in TOOL_CALL_TYPES:
            return True
        if kind in _REASONING_BLOCKS:
            continue
        text = block.get("text")
        if isinstance(text, str) and js_trim(text):
            return True
    return False


def strip_prefill(items: Sequence[AssembledItem], keep_substantive: bool) -> list[AssembledItem]:
    """Drop trailing ``assistant`` messages (a host delivering the turn separately keeps a substantive one)."""
    kept = list(items)
    while kept and kept[-1].role == "assistant":
        if keep_substantive and is_substantive_assistant(kept[-1].message):
            break
        kept.pop()
    return kept


def clamp_serialized(
    items: Sequence[AssembledItem], budget: int, cost: Cost, *, keep_substantive: bool, end_call: bool,
    trigger_at_target: bool = False,
) -> tuple[list[AssembledItem], bool, int]:
    """The engine's serialized clamp: (kept items, whether it fired, serialized size before).

    Over budget (1.0, ``trigger_at_target``: over the target already), keep the newest suffix within ``max(1, floor(0.9 × budget))`` (at least the
    newest message), drop leading tool results while more than one is kept, re-seat the newest
    earlier user-class message if none is left, then strip prefill (an end-of-run call keeps the
    unstripped list if stripping would empty it).
    """
    costs = [cost(item) for item in items]
    total = sum(costs)
    target = max(1, math.floor(CLAMP_SAFETY_RATIO * budget))
    if not items or total <= (target if trigger_at_target else max(1, math.floor(budget))):
        return list(items), False, total
    start = len(items) - 1
    running = costs[start]
    while start > 0 and running + costs[start - 1] <= target:
        start -= 1
        running += costs[start]
    kept = list(items[start:])
    while len(kept) > 1 and _is_tool_result(kept[0].role):
        kept.pop(0)
    if not any(_is_user_class(item.role) for item in kept):
        earlier = next((items[i] for i in range(start - 1, -1, -1) if _is_user_class(items[i].role)), None)
        if earlier is not None:
            kept.insert(0, earlier)
    stripped = strip_prefill(kept, keep_substantive)
    if not stripped and end_call:
        stripped = kept
    return stripped, True, total


def _degraded(live: Sequence[AssembledItem], budget: int, cost: Cost, keep_substantive: bool) -> list[AssembledItem]:
    """Raw live history cut to the budget: leading system/developer kept, newest suffix within the rest."""
    stripped = strip_prefill(live, keep_substantive)
    lead = 0
    while lead < len(stripped) and stripped[lead].role in ("system", "developer"):
        lead += 1
    remaining = math.floor(budget) - sum(cost(item) for item in stripped[:lead])
    rest = stripped[lead:]
    start = len(rest)
    running = 0
    while start > 0:
        item_cost = cost(rest[start - 1])
        if start < len(rest) and running + item_cost > remaining:
            break
        start -= 1
        running += item_cost
    return stripped[:lead] + rest[start:]


def engine_assemble(
    *,
    live: Sequence[AssembledItem],
    budget: int,
    bare: Callable[[], Assembly] | None,
    context_items: int,
    has_summary: bool,
    stored_tokens: int,
    debt_pending: bool,
    degraded_path: str | None = None,
    prompt: AssembledItem | None = None,
    turn: int | None = None,
    cost: Cost = serialized_cost,
    clamp_at_target: bool = False,
) -> SentContext:
    """``LcmContextEngine.assemble`` on a state (reference-runs-engine README §2).

    ``bare`` builds the bare assembly of the state (``None``: no conversation yet);
    ``context_items``/``has_summary``/``stored_tokens`` describe its context; ``debt_pending``
    says whether a deferred-compaction debt is pending at the call (its emergency drain is not
    run here); ``degraded_path`` forces the result an emergency drain already decided. A
    ``prompt`` marks a per-turn call whose host delivers the turn separately (a substantive
    trailing assistant is kept) and is appended by the host after the output.
    ``clamp_at_target`` is 1.0's clamp trigger (above floor(0.9 × budget) instead of above the budget).
    """
    keep = prompt is not None
    end_call = turn is None
    recall = prompt_recall_identifiers(prompt_text(prompt.message) or "") if prompt is not None else ()

    def result(path: str, items: Sequence[AssembledItem], *, clamped: bool = False, tokens: int | None = None,
               bare_assembly: Assembly | None = None, before: int | None = None,
               drain_reached: bool = False, evicted: int = 0) -> SentContext:  # fmt: skip
        estimated = sum(cost(item) for item in items) if tokens is None else tokens
        return SentContext(
            budget, estimated, path, clamped, tuple(items), prompt=prompt, bare=bare_assembly, turn=turn,
            serialized_before=before, emergency_drain_reached=drain_reached, live_messages_in=len(live),
            evicted=evicted if before is not None else 0, prompt_recall_identifiers=recall,
        )  # fmt: skip

    def bounded(path: str, bare_assembly: Assembly | None) -> SentContext:
        items, clamped, before = clamp_serialized(
            strip_prefill(live, keep), budget, cost, keep_substantive=keep, end_call=end_call,
            trigger_at_target=clamp_at_target,
        )
        return result(path, items, clamped=clamped, bare_assembly=bare_assembly, before=before if clamped else None,
                      evicted=len(live) - len(items))  # fmt: skip

    if bare is None:
        return result("live-fallback:no-conversation", strip_prefill(live, keep), tokens=0)
    reached = debt_pending and stored_tokens > budget
    if degraded_path is None and debt_pending:
        if stored_tokens > budget:
            degraded_path = "degraded:emergency-debt-still-pending"
        elif stored_tokens > math.floor(NEAR_BUDGET_RATIO * budget):
            degraded_path = "degraded:near-budget"
    if degraded_path is not None:
        return result(degraded_path, _degraded(live, budget, cost, keep), bare_assembly=bare(), drain_reached=reached)
    if context_items == 0:
        return bounded("live-fallback:no-context-items", bare())
    if not has_summary and context_items < len(live):
        return bounded("live-fallback:coverage-trails-live", bare())
    assembly = bare()
    if not assembly.items:
        return bounded("live-fallback:empty-assembled-output", assembly)
    if not any(item.role == "user" for item in assembly.items):
        return bounded("live-fallback:no-user-turns", assembly)
    items, clamped, before = clamp_serialized(
        assembly.items, budget, cost, keep_substantive=keep, end_call=end_call, trigger_at_target=clamp_at_target
    )
    return result("assembled", items, clamped=clamped, bare_assembly=assembly, before=before if clamped else None,
                  evicted=len(assembly.items) - len(items))  # fmt: skip
