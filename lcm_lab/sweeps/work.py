"""One unit of sweep work — a configuration replayed on a conversation and scored — runnable in
this process, a worker process or a Ray task. It never touches the lab store: everything it
produced (replay, scores, ledger entries, or the error) comes back in a :class:`UnitResult`.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.versions import DEFAULT_ENGINE
from lcm_lab.sweeps import sent_metrics as _sent_metrics  # noqa: F401  (registers the sent-token metrics)
from lcm_lab.sweeps.metrics import ScoredRun, chance_controls, metric_values


class Unit(NamedTuple):
    """What to run: ``config_id`` on conversation ``conversation_key`` (an index into the sweep's
    conversations, shared with workers once)."""

    sweep_id: str
    config_id: str
    conversation_key: str
    run_id: str
    config: LcmConfig | None  # LCM's resolved plugin config (None for other strategies)
    token_budget: int
    strategy: str = "lcm"
    strategy_params: Mapping[str, Any] | None = None  # the strategy's own parameters (not LCM's)
    engine: str = DEFAULT_ENGINE  # LCM: the lossless-claw version replayed (lcm_lab.engine.versions)


class Conversations(NamedTuple):
    """The sweep's conversations by key, with LoCoMo QA items and recorded host events where the
    source has them, and each conversation's chance-control donor: the key of another of the
    sweep's conversations (``donors``), or why there is none (``no_donor``); ``shared``: the sessions
    that appear as several of the conversations (which are then not independent)."""

    conversations: dict[str, Any]
    qa_items: dict[str, tuple[Any, ...]]
    events: dict[str, tuple[Any, ...]] = {}  # noqa: RUF012  (never mutated)
    donors: dict[str, str] = {}  # noqa: RUF012  (never mutated)
    no_donor: dict[str, str] = {}  # noqa: RUF012  (never mutated)
    shared: dict[str, list[str]] = {}  # noqa: RUF012  (never mutated) session id -> keys of one session listed more than once


class StoredRun(NamedTuple):
    """A unit's replay and scores already encoded as the store's rows (``EncodedReplay`` and
    score rows): workers send these back, so the sweep's one writer only inserts."""

    replay: Any
    scores: list[Any]


class UnitResult(NamedTuple):
    unit: Unit
    replay: Any | None
    scores: list[Any]
    metrics: dict[str, float | None]
    error: str | None
    seconds: float
    ledger_entries: list[Any]
    stored: StoredRun | None = None  # set instead of replay and scores when the unit ran with encode=True
    controls: dict[str, Any] = {}  # noqa: RUF012  (never mutated) the chance controls (sweeps.metrics.chance_controls)
    cost: dict[str, Any] = {}  # noqa: RUF012  (never mutated) the simulated bill of a priced run (sweeps.cost.price_run)
    failed_calls: int = 0  # summarizer calls whose summary is the fallback because the model gave none


def run_unit(unit: Unit, data: Conversations, summarizer: Any, *, score_qa: bool, fault: str | None = None,
             encode: bool = False, score_cost: bool = False) -> UnitResult:
    """Replay and score one unit; an exception becomes the result's ``error`` (with traceback).

    ``encode`` (worker processes, Ray tasks) returns the replay and scores as store rows
    (:class:`StoredRun`) instead of objects: encoding a replay (payload, per-turn sent contexts)
    costs about as much as scoring it, so it belongs in the worker, not in the single writer.
    ``score_cost`` adds the cost model's ``cost_usd`` and ``cache_hit_rate`` (priced with the
    model the transcript's recorded calls went to; a conversation without recorded provider usage
    fails the unit with the reason) and the run's simulated bill (``cost``, :mod:`lcm_lab.sweeps.cost`). ``fault`` (tests) makes the unit whose config id or
    conversation key equals it fail.
    """
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.metrics.donor import donor_text
    from lcm_lab.metrics.score import score_replay
    from lcm_lab.sweeps.cost import price_run

    started = time.perf_counter()
    try:
        if fault is not None and fault in (unit.config_id, unit.conversation_key):
            raise RuntimeError(f"injected fault for {fault}")
        conversation = data.conversations[unit.conversation_key]
        if unit.strategy == "lcm":
            assert unit.config is not None
            run = replay(conversation, unit.config, summarizer, token_budget=unit.token_budget, run_id=unit.run_id,
                         engine=unit.engine, check_calls=False)  # type: ignore[arg-type]
        else:
            run = _run_strategy(unit, data, conversation, summarizer)
        failed_calls = _failed_model_calls(run, summarizer)  # the rule in the sweep's words (a worker shows no warning)
        qa = data.qa_items.get(unit.conversation_key) if score_qa else None
        last = [run.turns[-1].turn] if run.turns else []
        donor_key = data.donors.get(unit.conversation_key)
        donor = data.conversations[donor_key] if donor_key is not None else None
        scores = score_replay(run, run_id=unit.run_id, qa_items=qa or None, context_turns=last, chance_conversation=donor,
                              donor_text=donor_text(donor) if donor is not None else None, donor_label=donor_key)
        cost: dict[str, Any] = {}
        if score_cost:
            priced, cost = price_run(run, conversation, unit.run_id)
            scores += priced
        metrics = metric_values(ScoredRun(run, scores))
        controls = chance_controls(ScoredRun(run, scores), donor_key, data.no_donor.get(unit.conversation_key))
        if unit.strategy != "lcm":
            metrics = strategy_metrics(run, scores, metrics)
        run = dataclasses.replace(run, meta={**run.meta, "sweep_id": unit.sweep_id, "config_id": unit.config_id})
        stored = stored_run(run, scores, unit.sweep_id) if encode else None
    except Exception as exc:  # recorded with the unit; the sweep goes on
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
        return UnitResult(unit, None, [], {}, error, time.perf_counter() - started, _drain(summarizer))
    if stored is not None:
        return UnitResult(unit, None, [], metrics, None, time.perf_counter() - started, _drain(summarizer), stored, controls, cost,
                          failed_calls)  # fmt: skip
    return UnitResult(unit, run, scores, metrics, None, time.perf_counter() - started, _drain(summarizer), controls=controls, cost=cost,
                      failed_calls=failed_calls)  # fmt: skip


