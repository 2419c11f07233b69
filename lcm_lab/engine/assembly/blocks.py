"""Rebuilding runtime messages from stored message parts (spec §6 step 1).

lossless-claw stores each content block of a message as a ``message_parts`` row and, at
assembly, turns the rows back into the block array the model receives. The rules here follow
the plugin's ``blockFromPart`` / ``contentFromParts`` and the ``pick*`` helpers, including its
JavaScript semantics (``undefined`` vs ``null``, object key order from ``JSON.parse``,
truthiness of empty strings), because the reference compares ``JSON.stringify`` output byte
for byte.

Everything returns fresh JSON-like values (dicts in the plugin's key order); inputs are never
mutated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from lcm_lab.engine.js.json import UNDEFINED, js_parse, js_stringify, js_trim
from lcm_lab.engine.types import METADATA_MEMO, StoredPart

RuntimeRole = Literal["user", "assistant", "toolResult"]

TOOL_CALL_TYPES = frozenset({"toolCall", "toolUse", "tool_use", "tool-use", "functionCall", "function_call"})
TOOL_RESULT_TYPES = frozenset({"function_call_output", "toolResult", "tool_result"})
_TOOL_BLOCK_TYPES = TOOL_CALL_TYPES | TOOL_RESULT_TYPES
# The cross-provider sentinel OpenClaw stamps on reasoning_content thinking blocks.
REASONING_CONTENT_SENTINEL = "reasoning_content"


def parse_json_loose(value: str | None) -> Any:
    """The plugin's ``parseJson``: ``UNDEFINED`` for non-strings, blank or invalid JSON."""
    if not isinstance(value, str) or not js_trim(value):
        return UNDEFINED
    try:
        return js_parse(value)
    except ValueError:
        return UNDEFINED


def parse_stored_value(value: str | None) -> Any:
    """``parseStoredValue``: JSON when it parses, else the string itself; ``UNDEFINED`` if empty."""
    if not isinstance(value, str) or value == "":
        return UNDEFINED
    parsed = parse_json_loose(value)
    return value if parsed is UNDEFINED else parsed


def _metadata(part: StoredPart) -> dict[str, Any]:
    """The part's metadata object, parsed once per part (read-only: callers copy what they change).

    Ingest, leaf-source text and assembly all read the same parts' metadata (which embeds the raw
    block, often a whole file), so the parse is remembered on the part.
    """
    cached: dict[str, Any] | None = part.__dict__.get(METADATA_MEMO)
    if cached is None:
        decoded = parse_json_loose(part.metadata)
        # A JSON array is an "object" to the plugin too, but has none of the named fields.
        cached = decoded if isinstance(decoded, dict) else {}
        object.__setattr__(part, METADATA_MEMO, cached)  # a memo, not a field (eq/hash/repr ignore it)
    return cached


def part_metadata(part: StoredPart) -> dict[str, Any]:
    """``JSON.parse(part.metadata)`` when it is an object, else ``{}`` (shared: do not mutate)."""
    return _metadata(part)


def _nonempty_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _field(value: Any, key: str) -> Any:
    """``value[key]`` with JavaScript's ``undefined`` for missing keys and non-objects."""
    return value.get(key, UNDEFINED) if isinstance(value, dict) else UNDEFINED


def original_role(parts: Sequence[StoredPart]) -> str | None:
    """``metadata.originalRole`` of the first part that has one."""
    for part in parts:
        role = _nonempty_str(_metadata(part).get("originalRole"))
        if role is not None:
            return role
    return None


def runtime_role(db_role: str, parts: Sequence[StoredPart]) -> RuntimeRole:
    """Runtime role of a stored message: ``originalRole`` wins, else the DB role mapped."""
    role = original_role(parts)
    if role in ("toolResult", "assistant", "user"):
        return role  # type: ignore[return-value]
    if role == "system":
        return "user"
    if db_role == "tool":
        return "toolResult"
    if db_role == "assistant":
        return "assistant"
    return "user"


