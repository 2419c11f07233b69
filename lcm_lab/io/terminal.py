r"""Untrusted text on its way to a terminal: the one place control characters are escaped.

Message text, summaries, file names and session ids come from other people's files. Printed
raw, an escape sequence in them clears the screen, retitles the window, writes the clipboard
(OSC 52) or plants a hyperlink; a bidi override makes a line read differently from what it
holds. Everything ``lcm-lab`` prints passes through :class:`TerminalStreams` (installed by
:func:`lcm_lab.cli.main` on stdout and stderr), which escapes:

* C0 controls (ESC, BEL, BS, CR, ...) except newline and tab, and DEL;
* C1 controls U+0080-U+009F (U+009B is a one-character CSI on many terminals, U+009D an OSC);
* bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C)
  and the line/paragraph separators U+2028/U+2029;
* invisible characters that make two different names look the same: the zero-width space
  U+200B, the word joiner and invisible operators U+2060-U+2064, and U+FEFF (zero-width joiners
  U+200C/U+200D are kept: scripts and emoji sequences need them);
* lone surrogates U+D800-U+DFFF (a lone ``\ud800`` from a JSON file; a file name's undecodable
  byte 0x9b arrives as U+DC9B): raw, UTF-8 cannot encode them, or the byte is an 8-bit CSI.

The same wrapper redacts secrets (:func:`lcm_lab.io.redaction.redact`) in everything printed,
stdout and stderr, ``--json`` included, and :func:`escaping_excepthook` sends tracebacks through
both (they quote file names and messages, and are printed after the wrapper is gone).

People see Python's escape for the character (``\x1b``, ``\u202e``); ``--json`` output sees a
JSON escape (``\u009b``), which decodes to the very same string, so JSON stays valid and exact.
Progress bars (tqdm's own writes) keep the carriage returns that begin and end their line on
stderr; a carriage return anywhere else (a file name forging a line) is escaped.

>>> terminal_text("title\x1b]0;owned\x07 \x9b2J \u202eevil\nnext")
'title\\x1b]0;owned\\x07 \\x9b2J \\u202eevil\nnext'
>>> json_text('{"t": "\x9b2J"}')
'{"t": "\\u009b2J"}'
"""

from __future__ import annotations

import re
import sys
import traceback
from types import TracebackType
from typing import Any, TextIO

from lcm_lab.io.redaction import redact

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_INVISIBLE = "\u200b\u2060-\u2064\ufeff"


def _pattern(keep: str) -> re.Pattern[str]:
    c0 = "".join(chr(c) for c in range(0x20) if chr(c) not in keep)
    # Surrogate code points (a lone "\\ud800" in a transcript) cannot be written as UTF-8 at all.
    return re.compile(f"[{re.escape(c0)}\x7f-\x9f{_BIDI}{_INVISIBLE}\ud800-\udfff]")


_HUMAN = _pattern("\n\t")
_HUMAN_PROGRESS = _pattern("\n\t\r")
_CELL = _pattern("")
# json.dumps escapes C0 inside strings and indents with spaces, so on a JSON stdout only newlines
# (between records and from indent=) are kept; anything else raw came from elsewhere: escaped.
_JSON = _pattern("\n")


def _python_escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def terminal_text(text: str, *, keep: str = "\n\t") -> str:
    """``text`` with every control character but those in ``keep`` written as its escape."""
    pattern = _HUMAN if keep == "\n\t" else _HUMAN_PROGRESS if keep == "\n\t\r" else _CELL if keep == "" else _pattern(keep)
    return pattern.sub(_python_escape, text)


def json_text(text: str) -> str:
    """JSON text with the characters ``json.dumps(ensure_ascii=False)`` leaves raw (C1 controls,
    DEL, bidi controls) written as JSON escapes: the same value, safe on a terminal."""
    return _JSON.sub(_json_escape, text)


def _progress_text(text: str) -> str:
    """A progress bar's write: the carriage returns at its ends kept (they redraw the bar's line),
    any in between (from a description holding a session id) escaped like the rest."""
    body = text.strip("\r")
    if not body:
        return text
    start = text.index(body)
    return text[:start] + terminal_text(body) + text[start + len(body):]


def _from_progress_bar(depth: int) -> bool:
    """Whether the write ``depth`` frames up was made by tqdm (the progress bars' only writer)."""
    try:
        caller = sys._getframe(depth)
    except ValueError:
        return False
    return str(caller.f_globals.get("__name__", "")).startswith("tqdm")


class _EscapingStream:
    """A text stream that redacts and escapes what is written before passing it on (everything
    else delegated); on stderr (``progress``) tqdm's writes keep their line's carriage returns."""

    def __init__(self, stream: TextIO, escape: Any, *, progress: bool = False) -> None:
        self._stream = stream
        self.escape = escape
        self._progress = progress

    def write(self, text: str) -> int:
        escape = _progress_text if self._progress and "\r" in text and _from_progress_bar(2) else self.escape
        self._stream.write(escape(redact(text)))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Discard:
    """Where text goes when the process has no such stream (started with ``>&-`` or ``2>&-``:
    Python then sets ``sys.stdout``/``sys.stderr`` to None): it is dropped, so a command still
    runs to its end and keeps its exit status."""

    closed = False

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("no such stream: the process was started with it closed")


def reserve_standard_descriptors() -> None:
    """Put the null device on descriptors 0-2 where they are closed.

    A process started with ``>&-`` has no descriptor 1, so the next file it opens (the lab store,
    an export) gets it, and anything that writes to descriptor 1 below Python (DuckDB, a forked
    worker, a C library's warning) would write into that file. Python already set the stream
    itself to None; :class:`TerminalStreams` makes it a sink."""
    import os

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:  # a lower one was closed too and took it: the loop reaches this one next
                os.dup2(opened, fd)
                os.close(opened)


class TerminalStreams:
    """Context manager: ``sys.stdout`` and ``sys.stderr`` escape control characters while it is
    active (set :attr:`json_stdout` when stdout carries JSON); the original streams come back after."""

    def __init__(self) -> None:
        self._saved: tuple[TextIO, TextIO] | None = None
        self._stdout: _EscapingStream | None = None

    @property
    def json_stdout(self) -> bool:
        return self._stdout is not None and self._stdout.escape is json_text

    @json_stdout.setter
    def json_stdout(self, value: bool) -> None:
        if self._stdout is not None:
            self._stdout.escape = json_text if value else terminal_text

    def __enter__(self) -> TerminalStreams:
        self._saved = (sys.stdout, sys.stderr)
        self._stdout = _EscapingStream(sys.stdout or _Discard(), terminal_text)  # type: ignore[arg-type]
        sys.stdout = self._stdout
        sys.stderr = _EscapingStream(sys.stderr or _Discard(), terminal_text, progress=True)  # type: ignore[arg-type]
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        assert self._saved is not None
        try:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head) or stream: nothing left to show
            pass
        finally:
            sys.stdout, sys.stderr = self._saved


def traceback_text(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> str:
    """A traceback as a terminal may show it: secrets redacted, control characters escaped."""
    return terminal_text(redact("".join(traceback.format_exception(kind, value, tb))))


def escaping_excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    """``sys.excepthook`` for the CLI: an uncaught exception's traceback (printed after
    :class:`TerminalStreams` has put the raw streams back) redacted and escaped like the rest."""
    try:
        sys.stderr.write(traceback_text(kind, value, tb))
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # stderr closed (or None: started with 2>&-): nothing to show
        pass
