"""Streaming JSON-lines reading with 1-based line numbers and per-line problem reports.

Transcripts are append-only logs written by live processes: a line may be half written, a
crash may leave garbage in the middle, someone may point us at a binary file. The reader
yields every line that parses, records every line that does not as a :class:`LoadIssue`
naming file and line, and never holds more than one line in memory.

A line is read only up to a cap (``LCM_LAB_MAX_LINE_MB``, default 64 MB): a longer line is
passed over in 1 MB pieces without being held, and reported as skipped with its size. The same
cap bounds whole-file JSON documents (LoCoMo, a pi JSON array), so no input of any size (a
``.gz`` that expands to one 4 GB line included) makes a reader hold more than about the cap.
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
from typing import IO, Any, NamedTuple, cast

import orjson

from lcm_lab.engine.js.depth import MAX_JSON_DEPTH, may_exceed, value_depth
from lcm_lab.errors import BrokenGzipError, InputFileError, JsonTooDeepError
from lcm_lab.io import env
from lcm_lab.io.file_kind import special_file_reason
from lcm_lab.io.growing import open_up_to
from lcm_lab.io.model import LoadIssue

UTF8_BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
_SNIPPET_CHARS = 60
MAX_LINE_ENV = env.MAX_LINE_MB
DEFAULT_MAX_LINE_MB = env.DEFAULT_MAX_LINE_MB
_SKIP_PIECE = 1 << 20


def max_line_bytes() -> int:
    """The longest line (or whole-file JSON document) a reader takes: ``LCM_LAB_MAX_LINE_MB``
    megabytes, default 64.

    >>> max_line_bytes() == DEFAULT_MAX_LINE_MB << 20 or env.text(MAX_LINE_ENV) is not None
    True
    """
    return max(1, int(env.max_line_mb() * (1 << 20)))


def describe_cap(cap: int) -> str:
    """The line cap in words, naming the variable that raises it."""
    megabytes = cap / (1 << 20)
    amount = f"{megabytes:g} MB" if megabytes >= 1 else f"{cap:,} bytes"
    return f"the {amount} line cap ({MAX_LINE_ENV})"


class RawLine(NamedTuple):
    """One line of a stream: ``data`` is ``None`` when the line was longer than the cap (its
    bytes were passed over, not kept); ``offset`` is where it starts in the (decompressed) stream."""

    number: int
    data: bytes | None
    size: int
    offset: int
    terminated: bool


def iter_raw_lines(handle: IO[bytes], cap: int) -> Iterator[RawLine]:
    """The lines of ``handle`` (1-based), none read past ``cap`` bytes."""
    number, offset = 0, 0
    while True:
        raw = handle.readline(cap + 1)
        if not raw:
            return
        number += 1
        if len(raw) <= cap or raw.endswith(b"\n"):
            yield RawLine(number, raw, len(raw), offset, raw.endswith(b"\n"))
            offset += len(raw)
            continue
        size, terminated = len(raw), False
        del raw
        while piece := handle.readline(_SKIP_PIECE):
            size += len(piece)
            if piece.endswith(b"\n"):
                terminated = True
                break
        yield RawLine(number, None, size, offset, terminated)
        offset += size


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


def open_file(path: str | Path) -> io.BufferedReader:
    """``path`` opened for reading, once ``stat`` says it is not a FIFO or a device (opening a FIFO
    without a writer blocks for ever; ``/dev/zero`` never ends)."""
    special = special_file_reason(path)
    if special is not None:
        raise InputFileError(path, f"{special}; nothing read")
    return open_up_to(path)  # a file still being written is read up to its size now (lcm_lab.io.growing)


def is_gzip(path: str | Path) -> bool:
    """True when the file starts with the gzip magic bytes."""
    with open_file(path) as handle:
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
    handle: gzip.GzipFile | io.BufferedReader = _NamedGzipFile(file_path, "rb") if is_gzip(file_path) else open_file(file_path)
    encoding = text_encoding_of(handle.peek(4)[:4])
    if encoding is None:
        return cast(IO[bytes], handle)
    return cast(IO[bytes], codecs.EncodedFile(handle, "utf-8", encoding))


def read_all_bytes(path: str | Path, *, limit: int | None = None) -> bytes:
    """The whole (decompressed) content of a file: only for one-document formats.

    More than ``limit`` bytes (default: the line cap, :func:`max_line_bytes`) raises
    :class:`InputFileError` instead of being read: a small ``.gz`` may expand without bound.
    """
    cap = max_line_bytes() if limit is None else limit
    with open_bytes(path) as handle:
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise InputFileError(
            path, f"one JSON document longer than {describe_cap(cap)}; not read (raise the cap to load it)"
        )
    return data


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

    def __init__(self, path: str | Path, *, display_path: str | None = None, max_line: int | None = None) -> None:
        self.path = Path(path)
        self.display_path = display_path if display_path is not None else str(path)
        self.max_line = max_line_bytes() if max_line is None else max_line
        self.issues: list[LoadIssue] = []
        self.skipped_lines = 0
        self.last_line = 0
        self.nonblank_lines = 0
        self.current: RawLine | None = None  # the line of the value last yielded

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        with open_bytes(self.path) as handle:
            for line in iter_raw_lines(handle, self.max_line):
                number = line.number
                self.last_line = number
                if line.data is None:
                    self.nonblank_lines += 1
                    self._too_long(line)
                    continue
                data = line.data.strip()
                if number == 1 and data.startswith(UTF8_BOM):
                    data = data[len(UTF8_BOM) :].strip()
                if not data:
                    continue
                self.nonblank_lines += 1
                try:
                    value = parse_json_bytes(data)
                except ValueError as error:
                    self._skip(number, data, error, unterminated=not line.terminated)
                    continue
                self.current = line
                yield number, value

    def _too_long(self, line: RawLine) -> None:
        self.skipped_lines += 1
        message = f"line of {line.size:,} bytes is longer than {describe_cap(self.max_line)}; skipped without reading it"
        self.issues.append(LoadIssue(self.display_path, line.number, message, skipped=True))

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
