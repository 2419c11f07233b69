"""The lab's one statistics module: t-intervals (scipy.stats), seeded bootstrap intervals (items,
paired, and clustered: probes within items, items within conversations), Wilson, Pareto, hazards.

>>> round(t_quantile(0.975, 4), 3)
2.776
>>> lo, hi = t_interval([3.0, 4.0, 5.0])
>>> round(lo, 2), round(hi, 2)
(1.52, 6.48)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from lcm_lab.errors import DataError

NAN = float("nan")


def t_quantile(p: float, df: int) -> float:
    """Quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``)."""
    if df < 1:
        raise ValueError("t_quantile needs df >= 1")
    from scipy import stats

    return float(stats.t.ppf(p, df))


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided t confidence interval of the mean (NaNs for fewer than two values)."""
    n = len(values)
    if n < 2:
        return NAN, NAN
    arr = np.asarray(values, dtype=float)
    half = t_quantile(0.5 + confidence / 2, n - 1) * float(arr.std(ddof=1)) / math.sqrt(n)
    centre = float(arr.mean())
    return centre - half, centre + half


def bootstrap_interval(values: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (NaNs for fewer than two values).

    A missing (NaN) or infinite value makes the interval undefined too (NaNs, never half an
    interval): scores keep NaN where a metric is undefined, and the interval says so rather than
    leaving the value out. Values that all agree give a zero-width interval (every resample has
    the same mean), the honest answer for a sample without spread, not a failure.

    >>> bootstrap_interval([0.5, 0.5, 0.5])
    (0.5, 0.5)
    >>> bootstrap_interval([float("inf"), 1.0])
    (nan, nan)
    """
    arr = np.asarray(values, dtype=float)
    if arr.size < 2 or not np.isfinite(arr).all():
        return NAN, NAN
    # Means are taken of the values divided by a power of two near the largest (exact, the same
    # result bit for bit) so that sums of values near the float limit do not overflow to inf.
    scale = math.ldexp(1.0, math.frexp(float(np.abs(arr).max()))[1] - 1) if arr.any() else 1.0
    rng = np.random.default_rng(seed)
    means = (arr / scale)[rng.integers(0, arr.size, size=(resamples, arr.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    return float(np.quantile(means, alpha)) * scale, float(np.quantile(means, 1 - alpha)) * scale


def bootstrap_difference(
    a: Sequence[float],
    b: Sequence[float],
    *,
    paired: bool,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean of ``b − a`` with a percentile bootstrap interval.

    Paired (same items in both, same order): resample item indices once for both. Unpaired:
    resample each side independently.
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if paired and xa.size != xb.size:
        raise ValueError("paired difference needs equally many values on both sides")
    diff = float(xb.mean() - xa.mean()) if xa.size and xb.size else NAN
    if xa.size < 2 or xb.size < 2:
        return diff, NAN, NAN
    rng = np.random.default_rng(seed)
    if paired:
        idx = rng.integers(0, xa.size, size=(resamples, xa.size))
        boots = (xb[idx] - xa[idx]).mean(axis=1)
    else:
        boots = xb[rng.integers(0, xb.size, size=(resamples, xb.size))].mean(axis=1) - xa[rng.integers(0, xa.size, size=(resamples, xa.size))].mean(axis=1)
    alpha = (1 - confidence) / 2
    return diff, float(np.quantile(boots, alpha)), float(np.quantile(boots, 1 - alpha))


def cluster_paired_interval(
    differences: Mapping[str, Sequence[float]], confidence: float = 0.95
) -> tuple[float, float, float]:
    """Mean paired difference with the cluster as the resampling unit: each cluster (a
    conversation) contributes the mean of its own paired differences (items, probes, or the one
    per-conversation headline difference) and the interval is the t-interval over those cluster
    means, so items of one conversation never count as independent evidence. Returns
    ``(mean, low, high)``; the interval is NaN with fewer than two clusters.

    >>> [round(v, 3) for v in cluster_paired_interval({"a": [0.1, 0.3], "b": [0.1], "c": [0.4]})]
    [0.233, -0.146, 0.613]
    """
    means = [float(np.mean(v)) for v in differences.values() if len(v)]
    if not means:
        return NAN, NAN, NAN
    lo, hi = t_interval(means, confidence)
    return float(np.mean(means)), lo, hi


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation (``scipy.stats.spearmanr``, ties averaged); NaN when either side
    is constant or there are fewer than three pairs.

    >>> round(spearman([1, 2, 3, 4], [10, 30, 20, 40]), 6)
    0.8
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size != y.size:
        raise ValueError("spearman needs equally many values on both sides")
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return NAN
    from scipy import stats

    return float(stats.spearmanr(x, y).statistic)


def split_half_reliability(odd: Sequence[float], even: Sequence[float]) -> tuple[float, float]:
    """Pearson correlation of two half-test scores over the same units and its Spearman–Brown
    step-up ``2r / (1 + r)`` (the reliability of the whole test); NaNs when either half is
    constant or there are fewer than three units.

    >>> [round(v, 3) for v in split_half_reliability([1, 2, 3, 4], [1.5, 1.8, 3.2, 3.9])]
    [0.974, 0.987]
    """
    x, y = np.asarray(odd, dtype=float), np.asarray(even, dtype=float)
    if x.size != y.size:
        raise ValueError("split_half_reliability needs one value per unit in each half")
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return NAN, NAN
    r = float(np.corrcoef(x, y)[0, 1])
    return r, 2 * r / (1 + r) if r > -1 else NAN


def bootstrap_normalised(
    method: Sequence[float] | np.ndarray,
    floor: Sequence[float] | np.ndarray,
    ceiling: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Paired percentile bootstrap of ``(mean(method) − mean(floor)) / (mean(ceiling) − mean(floor))``.

    The three arrays hold one value per item (same items, same order); items are resampled once
    for all three, so item difficulty cancels. Resamples whose gap is zero are dropped; ``None``
    when fewer than two items or no resample has a gap.

    >>> lo, hi = bootstrap_normalised([1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 1, 1])
    >>> 0 <= lo <= hi <= 1
    True
    """
    m, f, c = (np.asarray(x, dtype=float) for x in (method, floor, ceiling))
    if not (m.size == f.size == c.size):
        raise ValueError("method, floor and ceiling need one value per item each")
    if m.size < 2:
        return None
    idx = np.random.default_rng(seed).integers(0, m.size, size=(resamples, m.size))
    gap = c[idx].mean(axis=1) - f[idx].mean(axis=1)
    ok = np.abs(gap) > 1e-12
    if not ok.any():
        return None
    values = (m[idx].mean(axis=1)[ok] - f[idx].mean(axis=1)[ok]) / gap[ok]
    alpha = (1 - confidence) / 2
    return float(np.quantile(values, alpha)), float(np.quantile(values, 1 - alpha))


def _cluster_sums(values: Sequence[np.ndarray], clusters: Sequence[object] | np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Per-cluster sums of each array in ``values`` and the number of rows of each cluster."""
    labels = np.asarray(clusters)
    if any(np.asarray(v).size != labels.size for v in values):
        raise ValueError("every array needs one value per row, like clusters")
    _, codes = np.unique(labels, return_inverse=True)
    size = int(codes.max()) + 1 if codes.size else 0
    sums = [np.bincount(codes, weights=np.asarray(v, dtype=float), minlength=size) for v in values]
    return sums, np.bincount(codes, minlength=size).astype(float)


def cluster_bootstrap_normalised(
    method: Sequence[float] | np.ndarray,
    floor: Sequence[float] | np.ndarray,
    ceiling: Sequence[float] | np.ndarray,
    clusters: Sequence[object] | np.ndarray,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Cluster bootstrap of ``(mean(method) − mean(floor)) / (mean(ceiling) − mean(floor))``.

    One row per probe (an item asked at one point); ``clusters`` names the unit each row belongs to
    (a QA item, a fact, a conversation). Whole clusters are resampled, all their rows together and
    for the three arrays at once (paired), so probes of one item never count as independent.
    ``weights`` weigh rows (fact types); they cancel in the ratio's form. ``None`` with fewer than
    two clusters or no resample with a gap.

    >>> lo, hi = cluster_bootstrap_normalised([1, 1, 0, 1], [0, 0, 0, 1], [1, 1, 1, 1], ["a", "a", "b", "c"])
    >>> 0 <= lo <= hi <= 1
    True
    """
    w = np.ones(np.asarray(method).size) if weights is None else np.asarray(weights, dtype=float)
    m, f, c = (np.asarray(x, dtype=float) * w for x in (method, floor, ceiling))
    (sm, sf, sc), _ = _cluster_sums([m, f, c], clusters)
    if sm.size < 2:
        return None
    idx = np.random.default_rng(seed).integers(0, sm.size, size=(resamples, sm.size))
    num, gap = sm[idx].sum(axis=1) - sf[idx].sum(axis=1), sc[idx].sum(axis=1) - sf[idx].sum(axis=1)
    ok = np.abs(gap) > 1e-12
    if not ok.any():
        return None
    alpha = (1 - confidence) / 2
    values = num[ok] / gap[ok]
    return float(np.quantile(values, alpha)), float(np.quantile(values, 1 - alpha))


def cluster_bootstrap_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    clusters: Sequence[object] | np.ndarray,
    *,
    scale: float = 1.0,
    weights: Sequence[float] | np.ndarray | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Paired mean of ``(b − a) / scale`` over rows, with a cluster bootstrap interval.

    ``a`` and ``b`` hold two settings' values on the *same* rows (probes); ``clusters`` their unit
    (items within one conversation, or conversations across several). ``scale`` divides
    (``ceiling − floor`` turns a raw difference into a difference of normalised headlines, both
    settings sharing floor and ceiling). ``weights`` weigh rows (fact types): the mean is then
    ``Σ w·(b − a) / Σ w`` and each resample's the same over its clusters. NaN bounds with fewer
    than two clusters.

    >>> d, lo, hi = cluster_bootstrap_difference([0, 0, 1, 0], [1, 1, 1, 0], ["x", "x", "y", "z"])
    >>> round(d, 2), lo <= d <= hi
    (0.5, True)
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size != xb.size:
        raise ValueError("a paired difference needs equally many values on both sides")
    if xa.size == 0:
        return NAN, NAN, NAN
    if weights is None:
        (sd,), counts = _cluster_sums([xb - xa], clusters)
    else:
        w = np.asarray(weights, dtype=float)
        (sd, counts), _ = _cluster_sums([(xb - xa) * w, w], clusters)
    diff = float(sd.sum() / counts.sum()) / scale
    if sd.size < 2:
        return diff, NAN, NAN
    idx = np.random.default_rng(seed).integers(0, sd.size, size=(resamples, sd.size))
    boots = sd[idx].sum(axis=1) / counts[idx].sum(axis=1) / scale
    alpha = (1 - confidence) / 2
    return diff, float(np.quantile(boots, alpha)), float(np.quantile(boots, 1 - alpha))


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``successes / n`` (NaNs for ``n == 0``); for whole
    ``successes`` it is ``scipy.stats.binomtest(...).proportion_ci(method="wilson")``, and it
    also takes weighted (fractional) counts.

    ``n`` must be a whole number (0 or more) and ``successes`` a number from 0 to ``n``; anything
    else (more successes than trials, a negative or NaN count) is a
    :class:`~lcm_lab.errors.DataError`.

    >>> [round(v, 3) for v in wilson_interval(8, 10)]
    [0.49, 0.943]
    >>> wilson_interval(5, 2)
    Traceback (most recent call last):
    lcm_lab.errors.DataError: Wilson interval: 5 successes out of 2 trials; successes must be a number from 0 to the number of trials
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer | float) or not float(n).is_integer() or n < 0:
        raise DataError(f"Wilson interval: {n!r} trials; the number of trials must be a whole number, 0 or more")
    if isinstance(successes, bool) or not isinstance(successes, int | np.integer | float) or not 0 <= successes <= n:
        raise DataError(f"Wilson interval: {successes!r} successes out of {n!r} trials; "
                        f"successes must be a number from 0 to the number of trials")
    if n == 0:
        return NAN, NAN
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def pareto_mask(points: Sequence[Sequence[float]]) -> list[bool]:
    """True for the points no other point dominates (as good on every coordinate, better on one);
    every coordinate is minimised. The one Pareto rule of the lab: sweeps, recommendations and
    plots use it, and a sweep exported as an Optuna study has exactly these as ``best_trials``.

    No points give an empty mask. A point with a missing (NaN) coordinate is refused with a
    :class:`~lcm_lab.errors.DataError`: NaN compares false with everything, so such a point
    would be neither dominated nor dominating and land on the front by accident; drop those
    rows first (the sweep and plot callers do). Infinite coordinates compare as usual.

    >>> pareto_mask([(1, 1), (2, 2), (0, 3), (1, 1)])
    [True, False, True, True]
    >>> pareto_mask([])
    []
    """
    if len(points) == 0:
        return []
    try:
        arr = np.asarray(points, dtype=float)
    except ValueError:
        raise DataError("Pareto front: every point needs the same number of coordinates, each a number") from None
    arr = arr.reshape(len(points), -1)
    missing = int(np.isnan(arr).any(axis=1).sum())
    if missing:
        raise DataError(f"Pareto front: {missing} of {len(points)} points have a missing (NaN) coordinate; "
                        f"drop those rows first (e.g. df.dropna(subset=[...]))")
    no_worse = (arr[:, None, :] <= arr[None, :, :]).all(axis=2)  # [j, i]: j is nowhere worse than i
    better = (arr[:, None, :] < arr[None, :, :]).any(axis=2)
    return [bool(v) for v in ~(no_worse & better).any(axis=0)]


def quantile_interval(draws: Sequence[float] | np.ndarray, level: float = 0.9) -> tuple[float, float]:
    """Central ``level`` interval of simulated draws (the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles).

    >>> [round(v, 6) for v in quantile_interval(np.arange(201), 0.9)]
    [10.0, 190.0]
    """
    arr = np.asarray(draws, dtype=float)
    if arr.size == 0:
        return NAN, NAN
    alpha = (1 - level) / 2
    low, high = np.quantile(arr, [alpha, 1 - alpha])
    return float(low), float(high)


# Grids of the hierarchical hazard model (per unit of exposure, e.g. per second).
HAZARD_GRID = np.geomspace(1e-8, 10.0, 300)
HAZARD_MEANS = np.geomspace(1e-6, 1.0, 61)
HAZARD_SHAPES = np.geomspace(0.05, 200.0, 41)


def _hazard_loglik(exposure: Sequence[float], events: Sequence[bool]) -> np.ndarray:
    """Log-likelihood over :data:`HAZARD_GRID` of trials with ``P(event) = 1 − exp(−θ·exposure)``."""
    if len(exposure) == 0:
        return np.zeros_like(HAZARD_GRID)
    x = np.maximum(np.asarray(exposure, dtype=float), 1e-3)[:, None]
    hit = np.asarray(events, dtype=bool)[:, None]
    theta_x = HAZARD_GRID[None, :] * x
    return np.asarray(np.where(hit, np.log(-np.expm1(-theta_x)), -theta_x).sum(axis=0))


@functools.cache
def _gamma_on_grid() -> np.ndarray:
    """``w[j·K + k, t]``: Gamma(shape ``HAZARD_SHAPES[j]``, mean ``HAZARD_MEANS[k]``) discretised
    on the log-spaced :data:`HAZARD_GRID` (each row sums to one)."""
    from scipy import special

    a = HAZARD_SHAPES[:, None, None]
    rate = a / HAZARD_MEANS[None, :, None]
    theta = HAZARD_GRID[None, None, :]
    logw = a * np.log(rate * theta) - rate * theta - special.gammaln(a)  # density of log θ
    w = np.exp(logw - special.logsumexp(logw, axis=2, keepdims=True))
    return np.asarray(w.reshape(-1, HAZARD_GRID.size))


def _log_marginal(weights: np.ndarray, loglik: np.ndarray) -> np.ndarray:
    top = float(loglik.max())
    # einsum, not BLAS: a threaded BLAS spends most of this small product contending for the CPUs.
    return np.asarray(np.log(np.maximum(np.einsum("ij,j->i", weights, np.exp(loglik - top)), 1e-300)) + top)


class HazardPosterior(NamedTuple):
    """Draws of one group's hazard θ from :func:`hierarchical_hazard_draws`: ``prior`` uses the
    other groups only, ``posterior`` adds the group's own trials."""

    prior: np.ndarray
    posterior: np.ndarray


def hierarchical_hazard_draws(
    groups: Sequence[tuple[Sequence[float], Sequence[bool]]],
    own: tuple[Sequence[float], Sequence[bool]],
    *,
    draws: int = 2000,
    seed: int = 0,
) -> HazardPosterior:
    """Posterior draws of a new group's event hazard under a gamma-frailty hierarchy.

    Each trial ``i`` of group ``g`` has ``P(event) = 1 − exp(−θ_g · x_i)`` (``x_i`` its exposure,
    e.g. seconds idle); the groups' hazards are ``θ_g ~ Gamma(shape a, mean μ)``, with a flat prior
    on ``log μ`` over ``[1e-6, 1]`` and the log-logistic ``p(a) ∝ 1/(1 + a)²`` on the shape (small
    ``a``: groups differ widely; Albert, *Bayesian Computation with R*, ch. 5, puts this form on
    the beta-binomial's concentration). ``groups`` are the other groups' ``(exposures, events)``;
    ``own`` the new group's trials seen so far. Hyperparameters and θ live on fixed log grids
    (:data:`HAZARD_MEANS`, :data:`HAZARD_SHAPES`, :data:`HAZARD_GRID`), so the result is exact up
    to the grid and deterministic for a ``seed``.

    >>> rng = np.random.default_rng(1)
    >>> sessions = [(np.full(200, 10.0), rng.random(200) < 1 - np.exp(-0.01 * 10)) for _ in range(4)]
    >>> post = hierarchical_hazard_draws(sessions[:3], sessions[3], draws=4000)
    >>> 0.006 < float(np.median(post.posterior)) < 0.016
    True
    """
    weights = _gamma_on_grid()
    shape_prior = np.repeat(np.log(HAZARD_SHAPES / (1 + HAZARD_SHAPES) ** 2), HAZARD_MEANS.size)  # p(a) da, log-a coordinates
    log_hyper = shape_prior + sum((_log_marginal(weights, _hazard_loglik(x, m)) for x, m in groups), start=np.zeros(1))
    own_lik = _hazard_loglik(*own)
    rng = np.random.default_rng(seed)
    step = float(np.log(HAZARD_GRID[1] / HAZARD_GRID[0]))

    def sample(hyper: np.ndarray, lik: np.ndarray) -> np.ndarray:
        p = np.exp(hyper - hyper.max())
        cells = rng.choice(p.size, size=draws, p=p / p.sum())
        cond = weights[cells] * np.exp(lik - lik.max())[None, :]
        cum = np.cumsum(cond, axis=1)
        t = (cum < rng.random((draws, 1)) * cum[:, -1:]).sum(axis=1)
        return np.asarray(HAZARD_GRID[t] * np.exp(step * (rng.random(draws) - 0.5)))

    prior = sample(log_hyper, np.zeros_like(HAZARD_GRID))
    return HazardPosterior(prior, sample(log_hyper + _log_marginal(weights, own_lik), own_lik))
