"""Content projection of a runtime message: stored text, ``message_parts`` and stored tokens.

Mirrors lossless-claw's ``src/message-content.ts`` (``extractMessageContent``,
``buildMessageParts``, ``toStoredMessage``, ``normalizeMessageContentForStorage``), the block
reconstruction of ``src/assembler.ts`` (``blockFromPart``) and ``src/token-accounting.ts``
(``estimateContentTokensForRole``) — spec §3 items 2–4 and §2.3.

Messages are the runtime ``AgentMessage`` dicts exactly as parsed from a transcript's
``message`` field. JavaScript semantics matter throughout: a missing key (``undefined``) differs
from ``null`` for ``JSON.stringify`` and ``!==  undefined`` tests, ``??`` skips both, and the
``safeString``/``safeBoolean`` helpers accept only real strings/booleans. The helpers below keep
those distinctions (:data:`~lcm_lab.engine.js.json.UNDEFINED` marks a missing value).

>>> project_message({"role": "user", "content": [{"type": "text", "text": "list files"}]})
ProjectedMessage(role='user', content='list files', token_count=3)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from lcm_lab.engine.assembly.blocks import _metadata, block_from_metadata, block_from_part
from lcm_lab.engine.js.json import UNDEFINED, js_stringify, js_stringify_checked
from lcm_lab.engine.js.strings import js_trim
from lcm_lab.engine.js.values import (  # JavaScript value semantics (to_json is re-exported)
    _defined,
    _opt,
    first_string,
    is_number,
    js_to_string,
    js_truthy,
    safe_boolean,
    safe_string,
    strict_json_parse,
    to_json,
)
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import StoredPart

__all__ = [
    "PERSISTABLE_ROLES",
    "ProjectedMessage",
    "block_from_part",
    "build_message_parts",
    "estimate_content_tokens_for_role",
    "extract_message_content",
    "extract_model_identity",
    "extract_structured_text",
    "has_replay_critical_raw_block",
    "normalize_content_for_storage",
    "project_message",
    "to_db_role",
    "to_json",
    "to_runtime_role_for_tokens",
]

PERSISTABLE_ROLES = frozenset({"user", "assistant", "system", "tool", "toolResult"})

STRUCTURED_TEXT_FIELD_KEYS = ("text", "transcript", "transcription", "message", "summary")
STRUCTURED_ARRAY_FIELD_KEYS = (
    "segments",
    "utterances",
    "paragraphs",
    "alternatives",
    "words",
    "items",
    "results",
)
STRUCTURED_NESTED_FIELD_KEYS = ("content", "output", "result", "payload", "data", "value")
MAX_STRUCTURED_TEXT_DEPTH = 6

TOOL_CALL_RAW_TYPES = frozenset(
    {"tool_use", "toolUse", "tool-use", "toolCall", "tool_call", "functionCall", "function_call"}
)
TOOL_RESULT_RAW_TYPES = frozenset({"function_call_output", "tool_result", "toolResult", "tool_use_result"})
TOOL_RAW_TYPES = TOOL_CALL_RAW_TYPES | TOOL_RESULT_RAW_TYPES
REASONING_RAW_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})
REPLAY_CRITICAL_RAW_TYPES = TOOL_RAW_TYPES | REASONING_RAW_TYPES

_PART_TYPES = {
    "text": "text",
    "thinking": "reasoning",
    "redacted_thinking": "reasoning",
    "reasoning": "reasoning",
    "tool_use": "tool",
    "toolUse": "tool",
    "tool-use": "tool",
    "toolCall": "tool",
    "functionCall": "tool",
    "function_call": "tool",
    "function_call_output": "tool",
    "tool_result": "tool",
    "toolResult": "tool",
    "tool": "tool",
    "patch": "patch",
    "file": "file",
    "image": "file",
    "subtask": "subtask",
    "compaction": "compaction",
    "step_start": "step_start",
    "step-start": "step_start",
    "step_finish": "step_finish",
    "step-finish": "step_finish",
    "snapshot": "snapshot",
    "retry": "retry",
    "agent": "agent",
}


# -- text extraction (extractMessageContent) ---------------------------------------------------


def _looks_like_json_payload(value: str) -> bool:
    trimmed = js_trim(value)
    if not trimmed:
        return False
    return (trimmed.startswith("{") and trimmed.endswith("}")) or (
        trimmed.startswith("[") and trimmed.endswith("]")
    )


def extract_structured_text(value: Any, depth: int = 0) -> str | None:
    """``extractStructuredText``: best-effort plain text of a content value (``None`` if none)."""
    if value is None or value is UNDEFINED or depth > MAX_STRUCTURED_TEXT_DEPTH:
        return None
    if isinstance(value, str):
        if _looks_like_json_payload(value):
            try:
                parsed = strict_json_parse(js_trim(value))
            except ValueError:
                parsed = UNDEFINED
            if parsed is not UNDEFINED:
                parsed_text = extract_structured_text(parsed, depth + 1)
                if parsed_text:
                    return parsed_text
        return value
    if isinstance(value, list | tuple):
        texts = [
            t for t in (extract_structured_text(e, depth + 1) for e in value) if t is not None and js_trim(t)
        ]
        return "\n".join(texts) if texts else None
    if type(value) is not dict and not isinstance(value, Mapping):  # the type test skips a slow ABC check
        return None

    block_type = value.get("type")
    if isinstance(block_type, str) and block_type in REASONING_RAW_TYPES:
        return None
    if isinstance(block_type, str) and block_type in TOOL_RAW_TYPES:
        if safe_boolean(value.get("toolOutputExternalized")):
            for key in ("output", "content", "result"):
                externalized = extract_structured_text(value.get(key), depth + 1)
                if externalized is not None:
                    # JS `??` picks the first defined candidate, then checks it is non-blank.
                    return externalized if js_trim(externalized) else None
        return None

    for key in STRUCTURED_TEXT_FIELD_KEYS:
        candidate = value.get(key)
        if isinstance(candidate, str) and js_trim(candidate):
            return candidate
    for key in STRUCTURED_ARRAY_FIELD_KEYS:
        candidate = value.get(key)
        if isinstance(candidate, list):
            texts = [
                t
                for t in (extract_structured_text(e, depth + 1) for e in candidate)
                if t is not None and js_trim(t)
            ]
            if texts:
                return "\n".join(texts)
    for key in STRUCTURED_NESTED_FIELD_KEYS:
        nested_text = extract_structured_text(value.get(key), depth + 1)
        if nested_text is not None and js_trim(nested_text):
            return nested_text
    return None


def _is_tool_or_reasoning_block(item: Any) -> bool:
    return (
        (type(item) is dict or isinstance(item, Mapping))
        and isinstance(item.get("type"), str)
        and (item["type"] in TOOL_RAW_TYPES or item["type"] in REASONING_RAW_TYPES)
    )


def extract_message_content(content: Any) -> str:
    """``extractMessageContent``: the plain-text projection stored in ``messages.content``.

    >>> extract_message_content([{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "hi"}])
    'hi'
    >>> extract_message_content([{"type": "toolCall", "id": "t1", "name": "ls", "arguments": {}}])
    ''
    """
    extracted = extract_structured_text(content)
    if extracted is not None:
        return extracted
    if content is None or content is UNDEFINED:
        return ""
    if isinstance(content, list | tuple):
        if not content or all(_is_tool_or_reasoning_block(item) for item in content):
            return ""
    serialized = js_stringify(content)
    return serialized


def _append_text_value(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list | tuple):
        for entry in value:
            _append_text_value(entry, out)
    elif isinstance(value, Mapping):
        _append_text_value(value.get("text"), out)
        _append_text_value(value.get("value"), out)


def _extract_reasoning_text(record: Mapping[str, Any]) -> str | None:
    chunks: list[str] = []
    _append_text_value(record.get("summary"), chunks)
    normalized: list[str] = []
    for chunk in (js_trim(c) for c in chunks):
        if chunk and chunk not in normalized:
            normalized.append(chunk)
    return "\n".join(normalized) if normalized else None


def has_replay_critical_raw_block(value: Any) -> bool:
    """True when content holds a tool or reasoning block somewhere (nested keys included)."""
    if isinstance(value, list | tuple):
        return any(has_replay_critical_raw_block(entry) for entry in value)
    if not isinstance(value, Mapping):
        return False
    raw_type = safe_string(value.get("type"))
    if raw_type is None:
        raw_type = safe_string(value.get("rawType"))
    if raw_type is not None and raw_type in REPLAY_CRITICAL_RAW_TYPES:
        return True
    return any(has_replay_critical_raw_block(value.get(k)) for k in STRUCTURED_NESTED_FIELD_KEYS) or any(
        has_replay_critical_raw_block(value.get(k)) for k in STRUCTURED_ARRAY_FIELD_KEYS
    )


# -- roles -----------------------------------------------------------------------------------


def to_db_role(role: Any) -> str:
    """``toDbRole``: ``toolResult``→``tool``; unknown roles fall back to ``assistant``."""
    if role in ("tool", "toolResult"):
        return "tool"
    if role in ("system", "user", "assistant"):
        return str(role)
    return "assistant"


def to_runtime_role_for_tokens(role: Any) -> str:
    if role in ("tool", "toolResult"):
        return "toolResult"
    if role in ("user", "system"):
        return "user"
    return "assistant"


# -- message parts (buildMessageParts) -------------------------------------------------------


def extract_model_identity(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """Assistant ``provider``/``api``/``model`` (+``responseModel``) when all three are present."""
    if message.get("role") != "assistant":
        return None
    provider = safe_string(message.get("provider"))
    api = safe_string(message.get("api"))
    model = safe_string(message.get("model"))
    if provider is None or api is None or model is None:
        return None
    return {
        "modelProvider": provider,
        "modelApi": api,
        "modelId": model,
        "responseModelId": _opt(safe_string(message.get("responseModel"))),
    }


def _top_level_reasoning(role: str, message: Mapping[str, Any]) -> str | None:
    if role != "assistant":
        return None
    content = safe_string(message.get("reasoning_content"))
    return content if content and js_trim(content) else None


def _reasoning_metadata(reasoning: str | None, only: bool = False) -> list[tuple[str, Any]]:
    if reasoning is None:
        return []
    return [
        ("topLevelReasoningField", "reasoning_content"),
        ("topLevelReasoningContent", reasoning),
        ("topLevelReasoningOnly", True if only else UNDEFINED),
    ]


def _normalize_unknown_block(value: Any) -> tuple[str, str | None, Any]:
    """``normalizeUnknownBlock`` → (type, text, raw)."""
    if type(value) is not dict and not isinstance(value, Mapping):
        return "agent", None, value
    raw_type = safe_string(value.get("type"))
    text = safe_string(value.get("text"))
    if text is None:
        text = safe_string(value.get("thinking"))
    if text is None and raw_type in ("reasoning", "thinking"):
        text = _extract_reasoning_text(value)
    return (raw_type if raw_type is not None else "agent"), text, value


_TOP_LEVEL_CALL_ID_KEYS = ("toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id", "id")
_BLOCK_CALL_ID_KEYS = ("toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id")


def _absent(key: str, default: Any = None) -> Any:
    """``get`` of a value that is not an object: every member is missing."""
    return default


def _first_str(get: Any, keys: Sequence[str]) -> str | None:
    """:func:`first_string` through the record's ``get``."""
    for key in keys:
        found = get(key)
        if isinstance(found, str):
            return found
    return None


