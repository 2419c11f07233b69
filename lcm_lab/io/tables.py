"""Tables for people: every list ``lcm-lab`` and the demo print goes through :func:`format_table`,
as aligned text (tabulate) or as CSV for a spreadsheet (``--json`` is the machine format).

>>> print(format_table([{"source": "a.jsonl", "tokens": 1200, "share": 0.5}, {"source": "b.db", "tokens": None, "share": 0.25}]))
source      tokens    share
--------  --------  -------
a.jsonl      1,200    0.500
b.db             -    0.250
>>> print(format_table([{"source": "a.jsonl", "share": 0.5}], fmt="csv"), end="")
source,share
a.jsonl,0.5
"""

from __future__ import annotations

import csv
import io
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from lcm_lab.io.terminal import terminal_text

TABLE_FORMATS = ("table", "csv")


def number_text(value: numbers.Real | float) -> str:
    """A number for people, in every table the lab prints or writes: a whole number as an integer
    with thousands separators (a count that a table holds as a float, such as ``3.0`` turns or
    trial ``0.0``, reads ``3`` and ``0``); otherwise three decimals below 10, one below 1,000 and
    none above.

    >>> [number_text(v) for v in (3.0, 12000, 0.12345, -2.5, 123.456, 45678.9)]
    ['3', '12,000', '0.123', '-2.500', '123.5', '45,679']
    """
    if isinstance(value, numbers.Integral):
        return f"{value:,}"
    number = float(value)
    if number.is_integer():
        return f"{int(number):,}"
    size = abs(number)
    return f"{number:.3f}" if size < 10 else f"{number:,.1f}" if size < 1000 else f"{number:,.0f}"


def cell(value: Any) -> str:
    r"""A table cell for the terminal: ``-`` for missing (None or NaN), numbers by :func:`number_text`.

    >>> cell(None), cell(float("nan")), cell(0.12345), cell(7.0), cell("x\x1b[2Jy")
    ('-', '-', '0.123', '7', 'x\\x1b[2Jy')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
        return number_text(value)
    # text from a user's files (summaries, evidence) reaches a terminal: control characters
    # escaped, newlines and tabs too (they would break the table's alignment)
    return terminal_text(str(value), keep="")


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, numbers.Number) and not isinstance(value, bool))


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, *, fmt: str = "table") -> str:
    """``rows`` (one mapping per row) as text: ``table`` (numbers right-aligned, ``-`` for
    missing) or ``csv`` (values as they are, empty for missing). ``columns`` picks and orders the
    keys (default: the first row's)."""
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"table format must be one of {', '.join(TABLE_FORMATS)}, not {fmt!r}")
    keys = list(columns) if columns is not None else list(rows[0]) if rows else []
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(keys)
        writer.writerows([["" if row.get(k) is None else row.get(k) for k in keys] for row in rows])
        return out.getvalue()
    from tabulate import tabulate

    align = ["right" if rows and all(_is_number(row.get(k)) for row in rows) else "left" for k in keys]
    body = [[cell(row.get(k)) for k in keys] for row in rows]
    # tabulate 0.9.0 (the lowest supported) fails on colalign when there are no rows: no columns to align
    return str(tabulate(body, headers=keys, disable_numparse=True, colalign=align if body and align else None))
