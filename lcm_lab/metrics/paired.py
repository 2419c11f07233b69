"""Two settings' probed headline on the same conversation, compared probe by probe.

Two runs of one conversation at one budget read the same probes: the same items at the same probe
points against the same floor (truncation there) and ceiling, whatever the setting. Their
difference is then paired: :func:`paired_difference` resamples the clusters (QA items, facts,
decisions) once for both sides (:func:`~lcm_lab.metrics.stats.cluster_bootstrap_difference`), which
is narrower than combining the two runs' own intervals as if they were independent, and it is the
right interval for "is setting b better than a here". When the probes differ (another budget,
another conversation) there is no pairing and no interval.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from lcm_lab.metrics.base import Score
from lcm_lab.metrics.stats import cluster_bootstrap_difference
from lcm_lab.metrics.verdicts import ProbeRows


class HeadlineOutcome(NamedTuple):
    """One headline of one run and the probes it was computed from."""

    score: Score
    rows: ProbeRows


def same_probes(a: ProbeRows, b: ProbeRows) -> bool:
    """Whether two runs' headline read the same probes (items, points, weights, floor and ceiling)."""
    return (a.cluster.tolist() == b.cluster.tolist() and np.array_equal(a.turn, b.turn) and np.array_equal(a.weight, b.weight)
            and np.array_equal(a.floor, b.floor) and np.array_equal(a.ceiling, b.ceiling))  # fmt: skip


def paired_difference(base: HeadlineOutcome, other: HeadlineOutcome, *, resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """``other − base`` of one headline: paired over the probes with a cluster bootstrap interval
    when both read the same probes, else the difference of the values alone (``paired`` False)."""
    if base.score.value is None or other.score.value is None:
        return {"diff": math.nan, "paired": False}
    a, b = base.rows, other.rows
    if not same_probes(a, b):
        return {"diff": float(other.score.value) - float(base.score.value), "paired": False}
    w = a.weight
    gap = float(((a.ceiling - a.floor) * w).sum() / w.sum())
    diff, low, high = cluster_bootstrap_difference(a.method, b.method, a.cluster, scale=gap, weights=w, resamples=resamples, seed=seed)
    return {"diff": diff, "diff_ci_low": low, "diff_ci_high": high, "paired": True}
