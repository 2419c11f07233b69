"""The fresh tail: the newest raw messages protected from compaction and eviction (spec §4.4).

Compaction and assembly use the same rule with different token measures, so the rule lives here
once and takes the measure as an argument.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

NO_TAIL = sys.maxsize  # "nothing protected": every ordinal is below the tail start


def fresh_tail_start(
    raw: Sequence[tuple[int, bool]],
    tokens: Callable[[int], int],
    fresh_tail_count: int,
    fresh_tail_max_tokens: int | None = None,
) -> int:
    """Ordinal where the fresh tail starts; items at or after it are protected.

    ``raw`` lists the raw-message context items oldest first as ``(ordinal, is_user)``;
    ``tokens(i)`` measures ``raw[i]``. Until the newest user message is inside the tail neither
    the count limit nor the token cap applies, so the tail always holds the newest user message
    and everything after it.

    >>> fresh_tail_start([(0, True), (1, False), (2, True), (3, False)], lambda i: 10, 1)
    2
    """
    if fresh_tail_count <= 0 or not raw:
        return NO_TAIL
    latest_user: int | None = None
    for ordinal, is_user in reversed(raw):
        if is_user:
            latest_user = ordinal
            break
    count = 0
    total = 0
    start = NO_TAIL
    for i in range(len(raw) - 1, -1, -1):
        ordinal = raw[i][0]
        user_protected = latest_user is None or start <= latest_user
        if user_protected and count >= fresh_tail_count:
            break
        t = tokens(i)
        if user_protected and count > 0 and fresh_tail_max_tokens is not None and total + t > fresh_tail_max_tokens:
            break
        start = ordinal
        count += 1
        total += t
    return start
