"""What the host hands the engine: live messages, per-turn prompts, and the debt it leaves pending.

OpenClaw passes ``engine.assemble`` the session's message objects *before* the new prompt
(all roles, as parsed from the transcript) and the new user message's text as ``prompt``; it
appends that user message after the engine's output (reference-runs-engine README §1). A
:class:`HostView` holds those live messages once, with per-turn offsets, so each per-turn call
slices instead of copying.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple

from lcm_lab.engine.assembly.bare import estimate_serialized_message_tokens, resolve_message
from lcm_lab.engine.assembly.tool_estimate import estimate_serialized_message_tokens_v1
from lcm_lab.engine.types import AssembledItem, InputEntry, StoredMessage, TurnRecord

__all__ = ["HostView", "debt_pending_after", "host_view_of_entries", "host_view_of_stored"]


class HostView(NamedTuple):
    """Live messages in file order, how many precede each turn, and each turn's prompt."""

    live: tuple[AssembledItem, ...]
    live_before: tuple[int, ...]  # live_before[k] = messages of turns 0..k-1; the last entry = all
    prompts: tuple[AssembledItem | None, ...]


def _serialized_item(message: dict[str, Any], kind: Literal["live", "prompt"], ref: int, v1: bool) -> AssembledItem:
    estimate = estimate_serialized_message_tokens_v1 if v1 else estimate_serialized_message_tokens
    return AssembledItem(str(message.get("role")), kind, ref, message, estimate(message))


def _view(turns: Iterable[Sequence[tuple[int, dict[str, Any]]]], v1: bool = False) -> HostView:
    live: list[AssembledItem] = []
    before: list[int] = []
    prompts: list[AssembledItem | None] = []
    for messages in turns:
        before.append(len(live))
        first = messages[0] if messages else None
        # A turn that does not start with a user message gets no prompt (only possible for turn 0).
        is_prompt = first is not None and first[1].get("role") == "user"
        prompts.append(_serialized_item(first[1], "prompt", first[0], v1) if first is not None and is_prompt else None)
        live.extend(_serialized_item(message, "live", ref, v1) for ref, message in messages)
    before.append(len(live))
    return HostView(tuple(live), tuple(before), tuple(prompts))


def host_view_of_entries(turns: Sequence[Sequence[InputEntry]], *, v1: bool = False) -> HostView:
    """The host's view of a transcript split into turns (``ref`` = 1-based input line); ``v1``
    prices messages with 1.0's estimate."""
    return _view(([(e.line, dict(e.message)) for e in entries if e.message is not None] for entries in turns), v1)


def host_view_of_stored(turns: Sequence[Sequence[StoredMessage]], *, v1: bool = False) -> HostView:
    """The host's view of an lcm.db conversation (no transcript): its rows rendered as runtime messages.

    ``ref`` is the message seq. A database holds what the engine stored, not what the host
    held, so live-message fallbacks over it are an approximation.
    """
    return _view(
        ([(m.seq, r.message) for m in rows if (r := resolve_message(m, 0)) is not None] for rows in turns), v1
    )


def debt_pending_after(turns: Sequence[TurnRecord], mode: str) -> tuple[bool, ...]:
    """Whether a deferred-compaction debt is pending after each turn.

    Deferred mode records the debt row itself (``debt_after``). Inline afterTurn writes a debt
    when its compaction fails (``ok: false``) and nothing inline ever drains it, so it stays
    pending for the rest of the run (reference-runs-engine README §2 step 2).
    """
    pending: list[bool] = []
    failed = False
    for record in turns:
        if mode == "deferred":
            pending.append(bool(record.debt_after and record.debt_after.pending))
            continue
        failed = failed or bool(record.compact_result and not record.compact_result.get("ok"))
        pending.append(failed)
    return tuple(pending)
