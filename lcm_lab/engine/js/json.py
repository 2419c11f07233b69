"""JavaScript-compatible ``JSON.stringify`` and ``JSON.parse`` for JSON-like Python data.

lossless-claw measures tokens on ``JSON.stringify`` output and stores JSON it produced itself,
so byte-exact serialisation matters: compact separators, non-ASCII left as is, JavaScript's
string escaping (lone surrogates as ``\\udXXX``), JavaScript number formatting (``1`` not
``1.0``, ``1e+21``, ``1e-7``), and JavaScript's object key order, where integer-like keys come
first in ascending numeric order no matter where they appeared in the source.

``UNDEFINED`` stands for JavaScript ``undefined``: object members holding it are left out and
array elements holding it become ``null``, exactly as ``JSON.stringify`` does.

>>> js_stringify({"b": 1.0, "a": [True, None, "é\\n"], "2": 0.1, "10": 1e21})
'{"2":0.1,"10":1e+21,"b":1,"a":[true,null,"é\\\\n"]}'
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from lcm_lab.engine.js.strings import js_trim  # re-exported: JavaScript's String.prototype.trim

__all__ = [
    "UNDEFINED",
    "js_key_order",
    "js_number",
    "js_parse",
    "js_string",
    "js_stringify",
    "js_stringify_checked",
    "js_trim",
]


class _Undefined:
    """JavaScript ``undefined`` (a singleton)."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Final = _Undefined()

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_MAX_ARRAY_INDEX = 2**32 - 2




def js_string(text: str) -> str:
    """``JSON.stringify(text)`` for a string (quotes included)."""
    try:
        # orjson escapes exactly what JavaScript does here (quote, backslash, control characters,
        # with the same short forms and lowercase \u00XX) and refuses lone surrogates, the one
        # case where they differ.
        return orjson.dumps(text).decode()
    except TypeError:
        pass
    out: list[str] = ['"']
    for ch in text:
        code = ord(ch)
        escaped = _SHORT_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            # Control characters, and lone surrogates (well-formed JSON.stringify, ES2019).
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def js_number(value: float | int) -> str:
    """``Number.prototype.toString`` as ``JSON.stringify`` prints numbers (NaN/±Infinity → null)."""
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(value, int):
        if abs(value) <= 2**53:
            return str(value)
        value = float(value)  # JavaScript holds it as a double
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"  # also -0
    sign = "-" if value < 0 else ""
    # repr gives the shortest round-tripping digits, like JavaScript; re-lay them out JS-style.
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = int_part + frac_part
    leading_zeros = len(all_digits) - len(all_digits.lstrip("0"))
    # value = 0.<digits> × 10^n
    n = len(int_part) + (int(exp_text) if exp_text else 0) - leading_zeros
    digits = all_digits.lstrip("0").rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp_sign = "+" if e >= 0 else "-"
        body = (digits if k == 1 else digits[0] + "." + digits[1:]) + "e" + exp_sign + str(abs(e))
    return sign + body


def _is_array_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) <= _MAX_ARRAY_INDEX


