"""Predictive intervals for bills: the rules' priced calls plus simulated unexplained misses.

A priced call (:class:`~lcm_lab.cost.model.CallCost`) splits into output dollars and prompt
dollars; a call exposed to an unexplained miss (``miss_class``) would instead pay to re-write what
it read (``Δ``). Draw ``s`` of a bill is

    Σ output + f_s · (Σ prompt + Σ_i [u_i,s < p_i,s] · Δ_i)

with ``p_i,s = 1 − exp(−θ_class,s · gap_i)`` and ``f_s`` the size-drift factor, both from the
session's :class:`~lcm_lab.cost.misses.MissModel`, and ``u_i,s`` a uniform draw keyed by the call's
transcript chain and line. Two bills of the same session priced with the same model therefore
share every draw — a setting's miss at turn 40 is the other setting's miss at turn 40 — and their
difference is **paired**: what is common cancels, and its interval is much narrower than either
bill's. The expected bill is exact given the draws of ``θ`` and ``f`` (no Bernoulli noise).

>>> from lcm_lab.cost.misses import Exposure, MissModel
>>> from lcm_lab.cost.model import CallCost
>>> from lcm_lab.cost.prices import Prices
>>> prices = Prices("m", "anthropic", input=1e-06, output=0.0, cache_read=1e-07, cache_write=1.25e-06)
>>> calls = [CallCost(0, 0, "main", 10_000, 0, 10_000, 0, 0, 0.0125, gap_s=None),
...          CallCost(1, 60_000, "main", 10_000, 10_000, 0, 0, 0, 0.001, gap_s=60.0, meta={"line": 5}, miss_class="turn_start")]
>>> certain = MissModel({"turn_start": np.full(500, 1e3), "mid_turn": np.zeros(500)}, {}, np.zeros(500), {}, (), 0.0, 0.0)
>>> round(simulate_bill(calls, prices, certain).expected, 4)  # the turn start surely misses: 2 writes
0.025
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from lcm_lab.cost.misses import MissModel
from lcm_lab.cost.model import CallCost
from lcm_lab.cost.prices import Prices

LEVEL = 0.9


class Interval(NamedTuple):
    """An expected value with its central ``level`` predictive interval."""

    expected: float
    low: float
    high: float
    level: float = LEVEL

    @property
    def covers_zero(self) -> bool:
        return self.low <= 0 <= self.high

    def as_json(self, prefix: str) -> dict[str, float]:
        """``{prefix: expected, prefix_p05: low, prefix_p95: high}`` (suffixes follow ``level``)."""
        lo, hi = _suffixes(self.level)
        return {prefix: self.expected, f"{prefix}_{lo}": self.low, f"{prefix}_{hi}": self.high}


def _suffixes(level: float) -> tuple[str, str]:
    tail = round(100 * (1 - level) / 2)
    return f"p{tail:02d}", f"p{100 - tail:02d}"


class CallDraws(NamedTuple):
    """The parts of a call sequence a simulation needs (``exposed`` indexes calls with a class)."""

    output: np.ndarray  # per call
    prompt: np.ndarray  # per call, at the rules' prediction
    exposed: np.ndarray  # call indexes exposed to an unexplained miss
    delta: np.ndarray  # per exposed call: extra dollars if it misses
    miss: np.ndarray  # (draws, exposed) bool


def _key(call: CallCost) -> int:
    label = f"{call.meta.get('chain', '')}:{call.meta.get('line', call.index)}"
    return int.from_bytes(hashlib.blake2b(label.encode(), digest_size=8).digest(), "little")


def call_draws(calls: Sequence[CallCost], prices: Prices, model: MissModel) -> CallDraws:
    """Split ``calls`` into output and prompt dollars and draw which exposed calls miss."""
    output, prompt, exposed, delta = [], [], [], []
    for i, c in enumerate(calls):
        paid = prices.dollars(read=c.read, write=c.write, uncached=c.uncached, write_1h=c.write_1h)
        output.append(c.dollars - paid)
        prompt.append(paid)
        if c.miss_class is not None and c.read > 0:
            one_hour = c.write_1h + c.read if c.write_1h else 0
            missed = prices.dollars(read=0, write=c.write + c.read, uncached=c.uncached, write_1h=one_hour)
            exposed.append(i)
            delta.append(missed - paid)
    miss = np.zeros((model.draws, len(exposed)), dtype=bool)
    for j, i in enumerate(exposed):
        c = calls[i]
        assert c.miss_class is not None
        u = np.random.default_rng([model.seed, _key(c)]).random(model.draws)
        miss[:, j] = u < model.miss_probability(c.miss_class, c.gap_s or 0.0)
    return CallDraws(np.asarray(output), np.asarray(prompt), np.asarray(exposed, dtype=int), np.asarray(delta), miss)


def _expected_prompt(calls: Sequence[CallCost], parts: CallDraws, model: MissModel) -> float:
    p = [float(model.miss_probability(str(calls[i].miss_class), calls[i].gap_s or 0.0).mean()) for i in parts.exposed]
    return float(parts.prompt.sum() + np.dot(p, parts.delta)) if p else float(parts.prompt.sum())


class BillDraws(NamedTuple):
    """A bill simulated under a miss model: one value per draw, and its exact expectation."""

    draws: np.ndarray
    expected: float

    def interval(self, level: float = LEVEL) -> Interval:
        from lcm_lab.metrics.stats import quantile_interval

        return Interval(self.expected, *quantile_interval(self.draws, level), level)

    def minus(self, other: BillDraws, level: float = LEVEL) -> Interval:
        """``self − other``, paired draw by draw (both simulated with the same miss model)."""
        from lcm_lab.metrics.stats import quantile_interval

        if self.draws.shape != other.draws.shape:
            raise ValueError("a paired difference needs two bills simulated with the same miss model")
        return Interval(self.expected - other.expected, *quantile_interval(self.draws - other.draws, level), level)


def simulate_bill(calls: Sequence[CallCost], prices: Prices, model: MissModel, *, extra: float = 0.0) -> BillDraws:
    """The bill of ``calls`` under ``model``; ``extra`` is added to every draw (e.g. summarizer
    dollars, which no cache miss changes)."""
    parts = call_draws(calls, prices, model)
    factor = np.exp(model.log_drift)
    draws = extra + parts.output.sum() + factor * (parts.prompt.sum() + parts.miss @ parts.delta)
    expected = extra + float(parts.output.sum()) + float(factor.mean()) * _expected_prompt(calls, parts, model)
    return BillDraws(np.asarray(draws), expected)


def window_draws(calls: Sequence[CallCost], prices: Prices, model: MissModel) -> np.ndarray:
    """Per-call simulated dollars, shape ``(draws, calls)`` (sum columns for any window)."""
    parts = call_draws(calls, prices, model)
    prompt = np.broadcast_to(parts.prompt, (model.draws, len(calls))).copy()
    prompt[:, parts.exposed] += parts.miss * parts.delta
    return np.asarray(parts.output[None, :] + np.exp(model.log_drift)[:, None] * prompt)
