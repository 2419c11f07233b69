"""Unit tests of the ingest projection: skip rules, token counts, parts, interception, identity."""

from __future__ import annotations

import base64
import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcm_lab.engine.ingest import content as content_mod
from lcm_lab.engine.ingest.content import block_from_part, build_message_parts, project_message
from lcm_lab.engine.ingest.exploration import exploration_summary, explore_code, explore_structured
from lcm_lab.engine.ingest.identity import canonicalize_inbound_metadata, identity_hash, stable_event_key
from lcm_lab.engine.ingest.message import created_at_for, format_created_at, is_persistable, to_stored_message
from lcm_lab.engine.js.strings import js_trim, locale_int, utf16_len, utf16_slice
from lcm_lab.engine.tokens import estimate_tokens

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAYAAAADCAIAAAA/Y+msAAAARElEQVR4nAE5AMb/ACQmCwWUt/zwTjOnJ1hbTEijnAA2lkBpSBChaVuZ3VAYfoEg5NwAgODoBcqtV4T4DNUJH7VGQEaEj+AX+3zVn4kAAAAASUVORK5CYII="
FILE_REF = re.compile(r"file_[a-f0-9]{16}")

ASSISTANT = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "need ls", "thinkingSignature": "sig123"},
        {"type": "text", "text": "Running ls."},
        {
            "type": "toolCall",
            "id": "toolu_01ABCDEFGHIJKLmnop",
            "name": "exec",
            "arguments": {"command": "ls"},
        },
    ],
    "api": "anthropic-messages",
    "provider": "anthropic",
    "model": "claude-x",
    "stopReason": "toolUse",
    "timestamp": 1767261601000,
}


def ingest(message: dict[str, Any], **kwargs: Any) -> Any:
    result = to_stored_message(message, 1, **kwargs)
    assert result.stored is not None, result.skip_reason
    return result


# -- spec §8 observed rows (migrate-sessions shapes) --------------------------------------------


def test_spec_example_rows() -> None:
    user = ingest(
        {"role": "user", "content": [{"type": "text", "text": "list files"}], "timestamp": 1767261600000}
    )
    assert (user.stored.content, user.stored.token_count, user.stored.created_at) == (
        "list files",
        3,
        "2026-01-01 10:00:00",
    )
    assistant = ingest(ASSISTANT).stored
    assert (assistant.content, assistant.token_count) == ("Running ls.", 51)
    assert [p.part_type for p in assistant.parts] == ["reasoning", "text", "tool"]
    meta0 = json.loads(assistant.parts[0].metadata)
    assert list(meta0)[:4] == ["originalRole", "modelProvider", "modelApi", "modelId"]
    assert "modelProvider" not in json.loads(assistant.parts[1].metadata)
    tool_part = assistant.parts[2]
    assert (tool_part.tool_call_id, tool_part.tool_name, tool_part.tool_input) == (
        "toolu_01ABCDEFGHIJKLmnop",
        "exec",
        '{"command":"ls"}',
    )
    result = ingest(
        {
            "role": "toolResult",
            "toolCallId": "toolu_01ABCDEFGHIJKLmnop",
            "toolName": "exec",
            "content": [{"type": "text", "text": "a.txt\nb.txt"}],
            "isError": False,
        }
    ).stored
    assert (result.role, result.content, result.token_count) == ("tool", "a.txt\nb.txt", 10)
    assert result.stable_event_key == "tool-result:toolu_01ABCDEFGHIJKLmnop"
    assert json.loads(result.parts[0].metadata) == {
        "originalRole": "toolResult",
        "toolCallId": "toolu_01ABCDEFGHIJKLmnop",
        "toolName": "exec",
        "isError": False,
        "rawType": "text",
        "raw": {"type": "text", "text": "a.txt\nb.txt"},
    }