def _tool_input(get: Any) -> tuple[str | None, Any]:
    """The ``tool_input`` column, and ``JSON.parse`` of it when known without parsing (else UNDEFINED)."""
    for key in ("input", "arguments", "toolInput"):
        value = get(key, UNDEFINED)
        if value is not UNDEFINED:
            text, round_trips = js_stringify_checked(value)
            return text, value if round_trips else UNDEFINED
    found = get("tool_input")
    return (found if isinstance(found, str) else None), UNDEFINED


def _tool_output(get: Any) -> str | None:
    for key in ("output", "toolOutput"):
        value = get(key, UNDEFINED)
        if value is not UNDEFINED:
            return to_json(value)
    found = get("tool_output")
    return found if isinstance(found, str) else None


class _PartHint(NamedTuple):
    """What :func:`_build_parts` knows about a part it built, so the token estimate need not
    parse the metadata back or serialise the raw block again."""

    meta: dict[str, Any]  # the object part.metadata is JSON.stringify of
    round_trips: bool  # JSON.parse(part.metadata) gives ``meta`` back node for node (same types)
    raw: Any = UNDEFINED  # meta["raw"] (UNDEFINED: none)
    raw_text: str | None = None  # JSON.stringify(raw)
    tool_input: Any = UNDEFINED  # JSON.parse(part.tool_input) when known without parsing


