"""1.0's serialized estimate of a message (``src/estimate-tokens.ts`` ``estimateSerializedMessageTokens``
at ``bf3d69ef``): tool results are priced at least at a *boundary* estimate.

For a message with role ``tool`` / ``toolResult`` or type ``toolResult`` the estimate is
max(serialized estimate, ceil(1.2 × (12 + content + toolName))), with string content at
ceil(tokens × 2), a text block at 6 + ceil(tokens(text) × 2), any other block (or non-array
content) at 6 + ceil(tokens(JSON) × 2) (no opaque-binary shortcut), and the tool name at
ceil(tokens(JSON of the name) × 4 / 3). Every other message costs what 0.15.3 charges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from lcm_lab.engine.assembly.bare import estimate_serialized_message_tokens
from lcm_lab.engine.js.json import js_stringify
from lcm_lab.engine.tokens import estimate_tokens

__all__ = ["estimate_serialized_message_tokens_v1", "tool_result_boundary_tokens"]

_TOOL_RESULT_CHARS_PER_TOKEN = 2
_JSON_CHARS_PER_TOKEN = 3
_MESSAGE_OVERHEAD = 12
_BLOCK_OVERHEAD = 6
_SAFETY_MARGIN = 1.2


def _string_tokens(text: str, chars_per_token: int) -> int:
    return math.ceil(estimate_tokens(text) * (4 / chars_per_token))


def _json_tokens(value: Any, chars_per_token: int) -> int:
    if value is None:
        return 0
    return _string_tokens(js_stringify(value), chars_per_token)


def _block_tokens(block: Any) -> int:
    if isinstance(block, str):
        return _string_tokens(block, _TOOL_RESULT_CHARS_PER_TOKEN)
    if not isinstance(block, Mapping):
        return _json_tokens(block, _TOOL_RESULT_CHARS_PER_TOKEN)
    text = block.get("text")
    if block.get("type") == "text" and isinstance(text, str):
        return _BLOCK_OVERHEAD + _string_tokens(text, _TOOL_RESULT_CHARS_PER_TOKEN)
    return _BLOCK_OVERHEAD + _json_tokens(block, _TOOL_RESULT_CHARS_PER_TOKEN)


def tool_result_boundary_tokens(message: Mapping[str, Any]) -> int:
    """The boundary estimate of a tool-result message (0 for any other message).

    >>> tool_result_boundary_tokens({"role": "toolResult", "toolName": "read", "content": [{"type": "text", "text": "x" * 40}]})
    50
    """
    if not (message.get("role") in ("tool", "toolResult") or message.get("type") == "toolResult"):
        return 0
    content = message.get("content")
    if isinstance(content, str):
        body = _string_tokens(content, _TOOL_RESULT_CHARS_PER_TOKEN)
    elif isinstance(content, list):
        body = sum(_block_tokens(block) for block in content)
    elif content is not None:
        body = _json_tokens(content, _TOOL_RESULT_CHARS_PER_TOKEN)
    else:
        body = 0
    name = message.get("toolName")
    if name is None:
        name = message.get("tool_name")
    return math.ceil((_MESSAGE_OVERHEAD + body + _json_tokens(name, _JSON_CHARS_PER_TOKEN)) * _SAFETY_MARGIN)


def estimate_serialized_message_tokens_v1(message: Mapping[str, Any]) -> int:
    """1.0's serialized estimate: the 0.15.3 estimate, raised to the boundary estimate for tool results."""
    return max(estimate_serialized_message_tokens(message), tool_result_boundary_tokens(message))
