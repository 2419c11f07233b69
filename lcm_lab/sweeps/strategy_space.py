"""The strategy dimension of a sweep: which strategies a spec may list, which parameters each
takes in ``strategy_config``, and of what kind (for grids, random draws and Optuna).

LCM's parameters are the plugin's knobs (``base`` and ``space``, checked by
:class:`~lcm_lab.engine.config.lcm_config.LcmConfig`); the observer strategies (``clawvault``,
``observer_regex``) take the fields of
:class:`~lcm_lab.strategies.clawvault.ObserverParams`; ``truncate``, ``full`` and ``recorded``
take none (``recorded`` replays the host's events from the conversation's own source).

>>> sorted(parameter_kinds("observer_regex"))[:3]
['archive_days', 'fidelity', 'flush_at_end']
>>> parameter_kinds("observer_regex")["observe_threshold"], parameter_kinds("observer_regex")["tail"]
(Kind(kind='int', optional=False, choices=()), Kind(kind='choice', optional=False, choices=('fill', 'unobserved')))
>>> parameter_kinds("truncate")
{}
"""

from __future__ import annotations

import types
import typing
from functools import cache
from typing import Any, NamedTuple

from lcm_lab.strategies import STRATEGY_NAMES

STRATEGY_KEY = "strategy"
LCM = "lcm"
OBSERVERS = ("clawvault", "observer_regex")
NEEDS_MODEL = ("clawvault",)  # compresses with a model: a litellm summarizer


class Kind(NamedTuple):
    """A strategy parameter's kind: ``int``, ``number``, ``bool``, ``choice`` or ``str``."""

    kind: str
    optional: bool = False
    choices: tuple[str, ...] = ()


@cache
def parameter_kinds(strategy: str) -> dict[str, Kind]:
    """The parameters ``strategy`` takes in ``strategy_config`` (LCM's are plugin keys, not here)."""
    if strategy not in OBSERVERS:
        return {}
    from lcm_lab.strategies.clawvault import ObserverParams

    return {name: _kind(hint) for name, hint in typing.get_type_hints(ObserverParams).items()}


def _kind(hint: Any) -> Kind:
    args = typing.get_args(hint)
    optional = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        optional = type(None) in args
        (hint,) = [a for a in args if a is not type(None)]
    if typing.get_origin(hint) is typing.Literal:
        return Kind("choice", optional, tuple(str(a) for a in typing.get_args(hint)))
    names = {bool: "bool", int: "int", float: "number", str: "str"}
    return Kind(names[hint], optional)


def value_problem(kind: Kind, value: Any) -> str | None:
    """Why ``value`` cannot be given to a parameter of ``kind`` (``None``: it can).

    >>> value_problem(Kind("int"), 2.5)
    'invalid value 2.5; expected an integer'
    >>> value_problem(Kind("choice", choices=("fill", "unobserved")), "all")
    "invalid value 'all'; allowed: fill, unobserved"
    """
    if value is None:
        return None if kind.optional else "invalid value None; this parameter needs a value"
    if kind.kind == "int" and not (isinstance(value, int) and not isinstance(value, bool)):
        return f"invalid value {value!r}; expected an integer"
    if kind.kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
        return f"invalid value {value!r}; expected a number"
    if kind.kind == "bool" and not isinstance(value, bool):
        return f"invalid value {value!r}; expected true or false"
    if kind.kind == "choice" and value not in kind.choices:
        return f"invalid value {value!r}; allowed: {', '.join(kind.choices)}"
    if kind.kind == "str" and not isinstance(value, str):
        return f"invalid value {value!r}; expected a string"
    return None


def strategy_problems(
    strategies: list[Any], knobs: list[str], config: dict[str, dict[str, Any]], summarizer: str
) -> list[str]:
    """Problems of a spec's strategy dimension (``space.strategy``), its plugin knobs and its
    ``strategy_config``, each as ``key: message`` naming what is allowed."""
    problems: list[str] = []
    unknown = [s for s in strategies if s not in STRATEGY_NAMES]
    if unknown or not strategies:
        what = f"unknown strategy {unknown[0]!r}" if unknown else "empty list of strategies"
        return [f"space.strategy: {what}; allowed: {', '.join(STRATEGY_NAMES)}"]
    if len(set(strategies)) != len(strategies):
        problems.append("space.strategy: a strategy is listed twice")
    if knobs and LCM not in strategies:
        problems.append(f"space.{knobs[0]}: plugin knobs vary strategy 'lcm', which space.strategy does not list")
    for name in NEEDS_MODEL:
        if name in strategies and summarizer != "litellm":
            problems.append(f"space.strategy: {name!r} compresses with a model and needs summarizer 'litellm' "
                            f"(got {summarizer!r}); 'observer_regex' is its LLM-free fallback")
    for name, params in config.items():
        where = f"strategy_config.{name}"
        if name not in strategies:
            problems.append(f"{where}: strategy not in space.strategy; allowed: {', '.join(strategies)}")
            continue
        if name == LCM:
            problems.append(f"{where}: LCM takes plugin config keys in base and space")
            continue
        kinds = parameter_kinds(name)
        if not kinds and params:
            problems.append(f"{where}: strategy {name!r} takes no parameters")
            continue
        for key, value in params.items():
            kind = kinds.get(key)
            if kind is None:
                problems.append(f"{where}.{key}: unknown parameter; allowed: {', '.join(sorted(kinds))}")
                continue
            problems += [f"{where}.{key}: {p}" for p in _values_problems(kind, value)]
    return problems


def _values_problems(kind: Kind, value: Any) -> list[str]:
    from lcm_lab.sweeps.spec import Range

    if isinstance(value, Range):
        if kind.kind not in ("int", "number"):
            return [f"a range needs a numeric parameter (this one is {kind.kind}); give a list of values"]
        return []  # an integer parameter's range: SweepSpec._integer_ranges, for plugin knobs too
    if isinstance(value, list):
        if not value:
            return ["empty list of values"]
        return [p for p in (value_problem(kind, v) for v in value) if p][:1]
    problem = value_problem(kind, value)
    return [problem] if problem else []
