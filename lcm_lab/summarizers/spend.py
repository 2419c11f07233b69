"""A spend guard for model calls: at most N calls per sliding window and a dollar cap per run.

The plugin limits summarizer calls per time window; a replay compresses hours into seconds,
so the lab's guard is opt-in and its limits are explicit. Tripping it raises
:class:`~lcm_lab.engine.protocol.SummarizerError` with the limit that was hit.

>>> guard = SpendGuard(max_calls_per_window=2, window_seconds=60, clock=lambda: 0.0)
>>> guard.before_call(); guard.before_call()
>>> try:
...     guard.before_call()
... except Exception as exc:
...     print(type(exc).__name__)
SummarizerError
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from lcm_lab.engine.protocol import SummarizerError


class SpendGuard:
    """Thread-safe counters; ``None`` limits are off."""

    def __init__(
        self,
        max_calls_per_window: int | None = None,
        window_seconds: float = 600.0,
        max_cost_usd: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_calls_per_window = max_calls_per_window
        self.window_seconds = window_seconds
        self.max_cost_usd = max_cost_usd
        self._clock = clock
        self._calls: deque[float] = deque()
        self._lock = threading.Lock()
        self.total_calls = 0
        self.total_cost_usd = 0.0

    def before_call(self) -> None:
        """Count one model request, or raise if it would break a limit."""
        with self._lock:
            if self.max_cost_usd is not None and self.total_cost_usd >= self.max_cost_usd:
                raise SummarizerError(
                    f"spend guard: ${self.total_cost_usd:.4f} spent, limit max_cost_usd=${self.max_cost_usd:.4f} reached"
                    " (raise the limit or use the cache)"
                )
            now = self._clock()
            while self._calls and now - self._calls[0] >= self.window_seconds:
                self._calls.popleft()
            if self.max_calls_per_window is not None and len(self._calls) >= self.max_calls_per_window:
                raise SummarizerError(
                    f"spend guard: {len(self._calls)} model calls in the last {self.window_seconds:g} s,"
                    f" limit max_calls_per_window={self.max_calls_per_window} reached"
                )
            self._calls.append(now)
            self.total_calls += 1

    def add_cost(self, cost_usd: float | None) -> None:
        """Add the cost of a finished call (unknown costs count as zero)."""
        if cost_usd:
            with self._lock:
                self.total_cost_usd += cost_usd