def test_image_kept_inline_without_interception_and_externalised_with_it() -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "see image"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        ],
    }
    plain = ingest(message, intercept_large_payloads=False)
    assert (plain.stored.content, plain.stored.token_count) == ("see image\niVBORw0KGgo=", 25)
    assert [p.part_type for p in plain.stored.parts] == ["text", "file"]
    assert plain.large_files == ()

    live = ingest(message)
    file_id = live.large_files[0].file_id
    assert (
        live.stored.content
        == f"see image\n[User image: user-image.png (image/png, 8 bytes) | LCM file: {file_id}]"
    )
    assert live.stored.token_count == estimate_tokens(
        json.dumps(
            [
                {"type": "text", "text": "see image"},
                {
                    "type": "text",
                    "text": live.stored.content.split("\n", 1)[1],
                    "externalizedFileId": file_id,
                    "originalByteSize": 8,
                    "imageExternalized": True,
                    "externalizationReason": "native_image",
                },
            ],
            separators=(",", ":"),
        )
    )
    lf = live.large_files[0]
    assert (lf.file_name, lf.mime_type, lf.byte_size, lf.line_count) == (
        "user-image.png",
        "image/png",
        8,
        None,
    )
    assert lf.exploration_summary == "Image file (PNG, 8 bytes) — user-image.png"
    assert live.payloads[file_id] == b"\x89PNG\r\n\x1a\n"
    assert [p.part_type for p in live.stored.parts] == ["text", "text"]


def test_media_attached_name_and_role_labels() -> None:
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "[media attached 1/2: /tmp/shots/My Shot.png (image/png)]"},
            {"type": "image", "data": f"data:image/png;base64,{PNG}"},
        ],
    }
    stored = ingest(message).stored
    assert stored.content.endswith("| LCM file: " + FILE_REF.findall(stored.content)[0] + "]")
    assert "[Assistant image: My (image/png, 125 bytes)" in stored.content  # name stops at whitespace


# -- skip rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "expected"),
    [("user", True), ("assistant", True), ("system", True), ("tool", True), ("toolResult", True),
     ("bashExecution", False), ("custom", False), ("branchSummary", False), (None, False)],
)  # fmt: skip
def test_persistable_roles(role: str | None, expected: bool) -> None:
    assert is_persistable({"role": role, "content": "x"}) is expected
    if not expected:
        assert to_stored_message({"role": role, "content": "x"}, 1).skip_reason == "non-persistable-role"


@pytest.mark.parametrize("content", [None, "", []])
@pytest.mark.parametrize(
    "stop", [{"stopReason": "error"}, {"stopReason": "aborted"}, {"stop_reason": "error"}]
)
def test_empty_error_assistant_skipped(content: Any, stop: dict[str, str]) -> None:
    result = to_stored_message({"role": "assistant", "content": content, **stop}, 1)
    assert result.stored is None and result.skip_reason == "error-or-aborted-empty-assistant"


def test_error_assistant_with_content_kept() -> None:
    result = to_stored_message(
        {"role": "assistant", "content": [{"type": "text", "text": "partial"}], "stopReason": "error"}, 1
    )
    assert result.stored is not None and result.stored.content == "partial"
    missing = to_stored_message({"role": "assistant", "stopReason": "error"}, 1)
    assert missing.skip_reason == "error-or-aborted-empty-assistant"


def test_runtime_context_sentinel_and_duplicates() -> None:
    leak = {
        "role": "assistant",
        "content": "  OpenClaw runtime context for the immediately preceding user message. "
        "This context is runtime-generated, not user-author. blah",
    }
    assert to_stored_message(leak, 1).skip_reason == "runtime-context-sentinel"
    assert to_stored_message({**leak, "role": "user"}, 1).stored is not None
    tool = {"role": "toolResult", "toolCallId": "call_abcdefghijkl", "content": "ok"}
    assert to_stored_message(
        tool, 2, known_stable_event_keys={"tool-result:call_abcdefghijkl"}
    ).skip_reason == ("duplicate-stable-event-key")
    user = {"role": "user", "content": "hi"}
    assert (
        to_stored_message(user, 2, entry_id="e1", known_entry_ids={"e1"}).skip_reason
        == "duplicate-transcript-entry-id"
    )
    assert (
        to_stored_message(user, 2, entry_id="e2", known_entry_ids={"e1"}).stored.transcript_entry_id == "e2"
    )


def test_non_mapping_message_is_an_error() -> None:
    with pytest.raises(TypeError, match="must be a mapping"):
        to_stored_message(["role", "user"], 1)  # type: ignore[arg-type]


