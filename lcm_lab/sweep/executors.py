"""Where sweep units run: serially, in threads (model calls), in processes (offline), or on Ray.

Every executor yields :class:`~lcm_lab.sweep.work.UnitResult` values as units finish; only the
sweep's own process writes them to the store. ``auto`` picks processes for offline summarizers
(CPU-bound replays across all cores) and threads for litellm (I/O-bound; one shared ledger so a
request in flight is never sent twice, and one bounded pool of model calls within provider
limits).

>>> resolve_executor("auto", "offline"), resolve_executor("auto", "litellm")
('processes', 'threads')
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from typing import Any

from lcm_lab.sweep.work import Conversations, SummarizerRecipe, Unit, UnitResult, build_summarizer, run_unit


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
                 summarizer: Any | None = None) -> None:
        self.data = data
        self.recipe = recipe
        self.score_qa = score_qa
        self.fault = fault
        self.summarizer = summarizer  # in-process executors share one (the litellm one holds the ledger)

    def local_summarizer(self) -> Any:
        return self.summarizer if self.summarizer is not None else build_summarizer(self.recipe)


def run_units(executor: str, job: Job, units: Sequence[Unit], workers: int) -> Iterator[UnitResult]:
    """Run ``units`` on ``executor`` (``serial``, ``threads``, ``processes``, ``ray`` or ``ray://…``)."""
    if not units:
        return iter(())
    if executor == "serial" or (executor in ("processes", "threads") and workers == 1):
        return _serial(job, units)
    if executor == "threads":
        return _threads(job, units, workers)
    if executor == "processes":
        return _processes(job, units, workers)
    if executor == "ray" or executor.startswith("ray://"):
        from lcm_lab.sweep.ray_executor import run_on_ray

        return run_on_ray(executor, job, units, workers)
    raise ValueError(f"unknown executor {executor!r}; allowed: serial, threads, processes, ray, ray://HOST:PORT")


def _serial(job: Job, units: Sequence[Unit]) -> Iterator[UnitResult]:
    summarizer = job.local_summarizer()
    for unit in units:
        yield run_unit(unit, job.data, summarizer, score_qa=job.score_qa, fault=job.fault)


def _threads(job: Job, units: Sequence[Unit], workers: int) -> Iterator[UnitResult]:
    summarizer = job.local_summarizer()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lcm-sweep") as pool:
        yield from _as_completed(
            [pool.submit(run_unit, u, job.data, summarizer, score_qa=job.score_qa, fault=job.fault) for u in units]
        )


# -- processes: each worker gets the conversations and its summarizer once, at start ----------

_WORKER: dict[str, Any] = {}


def _init_worker(data: Conversations, recipe: SummarizerRecipe, score_qa: bool, fault: str | None) -> None:
    _WORKER.update(data=data, summarizer=build_summarizer(recipe), score_qa=score_qa, fault=fault)


def _work_in_process(unit: Unit) -> UnitResult:
    return run_unit(unit, _WORKER["data"], _WORKER["summarizer"], score_qa=_WORKER["score_qa"], fault=_WORKER["fault"])


def _processes(job: Job, units: Sequence[Unit], workers: int) -> Iterator[UnitResult]:
    # spawn: the sweep's process has threads (store release, litellm loop) that fork would copy mid-state.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=min(workers, len(units)), mp_context=context, initializer=_init_worker,
        initargs=(job.data, job.recipe, job.score_qa, job.fault),
    ) as pool:
        yield from _as_completed([pool.submit(_work_in_process, u) for u in units])


def _as_completed(futures: list[Future[UnitResult]]) -> Iterator[UnitResult]:
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    finally:
        for future in pending:
            future.cancel()
