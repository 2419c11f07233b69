"""Shared values of the scoring layer: the :class:`Score` row and text views of stored items.

Every metric in :mod:`lcm_lab.metrics` returns ``Score`` values: one number for one thing
(a summary, a DAG depth, a turn, a QA item, a whole run) with JSON-able details. They are
written to the lab store's ``scores`` table by :mod:`lcm_lab.store.scores`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from lcm_lab.engine.types import Assembly, StoredMessage

Scope = Literal["run", "summary", "depth", "turn", "qa", "needle", "fact_type", "age", "category", "probe", "fixture"]
SCOPES: tuple[str, ...] = ("run", "summary", "depth", "turn", "qa", "needle", "fact_type", "age", "category", "probe", "fixture")


@dataclass(frozen=True)
class Score:
    """One measured value.

    ``scope`` says what was measured (``"summary"``, ``"depth"``, ``"turn"``, ``"run"``,
    ``"qa"``, ...) and ``scope_id`` which one (a summary id, a depth, a turn index, a QA id;
    ``""`` for the run). ``value`` is ``None`` when the metric is undefined for that thing
    (for example a retention ratio whose ceiling equals its floor); the reason is in ``details``.

    >>> Score("run-1", "run", "", "peak_context_tokens", 5120.0).metric
    'peak_context_tokens'
    """

    run_id: str
    scope: str
    scope_id: str
    metric: str
    value: float | None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"unknown score scope {self.scope!r}; expected one of {SCOPES}")
        if self.value is not None and not isinstance(self.value, int | float):
            raise TypeError(f"score {self.metric}: value must be a number or None, got {type(self.value).__name__}")

    def details_json(self) -> str:
        """``details`` as canonical JSON text (sorted keys)."""
        return json.dumps(self.details, sort_keys=True, default=_json_default)


def _json_default(value: object) -> object:
    if isinstance(value, set | frozenset | tuple):
        return sorted(value) if isinstance(value, set | frozenset) else list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean, ``None`` for no values."""
    items = list(values)
    return sum(items) / len(items) if items else None


# -- text of stored and assembled items --------------------------------------------------------


def _strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings_in(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings_in(v)]
    return []


def message_text(message: StoredMessage) -> str:
    """What a reader of the transcript sees of a stored message.

    The plain-text projection (``content``) plus the arguments of tool calls (which the
    projection leaves out): a ``command`` argument is rendered as ``$ <command>`` so that shell
    commands are recognisable, other string arguments as they are.
    """
    pieces = [message.content] if message.content else []
    for part in message.parts:
        if part.part_type != "tool" or not part.tool_input:
            continue
        try:
            args = json.loads(part.tool_input)
        except ValueError:
            pieces.append(part.tool_input)
            continue
        if isinstance(args, Mapping) and isinstance(args.get("command"), str):
            pieces.append("$ " + args["command"])
            rest = {k: v for k, v in args.items() if k != "command"}
            pieces.extend(_strings_in(rest))
        else:
            pieces.extend(_strings_in(args))
    return "\n".join(pieces)


def _tool_call_text(args: Any) -> list[str]:
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return [args]
    if isinstance(args, Mapping) and isinstance(args.get("command"), str):
        return ["$ " + args["command"], *_strings_in({k: v for k, v in args.items() if k != "command"})]
    return _strings_in(args)


def runtime_text(message: Mapping[str, Any]) -> str:
    """What a reader sees of a runtime message (a transcript entry or an item the model receives):
    text blocks, tool results, and tool-call arguments (a ``command`` as ``$ <command>``, like
    :func:`message_text`); thinking blocks, signatures, ids and images are left out.

    >>> runtime_text({"role": "assistant", "content": [{"type": "text", "text": "Listing."},
    ...     {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "ls -la"}}]}).split()
    ['Listing.', '$', 'ls', '-la']
    """
    pieces: list[str] = []
    if isinstance(message.get("command"), str):  # a host-side shell run (pi's bashExecution)
        pieces.append("$ " + message["command"])
        pieces.extend(v for k in ("output", "error") if isinstance(v := message.get(k), str))
    content = message.get("content", "")
    if isinstance(content, str):
        return "\n".join([*pieces, content] if content else pieces) if pieces else content
    for block in content if isinstance(content, list | tuple) else ():
        if isinstance(block, str):
            pieces.append(block)
        elif isinstance(block, Mapping):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                pieces.append(block["text"])
            elif kind in ("toolCall", "tool_use", "toolUse"):
                pieces.extend(_tool_call_text(block.get("arguments", block.get("input", {}))))
            elif kind in ("toolResult", "tool_result"):
                pieces.extend(_strings_in(block.get("content", "")))
    return "\n".join(pieces)


def assembled_message_text(message: Mapping[str, Any]) -> str:
    """All text in one assembled runtime message (strings at any depth of its content)."""
    return "\n".join(_strings_in(message.get("content", "")))


def assembly_refs(assembly: Assembly) -> tuple[frozenset[int], frozenset[str]]:
    """Message seqs and summary ids that an assembly shows the model."""
    seqs = frozenset(int(i.ref) for i in assembly.items if i.kind == "message" and i.ref is not None)
    sids = frozenset(str(i.ref) for i in assembly.items if i.kind == "summary" and i.ref is not None)
    return seqs, sids


def age_bucket(age: int, edges: tuple[int, ...] = (1, 4, 16, 64, 256)) -> str:
    """A coarse, log-spaced label for an age in turns or messages.

    >>> [age_bucket(a) for a in (0, 3, 20, 1000)]
    ['0', '1-3', '16-63', '256+']
    """
    if age < edges[0]:
        return "0" if edges[0] == 1 else f"0-{edges[0] - 1}"
    for low, high in zip(edges, edges[1:], strict=False):
        if low <= age < high:
            return f"{low}-{high - 1}"
    return f"{edges[-1]}+"


_T = TypeVar("_T")
_PER_CONVERSATION: dict[tuple[int, str], tuple[object, Any]] = {}
_PER_CONVERSATION_LIMIT = 256  # about ten names per conversation: a serial sweep cycles through all of its conversations


def per_conversation(conversation: object, name: str, compute: Callable[[], _T]) -> _T:
    """``compute()`` once per conversation object and ``name``: what a score needs of the whole
    conversation (its texts, facts, the truncation floor at a budget) is the same for every run
    of it, and a sweep scores many runs of each conversation. The entry keeps the conversation
    alive, so its id is never reused for another one while cached (at most 256 entries).

    >>> calls = []
    >>> chat = object()
    >>> [per_conversation(chat, "n", lambda: calls.append(1) or len(calls)) for _ in range(2)]
    [1, 1]
    """
    key = (id(conversation), name)
    hit = _PER_CONVERSATION.get(key)
    if hit is not None and hit[0] is conversation:
        return hit[1]  # type: ignore[no-any-return]
    value = compute()
    if len(_PER_CONVERSATION) >= _PER_CONVERSATION_LIMIT:
        _PER_CONVERSATION.pop(next(iter(_PER_CONVERSATION)))
    _PER_CONVERSATION[key] = (conversation, value)
    return value
