r"""Lone surrogates at the edges where text leaves Python: the store, the payload, the terminal.

JSON may hold a lone surrogate escape (``"\ud800"``) and so may a JavaScript string: the
plugin's engine sees it as one UTF-16 code unit, and so does the lab's (read with
``surrogatepass`` where it is packed, weighed 0.25 by the token estimate like the plugin).
UTF-8 cannot hold it, so it cannot reach DuckDB, Arrow, orjson or a UTF-8 terminal as it is.
The policy, applied here and only at those edges (never before the engine):

* **The store's columns**, plain text and JSON alike (a message's content, a session id, a
  query parameter, the ``raw`` and ``meta`` JSON): U+FFFD, as the plugin's lcm.db holds it
  (Node writes a JavaScript string to SQLite as UTF-8, a lone surrogate as U+FFFD). Counted,
  so a load says how many the file held (each once, though a value is stored in several columns:
  :func:`lcm_lab.io.rows.build_rows`). Not the JSON escape ``\udXXX`` in JSON columns: DuckDB's
  JSON reader refuses it ("no low surrogate in string"), so every later query of that value
  would fail (and with pyarrow < 19 the insert itself did).
* **A saved replay's payload** (compressed JSON that only Python reads): the JSON escape
  ``\udXXX``, the same value; reading it back gives the lone surrogate again.
* **The terminal**: Python's escape ``\ud800`` (:mod:`lcm_lab.io.terminal`).

>>> replace_lone("a\ud800b")
('a\ufffdb', 1)
>>> escape_lone_in_json('{"t":"a\udc80"}')
'{"t":"a\\udc80"}'
"""

from __future__ import annotations

import re
from typing import Any

LONE = "\ud800-\udfff"
_LONE = re.compile(f"[{LONE}]")
REPLACEMENT = "\ufffd"


def has_lone(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (one UTF-8 cannot encode)."""
    return not text.isascii() and _LONE.search(text) is not None


def count_lone(text: str | None) -> int:
    """How many surrogate code points ``text`` holds (``None`` holds none)."""
    return 0 if not text or text.isascii() else len(_LONE.findall(text))


def replace_lone(text: str) -> tuple[str, int]:
    """``text`` with each surrogate code point replaced by U+FFFD, and how many were."""
    if text.isascii():
        return text, 0
    return _LONE.subn(REPLACEMENT, text)


def escape_lone_in_json(text: str) -> str:
    r"""JSON ``text`` with each surrogate code point written as its escape ``\udXXX`` (raw
    surrogates can only stand inside JSON strings, where the escape is the same value)."""
    if text.isascii():
        return text
    return _LONE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def storable(value: Any) -> tuple[Any, int]:
    """``value`` (a string, or a list or tuple of them, as Arrow columns hold) with surrogates
    replaced by U+FFFD, and how many were; other values unchanged."""
    if isinstance(value, str):
        return replace_lone(value)
    if isinstance(value, (list, tuple)):
        total = 0
        items = []
        for item in value:
            item, count = storable(item)
            items.append(item)
            total += count
        return (items if isinstance(value, list) else tuple(items)), total
    return value, 0


def lone_warning(count: int) -> str:
    """The warning of a load or replay that replaced ``count`` lone surrogates."""
    plural = "s" if count != 1 else ""
    return (f"{count} lone surrogate{plural} (a \\ud800-\\udfff escape UTF-8 cannot hold) stored as U+FFFD, "
            "as the plugin's lcm.db stores them")
