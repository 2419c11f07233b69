"""Cache misses the rules cannot predict, as a probability with its uncertainty.

The provider sometimes reads nothing from a cache the documented rules call warm (docs/cost.md,
"Why the pi sessions miss"). Nothing in a transcript says which call, so the lab prices them as
a random process, per **class** of call (:func:`miss_class`):

* ``turn_start`` — the first call after a user message (of any chain) that the rules predict to
  read from the cache;
* ``mid_turn`` — every other call predicted to read (after a tool result, seconds later).

Within a class a call misses with probability ``1 − exp(−θ · gap)``, ``gap`` being the seconds the
account's cache sat idle before it: the bundled pi sessions miss more often after longer idle
gaps (``θ`` is a hazard per idle second). A miss re-writes what the call would have read. Each
session has its own ``θ`` per class; across sessions ``θ`` follows a gamma distribution whose
mean and spread are unknown (:func:`lcm_lab.metrics.stats.hierarchical_hazard_draws`). A
session's ``θ`` is inferred from what is legitimately available: the **other** bundled sessions
(every call of theirs; leave-one-session-out when the session is itself bundled) and the
session's **own calibration window** (its first 10% of calls) — never its later calls.

A second, smaller uncertainty is the **size drift**: the calibration window's tokenizer ratio
under-predicts later prompts of every bundled session (by 3–8%; later content tokenizes
differently). ``log(recorded / predicted prompt tokens)`` per 50 held-out calls of the other
sessions gives a normal distribution (their mean and spread) of a factor on every call's prompt
dollars.

``evidence.json`` (next to this module) holds, per bundled session, every exposed call's gap and
whether it missed, and its window drifts; ``python -m lcm_lab.cost.evidence`` regenerates it and
a test fails when it drifts from what the bundled sessions give.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MISS_CLASSES = ("turn_start", "mid_turn")
DRAWS = 2000  # simulated draws per miss model
# Idle gaps at which the docs state each class's miss probability (typical of the class).
REFERENCE_GAP_S = {"turn_start": 60.0, "mid_turn": 5.0}
EVIDENCE_PATH = Path(__file__).with_name("evidence.json")


def miss_class(turn_start: bool, read: int) -> str | None:
    """The unexplained-miss class a call is exposed to (``None`` when the rules already predict a miss).

    >>> miss_class(True, 5000), miss_class(False, 5000), miss_class(True, 0)
    ('turn_start', 'mid_turn', None)
    """
    if read <= 0:
        return None
    return "turn_start" if turn_start else "mid_turn"


@dataclass(frozen=True)
class Exposure:
    """The calls of one class: each one's idle gap (s) and whether it read nothing."""

    gaps: tuple[float, ...] = ()
    missed: tuple[bool, ...] = ()

    @property
    def calls(self) -> int:
        return len(self.gaps)

    @property
    def misses(self) -> int:
        return sum(self.missed)


def exposures(classes: Sequence[str | None], gaps: Sequence[float | None], missed: Sequence[bool]) -> dict[str, Exposure]:
    """Per class, the exposed calls' gaps and outcomes (calls of class ``None`` are left out)."""
    out: dict[str, tuple[list[float], list[bool]]] = {c: ([], []) for c in MISS_CLASSES}
    for cls, gap, miss in zip(classes, gaps, missed, strict=True):
        if cls is not None:
            out[cls][0].append(round(float(gap or 0.0), 3))
            out[cls][1].append(bool(miss))
    return {c: Exposure(tuple(g), tuple(m)) for c, (g, m) in out.items()}


