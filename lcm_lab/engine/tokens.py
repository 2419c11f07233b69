"""Token estimation exactly as lossless-claw computes it (spec §2.3).

The plugin estimates tokens from Unicode code points with fixed weights (since v0.8.0);
releases before that used ``ceil(utf16_length / 4)``. Both are here, because old lcm.db
files keep the counts their release wrote.

>>> estimate_tokens("Hello world")
3
>>> estimate_tokens("你好世界")
6
>>> legacy_estimate_tokens("abcde")
2
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

from lcm_lab.errors import OptionError

# The largest token budget a replay takes: the plugin holds budgets as JavaScript numbers, which
# are whole only up to 2**53 - 1 (``Number.MAX_SAFE_INTEGER``); the lab stores them as 64-bit
# integers.
MAX_TOKEN_BUDGET = 2**53 - 1

# Inclusive code-point ranges weighted 1.5 (CJK ideographs, kana, hangul, CJK punctuation,
# full-width forms).
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x3000, 0x303F),
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xFF00, 0xFFEF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0x2CEB0, 0x2EBEF),
)


def _weight(cp: int) -> float:
    for lo, hi in _CJK_RANGES:
        if lo <= cp <= hi:
            return 1.5
    if cp > 0xFFFF:
        return 2.0
    return 0.25


_HEAVY = re.compile("[\u3000-\U0010ffff]")  # code points that may weigh more than 0.25


def _is_plain(text: str) -> bool:
    # Fast path: every code point below U+3000 weighs 0.25 (isascii is O(1) in CPython; the
    # regex scans in C without building a string per character, unlike max()).
    return text.isascii() or not _HEAVY.search(text)


_CJK = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]")
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` with the plugin's weighted code-point estimator."""
    if _is_plain(text):
        # Multiples of 0.25 are exact in binary floating point, so len/4 matches the sum.
        return math.ceil(len(text) / 4)
    # Weights 0.25, 1.5 and 2.0 are all multiples of 0.25, so counting by class gives the same
    # exact sum as adding code point by code point (CJK astral ranges weigh 1.5, not 2.0).
    cjk = _CJK.findall(text)
    astral = len(_ASTRAL.findall(text)) - sum(1 for ch in cjk if ord(ch) > 0xFFFF)
    quarters = len(text) + 5 * len(cjk) + 7 * astral  # 0.25 → 1 quarter, 1.5 → 6, 2.0 → 8
    return math.ceil(quarters / 4)


def legacy_estimate_tokens(text: str) -> int:
    """The estimator of lossless-claw v0.1.2–v0.7.x: ``ceil(len_utf16 / 4)``."""
    return math.ceil(utf16_length(text) / 4)


def utf16_length(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (JavaScript's ``String.length``)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF) if not _is_plain(text) else len(text)


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Longest prefix whose estimate stays within ``max_tokens`` (walks code points).

    >>> truncate_to_tokens("abcdefgh", 1)
    'abcd'
    """
    if max_tokens <= 0:
        return ""
    if _is_plain(text):
        return text[: max_tokens * 4]
    total = 0.0
    for i, ch in enumerate(text):
        total += _weight(ord(ch))
        if math.ceil(total) > max_tokens:
            return text[:i]
    return text


def check_token_budget(value: Any, name: str = "token_budget") -> int:
    """``value`` as a token budget: a whole number from 1 to :data:`MAX_TOKEN_BUDGET`, else an
    :class:`~lcm_lab.errors.OptionError` naming ``name``.

    >>> check_token_budget(8000)
    8000
    >>> check_token_budget(2**63)
    Traceback (most recent call last):
    lcm_lab.errors.OptionError: token_budget=9223372036854775808: expected a whole number of tokens from 1 to 9,007,199,254,740,991 (the largest whole number the plugin's JavaScript holds), e.g. 8000
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= int(value) <= MAX_TOKEN_BUDGET:
        raise OptionError(f"{name}={value!r}: expected a whole number of tokens from 1 to {MAX_TOKEN_BUDGET:,} "
                          "(the largest whole number the plugin's JavaScript holds), e.g. 8000")
    return int(value)