# -- token counts ------------------------------------------------------------------------------


def test_thinking_signature_counted_only_with_model_identity() -> None:
    blocks = [dict(b) for b in ASSISTANT["content"]]
    assert project_message(ASSISTANT).token_count == estimate_tokens(
        json.dumps(blocks, separators=(",", ":"))
    )
    del blocks[0]["thinkingSignature"]
    no_identity = {k: v for k, v in ASSISTANT.items() if k != "api"}
    assert project_message(no_identity).token_count == estimate_tokens(
        json.dumps(blocks, separators=(",", ":"))
    )
    sentinel = {
        **ASSISTANT,
        "content": [{"type": "thinking", "thinking": "t", "thinkingSignature": "reasoning_content"}],
    }
    assert project_message(sentinel).token_count == estimate_tokens(
        '[{"type":"thinking","thinking":"t","thinkingSignature":"reasoning_content"}]'
    )
    # Without identity the sentinel block is dropped; the empty projection falls back to content "".
    assert project_message({k: v for k, v in sentinel.items() if k != "model"}).token_count == 0


def test_top_level_reasoning_content() -> None:
    message = {**ASSISTANT, "reasoning_content": "because reasons"}
    base = project_message(ASSISTANT).token_count
    assert project_message(message).token_count == base + estimate_tokens("because reasons")
    meta = json.loads(build_message_parts(message, "Running ls.")[0].metadata)
    assert meta["topLevelReasoningField"] == "reasoning_content"
    assert list(meta).index("topLevelReasoningContent") > list(meta).index(
        "isError" if "isError" in meta else "modelId"
    )
    only = build_message_parts({"role": "assistant", "content": [], "reasoning_content": "why"}, "")
    assert only[0].part_type == "reasoning" and json.loads(only[0].metadata)["topLevelReasoningOnly"] is True


def test_string_and_bash_shapes() -> None:
    assert project_message({"role": "user", "content": "Hello world"}).token_count == 3
    bash = project_message({"role": "user", "command": "ls -la", "output": "a\nb"})
    assert (bash.content, bash.token_count) == ("$ ls -la\na\nb", estimate_tokens("$ ls -la\na\nb"))
    parts = build_message_parts({"role": "user", "command": "ls", "output": "x"}, "$ ls\nx")
    assert json.loads(parts[0].metadata) == {"originalRole": "user", "source": "bash-exec", "command": "ls"}
    tool = project_message({"role": "toolResult", "toolCallId": "x", "content": "plain output"})
    assert tool.token_count == estimate_tokens('[{"type":"text","text":"plain output"}]')


def test_content_extraction_rules() -> None:
    assert project_message({"role": "user", "content": '{"text": "inner"}'}).content == "inner"
    assert (
        project_message(
            {"role": "assistant", "content": [{"type": "toolCall", "id": "a", "name": "n"}]}
        ).content
        == ""
    )
    odd = [{"type": "widget", "payload": {"items": [{"text": "one"}, {"text": " "}, {"text": "two"}]}}]
    assert project_message({"role": "user", "content": odd}).content == "one\ntwo"
    assert (
        project_message({"role": "user", "content": [{"type": "widget", "n": 1}]}).content
        == '[{"type":"widget","n":1}]'
    )
    parts = build_message_parts(
        {"role": "user", "content": ["bare", None, {"type": "weird", "text": "t"}]}, ""
    )
    assert [p.part_type for p in parts] == ["agent", "agent", "agent"]
    assert json.loads(parts[0].metadata)["raw"] == "bare"


def test_block_from_part_rebuilds_tool_blocks() -> None:
    parts = build_message_parts(ASSISTANT, "Running ls.")
    assert block_from_part(parts[2], True) == {
        "type": "toolCall",
        "id": "toolu_01ABCDEFGHIJKLmnop",
        "name": "exec",
        "arguments": {"command": "ls"},
    }
    assert block_from_part(parts[0], False) == {"type": "thinking", "thinking": "need ls"}
    assert block_from_part(parts[0], True)["thinkingSignature"] == "sig123"


# -- interception ------------------------------------------------------------------------------


