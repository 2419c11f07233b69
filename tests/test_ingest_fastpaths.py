"""The ingest projection's shortcuts against the exact steps they stand for, on adversarial messages.

``project_message`` serialises each part's metadata in two pieces and estimates the stored token
count from the objects it has just serialised; the exact steps are the public
``build_message_parts`` → ``normalize_content_for_storage`` (which parses every part's metadata
back) → ``estimate_content_tokens_for_role``, and ``JSON.stringify`` of the whole metadata object.
"""

from __future__ import annotations

from typing import Any

from conftest import same_json_value
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_lab.engine.ingest.content import (
    _build_parts,
    build_message_parts,
    estimate_content_tokens_for_role,
    normalize_content_for_storage,
    project_message,
    to_runtime_role_for_tokens,
)
from lcm_lab.engine.js.json import UNDEFINED, js_parse, js_stringify
from lcm_lab.engine.js.values import _defined, _opt, first_string, is_number, prop, safe_boolean, safe_string
from lcm_lab.engine.tokens import estimate_tokens

# Strings and numbers where JSON text, JSON.parse and Python part ways.
_STRINGS = [
    "", " ", "hi", "é\u2028", "\ud800", "\ud83d" + "\ude00", "😀", "你好", "\x00\x1f", "\ufeff",
    '{"type":"text","text":"inner"}', "[1.0, 2]", '{"a": NaN}', "{", "[]", "__proto__", "10", "1e21",
    "reasoning_content", '{"type":"reasoning","id":"rs_1","summary":[]}', "toolu_01ABCDEFGHIJKLmnop",
]  # fmt: skip
_NUMBERS = [0, -0.0, 1.0, 1.5, 1e21, 1e-7, 5e-7, 2**53, 2**53 + 1, 2**70, -1, float("nan"), float("inf")]
_KEYS = ["type", "text", "id", "name", "arguments", "input", "output", "content", "__proto__", "10", "2", "0", "01",
         "1e3", "a", "\ud800", "rawType", "thinkingSignature", "is_error", "isError", "value", "summary"]  # fmt: skip
_TYPES = ["text", "thinking", "redacted_thinking", "reasoning", "toolCall", "tool_use", "toolUse", "functionCall",
          "function_call", "function_call_output", "tool_result", "toolResult", "image", "file", "patch", "custom",
          "", "agent"]  # fmt: skip

_scalars = st.none() | st.booleans() | st.sampled_from(_STRINGS) | st.sampled_from(_NUMBERS) | st.text(max_size=6)
_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), children, max_size=4),
    max_leaves=12,
)


