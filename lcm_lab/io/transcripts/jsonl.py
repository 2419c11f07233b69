"""Streaming JSON-lines reading with 1-based line numbers and per-line problem reports.

Transcripts are append-only logs written by live processes: a line may be half written, a
crash may leave garbage in the middle, someone may point us at a binary file. The reader
yields every line that parses, records every line that does not as a :class:`LoadIssue`
naming file and line, and never holds more than one line in memory.
"""

from __future__ import annotations

import codecs
import gc
import gzip
import io
import json
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, cast

import orjson

from lcm_lab.engine.js.depth import MAX_JSON_DEPTH, may_exceed, value_depth
from lcm_lab.errors import BrokenGzipError, InputFileError, JsonTooDeepError
from lcm_lab.io.model import LoadIssue

UTF8_BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
_SNIPPET_CHARS = 60


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many long-lived objects.

    Parsing a session creates millions of dicts that all stay alive; each automatic collection
    re-walks them, which made building a 200 MB session about 3x slower. The collector's
    previous state is restored on exit.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def is_gzip(path: str | Path) -> bool:
    """True when the file starts with the gzip magic bytes."""
    with Path(path).open("rb") as handle:
        return handle.read(2) == GZIP_MAGIC


class _NamedGzipFile(gzip.GzipFile):
    """A gzip reader whose truncation and corruption errors name the file (:class:`BrokenGzipError`)."""

    def _broken(self, exc: Exception) -> BrokenGzipError:
        return BrokenGzipError(
            str(self.name), f"broken gzip data ({exc}); the file was probably cut off while copying, copy it again"
        )

    def read(self, size: int | None = -1) -> bytes:
        try:
            return super().read(size)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise self._broken(exc) from exc

    def read1(self, size: int = -1) -> bytes:
        try:
            return super().read1(size)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise self._broken(exc) from exc

    def readline(self, size: int | None = -1) -> bytes:
        try:
            return super().readline(size)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise self._broken(exc) from exc


# Byte-order marks of the encodings transcripts are re-encoded from (longest first: the UTF-32
# little-endian mark starts with the UTF-16 one).
_TEXT_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def text_encoding_of(head: bytes) -> str | None:
    """The UTF-16/32 encoding announced by a byte-order mark at the start of ``head``, if any.

    >>> text_encoding_of(b"\\xff\\xfe{\\x00")
    'utf-16'
    """
    for bom, encoding in _TEXT_BOMS:
        if head.startswith(bom):
            return encoding
    return None


def open_bytes(path: str | Path) -> IO[bytes]:
    """Open a file for binary reading as UTF-8 bytes, streaming.

    gzip is decompressed transparently (a truncated file raises :class:`BrokenGzipError`
    naming it); UTF-16 and UTF-32 text with a byte-order mark is re-encoded to UTF-8 on the fly
    (Windows editors and PowerShell redirection write transcripts that way).
    """
    file_path = Path(path)
    if file_path.is_dir():
        raise InputFileError(file_path, "is a directory; expected a file")
    handle: gzip.GzipFile | io.BufferedReader = _NamedGzipFile(file_path, "rb") if is_gzip(file_path) else file_path.open("rb")
    encoding = text_encoding_of(handle.peek(4)[:4])
    if encoding is None:
        return cast(IO[bytes], handle)
    return cast(IO[bytes], codecs.EncodedFile(handle, "utf-8", encoding))