def js_key_order(keys: Sequence[str]) -> list[str]:
    """Keys in JavaScript property order: array indices ascending, then the rest as given."""
    indices = sorted((k for k in keys if _is_array_index(k)), key=int)
    if not indices:
        return list(keys)
    return indices + [k for k in keys if not _is_array_index(k)]


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for JSON-like data (dict, list/tuple, str, int, float, bool, None).

    Raises ``TypeError`` for values JSON cannot represent (JavaScript would throw or drop them).
    A top-level ``UNDEFINED`` yields ``"undefined"``-less output: the empty string is *not*
    what JavaScript returns (it returns ``undefined``), so that case raises ``ValueError``.
    """
    if value is UNDEFINED:
        raise ValueError("JSON.stringify(undefined) has no JSON text")
    if isinstance(value, dict | list):
        fast = _c_stringify(value)
        if fast is not None:
            return fast
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts)


# Output of the C encoder that may differ from JavaScript's: floats with a ``.0`` or in exponent
# form, integers beyond 2**53, integer-like object keys (JavaScript moves them first). Each pattern
# leads with a literal so the C scanner skips ahead; a match inside a string value is a harmless
# false alarm (the exact writer runs).
_DIFFERING_FORMS = tuple(
    re.compile(p)
    for p in (
        r"\.0[,}\]]",  # 1.0 (JavaScript: 1)
        r"\de[+-]?\d",  # exponent forms: 1e-07, 1e+16, and 1e16 from older orjson (JavaScript: 1e-7, 10000000000000000)
        r":-?\d{16}",  # integers beyond 2**53 (JavaScript rounds them to a double)
        r",-?\d{16}",
        r"\[-?\d{16}",
        r'"\d+":',  # integer-like keys (JavaScript orders them first)
    )
)
_INDEX_KEY_SPACED = re.compile(r'"\d+"\s*:')


def _js_would_differ(text: str) -> bool:
    return any(p.search(text) for p in _DIFFERING_FORMS)


class _NotPlain(Exception):
    pass


def _refuse(value: Any) -> Any:
    raise _NotPlain


# orjson serialises more than JSON-like data natively (dataclasses, datetimes, subclasses of str,
# int, dict and list); those go to ``default`` and so to the exact writer, like anything else
# outside plain dict/list/str/int/float/bool/None.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS


_PLAIN, _FLOATS, _DIFFERS, _TUPLES = 0, 1, 2, 4  # _FLOATS and _TUPLES combine; _DIFFERS stands alone
_MAX_SAFE_INTEGER = 2**53
_DIGITS = frozenset("0123456789")


def _shape(value: Any) -> int:
    """Whether orjson's text of ``value`` is ``JSON.stringify``'s, by walking the value's nodes.

    ``_PLAIN``: certainly (strings, booleans, null, integers within ±2**53, lists and dicts
    whose keys are strings not led by a digit); ``_FLOATS``: the same but with floats, whose
    text must be checked; ``_TUPLES``: tuples among the nodes (written as arrays, so orjson's
    text stands, but ``JSON.parse`` of it gives lists back); ``_DIFFERS``: anything else (the
    exact writer decides). Costs a step per node, not per character: transcript values are
    few nodes holding long strings.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return _PLAIN
    if kind is int:
        return _PLAIN if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER else _DIFFERS
    if kind is float:
        return _FLOATS
    if kind is dict:
        for key in value:
            if type(key) is not str or key[:1] in _DIGITS:
                return _DIFFERS
        shape, members = _PLAIN, value.values()
    elif kind is list or kind is tuple:
        shape, members = (_TUPLES if kind is tuple else _PLAIN), value
    else:
        return _DIFFERS
    # Members that are strings, booleans or null (most of them) are settled here without a call.
    for member in members:
        kind = type(member)
        if kind is str or kind is bool or member is None:
            continue
        found = _shape(member)
        if found == _DIFFERS:
            return _DIFFERS
        shape |= found
    return shape


def _c_stringify(value: dict[Any, Any] | list[Any]) -> str | None:
    """orjson's output when it is provably what ``JSON.stringify`` writes, else ``None``.

    orjson writes compact JSON with JavaScript's string escaping (``\\uXXXX`` lowercase for
    control characters only; U+2028/U+2029 and all other non-ASCII as is) and refuses lone
    surrogates. What it writes differently is excluded by :func:`_shape` (integers beyond 2**53,
    integer-like keys that JavaScript orders first, non-JSON types) or, when the value holds
    floats, caught in the text by ``_DIFFERING_FORMS`` (``1.0`` where JavaScript writes ``1``,
    exponent forms at other magnitudes). The exact writer runs then. ``tests/test_jsjson.py``
    compares both paths on generated tricky values.
    """
    return _c_stringify_shaped(value, _shape(value))


