"""Where sweep units run: serially, in threads (model calls), in processes (offline), or on Ray.

Every executor yields :class:`~lcm_lab.sweeps.work.UnitResult` values as units finish; only the
sweep's own process writes them to the store. ``auto`` picks processes for offline summarizers
(CPU-bound replays across all cores) and threads for litellm (I/O-bound; one shared ledger so a
request in flight is never sent twice, and one bounded pool of model calls within provider
limits).

A script that runs a sweep on ``processes`` needs a main guard: spawn re-imports the script in
every worker. Called from such a worker while it bootstraps, :func:`refuse_while_bootstrapping`
raises :class:`~lcm_lab.errors.MainGuardError` at once, and the parent turns the broken pool into
the same clear error (never a hang: workers get their inputs from a file, not from the pipe the
parent writes while starting them). Units finished before stay in the store.

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
import pickle
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

from lcm_lab.errors import MAIN_GUARD_FIX, MainGuardError
from lcm_lab.io.scratch import scratch_file
from lcm_lab.sweeps.metrics import install_metrics
from lcm_lab.sweeps.work import Conversations, SummarizerRecipe, Unit, UnitResult, build_summarizer, run_unit


class WorkerDiedError(RuntimeError):
    """A sweep worker process died (killed, out of memory): the pool cannot go on."""


def refuse_while_bootstrapping() -> None:
    """Raise :class:`~lcm_lab.errors.MainGuardError` when this process is a spawned worker still
    importing its parent's ``__main__``: a script without a main guard calling ``sweep()`` again.

    >>> refuse_while_bootstrapping()  # the main process: nothing to refuse
    """
    # While a spawned child unpickles its inputs and re-imports __main__, multiprocessing marks the
    # current process as inheriting (its own _check_not_importing_main reads the same flag);
    # parent_process() is only set after that, when the worker starts running.
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # runpy runs the re-imported script as __mp_main__ (__main__ is replaced only afterwards)
        script = next((m.__file__ for m in map(sys.modules.get, ("__mp_main__", "__main__")) if getattr(m, "__file__", None)),
                      "__main__")
        raise MainGuardError(
            f"sweep() was called while a worker process was re-importing your script "
            f"({script}): executor='processes' starts "
            f"workers with spawn, which re-runs the script's top-level code in each of them; {MAIN_GUARD_FIX} "
            "(or use executor='serial' or 'threads')"
        )


def _broken_pool_error(delivered: int) -> Exception:
    """What a broken process pool means for the user (``delivered``: batches that came back before)."""
    resume = "Units finished before are in the store: run the same sweep again to resume."
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    if delivered == 0 and script is not None:
        return MainGuardError(
            f"the sweep's worker processes died before finishing any unit. executor='processes' starts them with "
            f"spawn, which re-imports the script that called sweep() ({script}): if it calls sweep() at top level, "
            f"{MAIN_GUARD_FIX} (the worker's own error is above); otherwise a worker was killed (out of memory?). {resume}"
        )
    return WorkerDiedError(f"a sweep worker process died unexpectedly (killed, or out of memory?). {resume}")


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
                 summarizer: Any | None = None, score_cost: bool = False, metrics: bytes | None = None) -> None:
        self.data = data
        self.metrics = metrics  # custom metrics for workers (sweeps.metrics.pack_metrics), None when there are none
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
        self._inputs: str | None = None  # the file worker processes read the job from
        self._delivered = 0  # batches that came back from worker processes

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
            return self._process_batches(units)
        if self.executor == "ray" or self.executor.startswith("ray://"):
            from lcm_lab.sweeps.ray_executor import RaySession

            if self._ray is None:
                self._ray = RaySession(self.executor, job, self.workers)
            return self._ray.run(chunk_units(units, job.data, self.workers))
        raise ValueError(f"unknown executor {self.executor!r}; allowed: serial, threads, processes, ray, ray://HOST:PORT")

    def _process_batches(self, units: Sequence[Unit]) -> Iterator[list[UnitResult]]:
        job = self.job
        try:
            if self._pool is None:
                # spawn: the sweep's process has threads (store release, litellm loop) that fork would copy mid-state.
                # The pool lives for the whole sweep: each worker starts, imports and reads the conversations once,
                # from a file: sent as initargs they went down the pipe the parent writes while starting a worker,
                # and a worker that died importing the script (no main guard) left that write, and the sweep, hanging.
                self._inputs = _write_inputs(job)
                self._pool = ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                    initargs=(self._inputs, os.getpid()),
                )
            with _workers_ignore_ctrl_c():  # the submits start the workers
                futures = [self._pool.submit(_work_in_process, chunk) for chunk in chunk_units(units, job.data, self.workers)]
            for batch in _as_completed(futures):
                self._delivered += 1
                yield batch
        except BrokenProcessPool as exc:
            raise _broken_pool_error(self._delivered) from exc

    def close(self, abort: bool = False) -> None:
        """Shut the pools down; ``abort`` (an interrupted sweep: Ctrl-C, SIGTERM) terminates the
        worker processes at once instead of waiting for the chunks they are running."""
        if self._pool is not None:
            if abort and isinstance(self._pool, ProcessPoolExecutor):
                # Not cancel_futures here: the pool, finding its workers gone, fails the pending futures
                # itself, and on Python 3.11 failing one already cancelled raises in its thread.
                _terminate_workers(self._pool)
                self._pool.shutdown(wait=True)
            else:
                self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._inputs is not None:
            try:
                os.unlink(self._inputs)
            except FileNotFoundError:
                pass
            self._inputs = None
        if self._ray is not None:
            self._ray.close()
            self._ray = None


# -- processes: each worker gets the conversations and its summarizer once, at start ----------

_WORKER: dict[str, Any] = {}


def _write_inputs(job: Job) -> str:
    """The job's inputs for worker processes, pickled once into a private temporary file."""
    handle, path = scratch_file("sweep", ".pickle")
    with os.fdopen(handle, "wb") as out:
        pickle.dump((job.data, job.recipe, job.score_qa, job.fault, job.score_cost, job.metrics), out,
                    protocol=pickle.HIGHEST_PROTOCOL)
    return str(path)


@contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """Start worker processes with SIGINT ignored: Ctrl-C reaches the whole process group, and a
    worker still importing would print a KeyboardInterrupt traceback. A spawned child keeps an
    ignored SIGINT, and Python then installs no KeyboardInterrupt handler in it; the sweep's own
    process handles Ctrl-C and stops the workers."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _terminate_workers(pool: ProcessPoolExecutor) -> None:
    """SIGTERM every worker of ``pool`` and reap it (CPython keeps them in ``_processes``; Python
    3.14's ``terminate_workers`` does the same)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    # Finding its workers gone, Python 3.11's pool fails every pending future and raises (in its
    # own thread, printing a traceback) on one the sweep already cancelled. Taking such items out
    # of its books raced its manager thread, which then looked up an id it still had queued
    # (KeyError, a traceback too): each keeps its place with a stand-in the pool drops quietly.
    pending = getattr(pool, "_pending_work_items", None)
    if isinstance(pending, dict):
        for item in list(pending.values()):
            if item.future.cancelled():
                item.future = _Dropped()
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)


class _Dropped(Future[Any]):
    """Stands in for a cancelled future in a pool's books: the pool never runs it, and failing it
    is a no-op (a cancelled future cannot take an exception)."""

    def set_running_or_notify_cancel(self) -> bool:
        return False

    def set_exception(self, exception: BaseException | None) -> None:
        pass


PARENT_POLL_SECONDS = 1.0


def die_with_parent(parent: int) -> None:
    """End this worker process when ``parent`` (the sweep's process) dies, even by SIGKILL, which
    runs none of the sweep's clean-up: its workers otherwise ran on, and with them multiprocessing's
    resource tracker, which exits once the last process holding its pipe is gone.

    On Linux the kernel sends SIGKILL at the parent's death (``PR_SET_PDEATHSIG``); on every
    system a daemon thread checks ``os.getppid()`` each :data:`PARENT_POLL_SECONDS` (the kernel
    signal is tied to the thread that started the worker). A parent already gone when this runs
    (the race the signal alone leaves open) ends the worker at once."""
    import threading

    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl in this libc: the thread below still ends the worker
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="lcm-sweep-parent-watch", daemon=True).start()


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _init_worker(inputs: str, parent: int) -> None:
    import signal

    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # also for workers the pool starts later (see _workers_ignore_ctrl_c)
    with open(inputs, "rb") as source:
        data, recipe, score_qa, fault, score_cost, metrics = pickle.load(source)
    install_metrics(metrics)
    _WORKER.update(data=data, summarizer=build_summarizer(recipe), score_qa=score_qa, fault=fault, score_cost=score_cost)


def _work_in_process(units: list[Unit]) -> list[UnitResult]:
    w = _WORKER
    return [run_unit(u, w["data"], w["summarizer"], score_qa=w["score_qa"], fault=w["fault"], encode=True, score_cost=w["score_cost"])
            for u in units]


CHUNKS_PER_WORKER = 4


def chunk_units(units: Sequence[Unit], data: Conversations, workers: int, per_worker: int = CHUNKS_PER_WORKER) -> list[list[Unit]]:
    """Units in chunks of one conversation each, about ``per_worker`` chunks per worker, the
    largest (configurations × conversation length) first so the short ones fill the end.

    >>> from lcm_lab.engine.config.lcm_config import LcmConfig
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
