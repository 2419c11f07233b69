"""The Ray executor: sweep units as Ray tasks, on a local Ray or an existing cluster.

Tasks get the conversations and the summarizer recipe through Ray's object store (put once),
run :func:`~lcm_lab.sweeps.work.run_unit` on a chunk of units (one conversation, several
configurations), and return their results (replay and scores encoded as store rows, and for
litellm the ledger entries they recorded) to the driver, which is the only writer of the lab
store. Model calls in a task go through a :class:`~lcm_lab.sweeps.ledgers.BufferLedger` seeded
with the store's reusable responses.

``executor="ray"`` joins the Ray runtime this process already started (``ray.init(...)``) or
starts a local one with ``workers`` CPUs (shut down afterwards); ``"ray://HOST:PORT"`` connects
to a cluster's Ray Client server.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from lcm_lab.sweeps.metrics import install_metrics
from lcm_lab.sweeps.work import Conversations, SummarizerRecipe, Unit, UnitResult, build_summarizer, run_unit

if TYPE_CHECKING:
    from lcm_lab.sweeps.executors import Job


def import_ray() -> Any:
    # Ray reports usage statistics over the network unless told not to; the lab stays offline.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray's C++ failure handler prints a stack dump on SIGTERM before the lab's own handler says
    # in one line that the sweep was terminated.
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    try:
        import ray
    except ImportError:
        raise RuntimeError("the ray executor needs Ray: pip install 'lcm_lab[ray]' (on the driver and every worker)") from None
    return ray


def _task(units: list[Unit], data: Conversations, recipe: SummarizerRecipe, score_qa: bool, fault: str | None,
          score_cost: bool = False, metrics: bytes | None = None) -> list[UnitResult]:
    install_metrics(metrics)
    summarizer = build_summarizer(recipe)
    return [run_unit(unit, data, summarizer, score_qa=score_qa, fault=fault, encode=True, score_cost=score_cost) for unit in units]


def _join_cluster(ray: Any, address: str) -> None:
    """Join the Ray cluster at ``address`` (``ray://HOST:PORT``); a client package missing or a
    cluster that cannot be reached is one line naming the address, not Ray's traceback."""
    from lcm_lab.errors import DependencyError, OptionError
    from lcm_lab.summarizers.provider import display_url

    try:
        with warnings.catch_warnings():  # some Ray releases also warn of the timeout the error names
            warnings.simplefilter("ignore")
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except (ValueError, ConnectionError, RuntimeError, TimeoutError) as exc:
        reason = " ".join(str(exc).split())[:300]
        if "ray[client]" in reason:
            raise DependencyError(f"executor {display_url(address)}: joining a Ray cluster needs Ray's client: pip install 'ray[client]'") from exc
        raise OptionError(f"executor {display_url(address)}: cannot join the Ray cluster ({type(exc).__name__}: {reason})") from exc


class RaySession:
    """A Ray runtime for one sweep: joined or started once, the shared inputs put once."""

    def __init__(self, executor: str, job: Job, workers: int) -> None:
        self.ray = ray = import_ray()
        self.started_here = False
        if not ray.is_initialized():
            # ray.init installs a SIGTERM handler that exits the process on the spot; the sweep's own
            # (the CLI's) must stay, so that a terminated sweep stops its tasks and is recorded as such.
            keep = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
            if executor.startswith("ray://"):
                _join_cluster(ray, executor)
            else:
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
                self.started_here = True
            if keep is not None:
                signal.signal(signal.SIGTERM, keep)
        self.job = job
        self.task = ray.remote(_task)
        self.data_ref, self.recipe_ref, self.metrics_ref = ray.put(job.data), ray.put(job.recipe), ray.put(job.metrics)

    def run(self, chunks: Sequence[list[Unit]]) -> Iterator[list[UnitResult]]:
        """Results per chunk (several units of one conversation), as chunks finish."""
        ray = self.ray
        pending = [self.task.remote(chunk, self.data_ref, self.recipe_ref, self.job.score_qa, self.job.fault,
                                    self.job.score_cost, self.metrics_ref) for chunk in chunks]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                yield ray.get(ref)

    def close(self) -> None:
        if self.started_here:
            with _terminal_quiet():
                self.ray.shutdown()


@contextmanager
def _terminal_quiet() -> Iterator[None]:
    """Point file descriptor 2 at the null device for a moment. Shutting Ray down while tasks are
    pending (a sweep stopped by Ctrl-C or SIGTERM) makes its C++ core write "Failed to push error
    to driver" straight to the terminal on a loaded machine, around the lab's one-line message;
    the same line is in the session's python-core-driver log, so nothing is lost."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 to quiet
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