def read_all_bytes(path: str | Path) -> bytes:
    """The whole (decompressed) content of a file: only for one-document formats."""
    with open_bytes(path) as handle:
        return handle.read()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json_bytes(data: bytes) -> Any:
    """Parse one JSON document from bytes, as strictly as JavaScript's ``JSON.parse``.

    orjson is tried first (fast); documents it refuses but JavaScript accepts (integers beyond
    64 bits, lone surrogate escapes) fall back to the standard library. ``NaN``/``Infinity``
    are rejected like JavaScript does. A document nested deeper than the lab reads
    (:data:`~lcm_lab.engine.js.depth.MAX_JSON_DEPTH`) is refused. Raises ``ValueError`` with
    the reason.

    >>> parse_json_bytes(b'{"a": [1, 2]}')
    {'a': [1, 2]}
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as fast_error:
        try:
            value = json.loads(data, parse_constant=_reject_constant)
        except RecursionError:
            raise _too_deep(None) from None
        except ValueError:
            if "recursion" in str(fast_error).lower():
                raise _too_deep(None) from None
            raise ValueError(str(fast_error)) from None
    if may_exceed(data) and (depth := value_depth(value)) > MAX_JSON_DEPTH:
        raise _too_deep(depth)
    return value


def _too_deep(depth: int | None) -> JsonTooDeepError:
    levels = "more than 1,000" if depth is None else f"{depth:,}"
    return JsonTooDeepError(f"nested {levels} levels deep; the lab reads at most {MAX_JSON_DEPTH} (docs/hostile-input.md)")


def describe_bad_line(data: bytes, reason: str | ValueError, *, last_line_unterminated: bool) -> str:
    """A one-line human explanation of why a line was skipped (``reason``: the parser's error)."""
    kind = "JSON too deeply nested" if isinstance(reason, JsonTooDeepError) else "malformed JSON"
    reason = str(reason)
    if b"\x00" in data:
        return "binary data (NUL bytes), not a JSON line; skipped"
    snippet = data[:_SNIPPET_CHARS].decode("utf-8", errors="replace")
    more = "…" if len(data) > _SNIPPET_CHARS else ""
    if last_line_unterminated:
        return (
            f"truncated last line (no newline at end of file, {len(data):,} bytes; the writer was "
            f"probably interrupted): {reason}; skipped: {snippet!r}{more}"
        )
    return f"{kind} ({reason}); skipped: {snippet!r}{more}"


class JsonlReader:
    """Iterate ``(line_number, value)`` over the parseable lines of a JSONL file.

    Blank lines are ignored silently. Each unparseable line adds a skipped
    :class:`LoadIssue` to :attr:`issues` and increments :attr:`skipped_lines`. After
    iteration, :attr:`last_line` is the number of the file's last line (0 for an empty file).

    >>> reader = JsonlReader("session.jsonl")  # doctest: +SKIP
    >>> for line, value in reader: ...  # doctest: +SKIP
    """

    def __init__(self, path: str | Path, *, display_path: str | None = None) -> None:
        self.path = Path(path)
        self.display_path = display_path if display_path is not None else str(path)
        self.issues: list[LoadIssue] = []
        self.skipped_lines = 0
        self.last_line = 0
        self.nonblank_lines = 0

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        with open_bytes(self.path) as handle:
            for number, raw in enumerate(handle, start=1):
                self.last_line = number
                data = raw.strip()
                if number == 1 and data.startswith(UTF8_BOM):
                    data = data[len(UTF8_BOM) :].strip()
                if not data:
                    continue
                self.nonblank_lines += 1
                try:
                    value = parse_json_bytes(data)
                except ValueError as error:
                    self._skip(number, data, error, unterminated=not raw.endswith(b"\n"))
                    continue
                yield number, value

    def _skip(self, number: int, data: bytes, reason: str | ValueError, *, unterminated: bool) -> None:
        self.skipped_lines += 1
        message = describe_bad_line(data, reason, last_line_unterminated=unterminated)
        self.issues.append(LoadIssue(self.display_path, number, message, skipped=True))


def first_nonblank_byte(path: str | Path, *, limit: int = 1 << 20) -> bytes:
    """The first non-whitespace byte of a file (after a UTF-8 BOM), or ``b""``."""
    with open_bytes(path) as handle:
        head = handle.read(limit)
    if head.startswith(UTF8_BOM):
        head = head[len(UTF8_BOM) :]
    stripped = head.lstrip()
    return stripped[:1]