def model_identity(parts: Sequence[StoredPart]) -> dict[str, str] | None:
    """``provider/api/model[/responseModel]`` of the first part carrying a complete identity."""
    for part in parts:
        meta = _metadata(part)
        identity: dict[str, str] = {}
        for source, target in (
            ("modelProvider", "provider"),
            ("modelApi", "api"),
            ("modelId", "model"),
            ("responseModelId", "responseModel"),
        ):
            value = _nonempty_str(meta.get(source))
            if value is not None:
                identity[target] = value
        if {"provider", "api", "model"} <= identity.keys():
            return identity
    return None


def top_level_reasoning(parts: Sequence[StoredPart]) -> dict[str, str]:
    """``{"reasoning_content": …}`` when a part stored the message's top-level reasoning."""
    for part in parts:
        meta = _metadata(part)
        content = _nonempty_str(meta.get("topLevelReasoningContent"))
        if meta.get("topLevelReasoningField") == "reasoning_content" and content is not None:
            return {"reasoning_content": content}
    return {}


def _pick_tool_field(parts: Sequence[StoredPart], column: str, meta_key: str, raw_keys: tuple[str, str]) -> str | None:
    """First non-empty value: the part column, then ``metadata[meta_key]``, then the raw block."""
    for part in parts:
        value = getattr(part, column)
        if _nonempty_str(value):
            return str(value)
        decoded = parse_json_loose(part.metadata)
        if not isinstance(decoded, dict):
            continue
        found = _nonempty_str(decoded.get(meta_key))
        if found:
            return found
        raw = decoded.get("raw")
        if not isinstance(raw, dict):
            continue
        found = _nonempty_str(raw.get(raw_keys[0])) or _nonempty_str(raw.get(raw_keys[1]))
        if found:
            return found
    return None


def pick_tool_call_id(parts: Sequence[StoredPart]) -> str | None:
    """Tool-call id of a tool result: column, then metadata, then the raw block."""
    return _pick_tool_field(parts, "tool_call_id", "toolCallId", ("toolCallId", "tool_call_id"))


def pick_tool_name(parts: Sequence[StoredPart]) -> str | None:
    """Tool name of a tool result: column, then metadata, then the raw block."""
    return _pick_tool_field(parts, "tool_name", "toolName", ("name", "toolName"))


def pick_tool_is_error(parts: Sequence[StoredPart]) -> bool | None:
    """``metadata.isError`` of the first part that has a boolean one."""
    for part in parts:
        value = _metadata(part).get("isError")
        if isinstance(value, bool):
            return value
    return None


