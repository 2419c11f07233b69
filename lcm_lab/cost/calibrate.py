"""Fit the constants transcripts do not record, on the first calls of a session only.

For a call with recorded usage, the provider's prompt size is ``input + cacheRead + cacheWrite``;
the lab sees the same request as ``E`` estimated tokens of messages. The model is
``prompt = system_tokens[agent] + ratio × E``: one system-prompt-plus-tools size per agent (the
main agent and sub-agents have different system prompts) and one tokenizer ratio. It is fitted by
least squares on the calibration window — the first :data:`CALIBRATION_SHARE` of the session's
calls — and then frozen; everything reported is measured on the remaining calls.

>>> cal = fit_calibration([(100, "main", 1300), (1000, "main", 2200), (5000, "main", 6200)])
>>> round(cal.system_tokens["main"]), round(cal.ratio, 3)
(1200, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from lcm_lab.cost.model import Calibration
from lcm_lab.errors import InputError

CALIBRATION_SHARE = 0.10


def calibration_window(n_calls: int, share: float = CALIBRATION_SHARE) -> int:
    """How many leading calls may be used for calibration (at least one).

    >>> calibration_window(484), calibration_window(5)
    (49, 1)
    """
    return max(1, math.ceil(n_calls * share))


def fit_calibration(points: Sequence[tuple[int, str, int]]) -> Calibration:
    """Least-squares fit of ``recorded = system[agent] + ratio × estimated`` on
    ``(estimated_tokens, agent, recorded_prompt_tokens)`` points."""
    if not points:
        raise InputError("no call in the calibration window records its usage (prompt tokens): the transcript has "
                         "nothing to calibrate the token estimate on")
    agents = sorted({agent for _, agent, _ in points})
    design = np.array([[float(est)] + [1.0 if agent == a else 0.0 for a in agents] for est, agent, _ in points])
    target = np.array([float(rec) for _, _, rec in points])
    if len({est for est, _, _ in points}) < 2:
        # One distinct size cannot separate the ratio from the system prompt: ratio 1.
        ratio = 1.0
        systems = {a: float(np.mean([rec - est for est, ag, rec in points if ag == a])) for a in agents}
        return Calibration(systems, ratio, calls=len(points), fitted_on="system only (one prompt size)")
    solution, *_ = np.linalg.lstsq(design, target, rcond=None)
    ratio = float(solution[0])
    systems = {a: max(float(solution[i + 1]), 0.0) for i, a in enumerate(agents)}
    return Calibration(systems, ratio, calls=len(points), fitted_on="least squares")
