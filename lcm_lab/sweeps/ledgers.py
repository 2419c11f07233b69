"""The ledger as a sweep sees it: one request is sent once, whoever asks for it.

* :class:`BufferLedger` is what a worker process or a Ray task gets: a snapshot of the store's
  reusable responses, and a buffer of the calls it made. The entries travel back with the
  result and the sweep's one writer records them (workers never open the DuckDB file).
* :class:`SharedLedger` is the same for replays running in threads of the sweep's own process,
  and a request already in flight in another thread is waited for instead of being sent again.

>>> from lcm_lab.store.ledger import LedgerEntry
>>> buffer = BufferLedger({})
>>> buffer.lookup("k") is None
True
>>> _ = buffer.record(LedgerEntry(purpose="summary", summarizer="litellm", model="m", cache_key="k",
...                               response_text="hi", cacheable=True))
>>> buffer.lookup("k").response_text, len(buffer.drain())
('hi', 1)
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any

from lcm_lab.store.ledger import CachedResponse, Ledger, LedgerEntry


@dataclass
class CallCounts:
    """Requests that reached a model (``calls``, one per attempt) and ones served from cache."""

    calls: int = 0
    cache_hits: int = 0
    errors: int = 0

    def add(self, entry: LedgerEntry) -> None:
        if entry.cache_hit:
            self.cache_hits += 1
        else:
            self.calls += 1
            self.errors += entry.error_class is not None


class ReleasingSummarizer:
    """Wraps a summarizer so each ``summarize`` call releases its claims on a :class:`SharedLedger`."""

    def __init__(self, inner: Any, ledger: SharedLedger) -> None:
        self.inner = inner
        self.shared = ledger

    def summarize(self, request: Any) -> Any:
        try:
            return self.inner.summarize(request)
        finally:
            self.shared.release()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class BufferLedger:
    """An in-memory ledger for a worker: snapshot lookups plus a buffer of new entries."""

    reads_cache = True
    writes_cache = True

    def __init__(self, snapshot: dict[str, CachedResponse]) -> None:
        self._entries = dict(snapshot)
        self._buffer: list[LedgerEntry] = []
        self._lock = threading.Lock()

    def lookup(self, key: str) -> CachedResponse | None:
        return self._entries.get(key)

    def record(self, entry: LedgerEntry) -> str:
        call_id = uuid.uuid4().hex
        with self._lock:
            self._buffer.append(entry)
            if entry.cacheable and entry.error_class is None and entry.response_text and entry.cache_key not in self._entries:
                self._entries[entry.cache_key] = CachedResponse(
                    call_id, entry.model, entry.response_text, entry.finish_reason, entry.input_tokens,
                    entry.output_tokens, entry.cost_usd, entry.latency_ms,
                )
        return call_id

    def drain(self) -> list[LedgerEntry]:
        """The entries recorded since the last drain."""
        with self._lock:
            out, self._buffer = self._buffer, []
        return out


class SharedLedger(BufferLedger):
    """A :class:`BufferLedger` shared by the threads of the sweep's own process that never lets
    two threads send the same request: a request in flight is waited for, then served from the
    buffer. Calls and cache hits are counted; the sweep's writer drains the buffer with each
    finished unit (so the file is not held while model calls are under way)."""

    def __init__(self, snapshot: dict[str, CachedResponse], wait_seconds: float = 600.0, reuse: bool = True) -> None:
        super().__init__(snapshot if reuse else {})
        self.reuse = reuse  # False: every request goes to the model (a naive sweep, for comparison)
        self.counts = CallCounts()
        self.wait_seconds = wait_seconds
        self._in_flight: dict[str, tuple[int, threading.Event]] = {}

    def lookup(self, key: str) -> CachedResponse | None:
        if not self.reuse:
            return None
        while True:
            hit = super().lookup(key)
            if hit is not None:
                return hit
            me = threading.get_ident()
            with self._lock:
                owner = self._in_flight.get(key)
                if owner is None or owner[0] == me:
                    self._in_flight[key] = (me, owner[1] if owner else threading.Event())
                    return None
            # Someone else is sending this very request: wait for its answer, then look again.
            if not owner[1].wait(self.wait_seconds):
                return None

    def record(self, entry: LedgerEntry) -> str:
        call_id = super().record(entry)
        with self._lock:
            self.counts.add(entry)
        return call_id

    def release(self) -> None:
        """Wake the threads waiting for requests this thread claimed (its summarize call ended)."""
        me = threading.get_ident()
        with self._lock:
            mine = [key for key, (owner, _) in self._in_flight.items() if owner == me]
            events = [self._in_flight.pop(key)[1] for key in mine]
        for event in events:
            event.set()


def reusable_snapshot(ledger: Ledger) -> dict[str, CachedResponse]:
    """Every reusable response of the store's ledger (what a worker may serve from cache)."""
    return dict(ledger._entries()) if ledger.reads_cache else {}
