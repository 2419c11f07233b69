"""The metrics a sweep can optimise: a registry of named functions ``ScoredRun -> list[Score]``.

Each function returns the run-level score(s) for its name (empty when the metric is undefined for
the run, e.g. QA retention on a conversation without QA items). New metrics plug in with
:func:`register_metric`; sweeps, ``sweep_df`` and ``recommend`` pick them up by name.

A metric registered outside the lab (in a script, a notebook cell, inside a function) is not
registered in a worker process or a Ray task, which only import the lab: :func:`custom_metrics`
finds those, :func:`pack_metrics` serialises them (by value with cloudpickle, so closures and
notebook functions travel too) and :func:`install_metrics` registers them in the worker. A
metric that cannot travel (it holds an open file, a lock, a database connection) is a
:class:`MetricTransportError` when the sweep starts, never a silent ``None``.

>>> sorted(METRICS)[:3]
['cache_hit_rate', 'compacting_turns', 'cost_usd']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from lcm_lab.errors import SpecError
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.verdicts import COST, END_OF_RUN, HEADLINES


class ScoredRun(NamedTuple):
    """A replay with every score :func:`~lcm_lab.metrics.score.score_replay` gave it."""

    replay: Any
    scores: Sequence[Score]


MetricFunction = Callable[[ScoredRun], list[Score]]
METRICS: dict[str, MetricFunction] = {}


def register_metric(name: str) -> Callable[[MetricFunction], MetricFunction]:
    """Decorator adding ``function`` to :data:`METRICS` under ``name``."""

    def add(function: MetricFunction) -> MetricFunction:
        METRICS[name] = function
        return function

    return add


class MetricTransportError(SpecError, RuntimeError):
    """A custom metric cannot be sent to the sweep's worker processes or Ray tasks."""


def custom_metrics() -> dict[str, MetricFunction]:
    """The registered metrics whose functions live outside ``lcm_lab`` (a worker that imports the
    lab does not have them).

    >>> custom_metrics()
    {}
    """
    return {name: f for name, f in METRICS.items() if not getattr(f, "__module__", "").startswith("lcm_lab.")}


def pack_metrics(metrics: Mapping[str, MetricFunction]) -> bytes:
    """``metrics`` serialised for another process; :class:`MetricTransportError` names the one
    that cannot be and how to fix it."""
    import cloudpickle

    for name, function in metrics.items():
        try:
            cloudpickle.dumps(function)
        except Exception as exc:
            raise MetricTransportError(
                f"metric {name!r} cannot be sent to the sweep's worker processes ({type(exc).__name__}: {exc}); "
                "make it a function that holds no open file, connection or lock (open them inside it), "
                "or run the sweep with executor='serial' or 'threads'"
            ) from exc
    return cloudpickle.dumps(dict(metrics))


def install_metrics(packed: bytes | None) -> None:
    """Register metrics :func:`pack_metrics` serialised (in a worker process or Ray task)."""
    if packed:
        import pickle

        METRICS.update(pickle.loads(packed))


def run_score(run: ScoredRun, metric: str) -> Score | None:
    """The run-scope score called ``metric``, if the run has one."""
    return next((s for s in run.scores if s.scope == "run" and s.metric == metric), None)


def _run_metric(name: str) -> MetricFunction:
    def read(run: ScoredRun) -> list[Score]:
        found = run_score(run, name)
        return [found] if found is not None else []

    read.__doc__ = f"The run-scope ``{name}`` score."
    return read


for _name in (
    "peak_context_tokens", "mean_context_tokens", "peak_budget_fraction", "turns_over_threshold",
    "compacting_turns", "summarizer_calls", "summarizer_input_tokens", "summarizer_output_tokens",
    "summarizer_cost_usd",
):  # fmt: skip
    register_metric(_name)(_run_metric(_name))

# The headlines, by the names their one scorer gives them (lcm_lab.metrics.verdicts): the probed
# ones with their end-of-run diagnostics, and the prompt-cache cost model's two (main model +
# summarizer dollars, the share of prompt tokens read from the provider cache), priced only when a
# sweep's objectives or constraints name one (it needs a transcript that records provider usage).
COST_METRICS = COST
for _name in (*HEADLINES, *END_OF_RUN.values()):
    register_metric(_name)(_run_metric(_name))


# The headlines a sweep reports with their chance control, and the sweep_df column of each.
CHANCE_COLUMNS: dict[str, str] = {name: f"{name}_chance" for name in ("qa_retention", "fact_retention", "decision_retention")}
CONTROL_COLUMNS: tuple[str, ...] = (*CHANCE_COLUMNS.values(), "chance_donor", "chance_note")


def chance_value(score: Score | None) -> float | None:
    """A headline's chance control on the headline's own scale (``(chance − floor) / (ceiling −
    floor)``, comparable with its value); ``None`` when the headline is withheld or has no chance.

    >>> chance_value(Score("r", "run", "", "qa_retention", 0.5, {"chance": 0.2, "floor": 0.1, "ceiling": 0.9}))
    0.125
    """
    if score is None or score.value is None:
        return None
    d = score.details
    chance, floor, ceiling = d.get("chance"), d.get("floor"), d.get("ceiling")
    if chance is None or floor is None or ceiling is None or ceiling == floor:
        return None
    if not d.get("normalised", True):
        return float(chance)
    return (float(chance) - float(floor)) / (float(ceiling) - float(floor))


def chance_controls(run: ScoredRun, donor: str | None, note: str | None = None) -> dict[str, Any]:
    """A sweep row's chance controls: ``<headline>_chance`` of each :data:`CHANCE_COLUMNS` headline
    (on the scale of its headline), ``chance_donor`` (the key of the conversation they read) and
    ``chance_note`` (why there is none, when there is none)."""
    out: dict[str, Any] = {column: chance_value(run_score(run, name)) for name, column in CHANCE_COLUMNS.items()}
    out["chance_donor"] = donor
    out["chance_note"] = note
    return out


def metric_values(run: ScoredRun, names: Sequence[str] | None = None) -> dict[str, float | None]:
    """``{metric: value}`` for ``names`` (default: every registered metric)."""
    out: dict[str, float | None] = {}
    for name in names if names is not None else sorted(METRICS):
        scores = METRICS[name](run)
        out[name] = scores[0].value if scores else None
    return out