def test_large_tool_output_externalised_with_exploration_summary() -> None:
    text = "\n".join(f"[build {i:05d}] compiling module/file{i}.c ... ok" for i in range(60))
    message = {
        "role": "toolResult",
        "toolCallId": "toolu_01aaaaaaaaaaaaaaaa",
        "toolName": "exec",
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }
    result = ingest(message, large_file_token_threshold=500)
    file_id = result.large_files[0].file_id
    assert result.stored.content.startswith(
        f"[LCM Tool Output: {file_id} | tool=exec | {len(text):,} bytes]\n\n"
    )
    assert result.stored.content.endswith(
        '\n\nCall lcm_describe(id="<file_id above>", expandFile=true) to fetch the full output content from disk.'
    )
    assert result.stored.token_count == estimate_tokens(
        json.dumps([{"type": "text", "text": result.stored.content}], separators=(",", ":"))
    )
    lf = result.large_files[0]
    assert (lf.file_name, lf.mime_type, lf.byte_size, lf.line_count) == (
        "exec.txt",
        "text/plain",
        len(text),
        60,
    )
    assert lf.exploration_summary.startswith("Text exploration summary (exec.txt):\nCharacters: ")
    part = result.stored.parts[0]
    assert part.part_type == "tool"
    raw = json.loads(part.metadata)["raw"]
    assert list(raw)[:3] == ["type", "text", "rawType"] and raw["type"] == "tool_result"
    assert (
        raw["tool_use_id"] == "toolu_01aaaaaaaaaaaaaaaa" and raw["isError"] is False and raw["name"] == "exec"
    )
    below = ingest(message, large_file_token_threshold=10**6)
    assert below.large_files == () and below.stored.content == text


def test_user_file_block_and_raw_payload() -> None:
    body = json.dumps({"rows": [{"id": i, "name": f"n{i}"} for i in range(80)], "total": 80})
    message = {
        "role": "user",
        "content": f'look at this <file name="data.json" mime="application/json">{body}</file> ok',
    }
    result = ingest(message, large_file_token_threshold=200)
    file_id = result.large_files[0].file_id
    summary = "Structured summary (JSON):\nTop-level type: object.\nShape: object(keys=2: rows, total)."
    assert result.stored.content == (
        f"look at this [LCM File: {file_id} | data.json | application/json | {len(body):,} bytes]"
        f"\n\nExploration Summary:\n{summary} ok"
    )
    assert result.stored.token_count == estimate_tokens(result.stored.content)
    meta = json.loads(result.stored.parts[0].metadata)
    assert meta["fileBlocksExternalized"] is True and meta["externalizedFileIds"] == [file_id]

    raw = ingest({"role": "user", "content": "word " * 400}, large_file_token_threshold=200)
    assert raw.stored.content.startswith(
        f"[LCM Raw Payload: {raw.large_files[0].file_id} | role=user | reason=large_raw_message | 2,000 bytes]"
    )
    assert raw.large_files[0].file_name == "raw-user-payload.txt"
    assert json.loads(raw.stored.parts[0].metadata)["rawPayloadExternalized"] is True
    # Messages with tool or reasoning blocks are never raw-externalised.
    big_assistant = {**ASSISTANT, "content": [{"type": "text", "text": "x" * 4000}, ASSISTANT["content"][2]]}
    assert ingest(big_assistant, large_file_token_threshold=200).large_files == ()


def test_inline_base64_images() -> None:
    blob = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(600)).decode()
    assistant = ingest({"role": "assistant", "content": blob})
    assert assistant.stored.content.startswith("[Assistant image: assistant-image.png (image/png, ")
    tool = ingest({"role": "toolResult", "toolCallId": "t", "content": [{"type": "text", "text": blob}]})
    assert tool.stored.content.startswith("[Tool image: tool-image.png (image/png, ")
    media = ingest({"role": "user", "content": f"[media attached: /x/y/cat.png (image/png)]\n{blob}\n"})
    assert media.stored.content.startswith(
        "[media attached: /x/y/cat.png (image/png)]\n\n[User image: /x/y/cat.png"
    )


