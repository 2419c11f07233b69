"""Values the lab wrote into its store and reads back: the one place they are decoded.

A store's bytes can be damaged, or edited by hand: a replay payload that is no longer zlib, a JSON
column that holds ``null`` or a list where the lab wrote an object. Read back through these
helpers, such a value is a :class:`~lcm_lab.store.opening.DamagedStoreError` that names the run
or sweep and says what to do, instead of a ``zlib.error`` or an ``AttributeError`` from whichever
command met it first.

>>> stored_json('{"a": 1}', "sweep sw_1's stats")
{'a': 1}
>>> stored_json("null", "sweep sw_1's stats")
Traceback (most recent call last):
lcm_lab.store.opening.DamagedStoreError: the lab store is damaged: sweep sw_1's stats holds null, not a JSON object; delete it from the store or restore a backup
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from lcm_lab.store.opening import DamagedStoreError

_SHAPES = {dict: "a JSON object", list: "a JSON list"}


def _damaged(what: str, problem: str) -> DamagedStoreError:
    return DamagedStoreError(f"the lab store is damaged: {what} {problem}; delete it from the store or restore a backup")


def stored_json(value: Any, what: str, shape: type = dict) -> Any:
    """The JSON text ``value`` of a store column as ``shape`` (an object by default)."""
    try:
        decoded = json.loads(value)
    except (TypeError, ValueError) as exc:  # not text, or not JSON
        raise _damaged(what, f"is not JSON ({type(exc).__name__}: {str(exc)[:80]})") from None
    if not isinstance(decoded, shape):
        held = "null" if decoded is None else f"a JSON {type(decoded).__name__}"
        raise _damaged(what, f"holds {held}, not {_SHAPES.get(shape, shape.__name__)}")
    return decoded


def stored_payload(payload: Any, what: str) -> Any:
    """The zlib-compressed JSON document ``payload`` (a replay) as plain JSON values."""
    try:
        text = zlib.decompress(bytes(payload)).decode("utf-8")
    except (TypeError, zlib.error, UnicodeDecodeError) as exc:
        raise _damaged(what, f"cannot be read ({type(exc).__name__}: {str(exc)[:80]})") from None
    return stored_json(text, what, object)
