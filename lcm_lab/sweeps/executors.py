"""Where sweep units run: serially, in threads (model calls), in processes (offline), or on Ray.

Every executor yields :class:`~lcm_lab.sweeps.work.UnitResult` values as units finish; only the
sweep's own process writes them to the store. ``auto`` picks processes for offline summarizers
(CPU-bound replays across all cores) and threads for litellm (I/O-bound; one shared ledger so a
request in flight is never sent twice, and one bounded pool of model calls within provider
limits).

Processes and Ray get *chunks*: several configurations of one conversation per task (largest
first, about :data:`CHUNKS_PER_WORKER` per worker), so a worker reuses what it cached for that
conversation (the QA and fact controls) and the writer gets results in batches. Workers return
the replay and scores already encoded as store rows (:class:`~lcm_lab.sweeps.work.StoredRun`):
the sweep's process, the single writer, only inserts.

>>> resolve_executor("auto", "offline"), resolve_executor("auto", "litellm")
('processes', 'threads')
"""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from typing import Any

from lcm_lab.sweeps.work import Conversations, SummarizerRecipe, Unit, UnitResult, build_summarizer, run_unit


def resolve_executor(executor: str, summarizer: str) -> str:
    """The executor ``auto`` stands for (others pass through)."""
    if executor != "auto":
        return executor
    return "threads" if summarizer == "litellm" else "processes"


def default_workers(executor: str) -> int:
    """All cores for processes and Ray; 16 concurrent replays for threads."""
    if executor == "threads":
        return 16
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


class Job:
    """What every unit of one sweep shares: its conversations and how to summarize."""

    def __init__(self, data: Conversations, recipe: SummarizerRecipe, score_qa: bool, fault: str | None = None,
                 summarizer: Any | None = None, score_cost: bool = False) -> None:
        self.data = data
        self.recipe = recipe
        self.score_qa = score_qa
        self.score_cost = score_cost  # price runs with the cost model (an objective or constraint needs it)
        self.fault = fault
        self.summarizer = summarizer  # in-process executors share one (the litellm one holds the ledger)

    def local_summarizer(self) -> Any:
        return self.summarizer if self.summarizer is not None else build_summarizer(self.recipe)


class Runner:
    """Runs units on one executor for a whole sweep; pools (and a Ray runtime it started) are
    created once, on first use, and closed by :meth:`close`.

    ``executor`` is ``serial``, ``threads``, ``processes``, ``ray`` or ``ray://HOST:PORT``.
    """

    def __init__(self, executor: str, job: Job, workers: int, tick: Any = None) -> None:
        self.executor, self.job, self.workers = executor, job, workers
        self.tick = tick  # called about every TICK_SECONDS while threads are busy (the writer flushes the ledger)
        self._pool: Any = None
        self._ray: Any = None

    def run(self, units: Sequence[Unit]) -> Iterator[UnitResult]:
        """Results one by one, as units finish."""
        return (result for batch in self.run_batches(units) for result in batch)

    def run_batches(self, units: Sequence[Unit]) -> Iterator[list[UnitResult]]:
        """Results in the batches they arrive in (one unit in process, a chunk from a worker)."""
        if not units:
            return iter(())
        job = self.job
        if self.executor == "serial" or (self.executor in ("processes", "threads") and self.workers == 1):
            summarizer = job.local_summarizer()
            return ([run_unit(u, job.data, summarizer, score_qa=job.score_qa, fault=job.fault, score_cost=job.score_cost)]
                    for u in units)
        if self.executor == "threads":
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="lcm-sweep")
            summarizer = job.local_summarizer()
            return ([r] for r in _as_completed([self._pool.submit(run_unit, u, job.data, summarizer, score_qa=job.score_qa,
                                                                 fault=job.fault, score_cost=job.score_cost)
                                                for u in units], self.tick))
        if self.executor == "processes":
            if self._pool is None:
                # spawn: the sweep's process has threads (store release, litellm loop) that fork would copy mid-state.
                # The pool lives for the whole sweep: each worker starts, imports and receives the conversations once.
                self._pool = ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                    initargs=(job.data, job.recipe, job.score_qa, job.fault, job.score_cost),
                )
            return _as_completed([self._pool.submit(_work_in_process, chunk) for chunk in chunk_units(units, job.data, self.workers)])
        if self.executor == "ray" or self.executor.startswith("ray://"):
            from lcm_lab.sweeps.ray_executor import RaySession

            if self._ray is None:
                self._ray = RaySession(self.executor, job, self.workers)
            return self._ray.run(chunk_units(units, job.data, self.workers))
        raise ValueError(f"unknown executor {self.executor!r}; allowed: serial, threads, processes, ray, ray://HOST:PORT")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._ray is not None:
            self._ray.close()
            self._ray = None


# -- processes: each worker gets the conversations and its summarizer once, at start ----------

_WORKER: dict[str, Any] = {}


def _init_worker(data: Conversations, recipe: SummarizerRecipe, score_qa: bool, fault: str | None, score_cost: bool) -> None:
    _WORKER.update(data=data, summarizer=build_summarizer(recipe), score_qa=score_qa, fault=fault, score_cost=score_cost)


def _work_in_process(units: list[Unit]) -> list[UnitResult]:
    w = _WORKER
    return [run_unit(u, w["data"], w["summarizer"], score_qa=w["score_qa"], fault=w["fault"], encode=True, score_cost=w["score_cost"])
            for u in units]


CHUNKS_PER_WORKER = 4


def chunk_units(units: Sequence[Unit], data: Conversations, workers: int, per_worker: int = CHUNKS_PER_WORKER) -> list[list[Unit]]:
    """Units in chunks of one conversation each, about ``per_worker`` chunks per worker, the
    largest (configurations × conversation length) first so the short ones fill the end.

    >>> from lcm_lab.engine.config import LcmConfig
    >>> units = [Unit("s", c, k, f"{c}{k}", LcmConfig(), 100) for k in "ab" for c in "wxyz"]
    >>> data = Conversations({"a": [0] * 5, "b": [0] * 50}, {})
    >>> [[u.run_id for u in chunk] for chunk in chunk_units(units, data, workers=1, per_worker=2)]
    [['wb', 'xb', 'yb', 'zb'], ['wa', 'xa', 'ya', 'za']]
    >>> [len(chunk) for chunk in chunk_units(units, data, workers=2, per_worker=2)]
    [2, 2, 2, 2]
    """
    size = max(1, math.ceil(len(units) / max(1, workers * per_worker)))
    groups: dict[str, list[Unit]] = {}
    for unit in units:
        groups.setdefault(unit.conversation_key, []).append(unit)
    chunks: list[list[Unit]] = []
    for group in groups.values():
        parts = math.ceil(len(group) / size)
        chunks += [group[i * len(group) // parts : (i + 1) * len(group) // parts] for i in range(parts)]
    return sorted(chunks, key=lambda c: len(c) * _length(data.conversations[c[0].conversation_key]), reverse=True)


def _length(conversation: Any) -> int:
    """Messages of a conversation (entries of a transcript, or stored messages)."""
    if isinstance(conversation, Sequence):
        return len(conversation)
    return len(getattr(conversation, "entries", ()) or ()) + len(getattr(conversation, "stored_messages", ()) or ())


TICK_SECONDS = 0.5


def _as_completed(futures: list[Future[Any]], tick: Any = None) -> Iterator[Any]:
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=TICK_SECONDS if tick else None, return_when=FIRST_COMPLETED)
            if not done and tick is not None:
                tick()
            for future in done:
                yield future.result()
    finally:
        for future in pending:
            future.cancel()
