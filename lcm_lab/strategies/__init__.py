"""Context strategies on one bench: LCM, ClawVault observational memory, baselines, the host's own.

Every strategy runs a conversation turn by turn and yields a
:class:`~lcm_lab.strategies.base.StrategyRun` with the interface metrics, plots, the report and
sweeps read (``sent(turn, budget)``, ``conversation``, ``token_budget``, ``turns``, plus
``strategy`` and ``strategy_params``). Strategies are pure; the model comes in as an argument.

* ``lcm`` — the lossless-claw engine (:func:`lcm_lab.engine.replay.driver.replay`), plugin config keys;
* ``clawvault`` — ClawVault's observer with model compression through the ledger;
* ``observer_regex`` — ClawVault's deterministic fallback, as its own strategy;
* ``truncate`` — the newest raw messages that fit the budget;
* ``full`` — everything (the ceiling; over-budget turns flagged);
* ``recorded`` — what pi/OpenClaw actually rebuilt after its recorded compactions.

>>> sorted(STRATEGY_NAMES)
['clawvault', 'full', 'lcm', 'observer_regex', 'recorded', 'truncate']
>>> get_strategy("observer_regex", observe_threshold=2000).params
{'observe_threshold': 2000}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lcm_lab.engine.types import Conversation
    from lcm_lab.strategies.base import (
        MemoryItem,
        ModelCall,
        Strategy,
        StrategyError,
        StrategyRun,
        StrategyTurn,
    )

STRATEGY_NAMES: tuple[str, ...] = ("lcm", "clawvault", "observer_regex", "truncate", "full", "recorded")
_BASE = ("MemoryItem", "ModelCall", "Strategy", "StrategyError", "StrategyRun", "StrategyTurn")


def __getattr__(name: str) -> Any:
    # the base types load on first use, so the CLI reads STRATEGY_NAMES without the engine
    if name in _BASE:
        from lcm_lab.strategies import base

        return getattr(base, name)
    raise AttributeError(f"module 'lcm_lab.strategies' has no attribute {name!r}")


def get_strategy(name: str, **params: Any) -> Strategy:
    """The strategy registered as ``name`` with ``params`` (validated here, not at run time)."""
    from lcm_lab.strategies.base import StrategyError
    from lcm_lab.strategies.baselines import FullStrategy, TruncateStrategy
    from lcm_lab.strategies.clawvault import ObserverParams, ObserverStrategy
    from lcm_lab.strategies.lcm import LcmStrategy
    from lcm_lab.strategies.recorded import RecordedStrategy

    strategy: Strategy
    if name == "lcm":
        strategy = LcmStrategy(params=params)
        strategy.config()
    elif name in ("clawvault", "observer_regex"):
        ObserverParams.build(params)
        strategy = ObserverStrategy(name, params)
    elif name == "recorded":
        if set(params) - {"events"}:
            raise StrategyError(f"strategy 'recorded' takes only events (got {', '.join(sorted(params))})")
        strategy = RecordedStrategy(params=params)
    elif name in ("truncate", "full"):
        if params:
            raise StrategyError(f"strategy {name!r} takes no parameters (got {', '.join(sorted(params))})")
        strategy = TruncateStrategy() if name == "truncate" else FullStrategy()
    else:
        raise StrategyError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGY_NAMES)}")
    return strategy


def run_strategy(
    conversation: Conversation,
    strategy: str | Strategy,
    summarizer: Any = None,
    token_budget: int | None = None,
    *,
    on_turn: Callable[[StrategyTurn], None] | None = None,
    check_calls: bool = True,
    **params: Any,
) -> StrategyRun:
    """Run ``strategy`` (a name plus ``params``, or a strategy object) over ``conversation``
    within ``token_budget`` (default: the replay's, 128,000 tokens). Failed model calls follow the
    lab's one rule (:meth:`StrategyBase.run <lcm_lab.strategies.base.StrategyBase.run>`) unless
    ``check_calls=False``."""
    from lcm_lab.engine.replay.driver import DEFAULT_TOKEN_BUDGET
    from lcm_lab.strategies.base import StrategyError

    token_budget = DEFAULT_TOKEN_BUDGET if token_budget is None else token_budget
    if isinstance(strategy, str):
        strategy = get_strategy(strategy, **params)
    elif params:
        raise StrategyError("pass parameters to get_strategy, not with a strategy object")
    return strategy.run(conversation, summarizer, token_budget, on_turn=on_turn, check_calls=check_calls)


__all__ = [
    "STRATEGY_NAMES",
    "MemoryItem",
    "ModelCall",
    "Strategy",
    "StrategyError",
    "StrategyRun",
    "StrategyTurn",
    "get_strategy",
    "run_strategy",
]