def test_custom_file_id_factory() -> None:
    calls: list[dict[str, Any]] = []

    def fake(**kwargs: Any) -> str:
        calls.append(kwargs)
        return f"file_{len(calls):016x}"

    message = {"role": "user", "content": [{"type": "image", "data": PNG}, {"type": "image", "data": PNG}]}
    result = to_stored_message(message, 7, conversation_id=3, file_id_for=fake)
    assert [f.file_id for f in result.large_files] == ["file_0000000000000001", "file_0000000000000002"]
    assert [(c["conversation_id"], c["seq"], c["index"], c["kind"]) for c in calls] == [
        (3, 7, 0, "image"),
        (3, 7, 1, "image"),
    ]


# -- identity, keys, timestamps ------------------------------------------------------------------


def test_stable_event_keys() -> None:
    assert stable_event_key({"role": "assistant", "responseId": "msg_1"}) == "assistant-response:msg_1"
    assert stable_event_key({"role": "assistant", "response_id": "r"}) == "assistant-response:r"
    assert stable_event_key({"role": "toolResult", "toolCallId": "exec:101", "content": []}) is None
    assert stable_event_key(
        {"role": "tool", "content": [{"type": "tool_result", "tool_use_id": "call_abcdefghijkl"}]}
    ) == ("tool-result:call_abcdefghijkl")
    two = [
        {"type": "tool_result", "tool_use_id": "call_abcdefghijkl"},
        {"type": "tool_result", "id": "call_mnopqrstuvwx"},
    ]
    assert stable_event_key({"role": "tool", "content": two}) is None
    assert stable_event_key({"role": "user", "responseId": "x"}) is None


def test_identity_hash_canonicalises_inbound_metadata() -> None:
    def decorated(message_id: str) -> str:
        return (
            "Conversation info (untrusted metadata):\n```json\n"
            + json.dumps({"message_id": message_id, "chat_id": "telegram:1", "sender": "sam"}, indent=2)
            + "\n```\n\nHello there"
        )

    assert identity_hash("user", decorated("1")) == identity_hash("user", decorated("2"))
    assert identity_hash("assistant", decorated("1")) != identity_hash("assistant", decorated("2"))
    assert canonicalize_inbound_metadata("user", decorated("9")) == (
        'Conversation info (untrusted metadata):\n```json\n{"chat_id":"telegram:1","sender":"sam"}\n```\n\nHello there'
    )
    assert canonicalize_inbound_metadata("user", "Conversation info (untrusted metadata): just prose") == (
        "Conversation info (untrusted metadata): just prose"
    )


def test_sender_metadata_only_for_users() -> None:
    envelope = {"__openclaw": {"senderId": "u1", "senderName": "  ", "senderUsername": "ada", "extra": "x"}}
    assert (
        ingest({"role": "user", "content": "hi", **envelope}).stored.sender_metadata
        == '{"senderId":"u1","senderUsername":"ada"}'
    )
    assert ingest({"role": "assistant", "content": "hi", **envelope}).stored.sender_metadata is None


@pytest.mark.parametrize(
    ("fields", "envelope", "expected"),
    [
        ({"timestamp": 1772441611571}, None, "2026-03-02 08:53:31"),
        ({"timestamp": 1772441611999.9}, None, "2026-03-02 08:53:31"),
        ({"timestamp": -1}, None, "1969-12-31 23:59:59"),
        ({"timestamp": 9e15}, "2026-01-01T00:00:00Z", None),
        ({"createdAt": "2026-03-02T10:00:00+02:00"}, None, "2026-03-02 08:00:00"),
        ({"created_at": "2026-03-02 08:00:05"}, None, "2026-03-02 08:00:05"),
        ({"timestamp": None, "createdAt": 1767261600000}, None, "2026-01-01 10:00:00"),
        ({"timestamp": "  "}, "2026-01-01T10:00:00.123Z", "2026-01-01 10:00:00"),
        ({}, "2026-01-01T10:00:00.123Z", "2026-01-01 10:00:00"),
        ({}, None, None),
        ({"timestamp": "not a date"}, None, None),
    ],
)
def test_created_at(fields: dict[str, Any], envelope: str | None, expected: str | None) -> None:
    assert created_at_for({"role": "user", "content": "x", **fields}, envelope) == expected