@st.composite
def _blocks(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(_values)  # strings, numbers, arrays and odd objects as content elements
    block: dict[str, Any] = {}
    if draw(st.booleans()):
        block["type"] = draw(st.sampled_from(_TYPES))
    for key in draw(st.lists(st.sampled_from(_KEYS), max_size=5)):
        block[key] = draw(_values)
    if block.get("type") == "thinking" and draw(st.booleans()):
        block["thinkingSignature"] = draw(st.sampled_from(_STRINGS))
    if draw(st.integers(0, 4)) == 0:
        block["rawType"] = draw(st.sampled_from(_TYPES))
    for key in ("toolOutputExternalized", "imageExternalized", "originalByteSize", "externalizedFileId",
                "externalizationReason"):  # fmt: skip
        if draw(st.integers(0, 2)) == 0:
            block[key] = draw(st.sampled_from([True, False, 12, 1.5, "file_1", "", None]) | _values)
    return block


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    roles = ["assistant", "assistant", "user", "toolResult", "tool", "system", "x"]
    message: dict[str, Any] = {"role": draw(st.sampled_from(roles))}
    shape = draw(st.integers(0, 9))
    if shape <= 5:
        message["content"] = draw(st.lists(_blocks(), min_size=draw(st.sampled_from([0, 2])), max_size=5))
    elif shape == 6:
        message["content"] = draw(st.sampled_from(_STRINGS) | st.text(max_size=8))
    elif shape == 7:
        message["content"] = draw(_values)
    elif shape == 8:
        message["command"], message["output"] = draw(_values), draw(_values)
    if draw(st.booleans()):
        message.update(provider="anthropic", api="anthropic-messages", model="claude-x")
        if draw(st.booleans()):
            message["responseModel"] = draw(st.sampled_from(_STRINGS))
    for key in ("toolCallId", "toolName", "isError", "reasoning_content", "originalByteSize", "externalizedFileIds",
                "rawPayloadExternalized", "externalizedFileId", "fileBlocksExternalized", "externalizationReason"):  # fmt: skip
        if draw(st.integers(0, 5)) == 0:
            message[key] = draw(_values | st.sampled_from(_STRINGS))
    return message


def _exact_tokens(message: dict[str, Any]) -> int:
    """``toStoredMessage``'s token count through the public, parsing steps."""
    content = project_message(message).content
    if "content" not in message:
        tokens = estimate_tokens(content)
    else:
        normalized = normalize_content_for_storage(message, content)  # builds and parses the parts
        tokens = estimate_content_tokens_for_role(to_runtime_role_for_tokens(message["role"]), normalized, content)
    reasoning = message.get("reasoning_content")
    if message["role"] == "assistant" and isinstance(reasoning, str) and reasoning.strip(" \t\n\r\v\f\ufeff\u00a0"):
        tokens += estimate_tokens(reasoning)  # the generated strings hold no other JavaScript whitespace
    return tokens


def _block_metadata(message: dict[str, Any], ordinal: int, block: Any) -> str:
    """A content block's metadata, written from ``buildMessageParts``' object literal member by member."""
    role = message["role"]
    first = ordinal == 0
    model = [safe_string(message.get(key)) for key in ("provider", "api", "model")]
    identity = (
        [("modelProvider", model[0]), ("modelApi", model[1]), ("modelId", model[2]),
         ("responseModelId", _opt(safe_string(message.get("responseModel"))))]
        if role == "assistant" and None not in model else []
    )  # fmt: skip
    reasoning = safe_string(message.get("reasoning_content")) if role == "assistant" else None
    if reasoning is not None and not reasoning.strip(" \t\n\r\v\f\ufeff\u00a0"):
        reasoning = None
    is_error = safe_boolean(message.get("isError"))
    override = safe_string(prop(block, "rawType"))
    block_type = safe_string(prop(block, "type"))
    block_type = "agent" if block_type is None else block_type
    raw_type = override if override is not None else block_type
    raw = {**block, "type": raw_type} if isinstance(block, dict) and raw_type != block_type and block else block
    byte_size = prop(block, "originalByteSize")
    meta = [
        ("originalRole", role),
        *(identity if first else []),
        ("toolCallId", _opt(first_string(message, ("toolCallId", "tool_call_id", "toolUseId", "tool_use_id",
                                                   "call_id", "id")))),
        ("toolName", _opt(first_string(message, ("toolName", "tool_name")))),
        ("isError", _opt(is_error if is_error is not None else safe_boolean(message.get("is_error")))),
        *([("topLevelReasoningField", "reasoning_content"), ("topLevelReasoningContent", reasoning)]
          if first and reasoning is not None else []),
        ("externalizedFileId", _opt(safe_string(prop(block, "externalizedFileId")))),
        ("originalByteSize", byte_size if is_number(byte_size) else UNDEFINED),
        ("imageExternalized", _opt(safe_boolean(prop(block, "imageExternalized")))),
        ("toolOutputExternalized", _opt(safe_boolean(prop(block, "toolOutputExternalized")))),
        ("externalizationReason", _opt(safe_string(prop(block, "externalizationReason")))),
        ("rawType", raw_type),
        ("raw", raw),
    ]  # fmt: skip
    return js_stringify(_defined(meta))


def _outcome(function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except (TypeError, ValueError) as error:
        return type(error).__name__


@settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_projection_matches_the_parsing_steps(message: dict[str, Any]) -> None:
    projected = _outcome(project_message, message)
    if isinstance(projected, str):
        assert _outcome(_exact_tokens, message) == projected
        return
    assert projected.token_count == _exact_tokens(message)
    if "content" in message:
        assert projected.parts == tuple(build_message_parts(message, projected.content))
        if isinstance(message["content"], list) and message["content"]:
            for part, block in zip(projected.parts, message["content"], strict=True):
                assert part.metadata == _block_metadata(message, part.ordinal, block)


@settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_part_metadata_is_the_whole_object_serialised(message: dict[str, Any]) -> None:
    built = _outcome(_build_parts, message, "fallback")
    if isinstance(built, str):
        return
    for part, hint in built:
        assert part.metadata == js_stringify(hint.meta)  # written in two pieces, equal to one
        if hint.raw is not UNDEFINED:
            assert hint.raw is hint.meta["raw"]
            assert hint.raw_text == js_stringify(hint.raw)
        if hint.round_trips:
            assert same_json_value(js_parse(part.metadata), hint.meta)
        if hint.tool_input is not UNDEFINED:  # stands for parsing the tool_input column
            assert part.tool_input == js_stringify(hint.tool_input)
            assert same_json_value(js_parse(part.tool_input), hint.tool_input)


def test_hints_cover_transcript_shaped_messages() -> None:
    # Plain transcript data takes the shortcut; a float in a block or an integer-like key does not.
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "t", "thinkingSignature": "sig"},
            {"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": "a.py", "limit": 20}},
        ],
    }
    assert all(hint.round_trips for _, hint in _build_parts(message, ""))
    for odd in ({"n": 1.5}, {"10": "x"}, ["\ud83d" + "\ude00"]):
        message["content"][1]["arguments"] = odd
        hints = [hint for _, hint in _build_parts(message, "")]
        assert hints[0].round_trips and not hints[1].round_trips
        assert project_message(message).token_count == _exact_tokens(message)