def _restore_openai_reasoning(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    # OpenClaw folds an OpenAI reasoning item into a thinking block whose signature is the
    # original item as JSON; the plugin hands the original back.
    if raw.get("type") != "thinking":
        return None
    signature = raw.get("thinkingSignature")
    if not isinstance(signature, str) or not signature.startswith("{"):
        return None
    try:
        parsed = js_parse(signature)
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("type") == "reasoning" and isinstance(parsed.get("id"), str):
        return parsed
    return None


def _reasoning_block(text: str | None, raw_type: str | None) -> dict[str, Any]:
    if raw_type == "thinking":
        return {"type": "thinking", "thinking": text} if text else {"type": "thinking"}
    return {"type": "reasoning", "text": text} if text else {"type": "reasoning"}


def tool_call_block(
    tool_call_id: str | None,
    tool_name: str | None,
    tool_input: str | None,
    raw_type: str | None,
    part_id: str | None,
    parsed_input: Any = UNDEFINED,
) -> dict[str, Any]:
    """A tool-call block rebuilt from columns (``toolCallBlockFromPart``).

    ``parsed_input``, when given, is ``parse_stored_value(tool_input)`` already in hand.
    """
    block_type = raw_type if raw_type in TOOL_CALL_TYPES else "toolCall"
    arguments = parse_stored_value(tool_input) if parsed_input is UNDEFINED else parsed_input
    block: dict[str, Any] = {"type": block_type}
    if block_type == "function_call":
        if _nonempty_str(tool_call_id):
            block["call_id"] = tool_call_id
        if _nonempty_str(tool_name):
            block["name"] = tool_name
        if arguments is not UNDEFINED:
            block["arguments"] = arguments
        return block
    # Providers normalise block.id and fail on a missing one, so a placeholder is minted.
    block["id"] = (
        tool_call_id
        if _nonempty_str(tool_call_id)
        else f"toolu_lcm_{part_id if part_id is not None else 'unknown'}"
    )
    if _nonempty_str(tool_name):
        block["name"] = tool_name
    if arguments is not UNDEFINED:
        block["arguments" if block_type in ("functionCall", "toolCall") else "input"] = arguments
    return block


def tool_result_block(
    part: StoredPart,
    tool_call_id: str | None,
    tool_name: str | None,
    raw_type: str | None,
    raw: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """A tool-result block rebuilt from columns (``toolResultBlockFromPart``)."""
    if (
        raw is not None
        and isinstance(raw.get("text"), str)
        and "output" not in raw
        and "content" not in raw
        and not part.tool_output
        and (part.text_content is None or part.text_content == raw["text"])
    ):
        # A plain text block of a tool-result message stays a text block.
        return {"type": "text", "text": raw["text"]}
    block_type = raw_type if raw_type in TOOL_RESULT_TYPES else "tool_result"
    output = parse_stored_value(part.tool_output)
    block: dict[str, Any] = {"type": block_type}
    if _nonempty_str(tool_name):
        block["name"] = tool_name
    if output is not UNDEFINED:
        block["output"] = output
    elif isinstance(part.text_content, str):
        block["output"] = part.text_content
    elif raw is not None and "output" in raw:
        block["output"] = raw["output"]
    elif raw is not None and "content" in raw:
        block["content"] = raw["content"]
    else:
        block["output"] = ""
    if raw is not None and isinstance(raw.get("is_error"), bool):
        block["is_error"] = raw["is_error"]
    elif raw is not None and isinstance(raw.get("isError"), bool):
        block["isError"] = raw["isError"]
    key = "call_id" if block_type == "function_call_output" else "tool_use_id"
    if _nonempty_str(tool_call_id):
        block[key] = tool_call_id
    return block


def block_from_part(part: StoredPart, message_has_identity: bool | None = None, part_id: str | None = None) -> Any:
    """The runtime content block for one stored part, or ``None`` when the plugin drops it.

    ``message_has_identity`` is the message-level gate for keeping thinking signatures (the
    identity lives on the ordinal-0 part only); ``None`` checks this part alone. ``part_id``
    stands in for ``part.part_id`` when given (token estimates use placeholder ids).
    """
    part_id = part.part_id if part_id is None else part_id
    has_identity = (
        model_identity([part]) is not None if message_has_identity is None else message_has_identity
    )
    return block_from_metadata(part, _metadata(part), has_identity, part_id)


def block_from_metadata(
    part: StoredPart, meta: dict[str, Any], has_identity: bool, part_id: str | None, parsed_input: Any = UNDEFINED
) -> Any:
    """:func:`block_from_part` with the part's metadata object given.

    ``meta`` must be what :func:`part_metadata` returns for ``part`` (``JSON.parse`` of
    ``part.metadata``), or a value equal to it node for node with the same types and key order
    (ingest holds the object it has just serialised; ``js_stringify_checked`` says when that
    holds); ``parsed_input``, when given, must be such a value of ``JSON.parse(part.tool_input)``.
    They are only read; the result may share nodes with them.
    """
    meta_raw_type = _nonempty_str(meta.get("rawType"))
    raw = meta.get("raw")
    tool_call_id, tool_name, tool_input = part.tool_call_id, part.tool_name, part.tool_input
    if isinstance(raw, dict | list):
        restored = _restore_openai_reasoning(raw) if isinstance(raw, dict) else None
        if restored is not None:
            return restored
        raw_type = _field(raw, "type")
        raw_type = raw_type if isinstance(raw_type, str) else meta_raw_type
        if raw_type == "thinking" and isinstance(_field(raw, "thinkingSignature"), str):
            assert isinstance(raw, dict)
            if raw["thinkingSignature"] == REASONING_CONTENT_SENTINEL:
                return raw if has_identity else None
            if has_identity:
                return raw
            # Without a stored identity, foreign signatures must not leak across providers.
            return {k: v for k, v in raw.items() if k != "thinkingSignature"}
        if raw_type not in _TOOL_BLOCK_TYPES:
            return raw
        # Tool blocks are rebuilt from columns; fill columns the row left empty from the raw block.
        raw_id = _nonempty_str(_field(raw, "id")) or _nonempty_str(_field(raw, "call_id"))
        if raw_id and not _nonempty_str(tool_call_id):
            tool_call_id = raw_id
        raw_name = _nonempty_str(_field(raw, "name"))
        if raw_name and not _nonempty_str(tool_name):
            tool_name = raw_name
        if not tool_input:
            parsed_input = UNDEFINED  # the column is empty; the raw block's arguments stand in
            raw_args = _field(raw, "arguments")
            if raw_args is UNDEFINED or raw_args is None:
                raw_args = _field(raw, "input")
            if raw_args is not UNDEFINED:
                tool_input = raw_args if isinstance(raw_args, str) else js_stringify(raw_args)
    raw_record = raw if isinstance(raw, dict) else None
    if part.part_type == "reasoning":
        return _reasoning_block(part.text_content, meta_raw_type)
    if part.part_type == "tool":
        if meta.get("originalRole") == "toolResult" or meta_raw_type == "function_call_output":
            return tool_result_block(part, tool_call_id, tool_name, meta_raw_type, raw_record)
        return tool_call_block(tool_call_id, tool_name, tool_input, meta_raw_type, part_id, parsed_input)
    if meta_raw_type in TOOL_CALL_TYPES:
        return tool_call_block(tool_call_id, tool_name, tool_input, meta_raw_type, part_id, parsed_input)
    if meta_raw_type in TOOL_RESULT_TYPES:
        return tool_result_block(part, tool_call_id, tool_name, meta_raw_type, raw_record)
    if part.part_type == "text":
        return {"type": "text", "text": part.text_content if part.text_content is not None else ""}
    if part.text_content:
        return {"type": "text", "text": part.text_content}
    # JSON.parse(metadata) is an object here exactly when ``meta`` is non-empty or the text is "{}"
    # (an array parses to a list, which _metadata turns into {}; that case is handled by parsing).
    decoded = meta if meta else parse_json_loose(part.metadata)
    if isinstance(decoded, dict | list):
        return {"type": "text", "text": js_stringify(decoded)}
    return {"type": "text", "text": ""}


def _fallback_content(role: RuntimeRole, fallback: str) -> str | list[dict[str, Any]]:
    if role == "assistant":
        return [{"type": "text", "text": fallback}] if fallback else []
    if role == "toolResult":
        return [{"type": "text", "text": fallback}]
    return fallback


def content_from_parts(parts: Sequence[StoredPart], role: RuntimeRole, fallback: str) -> str | list[Any]:
    """Message content rebuilt from its parts (``contentFromParts``).

    Parts that only carried top-level reasoning are skipped; with no usable parts the stored
    ``messages.content`` is used. A user message made of one text block becomes a string.
    """
    content_parts = [p for p in parts if _metadata(p).get("topLevelReasoningOnly") is not True]
    if not content_parts:
        return _fallback_content(role, fallback)
    has_identity = role == "assistant" and model_identity(parts) is not None
    blocks = [b for b in (block_from_part(p, has_identity) for p in content_parts) if b is not None]
    if not blocks:
        return _fallback_content(role, fallback)
    first = blocks[0]
    if (
        role == "user"
        and len(blocks) == 1
        and isinstance(first, dict)
        and first.get("type") == "text"
        and isinstance(first.get("text"), str)
    ):
        return str(first["text"])
    return blocks


SENDER_KEYS = ("senderId", "senderName", "senderUsername")


def parse_sender_metadata(value: str | None) -> dict[str, str] | None:
    """The allow-listed, non-blank sender fields of ``openclaw_sender_metadata`` JSON, or None."""
    decoded = parse_json_loose(value) if value else UNDEFINED
    if not isinstance(decoded, dict):
        return None
    sender = {k: decoded[k] for k in SENDER_KEYS if isinstance(decoded.get(k), str) and js_trim(decoded[k])}
    return sender or None
