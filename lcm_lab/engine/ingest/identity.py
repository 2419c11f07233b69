"""Row identity fields of an ingested message: identity hash, stable event key, sender metadata.

* ``identity_hash = sha256(role + "\\0" + canon(role, content))`` where ``canon`` rewrites
  OpenClaw's injected ``Conversation info (untrusted metadata)`` preamble of *user* messages
  into a canonical form without volatile keys (``src/store/message-identity.ts``,
  ``src/openclaw-inbound-metadata.ts``; spec §2.2);
* ``stable_event_key``: ``assistant-response:<responseId>`` or ``tool-result:<toolCallId>`` for a
  provider-minted tool id (``src/stable-event-key.ts``);
* ``openclaw_sender_metadata``: the allowlisted ``__openclaw`` sender fields of user messages
  (``src/openclaw-sender-metadata.ts``).

>>> identity_hash("assistant", "hi")[:12]
'b58a83205ef2'
>>> stable_event_key({"role": "toolResult", "toolCallId": "toolu_01ABCDEFGHIJKLmnop", "content": []})
'tool-result:toolu_01ABCDEFGHIJKLmnop'
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from functools import cmp_to_key
from typing import Any

from lcm_lab.engine.js.json import js_stringify
from lcm_lab.engine.js.strings import JS_NON_WS_CLASS, js_trim, js_trim_end, js_trim_start

__all__ = [
    "canonicalize_inbound_metadata",
    "identity_hash",
    "sender_metadata",
    "sender_metadata_json",
    "stable_event_key",
]

_ANY = r"[\s\S]"  # JavaScript's [\s\S]: any code unit


def identity_hash(role: str, content: str) -> str:
    """``messages.identity_hash`` for a stored role and content."""
    canonical = canonicalize_inbound_metadata(role, content)
    data = (role + "\0" + canonical).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


# -- stable event key ------------------------------------------------------------------------

_PROVIDER_TOOL_ID = re.compile(r"(?:toolu_|call_)[A-Za-z0-9]{12,}")
_PAIRING_KEYS = ("toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id", "id")
_TOOL_RESULT_TYPES = frozenset({"function_call_output", "tool_result", "toolResult", "tool_use_result"})


def _pairing_id(record: Mapping[str, Any]) -> str | None:
    for key in _PAIRING_KEYS:
        value = record.get(key)
        if isinstance(value, str):
            return value
    return None


def _single_tool_result_id(message: Mapping[str, Any]) -> str | None:
    direct = _pairing_id(message)
    content = message.get("content")
    if "content" not in message or not isinstance(content, list):
        return direct
    count = 0
    content_id: str | None = None
    for block in content:
        if (type(block) is not dict and not isinstance(block, Mapping)) or not isinstance(block.get("type"), str):
            continue
        if block["type"] not in _TOOL_RESULT_TYPES:
            continue
        count += 1
        if count > 1:
            return None  # aggregate results cannot be one event
        content_id = _pairing_id(block)
    if direct and content_id and direct != content_id:
        return None
    return direct if direct is not None else content_id


def stable_event_key(message: Mapping[str, Any]) -> str | None:
    """``extractStableEventKey`` of the runtime message (before interception)."""
    role = message.get("role")
    if role == "assistant":
        for key in ("responseId", "response_id"):
            value = message.get(key)
            if isinstance(value, str):
                if value:
                    return f"assistant-response:{value}"
                break
    if role in ("tool", "toolResult"):
        tool_call_id = _single_tool_result_id(message)
        if tool_call_id and _PROVIDER_TOOL_ID.fullmatch(tool_call_id):
            return f"tool-result:{tool_call_id}"
    return None


# -- sender metadata -------------------------------------------------------------------------

_SENDER_KEYS = ("senderId", "senderName", "senderUsername")


def sender_metadata(message: Mapping[str, Any]) -> dict[str, str] | None:
    """Allowlisted non-blank ``__openclaw`` sender fields of a user message, else ``None``."""
    if message.get("role") != "user":
        return None
    envelope = message.get("__openclaw")
    if not isinstance(envelope, Mapping):
        return None
    found = {
        k: envelope[k] for k in _SENDER_KEYS if isinstance(envelope.get(k), str) and js_trim(envelope[k])
    }
    return found or None


def sender_metadata_json(message: Mapping[str, Any]) -> str | None:
    """``messages.openclaw_sender_metadata`` text (compact JSON) or ``None``."""
    found = sender_metadata(message)
    return js_stringify(found) if found else None


# -- inbound metadata canonicalization ----------------------------------------------------------

_CONVERSATION_HEADING = "Conversation info (untrusted metadata)"
_SENDER_HEADING = "Sender (untrusted metadata)"
_METADATA_BLOCK = re.compile(
    r"(Conversation info \(untrusted metadata\)|Sender \(untrusted metadata\)):\r?\n```json\r?\n("
    + _ANY
    + r"*?)\r?\n```"
)
_CONVERSATION_INFO_KEYS = frozenset(
    {
        "chat_id", "message_id", "reply_to_id", "sender_id", "conversation_label", "sender", "timestamp",
        "group_subject", "group_channel", "group_space", "group_members", "thread_label",
        "inbound_event_kind", "topic_id", "topic_name", "is_forum", "mention_reason", "mention_target",
        "mentioned_user_ids", "mentioned_usernames", "has_reply_context", "has_forwarded_context",
        "has_thread_starter", "history_count", "history_media_count", "history_truncated",
    }
)  # fmt: skip
_SENDER_INFO_KEYS = frozenset({"label", "id", "name", "username", "tag", "e164"})
_VOLATILE_KEYS = frozenset({"message_id", "reply_to_id", "timestamp"})
_VOLATILE_KEYS_WITH_HISTORY = _VOLATILE_KEYS | {"history_count", "history_media_count", "history_truncated"}
_HISTORY_ENTRY_KEYS = frozenset({"sender", "timestamp_ms", "message_id", "body", "media"})
_RECAP_HEADERS = (
    "Chat history since last reply (untrusted, for context):",
    "Conversation context (untrusted, chronological, selected for current message):",
)
_CONTEXT_HEADINGS = (
    "Thread starter (untrusted, for context)",
    "Reply chain of current user message (untrusted, nearest first)",
    "Reply target of current user message (untrusted, for context)",
    "Forwarded message context (untrusted metadata)",
    "Location (untrusted metadata)",
)
_FENCED_JSON = r"\r?\n```json\r?\n(" + _ANY + r"*?)\r?\n```"
_CONTEXT_BLOCK = re.compile("(?:" + "|".join(re.escape(h) for h in _CONTEXT_HEADINGS) + "):" + _FENCED_JSON)
_RECAP_HEADER_SRC = "(?:" + "|".join(re.escape(h) for h in _RECAP_HEADERS) + ")"
_RECAP_JSON_BLOCK = re.compile(_RECAP_HEADER_SRC + _FENCED_JSON)
_NOT_LINE_END = r"[^\n\r\u2028\u2029]"  # JavaScript's `.`
_RECAP_ID = r"#" + JS_NON_WS_CLASS + "+"
_RECAP_TS = r"[A-Za-z]{3} \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} " + JS_NON_WS_CLASS + "+"
_RECAP_ENTRY = f"(?:{_RECAP_ID} {_RECAP_TS} |{_RECAP_ID} |{_RECAP_TS} ){_NOT_LINE_END}+: {_NOT_LINE_END}+"
_RECAP_LINE_BLOCK = re.compile(
    _RECAP_HEADER_SRC
    + r"\r?\n"
    + f"(?:{_RECAP_ENTRY})"
    + rf"(?:\r?\n(?:{_RECAP_ENTRY}))*"
    + r"(?=\r?\n\r?\n|\r?\n?\Z)",
    re.ASCII,
)
_DELIVERY_PRELUDE = re.compile(
    r"Delivery:" + _ANY + r"*?\r?\n\r?\n(?=Conversation info \(untrusted metadata\):)"
)
_METADATA_SEPARATOR = re.compile(r"[ \t]*(?:\r?\n)(?:[ \t]*(?:\r?\n))?")


def _strict_loads(text: str) -> Any:
    def reject(name: str) -> Any:
        raise ValueError(name)

    return json.loads(text, parse_constant=reject)


def _split_prelude(content: str) -> tuple[str, str]:
    trimmed = js_trim_start(content)
    if trimmed.startswith(_CONVERSATION_HEADING + ":"):
        return "", trimmed
    match = _DELIVERY_PRELUDE.match(trimmed)
    if not match:
        return "", trimmed
    return match.group(0), trimmed[match.end() :]


def _parse_metadata_record(heading: str, text: str) -> dict[str, Any] | None:
    try:
        parsed = _strict_loads(text)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    known = _CONVERSATION_INFO_KEYS if heading == _CONVERSATION_HEADING else _SENDER_INFO_KEYS
    return parsed if any(key in known for key in parsed) else None


def _has_history(record: Mapping[str, Any]) -> bool:
    count = record.get("history_count")
    return (
        isinstance(count, int | float) and not isinstance(count, bool) and count == int(count) and count > 0
    )


def _locale_compare(left: str, right: str) -> int:
    """Approximation of ``String.prototype.localeCompare`` (ICU root) for metadata keys.

    Primary strength: punctuation before digits before letters, letters case-insensitively;
    ties broken by lowercase-first. Exact for the ASCII snake_case keys OpenClaw emits.
    """

    def key(text: str) -> tuple[list[tuple[int, str]], list[int]]:
        primary: list[tuple[int, str]] = []
        tertiary: list[int] = []
        for ch in text:
            if ch.isalpha():
                primary.append((2, ch.lower()))
                tertiary.append(0 if ch.islower() else 1)
            elif ch.isdigit():
                primary.append((1, ch))
                tertiary.append(0)
            else:
                primary.append((0, ch))
                tertiary.append(0)
        return primary, tertiary

    lk, rk = key(left), key(right)
    return (lk > rk) - (lk < rk)


def _compare_items(a: tuple[str, Any], b: tuple[str, Any]) -> int:
    return _locale_compare(a[0], b[0])


def _canonical_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_canonical_value(v) for v in value]
    if isinstance(value, dict):
        ordered = sorted(value.items(), key=cmp_to_key(_compare_items))
        return {k: _canonical_value(v) for k, v in ordered}
    return value


def _canonical_metadata_json(record: Mapping[str, Any], volatile: frozenset[str]) -> str | None:
    stable = {k: v for k, v in record.items() if k not in volatile}
    if not stable:
        return None
    return js_stringify(_canonical_value(stable))


def _strip_separator(content: str) -> str:
    match = _METADATA_SEPARATOR.match(content)
    return content[match.end() :] if match else content


def _split_context_blocks(content: str) -> tuple[str, str]:
    remaining, blocks = content, ""
    while True:
        candidate = js_trim_start(remaining)
        leading = remaining[: len(remaining) - len(candidate)]
        match = _CONTEXT_BLOCK.match(candidate)
        if not match:
            return blocks, remaining
        try:
            payload = _strict_loads(match.group(1))
        except ValueError:
            return blocks, remaining
        if not isinstance(payload, dict | list):
            return blocks, remaining
        blocks += leading + match.group(0)
        remaining = candidate[match.end() :]


def _recap_length(candidate: str) -> int:
    json_match = _RECAP_JSON_BLOCK.match(candidate)
    if json_match:
        try:
            payload = _strict_loads(json_match.group(1))
        except ValueError:
            return 0
        valid = (
            isinstance(payload, list)
            and len(payload) > 0
            and all(isinstance(e, dict) and any(k in _HISTORY_ENTRY_KEYS for k in e) for e in payload)
        )
        return json_match.end() if valid else 0
    line_match = _RECAP_LINE_BLOCK.match(candidate)
    return line_match.end() if line_match else 0


def _format_block(heading: str, body: str) -> str:
    return "\n".join([heading + ":", "```json", body, "```"])


def canonicalize_inbound_metadata(role: str, content: str) -> str:
    """Identity input of a stored message: user preambles canonicalized, everything else as is."""
    if role != "user" or "(untrusted metadata)" not in content:
        return content
    prelude, metadata_candidate = _split_prelude(content)
    conversation_candidate = js_trim_start(metadata_candidate)
    conversation_match = _METADATA_BLOCK.match(conversation_candidate)
    if not conversation_match or conversation_match.group(1) != _CONVERSATION_HEADING:
        return content
    record = _parse_metadata_record(_CONVERSATION_HEADING, conversation_match.group(2))
    if record is None:
        return content
    with_history = _has_history(record)
    canonical_conversation = _canonical_metadata_json(
        record, _VOLATILE_KEYS_WITH_HISTORY if with_history else _VOLATILE_KEYS
    )
    if canonical_conversation is None:
        return content

    remaining = conversation_candidate[conversation_match.end() :]
    blocks = [_format_block(_CONVERSATION_HEADING, canonical_conversation)]
    sender_candidate = js_trim_start(remaining)
    sender_match = _METADATA_BLOCK.match(sender_candidate)
    after_blocks = remaining
    if sender_match and sender_match.group(1) == _SENDER_HEADING:
        sender_record = _parse_metadata_record(_SENDER_HEADING, sender_match.group(2))
        canonical_sender = _canonical_metadata_json(sender_record, frozenset()) if sender_record else None
        if canonical_sender:
            after_blocks = sender_candidate[sender_match.end() :]
            blocks.append(_format_block(_SENDER_HEADING, canonical_sender))

    if with_history:
        context_text, context_rest = _split_context_blocks(after_blocks)
        recap_candidate = js_trim_start(context_rest)
        recap = _recap_length(recap_candidate)
        if recap > 0:
            context_prefix = js_trim_end(_strip_separator(context_text))
            after_recap = _strip_separator(recap_candidate[recap:])
            if context_prefix:
                remaining = f"{context_prefix}\n\n{after_recap}" if js_trim(after_recap) else context_prefix
            else:
                remaining = after_recap
        else:
            remaining = _strip_separator(after_blocks)
    else:
        remaining = _strip_separator(after_blocks)

    if not js_trim(remaining):
        return content
    return prelude + "\n\n".join(blocks) + "\n\n" + remaining