def _part(
    part_type: str, ordinal: int, meta: dict[str, Any], text_content: str | None, **columns: Any
) -> tuple[StoredPart, _PartHint]:
    """A part whose metadata is ``meta`` serialised, with its hint."""
    text, round_trips = js_stringify_checked(meta)
    part = StoredPart(part_type, ordinal, text_content=text_content, metadata=text, **columns)
    return part, _PartHint(meta, round_trips)


def build_message_parts(message: Mapping[str, Any], fallback_content: str) -> list[StoredPart]:
    """``buildMessageParts``: one part per content block, metadata JSON byte-exact.

    ``fallback_content`` is the stored ``messages.content`` of the row. Part ids are left
    ``None`` (the plugin draws random UUIDs).
    """
    return [part for part, _ in _build_parts(message, fallback_content)]


def _build_parts(message: Mapping[str, Any], fallback_content: str) -> list[tuple[StoredPart, _PartHint]]:
    """:func:`build_message_parts`, each part with its :class:`_PartHint`."""
    role = message["role"] if isinstance(message.get("role"), str) else "unknown"
    top_call_id = first_string(message, _TOP_LEVEL_CALL_ID_KEYS)
    top_tool_name = first_string(message, ("toolName", "tool_name"))
    top_is_error = safe_boolean(message.get("isError"))
    if top_is_error is None:
        top_is_error = safe_boolean(message.get("is_error"))
    reasoning = _top_level_reasoning(role, message)
    raw_payload_externalized = safe_boolean(message.get("rawPayloadExternalized"))
    externalized_file_id = safe_string(message.get("externalizedFileId"))
    identity = extract_model_identity(message)
    identity_pairs = list(identity.items()) if identity else []
    file_ids_value = message.get("externalizedFileIds")
    externalized_file_ids = (
        [f for f in file_ids_value if isinstance(f, str)] if isinstance(file_ids_value, list) else UNDEFINED
    )
    file_blocks_externalized = safe_boolean(message.get("fileBlocksExternalized"))
    original_byte_size = (
        message.get("originalByteSize") if is_number(message.get("originalByteSize")) else UNDEFINED
    )
    externalization_reason = safe_string(message.get("externalizationReason"))

    if "content" not in message and "command" in message and "output" in message:
        meta = _defined(
            [
                ("originalRole", role),
                ("source", "bash-exec"),
                ("command", _opt(safe_string(message.get("command")))),
            ]
        )
        return [_part("text", 0, meta, fallback_content)]

    if "content" not in message:
        meta = _defined([("originalRole", role), ("source", "unknown-message-shape"), ("raw", message)])
        return [_part("agent", 0, meta, fallback_content or None)]

    content = message["content"]
    if isinstance(content, str):
        meta = _defined(
            [
                ("originalRole", role),
                *identity_pairs,
                ("toolCallId", _opt(top_call_id)),
                ("toolName", _opt(top_tool_name)),
                ("isError", _opt(top_is_error)),
                *_reasoning_metadata(reasoning),
                ("rawPayloadExternalized", True if raw_payload_externalized else UNDEFINED),
                ("externalizedFileId", _opt(externalized_file_id)),
                ("externalizedFileIds", externalized_file_ids),
                ("fileBlocksExternalized", True if file_blocks_externalized else UNDEFINED),
                ("originalByteSize", original_byte_size),
                ("externalizationReason", _opt(externalization_reason)),
            ]
        )
        return [_part("text", 0, meta, content)]

    if not isinstance(content, list):
        meta = _defined(
            [
                ("originalRole", role),
                ("source", "non-array-content"),
                ("raw", content),
                *_reasoning_metadata(reasoning),
            ]
        )
        return [_part("agent", 0, meta, fallback_content or None)]

    parts: list[tuple[StoredPart, _PartHint]] = []
    if not content and reasoning is not None:
        meta = _defined(
            [
                ("originalRole", role),
                *identity_pairs,
                ("rawType", "reasoning_content"),
                *_reasoning_metadata(reasoning, only=True),
            ]
        )
        parts.append(_part("reasoning", 0, meta, None))

    # The members every block's metadata starts with (the first block also carries the model
    # identity and top-level reasoning), in the object literal's order.
    first_head = _defined(
        [
            ("originalRole", role),
            *identity_pairs,
            ("toolCallId", _opt(top_call_id)),
            ("toolName", _opt(top_tool_name)),
            ("isError", _opt(top_is_error)),
            *_reasoning_metadata(reasoning),
        ]
    )
    head = _defined(
        [
            ("originalRole", role),
            ("toolCallId", _opt(top_call_id)),
            ("toolName", _opt(top_tool_name)),
            ("isError", _opt(top_is_error)),
        ]
    )
    for ordinal, original in enumerate(content):
        block_type, block_text, record = _normalize_unknown_block(original)
        # record?.[key]: a missing member (or any member of a non-object) is undefined.
        get = record.get if type(record) is dict or isinstance(record, Mapping) else _absent
        raw_type_override = get("rawType")
        raw_block_type = raw_type_override if isinstance(raw_type_override, str) else block_type
        part_type = _PART_TYPES.get(raw_block_type, "agent")
        if raw_block_type != block_type and js_truthy(record):
            raw_block: Any = dict(record)
            raw_block["type"] = raw_block_type  # spread keeps the key's original position
        else:
            raw_block = record
        tool_call_id = _first_str(get, _BLOCK_CALL_ID_KEYS)
        if tool_call_id is None and part_type == "tool":
            tool_call_id = safe_string(get("id"))
        if tool_call_id is None:
            tool_call_id = top_call_id
        tool_name = _first_str(get, ("name", "toolName", "tool_name"))
        if tool_name is None:
            tool_name = top_tool_name
        meta = dict(first_head if ordinal == 0 else head)
        if isinstance(value := get("externalizedFileId"), str):
            meta["externalizedFileId"] = value
        if is_number(value := get("originalByteSize")):
            meta["originalByteSize"] = value
        if isinstance(value := get("imageExternalized"), bool):
            meta["imageExternalized"] = value
        if isinstance(value := get("toolOutputExternalized"), bool):
            meta["toolOutputExternalized"] = value
        if isinstance(value := get("externalizationReason"), str):
            meta["externalizationReason"] = value
        meta["rawType"] = raw_block_type
        tool_input, tool_input_value = _tool_input(get)
        columns = {
            "text_content": block_text,
            "tool_call_id": tool_call_id,
            "tool_name": tool_name,
            "tool_input": tool_input,
            "tool_output": _tool_output(get),
        }
        if raw_block is UNDEFINED:  # only from Python callers; JSON content has no undefined element
            part, hint = _part(part_type, ordinal, meta, **columns)
            parts.append((part, hint))
            continue
        # JSON.stringify writes an object member by member, so the metadata text is the text of
        # the other members with ``"raw":<raw text>`` appended ("raw" is the last key, none of
        # the keys is integer-like, and "originalRole" is always there): the raw block, often a
        # whole file, is serialised once and its text reused for the token estimate.
        head_text, head_round_trips = js_stringify_checked(meta)
        raw_text, raw_round_trips = js_stringify_checked(raw_block)
        meta["raw"] = raw_block
        part = StoredPart(part_type, ordinal, metadata=f'{head_text[:-1]},"raw":{raw_text}}}', **columns)
        hint = _PartHint(meta, head_round_trips and raw_round_trips, raw_block, raw_text, tool_input_value)
        parts.append((part, hint))
    return parts


