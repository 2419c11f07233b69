"""The Ray executor: sweep units as Ray tasks, on a local Ray or an existing cluster.

Tasks get the conversations and the summarizer recipe through Ray's object store (put once),
run :func:`~lcm_lab.sweep.work.run_unit`, and return their results (replay, scores, and for
litellm the ledger entries they recorded) to the driver, which is the only writer of the lab
store. Model calls in a task go through a :class:`~lcm_lab.sweep.ledgers.BufferLedger` seeded
with the store's reusable responses.

``executor="ray"`` joins the Ray runtime this process already started (``ray.init(...)``) or
starts a local one with ``workers`` CPUs (shut down afterwards); ``"ray://HOST:PORT"`` connects
to a cluster's Ray Client server.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from lcm_lab.sweep.work import Conversations, SummarizerRecipe, Unit, UnitResult, build_summarizer, run_unit

if TYPE_CHECKING:
    from lcm_lab.sweep.executors import Job


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError("the ray executor needs Ray: pip install 'lcm_lab[ray]' (on the driver and every worker)") from None
    return ray


def _task(unit: Unit, data: Conversations, recipe: SummarizerRecipe, score_qa: bool, fault: str | None) -> UnitResult:
    return run_unit(unit, data, build_summarizer(recipe), score_qa=score_qa, fault=fault)


def run_on_ray(executor: str, job: Job, units: Sequence[Unit], workers: int) -> Iterator[UnitResult]:
    ray = import_ray()
    started_here = False
    if not ray.is_initialized():
        if executor.startswith("ray://"):
            ray.init(address=executor, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            started_here = True
    try:
        task = ray.remote(_task)
        data_ref, recipe_ref = ray.put(job.data), ray.put(job.recipe)
        pending = [task.remote(unit, data_ref, recipe_ref, job.score_qa, job.fault) for unit in units]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                yield ray.get(ref)
    finally:
        if started_here:
            ray.shutdown()
