"""JavaScript value semantics the plugin's content code relies on, in Python.

``undefined`` differs from ``null`` (:data:`~lcm_lab.engine.js.json.UNDEFINED`), ``safeString``
and ``safeBoolean`` accept only real strings and booleans, truthiness and ``String(x)`` follow
JavaScript, and JSON is parsed as strictly as ``JSON.parse``. Shared by the content projection
(:mod:`lcm_lab.engine.ingest.content`) and the large-payload externaliser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lcm_lab.engine.js.json import UNDEFINED, _parse, js_number, js_stringify


def prop(value: Any, key: str) -> Any:
    """``value?.[key]``: the member, or UNDEFINED for missing keys and non-objects."""
    if type(value) is dict or isinstance(value, Mapping):  # the type test skips a slow ABC check
        return value.get(key, UNDEFINED)
    return UNDEFINED


def safe_string(value: Any) -> str | None:
    """``safeString``: the value if it is a string, else nothing (``None`` acts as undefined)."""
    return value if isinstance(value, str) else None


def safe_boolean(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def first_string(record: Any, keys: Sequence[str]) -> str | None:
    """``safeString(r.a) ?? safeString(r.b) ?? …`` (an empty string stops the chain)."""
    if type(record) is dict or isinstance(record, Mapping):
        for key in keys:
            found = record.get(key)
            if isinstance(found, str):
                return found
    return None


def is_number(value: Any) -> bool:
    """``typeof value === "number"``."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def js_truthy(value: Any) -> bool:
    if value is UNDEFINED or value is None or value is False:
        return False
    if isinstance(value, str):
        return value != ""
    if is_number(value):
        return bool(value == value and value != 0)
    return True  # objects and arrays, even empty ones


def js_to_string(value: Any) -> str:
    """``String(value)``."""
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if is_number(value):
        if isinstance(value, float) and value != value:
            return "NaN"
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return js_number(value)
    if isinstance(value, list | tuple):
        return ",".join("" if item is None or item is UNDEFINED else js_to_string(item) for item in value)
    return "[object Object]"


def to_json(value: Any) -> str:
    """The plugin's ``toJson``: ``JSON.stringify(value)`` or ``""`` when that is undefined."""
    if value is UNDEFINED:
        return ""
    return js_stringify(value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def strict_json_parse(text: str) -> Any:
    """``JSON.parse``: rejects NaN/Infinity (which :func:`json.loads` would accept)."""
    # js_parse's key order; NaN/Infinity are not JSON (one pass validates and decodes).
    return _parse(text, _reject_constant)


def _defined(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """An object literal; members whose value is undefined are dropped at stringify time."""
    return {key: value for key, value in pairs if value is not UNDEFINED}


def _opt(value: Any) -> Any:
    """Map a ``safe*`` result (``None`` = undefined) to UNDEFINED for object literals."""
    return UNDEFINED if value is None else value
