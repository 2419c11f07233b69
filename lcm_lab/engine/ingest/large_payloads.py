"""Live large-payload interception at ingest (spec §3 item 6; ``src/large-file-interceptor.ts``).

Before a runtime message is stored, lossless-claw moves bulky payloads out of ``messages.content``
into ``large_files`` and leaves a compact reference:

* native ``{type:"image", data:<base64>}`` blocks → a text block
  ``[User image: <name> (<mime>, <N> bytes) | LCM file: file_…]`` (``Tool``/``Assistant``/
  ``System image`` by role);
* inline base64 images inside tool results or plain message text;
* user ``<file name=… mime=…>…</file>`` blocks of ≥ ``largeFileTokenThreshold`` tokens;
* tool-result text of ≥ threshold tokens → ``[LCM Tool Output: …]`` with an exploration summary;
* any other non-tool message still ≥ threshold without tool/reasoning blocks → ``[LCM Raw Payload: …]``.

The plugin draws file ids at random; here a :data:`FileIdFactory` makes them deterministic
(default: ``file_`` + 16 hex of a SHA-256 over the conversation, message seq, payload index, kind
and payload). Payload bytes are returned alongside, so a store can keep them losslessly.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from lcm_lab.engine.ingest.content import extract_structured_text, has_replay_critical_raw_block
from lcm_lab.engine.ingest.exploration import (
    exploration_summary,
    format_file_reference,
    format_raw_payload_reference,
    format_tool_output_reference,
    split_lines,
)
from lcm_lab.engine.js.json import UNDEFINED, js_stringify
from lcm_lab.engine.js.strings import JS_WS_CLASS, js_trim, locale_int, utf16_len
from lcm_lab.engine.js.values import first_string, safe_boolean, safe_string, to_json
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import LargeFile

__all__ = ["FileIdFactory", "Interceptor", "default_file_id"]

RAW_PAYLOAD_REASON = "large_raw_message"


class FileIdFactory(Protocol):
    """Makes the ``file_…`` id of one externalised payload."""

    def __call__(self, *, conversation_id: int, seq: int, index: int, kind: str, payload: str) -> str: ...


def default_file_id(*, conversation_id: int, seq: int, index: int, kind: str, payload: str) -> str:
    """Deterministic stand-in for the plugin's random ``file_<16 hex>`` ids.

    >>> default_file_id(conversation_id=1, seq=3, index=0, kind="image", payload="iVBOR")[:5]
    'file_'
    """
    digest = hashlib.sha256()
    for piece in ("lcm-lab-file-v1", str(conversation_id), str(seq), str(index), kind):
        digest.update(piece.encode())
        digest.update(b"\0")
    digest.update(payload.encode("utf-8", "surrogatepass"))
    return "file_" + digest.hexdigest()[:16]


_IMAGE_MAGIC = (
    ("/9j/", "jpg", "image/jpeg"),
    ("iVBOR", "png", "image/png"),
    ("R0lGOD", "gif", "image/gif"),
    ("UklGR", "webp", "image/webp"),
    ("PHN2Zy", "svg", "image/svg+xml"),
)
_MIME_IMAGE_EXTENSIONS = {
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/png": "png",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
    "image/heic": "heic",
    "image/avif": "avif",
    "image/bmp": "bmp",
}
_DATA_URL = re.compile(r"data:([^;,]+);base64,([\s\S]*)")
_WS_RUN = re.compile(JS_WS_CLASS + "+")
_BASE64_STRICT = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_MEDIA_ATTACHED = re.compile(
    r"\[media attached(?:" + JS_WS_CLASS + r"+\d+/\d+)?:" + JS_WS_CLASS + r"*([^\s\]|()]+)", re.I
)
_USER_MEDIA_LINE = re.compile(r"\n([A-Za-z0-9+/]{20,}={0,2})\n")
_MEDIA_PATH = re.compile(r"\[media attached:" + JS_WS_CLASS + r"*([^\s(]+)")
_NON_BASE64 = re.compile(r"[^A-Za-z0-9+/=" + JS_WS_CLASS[1:-1] + "]")
_IMAGE_REFERENCE = re.compile(
    r"\[(?:(?:User|System|Tool|Assistant) image|Image): [^\]]*LCM file: file_[a-f0-9]{16}\]"
)
_FILE_BLOCK = re.compile(r"<file\b([^>]*)>([\s\S]*?)</file>", re.I | re.ASCII)
_FILE_ATTR = re.compile(
    r"([A-Za-z_:][A-Za-z0-9_:\-.]*)" + JS_WS_CLASS + r"*=" + JS_WS_CLASS
    + r"""*("([^"]*)"|'([^']*)'|([^\s"'>]+))"""
)  # fmt: skip