# -- block reconstruction (assembler blockFromPart) --------------------------------------------


def _is_text_block(value: Any) -> bool:
    return (type(value) is dict or isinstance(value, Mapping)) and value.get("type") == "text" and isinstance(value.get("text"), str)


def _empty_fallback(role: str, fallback_content: str) -> Any:
    if role == "assistant":
        return [{"type": "text", "text": fallback_content}] if fallback_content else []
    if role == "toolResult":
        return [{"type": "text", "text": fallback_content}]
    return fallback_content


def normalize_content_for_storage(
    message: Mapping[str, Any], fallback_content: str, parts: Sequence[StoredPart] | None = None
) -> Any:
    """``normalizeMessageContentForStorage``: the content shape assembly would emit.

    ``parts`` are ``build_message_parts(message, fallback_content)`` when the caller has them.
    """
    if "content" not in message:
        return fallback_content
    role = to_runtime_role_for_tokens(message.get("role"))
    built = build_message_parts(message, fallback_content) if parts is None else parts
    if not built:
        return _empty_fallback(role, fallback_content)
    has_identity = extract_model_identity(message) is not None
    # The plugin estimates on copies of the parts with placeholder ids ``estimate-part-<ordinal>``.
    blocks = [
        b for b in (block_from_part(p, has_identity, f"estimate-part-{p.ordinal}") for p in built) if b is not None
    ]
    if not blocks:
        return _empty_fallback(role, fallback_content)
    if role == "user" and len(blocks) == 1 and _is_text_block(blocks[0]):
        return blocks[0]["text"]
    return blocks


