"""The LLM call ledger over the lab store: record every model call, serve repeats from cache.

A :class:`Ledger` wraps a :class:`~lcm_lab.store.LabStore`. Model clients (the litellm
summarizer, LLM judges) call :meth:`Ledger.lookup` with a :func:`cache_key` before going to the
network and :meth:`Ledger.record` after every attempt — successes, errors and cache hits alike.
The cache ``mode`` decides what is reused:

* ``off`` — never read the cache, never mark rows reusable (calls are still logged);
* ``read`` — serve hits, but do not make new rows reusable;
* ``write`` — always call the model, make successful responses reusable;
* ``readwrite`` — both (the default).

Only successful, non-empty responses become reusable; errors never do. Text fields are
scrubbed of the values of ``*_API_KEY``/``*_TOKEN``/``*_SECRET`` environment variables and of
key-shaped strings before they are written, so no key reaches the database.

>>> from lcm_lab.store import LabStore
>>> ledger = Ledger(LabStore(":memory:"))
>>> key = cache_key(model="openai/x", messages=[{"role": "user", "content": "hi"}], template_hash=None,
...                 temperature=None, max_tokens=10, seed=None, reasoning_effort=None)
>>> ledger.lookup(key) is None
True
>>> _ = ledger.record(LedgerEntry(purpose="summary", summarizer="litellm", model="openai/x", cache_key=key,
...                               response_text="hello", cacheable=True))
>>> ledger.lookup(key).response_text
'hello'
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import uuid
import weakref
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from lcm_lab.errors import require_extra
from lcm_lab.io.redaction import redact, secret_values

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    from lcm_lab.store.core import LabStore

CacheMode = Literal["off", "read", "write", "readwrite"]
CACHE_MODES: tuple[str, ...] = get_args(CacheMode)



def cache_key(
    *,
    model: str,
    messages: list[dict[str, Any]],
    template_hash: str | None,
    temperature: float | None,
    max_tokens: int | None,
    seed: int | None,
    reasoning_effort: str | None,
) -> str:
    """sha256 of the canonical JSON of exactly the fields that change a model's output.

    Retries, timeouts, ``api_base`` and keys are deliberately not part of it.
    """
    payload = {
        "max_tokens": max_tokens,
        "messages": messages,
        "model": model,
        "reasoning_effort": reasoning_effort,
        "seed": seed,
        "temperature": temperature,
        "template_hash": template_hash,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def public_api_base(api_base: str | None) -> str | None:
    """``api_base`` without credentials in the URL (user info, query string, fragment)."""
    if not api_base:
        return None
    parts = urlsplit(api_base)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class LedgerEntry:
    """One row of ``llm_calls`` (see migration ``m003_llm_calls`` for the column meanings)."""

    purpose: str
    summarizer: str
    model: str
    cache_key: str
    cache_hit: bool = False
    cacheable: bool = False
    attempt: int = 1
    run_id: str | None = None
    provider: str | None = None
    api_base: str | None = None
    kind: str | None = None
    depth: int | None = None
    aggressive: bool | None = None
    template_name: str | None = None
    template_hash: str | None = None
    system_template_hash: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    request_messages: list[dict[str, Any]] = field(default_factory=list)
    response_text: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    error_class: str | None = None
    error_message: str | None = None


@dataclass(frozen=True)
class CachedResponse:
    """A reusable response found in the ledger."""

    call_id: str
    model: str
    response_text: str
    finish_reason: str | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    latency_ms: float | None


_COLUMNS = tuple(f for f in LedgerEntry.__dataclass_fields__)
_INSERT = f"INSERT INTO llm_calls (call_id, {', '.join(_COLUMNS)}) VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})"
_REUSABLE = """
SELECT cache_key, call_id, model, response_text, finish_reason, input_tokens, output_tokens, cost_usd, latency_ms
FROM llm_calls
WHERE cacheable AND NOT cache_hit AND error_class IS NULL AND response_text IS NOT NULL
ORDER BY created_at DESC, call_id DESC
"""
_LIST = """
SELECT call_id, created_at, run_id, purpose, summarizer, model, kind, depth, aggressive, attempt,
       cache_hit, cacheable, input_tokens, output_tokens, cost_usd, latency_ms, error_class,
       template_name, left(template_hash, 12) AS template_hash
FROM llm_calls {where}
ORDER BY created_at, call_id
"""
_TOTALS = """
SELECT count(*) AS calls,
       count(*) FILTER (WHERE cache_hit) AS cache_hits,
       count(*) FILTER (WHERE error_class IS NOT NULL) AS errors,
       coalesce(sum(input_tokens) FILTER (WHERE NOT cache_hit), 0) AS input_tokens,
       coalesce(sum(output_tokens) FILTER (WHERE NOT cache_hit), 0) AS output_tokens,
       coalesce(sum(cost_usd) FILTER (WHERE NOT cache_hit AND isfinite(cost_usd)), 0) AS cost_usd,
       count(*) FILTER (WHERE NOT cache_hit) AS sent,
       count(*) FILTER (WHERE NOT cache_hit AND isfinite(cost_usd)) AS priced,
       coalesce(sum(latency_ms) FILTER (WHERE NOT cache_hit AND isfinite(latency_ms)), 0) AS latency_ms
