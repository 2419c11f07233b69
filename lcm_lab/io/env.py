"""The lab's own environment variables (``LCM_LAB_*``): the one place they are read and checked.

Every reader returns the default when the variable is unset or blank, and raises
:class:`~lcm_lab.errors.OptionError` for any other value it cannot use, naming the variable, the
value and what is accepted, so that a typo ends in one line (``lcm-lab load:
LCM_LAB_LOCK_TIMEOUT='abc': expected ...``) before anything is opened, rather than as a traceback
from DuckDB or from the standard library, or as a value quietly taken for another.

>>> import os
>>> os.environ["LCM_LAB_DOCTEST_SECONDS"] = "nan"
>>> seconds("LCM_LAB_DOCTEST_SECONDS", 1.0)
Traceback (most recent call last):
lcm_lab.errors.OptionError: LCM_LAB_DOCTEST_SECONDS='nan': expected a number of seconds from 0 to 86400 (unset: 1)
>>> memory_size("1.5 GiB")
1610612736
"""

from __future__ import annotations

import math
import os
import re

from lcm_lab.errors import OptionError

HOME = "LCM_LAB_HOME"
DEBUG = "LCM_LAB_DEBUG"
MEMORY_LIMIT = "LCM_LAB_MEMORY_LIMIT"
IDLE_SECONDS = "LCM_LAB_IDLE_SECONDS"
LOCK_TIMEOUT = "LCM_LAB_LOCK_TIMEOUT"
LOAD_WORKERS = "LCM_LAB_LOAD_WORKERS"
MAX_LINE_MB = "LCM_LAB_MAX_LINE_MB"
JUDGE_MODEL = "LCM_LAB_JUDGE_MODEL"
JUDGE_API_BASE = "LCM_LAB_JUDGE_API_BASE"

MAX_SECONDS = 86_400.0  # a day: longer waits are typos, and time.sleep overflows on huge values
MAX_WORKERS = 64
# DuckDB cannot open a lab store with less (measured: 1 MB fails while reading the schema); a
# cap this small still makes big loads fail, as a MemoryLimitError.
MIN_MEMORY_BYTES = 2 * 1000**2
MAX_MEMORY_BYTES = 1 << 50  # 1 PiB: DuckDB's parser overflows on larger values
_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)", re.IGNORECASE)
MEMORY_FORMS = "a size with its unit, e.g. 512MB, 2GB or 1.5GiB (KB, MB, GB, TB, KiB, MiB, GiB, TiB)"


def text(name: str) -> str | None:
    """The variable's value without surrounding blanks, or None when it is unset or blank."""
    raw = os.environ.get(name)
    return raw.strip() if raw is not None and raw.strip() else None


def flag(name: str) -> bool:
    """Whether a switch such as ``LCM_LAB_DEBUG`` is on: set to anything but blank or ``0``."""
    return text(name) not in (None, "0")


def _refuse(name: str, raw: str, accepted: str) -> OptionError:
    return OptionError(f"{name}={raw!r}: expected {accepted}")


def _number(raw: str) -> float:
    """``raw`` as a float, NaN when it is not a number (the callers' range check refuses it)."""
    try:
        return float(raw)
    except ValueError:
        return math.nan


def seconds(name: str, default: float) -> float:
    """A duration in seconds: a finite number from 0 to a day."""
    raw = text(name)
    if raw is None:
        return default
    value = _number(raw)
    if not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
        raise _refuse(name, raw, f"a number of seconds from 0 to {MAX_SECONDS:g} (unset: {default:g})")
    return value


def count(name: str, default: int, *, minimum: int = 1, maximum: int) -> int:
    """A whole number from ``minimum`` to ``maximum``."""
    raw = text(name)
    if raw is None:
        return default
    digits = raw.replace("_", "")
    value = int(digits) if digits.isdigit() else None
    if value is None or not minimum <= value <= maximum:
        raise _refuse(name, raw, f"a whole number from {minimum} to {maximum}")
    return value


def megabytes(name: str, default: float, *, maximum: float) -> float:
    """A positive, finite number of megabytes up to ``maximum``."""
    raw = text(name)
    if raw is None:
        return default
    value = _number(raw)
    if not (math.isfinite(value) and 0 < value <= maximum):
        raise _refuse(name, raw, f"a positive number of megabytes up to {maximum:g} (unset: {default:g})")
    return value


def memory_size(raw: str) -> int | None:
    """Bytes in a DuckDB memory size (``512MB``, ``1.5 GiB``), or None if it is not one.

    >>> memory_size("2MB"), memory_size("80%"), memory_size("-1"), memory_size("0")
    (2000000, None, None, None)
    """
    match = _MEMORY.fullmatch(raw.strip())
    if match is None or match.group(2).lower() not in _UNITS:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def memory_limit() -> str | None:
    """``LCM_LAB_MEMORY_LIMIT`` checked before DuckDB sees it (None when unset): a size with its
    unit from 2 MB (DuckDB cannot open the store with less) to 1 PiB."""
    raw = text(MEMORY_LIMIT)
    if raw is None:
        return None
    size = memory_size(raw)
    if size is None:
        raise _refuse(MEMORY_LIMIT, raw, MEMORY_FORMS)
    if not MIN_MEMORY_BYTES <= size <= MAX_MEMORY_BYTES:
        raise _refuse(MEMORY_LIMIT, raw, "a size from 2MB (DuckDB cannot open the store with less) to 1PiB, "
                                         "e.g. 2GB")
    return raw


# -- the lab's variables, each with its default ------------------------------------------------

DEFAULT_IDLE_SECONDS = 0.25
DEFAULT_LOCK_TIMEOUT = 30.0
DEFAULT_MAX_LINE_MB = 64
MAX_LINE_MB_ALLOWED = 65_536  # 64 GB: a line longer than that is never one to read


def idle_seconds() -> float:
    """``LCM_LAB_IDLE_SECONDS``: how long a store keeps its file after the last use."""
    return seconds(IDLE_SECONDS, DEFAULT_IDLE_SECONDS)


def lock_timeout() -> float:
    """``LCM_LAB_LOCK_TIMEOUT``: how long to wait for a store another process holds."""
    return seconds(LOCK_TIMEOUT, DEFAULT_LOCK_TIMEOUT)


def load_workers() -> int | None:
    """``LCM_LAB_LOAD_WORKERS``: the load's worker processes, or None (unset: the load decides)."""
    return count(LOAD_WORKERS, 1, minimum=1, maximum=MAX_WORKERS) if text(LOAD_WORKERS) is not None else None


def max_line_mb() -> float:
    """``LCM_LAB_MAX_LINE_MB``: the longest line a transcript reader takes, in megabytes."""
    return megabytes(MAX_LINE_MB, DEFAULT_MAX_LINE_MB, maximum=MAX_LINE_MB_ALLOWED)


def check() -> None:
    """Read every variable once, so that a bad value ends a command before it opens or creates
    anything (the CLI calls this first; library calls meet the same error where the value is used)."""
    memory_limit()
    idle_seconds()
    lock_timeout()
    load_workers()
    max_line_mb()