def estimate_content_tokens_for_role(role: str, content: Any, fallback_content: str) -> int:
    """``estimateContentTokensForRole`` (spec §2.3)."""
    if isinstance(content, str):
        return estimate_tokens(content)
    if isinstance(content, list):
        if not content:
            return estimate_tokens(fallback_content)
        if role == "user" and len(content) == 1 and _is_text_block(content[0]):
            return estimate_tokens(content[0]["text"])
        return estimate_tokens(js_stringify(content))
    if isinstance(content, Mapping):
        if role == "user" and _is_text_block(content):
            return estimate_tokens(content["text"])
        return estimate_tokens(js_stringify([content]))
    return estimate_tokens(fallback_content)


def _stored_content_tokens(
    message: Mapping[str, Any], fallback_content: str, built: Sequence[tuple[StoredPart, _PartHint]]
) -> int:
    """``estimate_content_tokens_for_role(role, normalize_content_for_storage(message, …), …)``.

    The same steps, on what :func:`_build_parts` already holds: each part's metadata object
    instead of parsing its text back, and the raw block's text where the rebuilt block is the
    raw block itself (``JSON.stringify`` of an array is its elements' texts joined by commas).
    ``tests/test_ingest_units.py`` checks it against the two public functions.
    """
    role = to_runtime_role_for_tokens(message.get("role"))
    if not built:
        return estimate_content_tokens_for_role(role, _empty_fallback(role, fallback_content), fallback_content)
    has_identity = extract_model_identity(message) is not None
    blocks: list[Any] = []
    texts: list[str | None] = []
    for part, hint in built:
        meta = hint.meta if hint.round_trips else _metadata(part)
        block = block_from_metadata(part, meta, has_identity, f"estimate-part-{part.ordinal}", hint.tool_input)
        if block is not None:
            blocks.append(block)
            texts.append(hint.raw_text if block is hint.raw else None)
    if not blocks:
        return estimate_content_tokens_for_role(role, _empty_fallback(role, fallback_content), fallback_content)
    if role == "user" and len(blocks) == 1 and _is_text_block(blocks[0]):
        return estimate_tokens(blocks[0]["text"])
    # Blocks are dicts or lists (never undefined), so each element's text stands on its own.
    joined = ",".join(text if text is not None else js_stringify(block) for block, text in zip(blocks, texts, strict=True))
    return estimate_tokens(f"[{joined}]")


@dataclass(frozen=True)
class ProjectedMessage:
    """``toStoredMessage``: role, stored content and stored token count of a message."""

    role: str
    content: str
    token_count: int
    # build_message_parts(message, content), kept so ingest does not build them twice
    parts: tuple[StoredPart, ...] | None = field(default=None, repr=False, compare=False)


def project_message(message: Mapping[str, Any]) -> ProjectedMessage:
    """``toStoredMessage`` (before large-payload interception)."""
    if "content" in message:
        content = extract_message_content(message["content"])
    elif "output" in message:
        content = f"$ {js_to_string(message.get('command') if message.get('command') is not None else '')}\n{js_to_string(message.get('output', UNDEFINED))}"
    else:
        content = ""
    role = message.get("role")
    parts: tuple[StoredPart, ...] | None = None
    if "content" in message:
        built = _build_parts(message, content)
        parts = tuple(part for part, _ in built)
        tokens = _stored_content_tokens(message, content, built)
    else:
        tokens = estimate_tokens(content)
    reasoning = _top_level_reasoning(role if isinstance(role, str) else "", message)
    if reasoning is not None:
        tokens += estimate_tokens(reasoning)
    return ProjectedMessage(to_db_role(role), content, tokens, parts)
