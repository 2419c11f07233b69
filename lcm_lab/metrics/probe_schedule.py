"""When a headline asks: the probe points of a run over the conversation's life, and the floor there.

A probe point is a turn ``k``: the probe is the question turn after it (``run.ask(q, after_turn=k)``,
arriving one hour after the turn's last message, :data:`~lcm_lab.engine.replay.question.DEFAULT_DELAY_MS`).
The schedule depends only on the conversation and the budget, never on the method, so every
strategy and setting is asked at the same points and their scores pair probe by probe.

* **Eligible points** — turns whose history no longer fits the budget: plain truncation there has
  cut something (:func:`floor_context` says ``truncated``). Before that every strategy can send
  the whole history and a probe measures nothing.
* **LoCoMo** (turns carry dialogue ids ``D<session>:<line>``): a QA item is asked at the start of
  every session after its last evidence — after the last turn of the evidence's own session and of
  each later one, the last being the end of the conversation (:func:`qa_probe_turns`). Facts and
  decisions are probed at the same session boundaries (:func:`history_probe_turns`).
* **Other conversations** (coding sessions): facts and decisions are probed at user-turn starts
  (the question replaces the next user message) with a stride: the eligible turns, walked back
  from the last, every ``ceil(eligible / MAX_STRIDE_PROBES)``-th one, so at most
  :data:`MAX_STRIDE_PROBES` points, the last turn always among them.

The **floor** at a point is exactly what the ``truncate`` strategy sends there
(:func:`floor_context`: its own ``ask`` on a memoryless run of the same conversation, same turns and
seqs), so that strategy scores exactly 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from lcm_lab.engine.types import Conversation, SentContext
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.base import per_conversation

MAX_STRIDE_PROBES = 16
PROBE_PROMPT = "Where were we? Please continue."
"""The user message of fact and decision probes (they have no question of their own)."""

_DIALOGUE_ID = re.compile(r"^D(\d+):\d+$")


def dialogue_session(entry_id: str | None) -> int | None:
    """The LoCoMo session of a dialogue id (``None`` when it names no dialogue line).

    >>> dialogue_session("D3:12"), dialogue_session("D:11:26"), dialogue_session(None)
    (3, None, None)
    """
    match = _DIALOGUE_ID.match(entry_id or "")
    return int(match.group(1)) if match else None


def turn_sessions(run: Any) -> list[int | None]:
    """The LoCoMo session of each turn of ``run`` (its last dialogue line's), ``None`` without one."""
    conversation: Conversation = run.conversation
    by_line = {e.line: dialogue_session(e.entry_id) for e in conversation.entries if e.entry_id}
    out: list[int | None] = []
    for t in run.turns:
        sessions = [by_line.get(line) for line in range(t.lines[0], t.lines[1] + 1)] if t.lines else []
        known = [s for s in sessions if s is not None]
        out.append(known[-1] if known else None)
    return out


def session_end_turns(run: Any) -> dict[int, int]:
    """``{session: last turn of that session}`` (empty for a conversation without sessions)."""
    ends: dict[int, int] = {}
    for turn, session in enumerate(turn_sessions(run)):
        if session is not None:
            ends[session] = turn
    return ends


def truncation_run(conversation: Conversation) -> Any:
    """The ``truncate`` strategy's run of ``conversation`` (memoryless: one per conversation)."""
    from lcm_lab.strategies import run_strategy

    return per_conversation(conversation, "truncate_run", lambda: run_strategy(conversation, "truncate"))


def floor_context(conversation: Conversation, after_turn: int, budget: int) -> SentContext:
    """What ``truncate`` sends at the question turn after ``after_turn`` within ``budget`` (cached)."""
    cache: dict[tuple[int, int], SentContext] = per_conversation(conversation, "floor_contexts", dict)
    key = (after_turn, budget)
    if key not in cache:
        cache[key] = truncation_run(conversation).ask(PROBE_PROMPT, after_turn, budget=budget)
    return cache[key]


def eligible(conversation: Conversation, after_turn: int, budget: int) -> bool:
    """The history up to ``after_turn`` no longer fits ``budget`` (truncation cuts something)."""
    return floor_context(conversation, after_turn, budget).path == "truncated"


def qa_probe_turns(item: QAItem, ends: dict[int, int], known: set[str]) -> tuple[int, ...]:
    """The turns after which ``item`` is asked: the last turn of its last evidence session and of
    every later session (``ends`` from :func:`session_end_turns`; ``known``: the dialogue ids of the
    conversation). Empty when no evidence id names a dialogue line.

    >>> qa_probe_turns(QAItem("q", "?", "a", 1, ("D2:1", "D1:4")), {1: 3, 2: 7, 3: 9}, {"D1:4", "D2:1"})
    (7, 9)
    """
    sessions = [dialogue_session(e) for e in item.evidence if e in known]
    last = max((s for s in sessions if s is not None), default=None)
    if last is None:
        return ()
    return tuple(turn for session, turn in sorted(ends.items()) if session >= last)


def stride_turns(turns: Sequence[int], most: int = MAX_STRIDE_PROBES) -> tuple[int, ...]:
    """Every ``ceil(len / most)``-th of ``turns`` walking back from the last (which is always kept).

    >>> stride_turns(list(range(10)), 4)
    (0, 3, 6, 9)
    """
    if not turns:
        return ()
    stride = max(1, math.ceil(len(turns) / most))
    return tuple(sorted(turns[::-1][::stride]))


def history_probe_turns(run: Any, budget: int) -> tuple[tuple[int, ...], str]:
    """Probe points of facts and decisions, and the schedule's name (see the module docstring)."""
    conversation = run.conversation
    ends = session_end_turns(run)
    if ends:
        turns = [t for t in sorted(ends.values()) if eligible(conversation, t, budget)]
        return tuple(turns), "session boundaries"
    turns = [t for t in range(len(run.turns)) if eligible(conversation, t, budget)]
    return stride_turns(turns), f"user-turn starts, at most {MAX_STRIDE_PROBES} (stride)"