def test_created_at_extreme_years() -> None:
    assert format_created_at(8.64e15) == "+275760-09-13 00:00"
    assert format_created_at(-62198755200000) == "-000001-01-01 00:00"
    assert format_created_at(float("nan")) is None


def _iso_created_at(epoch_ms: float) -> str | None:
    """``new Date(ms).toISOString().slice(0, 19).replace("T", " ")`` step by step (Python's
    datetime covers years 1-9999; the day-number arithmetic of the engine covers the rest)."""
    import math
    from datetime import datetime, timedelta

    if not math.isfinite(epoch_ms) or abs(epoch_ms) > 8.64e15:
        return None
    moment = datetime(1970, 1, 1) + timedelta(milliseconds=int(epoch_ms))
    iso = f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"
    return iso[:19].replace("T", " ", 1)


@settings(deadline=None)
@given(
    st.integers(-62135596800000, 253402300799999)
    | st.floats(-62135596800000, 253402300799999)
    | st.sampled_from([0, -1, -0.0, 0.5, -0.5, 951782400000, 951868800000, 253402300799999.9, -62135596800000.0])
)
def test_created_at_matches_the_iso_text(epoch_ms: float) -> None:
    assert format_created_at(epoch_ms) == _iso_created_at(epoch_ms)
    assert format_created_at(epoch_ms) == format_created_at(epoch_ms)  # the memoised date is reused


# -- exploration summaries and JS string helpers -------------------------------------------------


def test_exploration_summaries() -> None:
    assert explore_structured("a,b\n1,2\n3,4\n", "text/csv") == (
        "Structured summary (CSV):\nRows: 2.\nColumns (2): a, b.\nFirst row sample: 1,2."
    )
    assert (
        explore_structured("{bad", None, "x.json")
        == "Structured summary (JSON): failed to parse as valid JSON."
    )
    assert explore_structured('[1, {"a": [1]}]', None, "x.json").endswith(
        "Shape: array(len=2, sample=[number, object(keys=1: a)])."
    )
    assert explore_structured("root:\n  a: 1\nother: # c\n", None, "c.yaml") == (
        "Structured summary (YAML):\nTop-level keys (2): root, other."
    )
    assert explore_structured("<doc><a/><b x='1'>t</b></doc>", "application/xml") == (
        "Structured summary (XML):\nRoot element: doc.\nChild elements seen: b."
    )
    code = explore_code("import os\nfrom x import y\n\ndef main():\n    pass\nclass A:\n", "m.py")
    assert code == (
        "Code exploration summary (m.py):\nLines: 7.\nImports/dependencies (2): import os | from x import y.\n"
        "Top-level definitions (2): def main(): | class A:."
    )
    text = exploration_summary("INTRODUCTION SECTION\n" + "word " * 300, "notes.md")
    assert "Detected section headers: INTRODUCTION SECTION." in text
    assert text.split("\n")[1] == f"Characters: {locale_int(21 + 1500)}."


def test_js_string_helpers() -> None:
    assert js_trim("\ufeff\u3000x\u2029") == "x"
    assert js_trim("\x1cx") == "\x1cx"  # not JavaScript whitespace (Python strips it)
    assert utf16_len("😀a") == 3
    assert utf16_slice("😀abc", -2) == "bc"
    assert locale_int(1234567) == "1,234,567" and locale_int(999) == "999"


# -- purity --------------------------------------------------------------------------------------

FORBIDDEN = ("duckdb", "sqlite3", "litellm", "httpx")


def test_ingest_modules_are_pure() -> None:
    modules = ["js.strings", "ingest.content", "ingest.identity", "ingest.exploration", "ingest.large_payloads", "ingest.message", "config.lcm_config"]
    for name in modules:
        module = importlib.import_module(f"lcm_lab.engine.{name}")
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        for forbidden in (*FORBIDDEN, "open(", "pathlib", "datetime.now", "time.time", "os.environ"):
            assert forbidden not in source, f"lcm_lab.engine.{name} uses {forbidden}"
    assert content_mod is sys.modules["lcm_lab.engine.ingest.content"]
