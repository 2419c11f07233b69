"""The shape of a headline score (which headlines exist and how each is read: :mod:`lcm_lab.metrics.verdicts`).

A headline is a :class:`~lcm_lab.metrics.base.Score` of scope ``"run"`` whose ``details`` always
carry what makes the number interpretable (see ``docs/metrics.md``): the raw method value, the
ceiling and floor it is normalised between, a chance control, ``n`` and the resampling unit, and a
95% interval. When the normalisation is undefined (ceiling − floor below :data:`MIN_GAP`) the
headline is *withheld*: ``value`` is ``None`` and ``details["withheld"]`` says why.

>>> s = headline("run-1", "qa_retention", raw=0.5, ceiling=0.9, floor=0.1, chance=0.02,
...              n=120, unit="qa_item", ci=(0.4, 0.6))
>>> round(s.value, 3), s.details["unit"]
(0.5, 'qa_item')
>>> headline("run-1", "qa_retention", raw=0.3, ceiling=0.31, floor=0.3, chance=0.0, n=5, unit="qa_item").value is None
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lcm_lab.metrics.base import Score

MIN_GAP = 0.05  # ceiling − floor below this: the normalised value is noise over a tiny gap


def normalised(raw: float, ceiling: float, floor: float) -> float:
    """``(raw − floor) / (ceiling − floor)``: 0 at the floor, 1 at the ceiling."""
    return (raw - floor) / (ceiling - floor)


def headline(
    run_id: str,
    metric: str,
    *,
    raw: float | None,
    ceiling: float | None,
    floor: float | None,
    chance: float | None,
    n: int,
    unit: str,
    ci: tuple[float, float] | None = None,
    normalise: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> Score:
    """A run-level headline score with its controls.

    With ``normalise`` the value is the raw value placed between floor and ceiling (and ``ci`` is
    taken to be on that same normalised scale); without it the value is the raw value itself
    (e.g. dollars) and ceiling/floor are reference points only.
    """
    details: dict[str, Any] = {
        "raw": raw,
        "ceiling": ceiling,
        "floor": floor,
        "chance": chance,
        "n": n,
        "unit": unit,
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
        "normalised": normalise,
        **(dict(extra) if extra else {}),
    }
    value: float | None = raw
    if raw is None or n == 0:
        details["withheld"] = "no items to score"
        value = None
    elif normalise:
        if ceiling is None or floor is None:
            details["withheld"] = "no ceiling/floor"
            value = None
        elif ceiling - floor < MIN_GAP:
            details["withheld"] = f"ceiling - floor = {ceiling - floor:.3f} < {MIN_GAP}: the scale is undefined"
            value = None
        else:
            value = normalised(raw, ceiling, floor)
    return Score(run_id, "run", "", metric, value, details)
