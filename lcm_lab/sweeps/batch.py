"""Many replays at once: conversations × configurations, side by side in threads.

Inside one replay the summarizer calls are sequential (each leaf pass gets the previous pass's
summary as context), so throughput comes from running replays in parallel. The threads share
one summarizer — for :class:`~lcm_lab.summarizers.litellm_summarizer.LiteLLMSummarizer` that
means one bounded pool of in-flight model calls and one ledger (repeated chunks are served from
its cache).

>>> from lcm_lab.engine.config.lcm_config import LcmConfig
>>> from lcm_lab.engine.types import Conversation, InputEntry
>>> from lcm_lab.summarizers import get_summarizer
>>> chat = Conversation("demo", entries=(
...     InputEntry(2, "message", {"role": "user", "content": "hello " * 400, "timestamp": 0}),
...     InputEntry(3, "message", {"role": "user", "content": "and now?", "timestamp": 1000})))
>>> outcomes = replay_many([chat], [ReplaySpec("tiny", LcmConfig(fresh_tail_count=1), 500)],
...                        get_summarizer("offline"), concurrency=2, progress=False)
>>> [(o.job.label, len(o.replay.summaries)) for o in outcomes]
[('demo/tiny', 1)]
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, Literal, NamedTuple

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.protocol import Summarizer
from lcm_lab.engine.types import Conversation

DEFAULT_BATCH_BUDGET = 128_000


class ReplaySpec(NamedTuple):
    """A named configuration with the token budget to replay it at."""

    name: str
    config: LcmConfig
    token_budget: int


class ReplayJob(NamedTuple):
    """One replay of the batch."""

    index: int
    conversation: Conversation
    spec: ReplaySpec

    @property
    def label(self) -> str:
        return f"{self.conversation.session_id or f'conversation-{self.index}'}/{self.spec.name}"


class ReplayOutcome(NamedTuple):
    """What one job produced: the replay, or the error that stopped it."""

    job: ReplayJob
    replay: Any | None
    error: BaseException | None
    seconds: float


class ReplayBatchError(RuntimeError):
    """Raised (with ``errors="raise"``) when a replay failed; ``outcomes`` holds every result."""

    def __init__(self, message: str, outcomes: list[ReplayOutcome]) -> None:
        super().__init__(message)
        self.outcomes = outcomes


ReplayFunction = Callable[..., Any]


def _specs(configs: Sequence[LcmConfig | ReplaySpec | tuple[str, LcmConfig, int]], token_budget: int | None) -> list[ReplaySpec]:
    specs: list[ReplaySpec] = []
    for i, item in enumerate(configs):
        if isinstance(item, LcmConfig):
            specs.append(ReplaySpec(f"config-{i}", item, token_budget or DEFAULT_BATCH_BUDGET))
        elif isinstance(item, tuple) and len(item) == 3:
            specs.append(ReplaySpec(*item))
        else:
            raise TypeError(f"configs[{i}]: expected LcmConfig or ReplaySpec(name, config, token_budget), got {type(item).__name__}")
    return specs


def replay_many(
    conversations: Sequence[Conversation],
    configs: Sequence[LcmConfig | ReplaySpec | tuple[str, LcmConfig, int]],
    summarizer: Summarizer,
    *,
    concurrency: int = 8,
    token_budget: int | None = None,
    errors: Literal["raise", "collect"] = "raise",
    progress: bool = True,
    replay_fn: ReplayFunction | None = None,
    **replay_kwargs: Any,
) -> list[ReplayOutcome]:
    """Replay every conversation under every config, ``concurrency`` replays at a time.

    ``configs`` are :class:`ReplaySpec` values (or plain :class:`LcmConfig`, replayed at
    ``token_budget``). Replays start largest first; outcomes come back in input order
    (conversation-major). With
    ``errors="raise"`` the first failure stops new replays from starting and raises
    :class:`ReplayBatchError` once running ones finish; ``"collect"`` returns failures in the
    outcomes. ``replay_fn`` defaults to :func:`lcm_lab.engine.replay.driver.replay`; extra keyword
    arguments are passed to it.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if replay_fn is None:
        from lcm_lab.engine.replay.driver import replay as replay_fn
    specs = _specs(configs, token_budget)
    jobs = [ReplayJob(i * len(specs) + j, conv, spec) for i, conv in enumerate(conversations) for j, spec in enumerate(specs)]
    stop = threading.Event()
    run = replay_fn

    def work(job: ReplayJob) -> ReplayOutcome:
        if stop.is_set():
            return ReplayOutcome(job, None, RuntimeError("not started: an earlier replay failed"), 0.0)
        started = time.perf_counter()
        try:
            result = run(job.conversation, job.spec.config, summarizer, token_budget=job.spec.token_budget, **replay_kwargs)
        except Exception as exc:  # reported in the outcome (and raised below in "raise" mode)
            if errors == "raise":
                stop.set()
            return ReplayOutcome(job, None, exc, time.perf_counter() - started)
        return ReplayOutcome(job, result, None, time.perf_counter() - started)

    outcomes: dict[int, ReplayOutcome] = {}
    bar = _progress(len(jobs), progress)
    # Start the biggest replays first (longest-processing-time-first scheduling): a batch
    # cannot finish before its longest replay, so that one should not start last.
    by_size = sorted(jobs, key=lambda job: (-estimated_work(job), job.index))
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="lcm-replay") as executor:
        futures: dict[Future[ReplayOutcome], ReplayJob] = {executor.submit(work, job): job for job in by_size}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                outcome = future.result()
                outcomes[outcome.job.index] = outcome
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    ordered = [outcomes[job.index] for job in jobs]
    failed = [o for o in ordered if o.error is not None and not str(o.error).startswith("not started")]
    if errors == "raise" and failed:
        first = failed[0]
        raise ReplayBatchError(f"replay {first.job.label} failed: {type(first.error).__name__}: {first.error}", ordered) from first.error
    return ordered


def estimated_work(job: ReplayJob) -> float:
    """Rough cost of a replay: conversation characters per leaf-chunk token (more chunks, more calls)."""
    conversation = job.conversation
    if conversation.entries:
        size = sum(len(repr(e.message)) for e in conversation.entries if e.message is not None)
    else:
        size = sum(len(m.content) for m in conversation.stored_messages)
    return size / max(1, job.spec.config.leaf_chunk_tokens)


def _progress(total: int, enabled: bool) -> Any:
    if not enabled or total <= 1:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="replays", unit="replay")