def _c_stringify_shaped(value: dict[Any, Any] | list[Any], shape: int) -> str | None:
    """:func:`_c_stringify` for a value whose :func:`_shape` is known."""
    if shape == _DIFFERS:
        return None
    try:
        text = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS).decode()
    except (_NotPlain, TypeError, ValueError):
        return None  # lone surrogates, nesting deeper than orjson goes
    return None if shape & _FLOATS and _js_would_differ(text) else text


def js_stringify_checked(value: Any) -> tuple[str, bool]:
    """``JSON.stringify(value)``, and whether ``JSON.parse`` of that text rebuilds ``value`` itself.

    The flag is true only when :func:`js_parse` of the text is certain to give a value equal to
    ``value`` node for node with the same Python types and key order: dicts, lists, strings
    (lone surrogates included), booleans, ``None`` and integers within ±2**53, with no key led
    by a digit. Floats (``1.0`` comes back as ``1``, ``-0.0`` as ``0``, NaN as ``null``), tuples
    (come back as lists), ``UNDEFINED`` members (dropped), integer-like keys (reordered), a
    high surrogate followed by a low one as two code points (``JSON.parse`` joins the two
    escapes into one astral character) and anything else give false. Callers that hold
    ``value`` can then skip parsing the text back.

    >>> js_stringify_checked({"a": [1, "é"]})
    ('{"a":[1,"é"]}', True)
    >>> js_stringify_checked({"a": 1.0})
    ('{"a":1}', False)
    """
    if value is UNDEFINED:
        raise ValueError("JSON.stringify(undefined) has no JSON text")
    shape = _shape(value)
    if type(value) is dict or type(value) is list:
        fast = _c_stringify_shaped(value, shape)
        if fast is not None:
            return fast, shape == _PLAIN
    parts: list[str] = []
    _write(value, parts)
    text = "".join(parts)
    # orjson refuses every surrogate, so only the exact writer can have written a split pair.
    return text, shape == _PLAIN and not _SPLIT_PAIR.search(text)


# A high-surrogate escape right before a low-surrogate one; an escaped backslash before "ud8.."
# also matches, which only costs the caller a parse.
_SPLIT_PAIR = re.compile(r"\\ud[89ab][0-9a-f]{2}\\ud[c-f][0-9a-f]{2}")


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(js_string(value))
    elif isinstance(value, int | float):
        out.append(js_number(value))
    elif isinstance(value, Mapping):
        out.append("{")
        first = True
        keys = [str(k) for k in value]
        lookup = {str(k): v for k, v in value.items()}
        for key in js_key_order(keys):
            member = lookup[key]
            if member is UNDEFINED:
                continue
            if not first:
                out.append(",")
            first = False
            out.append(js_string(key))
            out.append(":")
            _write(member, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, element in enumerate(value):
            if i:
                out.append(",")
            if element is UNDEFINED:
                out.append("null")
            else:
                _write(element, out)
        out.append("]")
    else:
        raise TypeError(f"cannot JSON.stringify a {type(value).__name__}")


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JSON.parse keeps the last duplicate key; then JavaScript orders integer-like keys first.
    merged: dict[str, Any] = {}
    for key, member in pairs:
        merged[key] = member  # a repeated key keeps its first position, like JavaScript
    order = js_key_order(list(merged))
    return {key: merged[key] for key in order}


def js_parse(text: str) -> Any:
    """``JSON.parse(text)``: like ``json.loads`` but objects get JavaScript key order.

    Integral numbers stay ``int``; other numbers become ``float`` (as JavaScript would hold
    them). Raises ``ValueError`` on invalid JSON, as ``JSON.parse`` throws.
    """
    return _parse(text, None)


def _parse(text: str, parse_constant: Any) -> Any:
    """:func:`js_parse`, with ``json.loads``' ``parse_constant`` hook (None: Python's default)."""
    if "\\u" not in text and not _INDEX_KEY_SPACED.search(text):
        # No integer-like key anywhere: Python's own dict order (first position, last value for a
        # repeated key) is already JavaScript's, and the C decoder needs no per-object hook.
        return json.loads(text, parse_constant=parse_constant)
    return json.loads(text, object_pairs_hook=_object_pairs, parse_constant=parse_constant)