@dataclass(frozen=True)
class SessionEvidence:
    """What one bundled session says about unexplained misses and size drift."""

    session: str
    session_id: str
    model: str
    classes: Mapping[str, Exposure]
    drift: tuple[float, ...]  # log(recorded / predicted prompt tokens) per window of held-out calls

    def as_json(self) -> dict[str, Any]:
        return {
            "session": self.session, "session_id": self.session_id, "model": self.model,
            "classes": {c: {"gaps": list(e.gaps), "missed": [int(m) for m in e.missed]} for c, e in self.classes.items()},
            "drift": [round(d, 6) for d in self.drift],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SessionEvidence:
        classes = {c: Exposure(tuple(float(g) for g in e["gaps"]), tuple(bool(m) for m in e["missed"]))
                   for c, e in doc["classes"].items()}  # fmt: skip
        return cls(doc["session"], doc["session_id"], doc["model"], classes, tuple(float(d) for d in doc["drift"]))


@functools.cache
def bundled_evidence() -> tuple[SessionEvidence, ...]:
    """The evidence of the bundled real sessions (``evidence.json``)."""
    if not EVIDENCE_PATH.exists():
        raise FileNotFoundError(f"{EVIDENCE_PATH} is missing; regenerate it with `python -m lcm_lab.cost.evidence`")
    doc = json.loads(EVIDENCE_PATH.read_text(encoding="utf-8"))
    return tuple(SessionEvidence.from_json(s) for s in doc["sessions"])


@dataclass(frozen=True, eq=False)
class MissModel:
    """Simulation draws of one session's unexplained-miss hazards and size drift.

    ``hazards[class]`` (per idle second) and ``log_drift`` hold :data:`DRAWS` joint draws; two
    bills priced with the same model see the same draws (paired). ``prior_hazards`` are the
    draws before the session's own window was seen; ``sources`` the sessions the prior came from.
    """

    hazards: Mapping[str, np.ndarray]
    prior_hazards: Mapping[str, np.ndarray]
    log_drift: np.ndarray
    own: Mapping[str, Exposure]
    sources: tuple[str, ...]
    drift_mean: float
    drift_sd: float
    seed: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def draws(self) -> int:
        return int(self.log_drift.size)

    def miss_probability(self, cls: str, gap_s: float, *, prior: bool = False) -> np.ndarray:
        """Draws of the probability that a call of ``cls`` after ``gap_s`` idle seconds misses."""
        hazards = (self.prior_hazards if prior else self.hazards)[cls]
        return np.asarray(-np.expm1(-hazards * max(gap_s, 1e-3)))

    def summary(self) -> dict[str, Any]:
        """Prior and posterior miss probability per class at its reference gap (mean and 90%
        interval), the own window's calls and misses, and the size drift (JSON-ready)."""
        from lcm_lab.metrics.stats import quantile_interval

        out: dict[str, Any] = {"sources": list(self.sources), "draws": self.draws, "notes": list(self.notes)}
        for cls in MISS_CLASSES:
            gap = REFERENCE_GAP_S[cls]
            row: dict[str, Any] = {"reference_gap_s": gap, "window_calls": self.own[cls].calls, "window_misses": self.own[cls].misses}
            for name, prior in (("prior", True), ("posterior", False)):
                p = self.miss_probability(cls, gap, prior=prior)
                low, high = quantile_interval(p)
                row[name] = {"mean": float(p.mean()), "p05": low, "p95": high}
            out[cls] = row
        out["size_drift"] = {"mean": self.drift_mean, "sd": self.drift_sd}
        return out


def fit_miss_model(
    own: Mapping[str, Exposure],
    evidence: Sequence[SessionEvidence],
    *,
    exclude: str | None = None,
    draws: int = DRAWS,
    seed: int = 0,
) -> MissModel:
    """The miss model of a session whose calibration window showed ``own``, with the prior taken
    from ``evidence`` minus the session whose ``session_id`` is ``exclude`` (leave-one-out)."""
    from lcm_lab.metrics.stats import hierarchical_hazard_draws

    others = [e for e in evidence if e.session_id != exclude]
    hazards, priors = {}, {}
    for i, cls in enumerate(MISS_CLASSES):
        groups = [(e.classes[cls].gaps, e.classes[cls].missed) for e in others if cls in e.classes]
        window = own.get(cls, Exposure())
        post = hierarchical_hazard_draws(groups, (window.gaps, window.missed), draws=draws, seed=seed + i)
        hazards[cls], priors[cls] = post.posterior, post.prior
    drifts = np.asarray([d for e in others for d in e.drift], dtype=float)
    notes = []
    if drifts.size >= 2:
        mean, sd = float(drifts.mean()), float(drifts.std(ddof=1))
    else:
        mean, sd = 0.0, 0.0
        notes.append("no other session's held-out windows: no size drift is simulated")
    if not others:
        notes.append("no other session's evidence: the miss hazards rest on the calibration window and the hyperprior alone")
    log_drift = np.random.default_rng(seed + len(MISS_CLASSES)).normal(mean, sd, draws) if sd > 0 else np.full(draws, mean)
    return MissModel(hazards, priors, log_drift, {c: own.get(c, Exposure()) for c in MISS_CLASSES},
                     tuple(e.session for e in others), mean, sd, seed, tuple(notes))  # fmt: skip