FROM llm_calls {where}
"""


class _ReuseIndex:
    """``cache_key → CachedResponse`` for one store, shared by every Ledger over it.

    Built with one scan on first lookup and kept current by :meth:`Ledger.record`, so a
    lookup costs a dict access instead of a query (replays make thousands of them).
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[str, CachedResponse] | None = None


_INDEXES: weakref.WeakKeyDictionary[Any, _ReuseIndex] = weakref.WeakKeyDictionary()
_INDEXES_LOCK = threading.Lock()


def _index_for(store: LabStore) -> _ReuseIndex:
    with _INDEXES_LOCK:
        index = _INDEXES.get(store)
        if index is None:
            index = _INDEXES[store] = _ReuseIndex()
        return index


class Ledger:
    """Thread-safe access to ``llm_calls`` of one store, with a cache ``mode``."""

    def __init__(self, store: LabStore, mode: CacheMode = "readwrite") -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"unknown cache mode {mode!r}; use one of {', '.join(CACHE_MODES)}")
        self.store = store
        self.mode: CacheMode = mode
        self._lock = threading.Lock()
        self._index = _index_for(store)

    def _cursor(self) -> Any:
        # A cursor of its own per operation: other threads using store.con are not disturbed,
        # and the store can give its file back between operations.
        return self.store.cursor()

    @property
    def reads_cache(self) -> bool:
        return self.mode in ("read", "readwrite")

    @property
    def writes_cache(self) -> bool:
        return self.mode in ("write", "readwrite")

    def with_mode(self, mode: CacheMode) -> Ledger:
        """The same store with another cache mode."""
        return Ledger(self.store, mode)

    def lookup(self, key: str) -> CachedResponse | None:
        """The first reusable response recorded under ``key`` (``None`` in modes off/write)."""
        if not self.reads_cache:
            return None
        return self._entries().get(key)

    def _entries(self) -> dict[str, CachedResponse]:
        index = self._index
        with index.lock:
            if index.entries is None:
                with self._lock, self._cursor() as cur:
                    rows = cur.execute(_REUSABLE).fetchall()
                # Newest first, so the oldest response per key is the one that stays.
                index.entries = {row[0]: CachedResponse(*row[1:]) for row in rows}
            return index.entries

    def record(self, entry: LedgerEntry) -> str:
        """Append one call; returns its ``call_id``. ``cacheable`` is honoured only in write modes."""
        values = asdict(entry)
        values["cacheable"] = bool(entry.cacheable and self.writes_cache and entry.error_class is None and entry.response_text)
        values["api_base"] = public_api_base(entry.api_base)
        secrets = secret_values()
        for name in ("response_text", "error_message"):
            if values[name] is not None:
                values[name] = redact(values[name], secrets)
        values["params"] = redact(json.dumps(values["params"], sort_keys=True, default=str), secrets)
        values["request_messages"] = redact(json.dumps(values["request_messages"], ensure_ascii=False), secrets)
        call_id = uuid.uuid4().hex
        with self._lock, self._cursor() as cur:
            cur.execute(_INSERT, [call_id, *(values[c] for c in _COLUMNS)])
        if values["cacheable"]:
            index = self._index
            with index.lock:
                if index.entries is not None and entry.cache_key not in index.entries:
                    index.entries[entry.cache_key] = CachedResponse(
                        call_id, entry.model, values["response_text"], entry.finish_reason, entry.input_tokens,
                        entry.output_tokens, entry.cost_usd, entry.latency_ms,
                    )
        return call_id

    # -- reading -----------------------------------------------------------------------------
    def _where(self, run_id: str | None) -> tuple[str, list[Any]]:
        return ("WHERE run_id = ?", [run_id]) if run_id is not None else ("", [])

    def calls(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Recorded calls (oldest first) as dictionaries, without request/response bodies."""
        where, params = self._where(run_id)
        with self._lock, self._cursor() as cur:
            cursor = cur.execute(_LIST.format(where=where), params)
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        # The lab records finite numbers only: NaN or infinity in a row (a store edited by hand)
        # reads as unknown, so tables, sums and JSON output stay valid.
        return [{k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in zip(names, row, strict=True)}
                for row in rows]

    def totals(self, run_id: str | None = None) -> dict[str, Any]:
        """Counts, tokens, cost and latency (cache hits count as calls but cost nothing); ``cost_usd``
        sums the ``priced`` of the ``sent`` calls (those not answered by the ledger) whose cost is known."""
        where, params = self._where(run_id)
        with self._lock, self._cursor() as cur:
            cursor = cur.execute(_TOTALS.format(where=where), params)
            names = [d[0] for d in cursor.description]
            row = cursor.fetchone()
        return dict(zip(names, row or (), strict=True))

    def calls_df(self, run_id: str | None = None) -> pd.DataFrame:
        """Every column of ``llm_calls`` as pandas (oldest first)."""
        where, params = self._where(run_id)
        with self._lock, self._cursor() as cur:
            return cur.execute(f"SELECT * FROM llm_calls {where} ORDER BY created_at, call_id", params).df()

    def calls_pl(self, run_id: str | None = None) -> pl.DataFrame:
        """Every column of ``llm_calls`` as polars (oldest first)."""
        where, params = self._where(run_id)
        with self._lock, self._cursor() as cur:
            require_extra("polars", "polars", "polars frames (the *_pl readers)")
            return cur.execute(f"SELECT * FROM llm_calls {where} ORDER BY created_at, call_id", params).pl()