def _detect_image(data: str) -> tuple[str, str] | None:
    for prefix, extension, mime in _IMAGE_MAGIC:
        if data.startswith(prefix):
            return extension, mime
    return None


def _base64_bytes(data: str) -> bytes:
    """Node's lenient ``Buffer.from(data, "base64")``: skips non-alphabet, stops at padding."""
    cleaned = re.sub(r"[^A-Za-z0-9+/]", "", data.split("=", 1)[0])
    usable = len(cleaned) - len(cleaned) % 4
    tail = cleaned[usable:]
    decoded = base64.b64decode(cleaned[:usable]) if usable else b""
    if len(tail) >= 2:
        decoded += base64.b64decode(tail + "=" * (4 - len(tail)))
    return decoded


@dataclass
class Interceptor:
    """Externalises the payloads of one message; collects the ``large_files`` rows it creates."""

    conversation_id: int
    seq: int
    threshold: int
    file_id_for: FileIdFactory | Callable[..., str] = default_file_id
    large_files: list[LargeFile] = field(default_factory=list)
    payloads: dict[str, bytes] = field(default_factory=dict)

    def _next_id(self, kind: str, payload: str) -> str:
        return self.file_id_for(
            conversation_id=self.conversation_id,
            seq=self.seq,
            index=len(self.large_files),
            kind=kind,
            payload=payload,
        )

    @property
    def limit(self) -> int:
        return max(1, self.threshold)

    # -- images ---------------------------------------------------------------------------

    def _externalize_image(
        self, base64_data: str, file_name: str | None, extension: str, mime_type: str, label: str
    ) -> tuple[str, int, str]:
        file_id = self._next_id("image", base64_data)
        data = _base64_bytes(base64_data)
        byte_size = len(data)
        name = file_name if file_name is not None else f"image.{extension}"
        summary = f"Image file ({extension.upper()}, {locale_int(byte_size)} bytes)" + (
            f" — {file_name}" if file_name else ""
        )
        self.large_files.append(LargeFile(file_id, name, mime_type, byte_size, None, summary))
        self.payloads[file_id] = data
        reference = f"[{label}: {name} ({mime_type}, {locale_int(byte_size)} bytes) | LCM file: {file_id}]"
        return file_id, byte_size, reference

    @staticmethod
    def _native_image(block: Any) -> tuple[str, str, str] | None:
        if not isinstance(block, Mapping) or block.get("type") != "image":
            return None
        raw = safe_string(block.get("data"))
        if not raw:
            return None
        data_url = _DATA_URL.fullmatch(raw)
        if data_url:
            declared: str | None = data_url.group(1)
        else:
            declared = first_string(block, ("mimeType", "mime_type", "mediaType", "media_type"))
        data = _WS_RUN.sub("", data_url.group(2) if data_url else raw)
        if not data or not _BASE64_STRICT.fullmatch(data):
            return None
        detected = _detect_image(data)
        mime = detected[1] if detected else declared
        if not mime or not mime.lower().startswith("image/"):
            return None
        extension = detected[0] if detected else _MIME_IMAGE_EXTENSIONS.get(mime.lower())
        return (data, extension, mime) if extension else None

    @staticmethod
    def _native_image_file_name(content: list[Any], index: int, extension: str, role: Any) -> str:
        for previous in reversed(content[:index]):
            if not isinstance(previous, Mapping) or previous.get("type") != "text":
                continue
            text = safe_string(previous.get("text"))
            if not text:
                continue
            match = _MEDIA_ATTACHED.search(text)
            if match:
                base = [p for p in re.split(r"[\\/]", js_trim(match.group(1))) if p]
                if base:
                    cleaned = re.sub(r"[^\w.\-@]+", "_", base[-1], flags=re.ASCII)
                    if cleaned:
                        return cleaned
        prefix = {"assistant": "assistant", "system": "system", "tool": "tool", "toolResult": "tool"}.get(
            role if isinstance(role, str) else "", "user"
        )
        return f"{prefix}-image.{extension}"

    def native_image_blocks(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """``interceptNativeImageBlocks``: native base64 image blocks → reference text blocks."""
        role = message.get("role")
        content = message.get("content")
        if role not in ("user", "assistant", "system", "tool", "toolResult") or not isinstance(content, list):
            return None
        label = {
            "assistant": "Assistant image",
            "system": "System image",
            "tool": "Tool image",
            "toolResult": "Tool image",
        }.get(role, "User image")
        rewritten: list[Any] = []
        changed = False
        for index, block in enumerate(content):
            image = self._native_image(block)
            if image is None:
                rewritten.append(block)
                continue
            data, extension, mime = image
            name = self._native_image_file_name(content, index, extension, role)
            file_id, byte_size, reference = self._externalize_image(data, name, extension, mime, label)
            rewritten.append(
                {
                    "type": "text",
                    "text": reference,
                    "externalizedFileId": file_id,
                    "originalByteSize": byte_size,
                    "imageExternalized": True,
                    "externalizationReason": "native_image",
                }
            )
            changed = True
        return {**message, "content": rewritten} if changed else None

    def _pure_base64_image(self, content: str, role: str) -> str | None:
        trimmed = js_trim(content)
        if estimate_tokens(trimmed) < 100:
            return None
        detected = _detect_image(trimmed)
        if detected is None:
            return None
        if utf16_len(_NON_BASE64.sub("", trimmed)) / utf16_len(trimmed) < 0.8:
            return None
        extension, mime = detected
        label = "Tool image" if role == "tool" else "Assistant image" if role == "assistant" else "Image"
        _, _, reference = self._externalize_image(
            trimmed, f"{role}-image.{extension}", extension, mime, label
        )
        return reference

    def _user_media_base64(self, content: str) -> str | None:
        if not content.startswith("[media attached:"):
            return None
        match = _USER_MEDIA_LINE.search(content)
        if not match:
            return None
        header_end = match.start() + 1
        header = js_trim(content[:header_end])
        data = content[header_end:]
        if estimate_tokens(data) < 100:
            return None
        detected = _detect_image(data)
        if detected is None:
            return None
        extension, mime = detected
        path = _MEDIA_PATH.search(header)
        name = path.group(1) if path else f"user-image.{extension}"
        _, _, reference = self._externalize_image(data, name, extension, mime, "User image")
        return f"{header}\n\n{reference}"

    def inline_images(self, content: str, role: str) -> str | None:
        """``interceptInlineImages`` on stored text of a non-tool message."""
        rewritten = self._user_media_base64(content)
        return rewritten if rewritten is not None else self._pure_base64_image(content, role)

    def _rewrite_tool_value(self, value: Any) -> tuple[Any, bool]:
        if isinstance(value, str):
            rewritten = self._pure_base64_image(value, "tool")
            return (rewritten, True) if rewritten is not None else (value, False)
        if isinstance(value, list):
            results = [self._rewrite_tool_value(v) for v in value]
            if any(changed for _, changed in results):
                return [v for v, _ in results], True
            return value, False
        if not isinstance(value, Mapping):
            return value, False
        if value.get("type") == "text" and isinstance(value.get("text"), str):
            rewritten = self._pure_base64_image(value["text"], "tool")
            return ({**value, "text": rewritten}, True) if rewritten is not None else (value, False)
        record = dict(value)
        changed_any = False
        for key in ("output", "content", "result"):
            if key not in value:
                continue
            new, changed = self._rewrite_tool_value(value[key])
            if changed:
                record[key] = new
                changed_any = True
        return (record, True) if changed_any else (value, False)

    def inline_images_in_tool_message(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """``interceptInlineImagesInToolMessage``."""
        if message.get("role") not in ("toolResult", "tool") or "content" not in message:
            return None
        content = message["content"]
        if isinstance(content, str):
            rewritten = self._pure_base64_image(content, "tool")
            return {**message, "content": rewritten} if rewritten is not None else None
        if not isinstance(content, list):
            return None
        new, changed = self._rewrite_tool_value(content)
        return {**message, "content": new} if changed else None

    # -- text payloads ----------------------------------------------------------------------

    def _externalize_text(
        self, kind: str, content: str, file_name: str | None, mime_type: str | None
    ) -> tuple[str, int, str]:
        file_id = self._next_id(kind, content)
        data = content.encode("utf-8", "surrogatepass")
        summary = exploration_summary(content, file_name, mime_type)
        self.large_files.append(
            LargeFile(file_id, file_name, mime_type, len(data), len(split_lines(content)), summary)
        )
        self.payloads[file_id] = data
        return file_id, len(data), summary

    def large_file_blocks(self, content: str) -> tuple[str, list[str]] | None:
        """``interceptLargeFiles``: oversized ``<file>`` blocks in user text."""
        segments: list[str] = []
        file_ids: list[str] = []
        cursor = 0
        for match in _FILE_BLOCK.finditer(content):
            text = match.group(2)
            if estimate_tokens(text) < self.limit:
                continue
            attrs: dict[str, str] = {}
            for attr in _FILE_ATTR.finditer(match.group(1)):
                key = js_trim(attr.group(1)).lower()
                value = js_trim(attr.group(3) or attr.group(4) or attr.group(5) or "")
                if key and value:
                    attrs[key] = value
            name, mime = attrs.get("name"), attrs.get("mime")
            file_id, byte_size, summary = self._externalize_text("file", text, name, mime)
            segments.append(content[cursor : match.start()])
            segments.append(format_file_reference(file_id, name, mime, byte_size, summary))
            cursor = match.end()
            file_ids.append(file_id)
        if not file_ids:
            return None
        segments.append(content[cursor:])
        return "".join(segments), file_ids

    def large_tool_results(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """``interceptLargeToolResults``: tool-result text ≥ threshold → ``[LCM Tool Output: …]``."""
        if message.get("role") not in ("toolResult", "tool") or "content" not in message:
            return None
        if isinstance(message["content"], str):
            message = {**message, "content": [{"type": "text", "text": message["content"]}]}
        content = message["content"]
        if not isinstance(content, list):
            return None
        top_call_id = first_string(
            message, ("toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id", "id")
        )
        top_tool_name = first_string(message, ("toolName", "tool_name"))
        top_is_error = safe_boolean(message.get("isError"))
        if top_is_error is None:
            top_is_error = safe_boolean(message.get("is_error"))

        details = message.get("details", UNDEFINED)
        if not content and details is not UNDEFINED:
            # Empty results may carry their payload in `details`. (Newer plugin releases also cap
            # details by byte size; the threshold test is the part every release shares.)
            serialized = to_json(details)
            if serialized and estimate_tokens(serialized) >= self.limit:
                tool_name: str = f"{top_tool_name if top_tool_name is not None else 'tool-result'}-details"
                file_id, byte_size, summary = self._externalize_text(
                    "tool-details", serialized, f"{tool_name}.json", "application/json"
                )
                reference = format_tool_output_reference(file_id, tool_name, byte_size, summary)
                reason = "large_tool_result_details"
                return {
                    **message,
                    "details": {
                        "externalizedFileId": file_id,
                        "originalByteSize": byte_size,
                        "externalizationReason": reason,
                        "reference": reference,
                    },
                    "externalizedFileId": file_id,
                    "originalByteSize": byte_size,
                    "externalizationReason": reason,
                }

        rewritten: list[Any] = []
        intercepted = False
        for item in content:
            if not isinstance(item, Mapping):
                rewritten.append(item)
                continue
            raw_type = safe_string(item.get("type"))
            is_result_block = raw_type in ("tool_result", "toolResult", "function_call_output")
            is_plain_text = raw_type == "text" and isinstance(item.get("text"), str)
            if not is_result_block and not is_plain_text:
                rewritten.append(item)
                continue
            if is_plain_text:
                source: Any = item["text"]
            elif "output" in item:
                source = item["output"]
            elif "content" in item:
                source = item["content"]
            else:
                source = item
            extracted = extract_structured_text(source)
            if extracted is None or _IMAGE_REFERENCE.fullmatch(js_trim(extracted)):
                rewritten.append(item)
                continue
            tool_name = safe_string(item.get("name")) or (top_tool_name if top_tool_name is not None else "tool-result")
            call_id = first_string(
                item, ("tool_use_id", "toolUseId", "tool_call_id", "toolCallId", "call_id", "id")
            )
            if call_id is None:
                call_id = top_call_id
            if tool_name == "lcm_describe" or estimate_tokens(extracted) < self.limit:
                rewritten.append(item)
                continue
            intercepted = True
            file_id, byte_size, summary = self._externalize_text(
                "tool-output", extracted, f"{tool_name}.txt", "text/plain"
            )
            reference = format_tool_output_reference(file_id, tool_name, byte_size, summary)
            raw_kind = "function_call_output" if raw_type == "function_call_output" else "tool_result"
            block: dict[str, Any]
            if is_plain_text:
                block = {"type": "text", "text": reference, "rawType": raw_kind}
            else:
                block = {"type": raw_kind, "output": reference}
            block.update(
                {
                    "externalizedFileId": file_id,
                    "originalByteSize": byte_size,
                    "toolOutputExternalized": True,
                    "externalizationReason": "large_tool_result",
                }
            )
            if call_id:
                block["call_id" if raw_kind == "function_call_output" else "tool_use_id"] = call_id
            if isinstance(item.get("is_error"), bool):
                block["is_error"] = item["is_error"]
            elif isinstance(item.get("isError"), bool):
                block["isError"] = item["isError"]
            elif top_is_error is not None:
                block["isError"] = top_is_error
            if tool_name:
                block["name"] = tool_name
            rewritten.append(block)
        return {**message, "content": rewritten} if intercepted else None

    def large_raw_payload(
        self, message: Mapping[str, Any], role: str, content: str, token_count: int
    ) -> tuple[dict[str, Any], str] | None:
        """``interceptLargeRawPayload``: a whole oversized non-tool message → ``[LCM Raw Payload: …]``."""
        if token_count < self.limit or role == "tool":
            return None
        if message.get("rawPayloadExternalized") is True or _wholly_externalized(content):
            return None
        if "content" not in message or has_replay_critical_raw_block(message["content"]):
            return None
        raw_content = message["content"]
        if isinstance(raw_content, str):
            payload, mime = raw_content, "text/plain"
        else:
            payload, mime = (js_stringify(raw_content) or content), "application/json"
        if not payload:
            return None
        source_role = message["role"] if isinstance(message.get("role"), str) else role
        extension = "json" if mime == "application/json" else "txt"
        file_id, byte_size, summary = self._externalize_text(
            "raw-payload", payload, f"raw-{source_role}-payload.{extension}", mime
        )
        reference = format_raw_payload_reference(file_id, source_role, byte_size, RAW_PAYLOAD_REASON, summary)
        rewritten = {
            **message,
            "content": reference,
            "rawPayloadExternalized": True,
            "externalizedFileId": file_id,
            "originalByteSize": byte_size,
            "externalizationReason": RAW_PAYLOAD_REASON,
        }
        return rewritten, reference


def _wholly_externalized(content: str) -> bool:
    trimmed = js_trim(content)
    if not trimmed:
        return False
    if trimmed.startswith(("[LCM File:", "[LCM Tool Output:", "[LCM Raw Payload:")):
        return True
    return bool(_IMAGE_REFERENCE.fullmatch(trimmed))
