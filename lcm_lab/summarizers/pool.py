"""One background event loop for all model calls, and bounded pools of in-flight requests.

The engine calls ``summarize()`` synchronously, and replays run side by side in threads. Each
model call is a coroutine submitted to a single daemon event-loop thread; a :class:`CallPool`
semaphore (shared by every thread using the same summarizer) bounds how many are in flight.

>>> import asyncio
>>> pool = CallPool(2)
>>> async def work():
...     async with pool.slot():
...         await asyncio.sleep(0)
...         return 42
>>> pool.run(work)
42
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from lcm_lab.errors import OptionError

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The process-wide event loop thread used for model calls (started on first use)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="lcm-lab-model-calls", daemon=True)
            thread.start()
            _loop = loop
        return _loop


class CallPool:
    """At most ``concurrency`` coroutines inside :meth:`slot` at once, across all threads."""

    def __init__(self, concurrency: int = 16) -> None:
        if concurrency < 1:
            raise OptionError(f"concurrency must be a whole number >= 1, got {concurrency}")
        self.concurrency = concurrency
        self._semaphore: asyncio.Semaphore | None = None
        self._in_flight = 0
        self.max_in_flight = 0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the pool's places for the duration of a request (runs on the loop)."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
        async with self._semaphore:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            try:
                yield
            finally:
                self._in_flight -= 1

    def run(self, make_coroutine: Callable[[], Awaitable[T]]) -> T:
        """Run ``make_coroutine()`` on the background loop and block this thread for its result."""
        loop = background_loop()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise RuntimeError("CallPool.run() called from the model-call loop itself; await the coroutine instead")

        async def runner() -> T:
            return await make_coroutine()

        return asyncio.run_coroutine_threadsafe(runner(), loop).result()
