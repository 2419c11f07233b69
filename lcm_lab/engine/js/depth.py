"""How deeply JSON is nested, and the lab's limit on it.

The plugin runs in V8, whose ``JSON.parse`` and ``JSON.stringify`` take thousands of levels.
The lab's JSON tools do not: orjson serialises at most 254 levels and parses at most 1,024,
and the engine's own walks (key order, ``JSON.stringify``, block repair) recurse once per level
under Python's limit of 1,000 frames. So the lab reads JSON nested at most
:data:`MAX_JSON_DEPTH` levels, a bound every one of those tools meets with room to spare.
Deeper input is refused at the edge, where it enters: a transcript line is skipped with a
warning (:func:`lcm_lab.io.transcripts.jsonl.parse_json_bytes`), an lcm.db message whose
stored JSON is deeper makes :func:`lcm_lab.engine.replay.driver.replay` raise
:class:`~lcm_lab.errors.JsonTooDeepError` (the replay command skips that conversation with a
warning). Both walks here are iterative, so measuring never recurses itself.

>>> value_depth({"a": [1, [2]]}), text_depth('{"a": [1, [2]], "s": "[[[["}')
(3, 3)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from lcm_lab.errors import JsonTooDeepError

MAX_JSON_DEPTH: Final = 200

# A JSON string (escapes included) or one bracket; brackets inside strings are skipped whole.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def value_depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value: 0 for a scalar, 1 for ``[]`` or ``{}``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            members: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            members = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((member, depth) for member in members)
    return deepest


def text_depth(text: str) -> int:
    """Nesting depth of JSON text (brackets inside strings do not count)."""
    deepest = depth = 0
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif mark in "]}":
            depth -= 1
    return deepest


def may_exceed(text: str | bytes) -> bool:
    """False when ``text`` cannot be nested past the limit (it holds too few brackets): a cheap
    test that spares the exact walk for almost every input."""
    if isinstance(text, str):
        return text.count("[") + text.count("{") > MAX_JSON_DEPTH
    return text.count(b"[") + text.count(b"{") > MAX_JSON_DEPTH


def check_stored_depth(messages: Iterable[Any], where: str) -> None:
    """Raise :class:`JsonTooDeepError` when a stored message's JSON text (a part's tool input,
    tool output or metadata) is nested deeper than :data:`MAX_JSON_DEPTH`."""
    for message in messages:
        for part in message.parts:
            for field in ("tool_input", "tool_output", "metadata"):
                text = getattr(part, field)
                if text and may_exceed(text) and (depth := text_depth(text)) > MAX_JSON_DEPTH:
                    raise JsonTooDeepError(
                        f"{where}: message {message.seq}'s {field} is JSON nested {depth:,} levels deep; "
                        f"the lab replays at most {MAX_JSON_DEPTH} levels (docs/hostile-input.md), so this "
                        "conversation is not replayed"
                    )
