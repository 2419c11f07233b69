"""The interval code on synthetic miss processes with known rates: coverage close to nominal, paired
differences narrower than either bill, leave-one-session-out priors, and a too-narrow interval caught."""

from __future__ import annotations

import numpy as np
import pytest

from lcm_lab.cost.intervals import simulate_bill, window_draws
from lcm_lab.cost.misses import Exposure, SessionEvidence, fit_miss_model
from lcm_lab.cost.model import CallCost
from lcm_lab.cost.prices import Prices

# Reads are free and a re-write of 1M tokens costs $1: a bill is the number of misses times its size.
PRICES = Prices("m", "anthropic", input=0.0, output=0.0, cache_read=0.0, cache_write=1e-06)
TOKENS = 1_000_000
WINDOW = 6  # the own calibration window: the first calls of a session


def _calls(gaps: np.ndarray, chain: str, size: float = 1.0) -> list[CallCost]:
    read = round(TOKENS * size)
    return [CallCost(i, 1000.0 * i, "main", read, read, 0, 0, 0, 0.0, gap_s=float(g), meta={"line": i, "chain": chain},
                     miss_class="turn_start") for i, g in enumerate(gaps)]  # fmt: skip


def _session(rng: np.random.Generator, hazard: float, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    gaps = rng.uniform(5, 200, n)
    return gaps, rng.random(n) < -np.expm1(-hazard * gaps)


def _evidence(name: str, gaps: np.ndarray, missed: np.ndarray) -> SessionEvidence:
    return SessionEvidence(name, name, "m", {"turn_start": Exposure(tuple(gaps), tuple(missed)), "mid_turn": Exposure()}, ())


def _replicate(rng: np.random.Generator, *, draws: int = 400) -> tuple[float, float, int, float]:
    """One synthetic study: 4 sessions whose hazards come from a known gamma; 3 are the others,
    the 4th is priced from its first calls. Returns its held-out interval, truth and expectation."""
    hazards = rng.gamma(2.0, 0.005 / 2.0, 4)  # shape 2, mean 0.005 per idle second
    sessions = [_session(rng, h) for h in hazards]
    evidence = [_evidence(f"s{i}", *s) for i, s in enumerate(sessions[:3])]
    gaps, missed = sessions[3]
    own = {"turn_start": Exposure(tuple(gaps[:WINDOW]), tuple(missed[:WINDOW]))}
    model = fit_miss_model(own, evidence, draws=draws, seed=int(rng.integers(1 << 30)))
    interval = simulate_bill(_calls(gaps[WINDOW:], "target"), PRICES, model).interval()
    return interval.low, interval.high, int(missed[WINDOW:].sum()), interval.expected


def test_intervals_cover_the_held_out_misses_at_close_to_their_nominal_rate() -> None:
    rng = np.random.default_rng(7)
    results = [_replicate(rng) for _ in range(60)]
    coverage = np.mean([lo <= truth <= hi for lo, hi, truth, _ in results])
    assert 0.80 <= coverage <= 0.99, coverage
    # and the expectation is unbiased for the truth over replications (within its noise)
    errors = np.array([expected - truth for _, _, truth, expected in results])
    assert abs(errors.mean()) < 3 * errors.std(ddof=1) / np.sqrt(len(errors)) + 0.5


def test_an_interval_that_ignores_the_misses_is_caught_by_the_same_coverage_check() -> None:
    # The control: the rules' point (no miss process) as a degenerate interval covers almost never.
    rng = np.random.default_rng(7)
    results = [_replicate(rng, draws=200) for _ in range(20)]
    assert np.mean([truth == 0 for _, _, truth, _ in results]) < 0.2  # so "no misses" is rarely right


def test_a_known_rate_is_recovered_and_the_own_window_moves_the_prior() -> None:
    rng = np.random.default_rng(3)
    others = [_evidence(f"s{i}", *_session(rng, 0.004, 300)) for i in range(4)]
    quiet = fit_miss_model({"turn_start": Exposure((60.0,) * 40, (False,) * 40)}, others, draws=3000)
    noisy = fit_miss_model({"turn_start": Exposure((60.0,) * 40, (True,) * 20 + (False,) * 20)}, others, draws=3000)
    prior = quiet.miss_probability("turn_start", 60.0, prior=True)
    assert np.median(prior) == pytest.approx(1 - np.exp(-0.004 * 60), rel=0.35)
    assert quiet.miss_probability("turn_start", 60.0).mean() < prior.mean() < noisy.miss_probability("turn_start", 60.0).mean()


def test_leave_one_session_out_drops_the_session_itself_from_the_prior() -> None:
    rng = np.random.default_rng(0)
    evidence = [_evidence(name, *_session(rng, 0.01)) for name in ("a", "b", "c")]
    assert fit_miss_model({}, evidence, exclude="b", draws=100).sources == ("a", "c")
    alone = fit_miss_model({}, [], draws=100)
    assert alone.sources == () and any("no other session" in note for note in alone.notes)


def test_paired_difference_is_much_narrower_than_either_bill() -> None:
    rng = np.random.default_rng(5)
    others = [_evidence(f"s{i}", *_session(rng, 0.005)) for i in range(3)]
    gaps, _ = _session(rng, 0.005, 80)
    model = fit_miss_model({}, others, draws=2000)
    # two settings of one session: the second sends a context 10% larger at every call
    a, b = simulate_bill(_calls(gaps, "t"), PRICES, model), simulate_bill(_calls(gaps, "t", 1.1), PRICES, model)
    width = {name: bill.interval().high - bill.interval().low for name, bill in (("a", a), ("b", b))}
    paired = b.minus(a)
    assert paired.expected == pytest.approx(0.1 * a.expected, rel=1e-6)
    assert paired.high - paired.low < 0.2 * min(width.values())
    assert paired.low > 0  # the larger context costs more in every simulated history
    # unpaired (independent miss draws) the same difference would be within noise
    other = simulate_bill(_calls(gaps, "elsewhere", 1.1), PRICES, model)
    assert (other.draws - a.draws).std() > 3 * (b.draws - a.draws).std()


def test_per_call_draws_sum_to_the_bill_and_drift_scales_prompt_dollars_only() -> None:
    rng = np.random.default_rng(2)
    drifting = [SessionEvidence(f"s{i}", f"s{i}", "m", {"turn_start": Exposure(*map(tuple, _session(rng, 0.005)))},
                                (0.05, 0.07, 0.06)) for i in range(2)]  # fmt: skip
    model = fit_miss_model({}, drifting, draws=500)
    assert model.drift_mean == pytest.approx(0.06) and model.drift_sd > 0
    calls = _calls(rng.uniform(5, 200, 30), "t")
    calls = [CallCost(c.index, c.time_ms, c.agent, c.prompt_tokens, c.read, c.write, c.uncached, 1000, 0.5, gap_s=c.gap_s,
                      meta=c.meta, miss_class=c.miss_class) for c in calls]  # fmt: skip  # $0.50 of output each
    output_only = Prices("m", "anthropic", input=0.0, output=5e-4, cache_read=0.0, cache_write=1e-06)
    per_call = window_draws(calls, output_only, model)
    bill = simulate_bill(calls, output_only, model)
    assert np.allclose(per_call.sum(axis=1), bill.draws)
    assert bill.draws.min() >= 15.0  # output dollars are never scaled