def _failed_model_calls(run: Any, summarizer: Any = None) -> int:
    """How many of the run's model calls (an LCM replay's summarizer calls, another strategy's
    own: clawvault's compression) fell back because the model gave no usable reply (none, or a
    summary not shorter than its input). The lab's one
    rule for failed model calls decides (:func:`lcm_lab.summarizers.call_checks.check_calls`):
    when every call failed, or the provider refused the credentials (the engine dropped those
    passes), the unit fails with a :class:`ModelCallsFailedError` (a dead server or a wrong model
    must not yield a recommendation)."""
    from lcm_lab.summarizers.call_checks import check_calls, run_calls

    failed, _warning = check_calls(run_calls(run, summarizer), "the run", "it was not scored")  # the sweep counts the warning's calls
    return failed


def _run_strategy(unit: Unit, data: Conversations, conversation: Any, summarizer: Any) -> Any:
    """Another strategy's run (``recorded`` takes the host's events from the conversation's source)."""
    from lcm_lab.strategies import get_strategy
    from lcm_lab.strategies.recorded import _EVENT_FIELDS

    params = dict(unit.strategy_params or {})
    if unit.strategy == "recorded":
        events = data.events.get(unit.conversation_key, ())
        params["events"] = [{k: getattr(e, k) for k in _EVENT_FIELDS} for e in events]
    run = get_strategy(unit.strategy, **params).run(conversation, summarizer, unit.token_budget, check_calls=False)  # a worker shows no warning
    return dataclasses.replace(run, run_id=unit.run_id)


# The LCM names of a sweep's effort metrics, read from what every strategy's scores call them.
_STRATEGY_EQUIVALENTS = {
    "summarizer_calls": "model_calls",
    "summarizer_input_tokens": "model_input_tokens",
    "summarizer_output_tokens": "model_output_tokens",
    "summarizer_cost_usd": "model_cost_usd",
}


def strategy_metrics(run: Any, scores: Sequence[Any], metrics: Mapping[str, float | None]) -> dict[str, float | None]:
    """A non-LCM run's sweep metrics: model calls and their tokens and cost under the sweep's
    ``summarizer_*`` names, and ``peak_budget_fraction``; LCM-only metrics (``compacting_turns``,
    ``turns_over_threshold``) stay ``None``."""
    out = dict(metrics)
    run_scores = {s.metric: s.value for s in scores if s.scope == "run"}
    for name, source in _STRATEGY_EQUIVALENTS.items():
        if out.get(name) is None and source in run_scores:
            out[name] = run_scores[source]
    peak = out.get("peak_context_tokens")
    if out.get("peak_budget_fraction") is None and peak is not None and run.token_budget:
        out["peak_budget_fraction"] = peak / run.token_budget
    return {k: v for k, v in out.items() if k in metrics}


def stored_run(run: Any, scores: list[Any], label: str) -> StoredRun | None:
    """``run`` and its scores as store rows (``None`` for runs of strategies without an LCM
    replay: the writer saves those itself)."""
    from lcm_lab.store.replays import encode_replay
    from lcm_lab.store.scores import score_rows

    if hasattr(run, "strategy") and run.replay is None:
        return None
    return StoredRun(encode_replay(run, label=label), score_rows(scores))


def _drain(summarizer: Any) -> list[Any]:
    ledger = getattr(summarizer, "ledger", None)
    drain = getattr(ledger, "drain", None)
    return drain() if callable(drain) else []


class SummarizerRecipe(NamedTuple):
    """How a worker builds its own summarizer (picklable; the litellm one gets a BufferLedger)."""

    name: str
    options: dict[str, Any]
    snapshot: dict[str, Any]


def build_summarizer(recipe: SummarizerRecipe) -> Any:
    from lcm_lab.summarizers import get_summarizer

    if recipe.name != "litellm":
        return get_summarizer(recipe.name)
    from lcm_lab.sweeps.ledgers import BufferLedger

    return get_summarizer("litellm", **recipe.options, ledger=BufferLedger(recipe.snapshot))
