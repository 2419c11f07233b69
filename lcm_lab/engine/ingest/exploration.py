"""Deterministic exploration summaries and reference texts of externalised payloads (spec §5.10).

Mirrors ``src/large-files.ts`` of lossless-claw: structured (JSON/CSV/TSV/XML/YAML) and code files
get shape summaries, everything else the deterministic text summary (character, word and line
counts, section headers, opening and closing excerpts). The optional model-written summary for
text files (``largeFileSummaryProvider/Model``) is not part of the pure engine.

All lengths and slices are JavaScript's (UTF-16 code units) and ``\\s`` is JavaScript's whitespace.

>>> print(explore_text("# Title\\nsome words here", "notes.txt"))
Text exploration summary (notes.txt):
Characters: 23.
Words: 5.
Lines: 2.
Detected section headers: # Title.
Opening excerpt: # Title some words here.
Closing excerpt: # Title some words here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from lcm_lab.engine.js.json import js_parse
from lcm_lab.engine.js.strings import (
    JS_NON_WS_CLASS,
    JS_WS_CLASS,
    js_trim,
    locale_int,
    utf16_len,
    utf16_slice,
)

__all__ = [
    "exploration_summary",
    "explore_code",
    "explore_structured",
    "explore_text",
    "extension_from_name_or_mime",
    "format_file_reference",
    "format_raw_payload_reference",
    "format_tool_output_reference",
    "split_lines",
]

_S = JS_WS_CLASS
_NS = JS_NON_WS_CLASS
_W = "[A-Za-z0-9_]"
_WS_RUN = re.compile(_S + "+")
_LINE_SPLIT = re.compile(r"\r?\n")

CODE_EXTENSIONS = frozenset(
    "c cc cpp cs go h hpp java js jsx kt m php py rb rs scala sh sql swift ts tsx".split()
)
STRUCTURED_EXTENSIONS = frozenset({"csv", "json", "tsv", "xml", "yaml", "yml"})
MIME_EXTENSIONS = {
    "application/json": "json",
    "application/xml": "xml",
    "application/yaml": "yaml",
    "application/x-yaml": "yaml",
    "application/x-ndjson": "json",
    "application/csv": "csv",
    "application/javascript": "js",
    "application/typescript": "ts",
    "application/x-python-code": "py",
    "application/x-rust": "rs",
    "application/x-sh": "sh",
    "text/csv": "csv",
    "text/markdown": "md",
    "text/plain": "txt",
    "text/tab-separated-values": "tsv",
    "text/x-c": "c",
    "text/x-c++": "cpp",
    "text/x-go": "go",
    "text/x-java": "java",
    "text/x-python": "py",
    "text/x-rust": "rs",
    "text/x-script.python": "py",
    "text/x-shellscript": "sh",
    "text/x-typescript": "ts",
    "text/xml": "xml",
}
STRUCTURED_MIME_PREFIXES = (
    "application/json", "application/xml", "application/yaml", "application/x-yaml",
    "application/x-ndjson", "text/csv", "text/tab-separated-values", "text/xml",
)  # fmt: skip
CODE_MIME_PREFIXES = (
    "application/javascript", "application/typescript", "application/x-python-code", "application/x-rust",
    "text/javascript", "text/x-c", "text/x-c++", "text/x-go", "text/x-java", "text/x-python", "text/x-rust",
    "text/x-script.python", "text/x-shellscript", "text/x-typescript",
)  # fmt: skip
TEXT_HEADER_LIMIT = 18


def split_lines(content: str) -> list[str]:
    """``content.split(/\\r?\\n/)``."""
    return _LINE_SPLIT.split(content)


def _unique_ordered(values: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for value in values:
        if value not in seen:
            seen.add(value)
            out.append(value)
    return out


def _compact(text: str) -> str:
    return js_trim(_WS_RUN.sub(" ", text))


def _normalize_line(text: str, max_len: int) -> str:
    compact = _compact(text)
    if utf16_len(compact) <= max_len:
        return compact
    return utf16_slice(compact, 0, max_len) + "..."


def _file_name_extension(file_name: str | None) -> str | None:
    if not file_name:
        return None
    base = re.split(r"[\\/]", js_trim(file_name))[-1]
    idx = base.rfind(".")
    if idx <= 0 or idx == len(base) - 1:
        return None
    ext = base[idx + 1 :].lower()
    return ext if re.fullmatch(r"[a-z0-9]{1,10}", ext) else None


def _mime_extension(mime_type: str | None) -> str | None:
    if not mime_type:
        return None
    return MIME_EXTENSIONS.get(js_trim(mime_type).lower())


def extension_from_name_or_mime(file_name: str | None, mime_type: str | None) -> str:
    """File extension used for storage and summary dispatch (default ``txt``)."""
    return _file_name_extension(file_name) or _mime_extension(mime_type) or "txt"


def _is_structured(mime_type: str | None, extension: str | None) -> bool:
    mime = js_trim(mime_type).lower() if mime_type else ""
    if mime and any(mime.startswith(p) for p in STRUCTURED_MIME_PREFIXES):
        return True
    return extension in STRUCTURED_EXTENSIONS if extension else False


def _is_code(mime_type: str | None, extension: str | None) -> bool:
    mime = js_trim(mime_type).lower() if mime_type else ""
    if mime and any(mime.startswith(p) for p in CODE_MIME_PREFIXES):
        return True
    return extension in CODE_EXTENSIONS if extension else False


def _typeof(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"  # null, objects


def _describe(value: Any, depth: int = 0) -> str:
    if depth >= 2:
        return "..."
    if isinstance(value, list):
        sample = [_describe(item, depth + 1) for item in value[:3]]
        return f"array(len={len(value)}" + (f", sample=[{', '.join(sample)}]" if sample else "") + ")"
    if not isinstance(value, dict) or _falsy_scalar(value):
        return _typeof(value)
    keys = list(value.keys())
    preview = ", ".join(keys[:10])
    return f"object(keys={len(keys)}" + (f": {preview}" if preview else "") + ")"


def _falsy_scalar(value: Any) -> bool:
    return value is None


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def _explore_json(content: str) -> str:
    json.loads(content, parse_constant=_reject_constant)  # JSON.parse throws on these
    parsed = js_parse(content)
    top = "array" if isinstance(parsed, list) else _typeof(parsed)
    return "\n".join(
        ["Structured summary (JSON):", f"Top-level type: {top}.", f"Shape: {_describe(parsed)}."]
    )


def _explore_delimited(content: str, delimiter: str, kind: str) -> str:
    lines = [line for line in (js_trim(x) for x in split_lines(content)) if line]
    if not lines:
        return f"Structured summary ({kind}): no rows found."
    headers = [h for h in (js_trim(x) for x in lines[0].split(delimiter)) if h]
    first = _normalize_line(lines[1], 180) if len(lines) > 1 and lines[1] else "(no data rows)"
    return "\n".join(
        [
            f"Structured summary ({kind}):",
            f"Rows: {locale_int(max(0, len(lines) - 1))}.",
            f"Columns ({len(headers)}): {', '.join(headers) or '(none detected)'}.",
            f"First row sample: {first}.",
        ]
    )


_YAML_KEY = re.compile(r"([A-Za-z0-9_.-]+):" + _S + r"*(?:#[^\n\r\u2028\u2029]*)?")


def _explore_yaml(content: str) -> str:
    keys = _unique_ordered(
        m.group(1) for m in (_YAML_KEY.fullmatch(line) for line in split_lines(content)) if m
    )
    return "\n".join(
        [
            "Structured summary (YAML):",
            f"Top-level keys ({len(keys)}): {', '.join(keys[:30]) or '(none detected)'}.",
        ]
    )


_XML_TAG = re.compile(r"<([A-Za-z0-9_:-]+)(" + _S + "|>)")


def _explore_xml(content: str) -> str:
    root_match = _XML_TAG.search(content)
    root = root_match.group(1) if root_match else "unknown"
    children = _unique_ordered([m.group(1) for m in _XML_TAG.finditer(content) if m.group(1) != root][:30])
    return "\n".join(
        [
            "Structured summary (XML):",
            f"Root element: {root}.",
            f"Child elements seen: {', '.join(children) or '(none detected)'}.",
        ]
    )


def explore_structured(content: str, mime_type: str | None = None, file_name: str | None = None) -> str:
    """``exploreStructuredData``."""
    extension = _file_name_extension(file_name) or _mime_extension(mime_type)
    mime = js_trim(mime_type).lower() if mime_type else ""
    if extension == "json" or mime.startswith("application/json"):
        try:
            return _explore_json(content)
        except ValueError:
            return "Structured summary (JSON): failed to parse as valid JSON."
    if extension == "csv" or mime.startswith("text/csv"):
        return _explore_delimited(content, ",", "CSV")
    if extension == "tsv" or mime.startswith("text/tab-separated-values"):
        return _explore_delimited(content, "\t", "TSV")
    if extension == "xml" or mime.startswith("text/xml") or mime.startswith("application/xml"):
        return _explore_xml(content)
    if extension in ("yaml", "yml") or "yaml" in mime:
        return _explore_yaml(content)
    return "\n".join(
        [
            "Structured summary:",
            f"Characters: {locale_int(utf16_len(content))}.",
            f"Lines: {locale_int(len(split_lines(content)))}.",
        ]
    )


_IMPORT_LINE = re.compile(
    "^" + _S + r"*(import" + _S + "+|from" + _S + "+" + _NS + "+" + _S + "+import" + _S + "+|const"
    + _S + "+" + _W + "+" + _S + r"*=" + _S + r"*require\()"
)  # fmt: skip
_DEFINITION_LINE = re.compile(
    r"^(export" + _S + r"+)?(async" + _S + r"+)?(function|class|interface|type|const" + _S + "+" + _W
    + "+" + _S + r"*=" + _S + r"*\(|def" + _S + "+" + _W + r"+\(|struct" + _S + "+" + _W + "+)"
)  # fmt: skip


def explore_code(content: str, file_name: str | None = None) -> str:
    """``exploreCode``."""
    lines = split_lines(content)
    imports = _unique_ordered(
        [_normalize_line(line, 180) for line in lines if _IMPORT_LINE.search(line)][:12]
    )
    signatures = _unique_ordered(
        [_normalize_line(line, 200) for line in (js_trim(x) for x in lines) if _DEFINITION_LINE.search(line)][
            :24
        ]
    )
    return "\n".join(
        [
            f"Code exploration summary{f' ({file_name})' if file_name else ''}:",
            f"Lines: {locale_int(len(lines))}.",
            f"Imports/dependencies ({len(imports)}): {' | '.join(imports) or 'none detected'}.",
            f"Top-level definitions ({len(signatures)}): {' | '.join(signatures) or 'none detected'}.",
        ]
    )


_MD_HEADER = re.compile("^#{1,6}" + _S + "+")
_CAPS_HEADER = re.compile("[A-Z0-9][A-Z0-9" + JS_WS_CLASS[1:-1] + ":_-]{6,}")


def _text_headers(content: str) -> list[str]:
    candidates = [line for line in (js_trim(x) for x in split_lines(content)) if utf16_len(line) > 1]
    picked = [line for line in candidates if _MD_HEADER.search(line) or _CAPS_HEADER.fullmatch(line)]
    return _unique_ordered([_normalize_line(line, 160) for line in picked][:TEXT_HEADER_LIMIT])


def explore_text(content: str, file_name: str | None = None) -> str:
    """The deterministic text summary (``exploreTextDeterministicFallback``)."""
    normalized = _compact(content)
    headers = _text_headers(content)
    line_count = len(split_lines(content))
    word_count = len(_WS_RUN.split(normalized)) if normalized else 0
    first = _normalize_line(utf16_slice(content, 0, 500), 500)
    last = _normalize_line(utf16_slice(content, -500), 500)
    return "\n".join(
        [
            f"Text exploration summary{f' ({file_name})' if file_name else ''}:",
            f"Characters: {locale_int(utf16_len(content))}.",
            f"Words: {locale_int(word_count)}.",
            f"Lines: {locale_int(line_count)}.",
            f"Detected section headers: {' | '.join(headers) or 'none detected'}.",
            f"Opening excerpt: {first or '(empty)'}.",
            f"Closing excerpt: {last or '(empty)'}.",
        ]
    )


def exploration_summary(content: str, file_name: str | None = None, mime_type: str | None = None) -> str:
    """``generateExplorationSummary`` without a model: structured, code, else text."""
    extension = extension_from_name_or_mime(file_name, mime_type)
    if _is_structured(mime_type, extension):
        return explore_structured(content, mime_type, file_name)
    if _is_code(mime_type, extension):
        return explore_code(content, file_name)
    return explore_text(content, file_name)


# -- reference texts -------------------------------------------------------------------------


def format_file_reference(
    file_id: str, file_name: str | None, mime_type: str | None, byte_size: int, summary: str
) -> str:
    """``[LCM File: …]`` placeholder of an externalised ``<file>`` block."""
    name = js_trim(file_name) if file_name else ""
    mime = js_trim(mime_type) if mime_type else ""
    return "\n".join(
        [
            f"[LCM File: {file_id} | {name or 'unknown'} | {mime or 'unknown'} | {locale_int(max(0, byte_size))} bytes]",
            "",
            "Exploration Summary:",
            js_trim(summary) or "(no summary available)",
        ]
    )


def format_tool_output_reference(file_id: str, tool_name: str | None, byte_size: int, summary: str) -> str:
    """``[LCM Tool Output: …]`` placeholder of an externalised tool result."""
    name = js_trim(tool_name) if tool_name else ""
    return "\n".join(
        [
            f"[LCM Tool Output: {file_id} | tool={name or 'unknown'} | {locale_int(max(0, byte_size))} bytes]",
            "",
            "Exploration Summary:",
            js_trim(summary) or "(no summary available)",
            "",
            'Call lcm_describe(id="<file_id above>", expandFile=true) to fetch the full output content from disk.',
        ]
    )


def format_raw_payload_reference(file_id: str, role: str, byte_size: int, reason: str, summary: str) -> str:
    """``[LCM Raw Payload: …]`` placeholder of an externalised oversized message."""
    return "\n".join(
        [
            f"[LCM Raw Payload: {file_id} | role={js_trim(role) or 'unknown'} | "
            f"reason={js_trim(reason) or 'large_raw_message'} | {locale_int(max(0, byte_size))} bytes]",
            "",
            "Exploration Summary:",
            js_trim(summary) or "(no summary available)",
            "",
            'Call lcm_describe(id="<file_id above>", expandFile=true) to fetch the full payload content from disk.',
        ]
    )
