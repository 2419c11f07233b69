"""JavaScript string semantics the ingest projection depends on.

``String.prototype.trim`` and the regex class ``\\s`` use the ECMAScript whitespace set (which
includes U+FEFF and excludes U+001C–U+001F, unlike Python); ``length``/``slice`` count UTF-16
code units; ``toLocaleString("en-US")`` groups thousands with commas.

>>> js_trim("\\ufeff hi \\u3000")
'hi'
>>> utf16_slice("a😀b", 0, 2)
'a\\ud83d'
>>> locale_int(140031)
'140,031'
"""

from __future__ import annotations

import re

# ECMAScript WhiteSpace + LineTerminator code points.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
JS_WS_CLASS = "[" + re.escape(JS_WHITESPACE) + "]"
JS_NON_WS_CLASS = "[^" + re.escape(JS_WHITESPACE) + "]"


def js_trim(text: str) -> str:
    """``String.prototype.trim``."""
    return text.strip(JS_WHITESPACE)


def js_trim_start(text: str) -> str:
    """``String.prototype.trimStart``."""
    return text.lstrip(JS_WHITESPACE)


def js_trim_end(text: str) -> str:
    """``String.prototype.trimEnd``."""
    return text.rstrip(JS_WHITESPACE)


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _is_plain(text: str) -> bool:
    return text.isascii() or not _ASTRAL.search(text)


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript (UTF-16 code units)."""
    if _is_plain(text):
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def utf16_slice(text: str, start: int, end: int | None = None) -> str:
    """``text.slice(start, end)`` with JavaScript (UTF-16) indices, negatives allowed."""
    if _is_plain(text):
        return text[start:end]
    data = text.encode("utf-16-le", "surrogatepass")
    count = len(data) // 2
    lo, hi, _ = slice(start, end).indices(count)
    if hi <= lo:
        return ""
    # Lone surrogate halves at the cut stay as they are, as in JavaScript strings.
    return data[2 * lo : 2 * hi].decode("utf-16-le", "surrogatepass")


def locale_int(value: int | float) -> str:
    """``Number.prototype.toLocaleString("en-US")`` for whole numbers (byte, line, word counts)."""
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "∞" if value > 0 else "-∞"
        if value != int(value):
            whole, frac = f"{value:.3f}".split(".")
            frac = frac.rstrip("0")
            return f"{int(whole):,}" + (f".{frac}" if frac else "")
        value = int(value)
    return f"{value:,}"
