"""Sweep metrics on what the model receives at each call: ``peak_sent_tokens``, ``mean_sent_tokens``.

They read ``run.sent(...)`` at the call after each turn (the start of the next turn; the
end-of-run call after the last), for an LCM replay and any other strategy's run alike, so
they compare strategies on the same footing. ``peak_context_tokens`` / ``mean_context_tokens``
do not, across strategies: for an LCM run they are the *stored* context at the end of each turn
(after compaction, before the next turn's messages and the serialized-message overhead the model
sees), for every other strategy the context sent at the next call.

>>> from lcm_lab.sweeps.metrics import METRICS
>>> "peak_sent_tokens" in METRICS and "mean_sent_tokens" in METRICS
True
"""

from __future__ import annotations

from typing import Any

from lcm_lab.metrics.base import Score
from lcm_lab.sweeps.metrics import ScoredRun, register_metric


def sent_sizes(run: Any) -> list[int]:
    """Estimated tokens the model receives at the call after each turn."""
    if hasattr(run, "strategy"):  # a StrategyRun: its turns already hold the next call's size
        return [t.context_tokens for t in run.turns]
    last = len(run.turns) - 1
    return [run.sent_facts(None if i == last else i + 1).estimated_tokens for i in range(len(run.turns))]


def _score(run: ScoredRun, name: str, value: float | None) -> list[Score]:
    if value is None:
        return []
    rid = getattr(run.replay, "run_id", None) or ""
    return [Score(rid, "run", "", name, value, {"budget": run.replay.token_budget, "source": "sent"})]


@register_metric("peak_sent_tokens")
def peak_sent_tokens(run: ScoredRun) -> list[Score]:
    """The largest context the model receives in the run (estimated tokens, any strategy)."""
    sizes = sent_sizes(run.replay)
    return _score(run, "peak_sent_tokens", float(max(sizes)) if sizes else None)


@register_metric("mean_sent_tokens")
def mean_sent_tokens(run: ScoredRun) -> list[Score]:
    """The mean context the model receives per call (estimated tokens, any strategy)."""
    sizes = sent_sizes(run.replay)
    return _score(run, "mean_sent_tokens", sum(sizes) / len(sizes) if sizes else None)
