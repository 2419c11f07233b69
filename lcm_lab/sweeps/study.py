"""Optuna search for sweeps: TPE (one or more objectives), NSGA-II (Pareto fronts) or random,
with constraints (``peak_context_tokens <= X``) as Optuna trial constraints (``set_constraint``).

The study lives in memory and is rebuilt from the store on resume: finished configurations are
re-enqueued with their stored results (no unit runs twice), then new trials are asked for in
batches of ``workers`` so parallel executors stay busy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lcm_lab.sweeps.spec import Point, Range, SweepSpec, dimensions, point
from lcm_lab.sweeps.strategy_space import LCM, STRATEGY_KEY

if TYPE_CHECKING:
    from lcm_lab.sweeps.run import _Session


def _sampler(spec: SweepSpec) -> Any:
    import optuna

    name = spec.search.sampler or ("nsga2" if len(spec.objectives) > 1 else "tpe")
    seed = spec.search.seed
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(4, min(20, spec.search.trials or 4)))
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=max(2, (spec.search.trials or 10) // 3))


def _suggest(trial: Any, name: str, kind: str, values: Sequence[Any] | Range) -> Any:
    if not isinstance(values, Range):
        return trial.suggest_categorical(name, list(values))
    if kind == "int":
        return trial.suggest_int(name, int(values.low), int(values.high), step=int(values.step or 1), log=values.log)
    return trial.suggest_float(name, values.low, values.high, step=values.step, log=values.log)


def _optuna_name(strategy: str | None, key: str) -> str:
    # Two strategies may share a parameter name with different ranges; Optuna keeps one
    # distribution per name, so non-LCM parameters are namespaced by their strategy.
    return key if strategy in (None, LCM) else f"{strategy}.{key}"


def suggest_params(trial: Any, spec: SweepSpec) -> dict[str, Any]:
    """A trial's parameters: the strategy (a categorical) first, then that strategy's own
    (a conditional search space, which Optuna's define-by-run API samples natively)."""
    by_strategy = dimensions(spec)
    strategy, dims = by_strategy[0]
    head: dict[str, Any] = {}
    if strategy is not None:
        chosen = trial.suggest_categorical(STRATEGY_KEY, [s for s, _ in by_strategy])
        strategy, dims = next((s, d) for s, d in by_strategy if s == chosen)
        head = {STRATEGY_KEY: chosen}
    return {**head, **{d.key: _suggest(trial, _optuna_name(strategy, d.key), d.kind, d.values) for d in dims}}


def optuna_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Stored point parameters under the names :func:`suggest_params` gives Optuna."""
    strategy = params.get(STRATEGY_KEY)
    return {(k if k == STRATEGY_KEY else _optuna_name(strategy, k)): v for k, v in params.items()}


def config_means(metrics: Sequence[Mapping[str, float | None]], names: Sequence[str]) -> dict[str, float | None]:
    """Mean of each metric over a configuration's conversations (``None`` if any is missing).

    >>> config_means([{"a": 1.0}, {"a": 3.0}], ["a"])
    {'a': 2.0}
    """
    out: dict[str, float | None] = {}
    for name in names:
        values = [m.get(name) for m in metrics]
        ok = [float(v) for v in values if v is not None and not math.isnan(float(v))]
        out[name] = sum(ok) / len(ok) if ok and len(ok) == len(values) else None
    return out


def constraint_values(spec: SweepSpec, means: Mapping[str, float | None]) -> dict[str, float]:
    """Optuna constraint values (``<= 0`` feasible) for the spec's constraints, by name.

    A missing metric counts as infeasible (a large finite value: Optuna refuses NaN).
    """
    values = {}
    for c in spec.constraints:
        v = means.get(c.metric)
        if c.max is not None:
            values[f"{c.metric}<={c.max:g}"] = 1e18 if v is None else v - c.max
        if c.min is not None:
            values[f"{c.metric}>={c.min:g}"] = 1e18 if v is None else c.min - v
    return values


def run_study(session: _Session, baseline: Point) -> None:
    import optuna

    spec = session.spec
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=[o.direction for o in spec.objectives], sampler=_sampler(spec))
    session.run(session.units([baseline]))
    known = _stored_points(session)
    for trial_number, p in known:
        session.run(session.units([p]))  # finishes configurations a killed run left half done
        study.enqueue_trial(optuna_params(p.params))
        trial = study.ask()
        suggest_params(trial, spec)  # the enqueued values: the study learns from resumed trials too
        _tell(session, study, trial, p, trial_number)
    total = spec.search.trials or 0
    number = len(known)
    while number < total:
        batch = []
        for _ in range(min(session.workers, total - number)):
            trial = study.ask()
            p = point(spec, suggest_params(trial, spec))
            session.register([p], trials=[number])
            batch.append((trial, p, number))
            number += 1
        session.run(session.units(p for _, p, _ in batch))
        for trial, p, n in batch:
            _tell(session, study, trial, p, n)


def _stored_points(session: _Session) -> list[tuple[int, Point]]:
    from lcm_lab.store.sweeps import trial_params

    return [(t, point(session.spec, params)) for t, params in trial_params(session.store, session.sweep_id)]


def _tell(session: _Session, study: Any, trial: Any, p: Point, number: int) -> None:
    import optuna

    spec = session.spec
    from lcm_lab.store.sweeps import ok_metrics

    metrics = ok_metrics(session.store, session.sweep_id, p.config_id)
    names = sorted({o.metric for o in spec.objectives} | {c.metric for c in spec.constraints})
    means = config_means(metrics, names) if len(metrics) == len(session.data.conversations) else dict.fromkeys(names)
    for name, value in constraint_values(spec, means).items():
        trial.set_constraint(name, value)
    trial.set_user_attr("config_id", p.config_id)
    values = [means[o.metric] for o in spec.objectives]
    if any(v is None for v in values):
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    else:
        study.tell(trial, values)
