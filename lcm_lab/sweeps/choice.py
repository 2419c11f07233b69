"""Choosing a sweep's configuration, and checking that the choice transfers to conversations it
was not chosen on.

:func:`choose` is the one choice rule (``recommend`` applies it to every conversation): among
configurations that ran on every given conversation and meet the constraints on their mean, the
Pareto front of the objectives, best on the first objective; the plugin defaults win every tie
with the best, so a knob that changes nothing recommends no change.

:func:`cross_validate` applies the rule out of sample. Conversations (in the sweep's order) are
dealt round-robin into ``min(folds, n)`` folds; for each fold the rule chooses on the other folds
and the choice is compared with the plugin defaults on the held-out conversations. Each
conversation is held out once, so every conversation gives one out-of-sample difference
(chosen on the others − defaults, on the first objective, signed so that positive is better);
the gain is their mean with a 95% t-interval over conversations (the conversation is the
resampling unit: :func:`lcm_lab.metrics.stats.cluster_paired_interval`). The choice
**transfers** only when the interval lies above 0 *and* every fold chose the same
configuration; with fewer than :data:`MIN_CONVERSATIONS` there is no cross-validation and the
trade-off is labelled in-sample.

>>> import pandas as pd
>>> rows = [("defaults", f"c{i}", 0.5) for i in range(4)] + [("tail8", f"c{i}", 0.5) for i in range(4)]
>>> frame = pd.DataFrame(rows, columns=["config_id", "conversation", "q"])
>>> frame = frame.assign(status="ok", trial=0, baseline=frame.config_id == "defaults")
>>> oos = cross_validate(frame, {"q": "maximize"}, [])
>>> oos.fold_choices, oos.gain, oos.transfers
(['defaults', 'defaults', 'defaults', 'defaults'], 0.0, False)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from lcm_lab.errors import DataError, OptionError
from lcm_lab.sweeps.run import BASELINE_ID

if TYPE_CHECKING:
    import pandas as pd

MIN_CONVERSATIONS = 4  # fewer: no held-out fold large enough to mean anything; the trade-off is in-sample
DEFAULT_FOLDS = 5
TIE = 1e-12


class Choice(NamedTuple):
    """What :func:`choose` picked: the configuration, the Pareto front it came from, the
    configuration table it read (one row per configuration) and the feasible rows."""

    config_id: str
    front: list[str]
    table: pd.DataFrame
    feasible: pd.DataFrame


def choose(frame: pd.DataFrame, objectives: Mapping[str, str], constraints: Sequence[Mapping[str, Any]],
           conversations: Sequence[str] | None = None) -> Choice:
    """The configuration the sweep recommends on ``conversations`` (default: all of them), read
    from ``sweep_df`` rows; ``ValueError`` when none ran on all of them within the constraints."""
    from lcm_lab.sweeps.results import config_table, pareto_front

    if conversations is not None:
        frame = frame[frame.conversation.isin(list(conversations))]
    metrics = list(dict.fromkeys([*objectives, *(c["metric"] for c in constraints)]))
    table = config_table(frame, metrics)
    total = frame.conversation.nunique()
    complete = table[(table.conversations == total) & (table.failed == 0)]
    feasible = complete[[_meets(row, constraints) for row in complete.to_dict("records")]]
    if feasible.empty:
        raise DataError("no configuration ran on every conversation within the constraints; "
                         "relax the constraints or look at sweep_df() for the errors")
    front = pareto_front(feasible, objectives)
    first, direction = next(iter(objectives.items()))
    pool = feasible[feasible.config_id.isin(front)].dropna(subset=[first])
    if pool.empty:
        raise DataError(f"no configuration has a value for {first}")
    ranked = pool.sort_values(first, ascending=direction == "minimize", kind="stable")
    best = str(ranked.iloc[0].config_id)
    base = feasible[feasible.config_id == BASELINE_ID].dropna(subset=[first])
    if not base.empty and abs(float(base.iloc[0][first]) - float(ranked.iloc[0][first])) <= TIE:
        best = BASELINE_ID  # no better than the defaults: no change
    return Choice(best, front, table, feasible)


def _meets(row: Mapping[str, Any], constraints: Sequence[Mapping[str, Any]]) -> bool:
    for c in constraints:
        v = row.get(c["metric"])
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return False
        if c.get("max") is not None and v > c["max"]:
            return False
        if c.get("min") is not None and v < c["min"]:
            return False
    return True


class Fold(NamedTuple):
    """One fold: the held-out conversations, the configuration chosen on the others (``None``
    when none was feasible there, then the defaults stand) and the held-out gains."""

    held_out: tuple[str, ...]
    chosen: str | None
    gains: dict[str, float]  # held-out conversation -> signed difference to the defaults
    note: str | None = None


class OutOfSample(NamedTuple):
    """The cross-validated verdict on the first objective (see the module docstring)."""

    metric: str
    direction: str
    folds: list[Fold]
    gain: float | None
    ci_low: float | None
    ci_high: float | None
    transfers: bool
    withheld: list[str]  # held-out conversations without a value for chosen or defaults

    @property
    def fold_choices(self) -> list[str]:
        return [f.chosen or BASELINE_ID for f in self.folds]

    @property
    def stable(self) -> bool:
        return len(set(self.fold_choices)) == 1

    @property
    def conversations(self) -> int:
        return sum(len(f.gains) for f in self.folds)

    def verdict(self, names: Mapping[str, str] | None = None) -> str:
        """The verdict in one sentence: transfers, does not transfer (and why), or no change;
        ``names`` turns configuration ids into the settings they stand for (:func:`setting_label`)."""
        name = (lambda cid: cid) if names is None else (lambda cid: names.get(cid, cid))
        interval = ("no interval" if self.ci_low is None or self.ci_high is None
                    else f"95% interval {self.ci_low:+.4g} .. {self.ci_high:+.4g}")
        gain = "n/a" if self.gain is None else f"{self.gain:+.4g}"
        measured = (f"out-of-sample gain in {self.metric} over the defaults {gain} ({interval}, {self.conversations} "
                    f"held-out conversations, {len(self.folds)} folds)")
        if set(self.fold_choices) == {BASELINE_ID}:
            return f"no change: every training fold chooses the plugin defaults; {measured}"
        if self.transfers:
            return f"transfers: every training fold chooses {name(self.fold_choices[0])}; {measured}"
        reasons = []
        if self.ci_low is None or self.ci_low <= 0:
            reasons.append("the interval covers 0" if self.ci_low is not None else "no interval")
        if not self.stable:
            reasons.append(f"the choice changes between folds ({', '.join(map(name, self.fold_choices))})")
        return f"does not transfer ({'; '.join(reasons)}): {measured}"

    def as_json(self, names: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``{folds, gain, ci_low, ci_high, transfers}`` plus what they were measured on."""
        return {
            "folds": len(self.folds), "gain": self.gain, "ci_low": self.ci_low, "ci_high": self.ci_high,
            "transfers": self.transfers, "metric": self.metric, "direction": self.direction, "stable": self.stable,
            "conversations": self.conversations, "withheld": self.withheld, "verdict": self.verdict(names),
            "fold_choices": [{"held_out": list(f.held_out), "chosen": f.chosen or BASELINE_ID, "gains": f.gains,
                              "note": f.note} for f in self.folds],
        }


def setting_label(row: dict[str, Any], knobs: list[str]) -> str:
    """A configuration named by the knobs the sweep varied (``defaults`` for the plugin's own)."""
    if row.get("baseline"):
        return "defaults"
    parts = []
    for k in knobs:
        v = row.get(k)
        parts.append(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}")
    return ", ".join(parts) or str(row.get("config_id"))


def fold_assignment(conversations: Sequence[str], folds: int = DEFAULT_FOLDS) -> list[tuple[str, ...]]:
    """Conversations dealt round-robin into ``min(folds, n)`` folds, in the given order.

    >>> fold_assignment(["a", "b", "c", "d", "e", "f"], 4)
    [('a', 'e'), ('b', 'f'), ('c',), ('d',)]
    """
    k = min(folds, len(conversations))
    return [tuple(conversations[i::k]) for i in range(k)]


def cross_validate(frame: pd.DataFrame, objectives: Mapping[str, str], constraints: Sequence[Mapping[str, Any]],
                   *, folds: int = DEFAULT_FOLDS) -> OutOfSample | None:
    """The choice rule cross-validated over conversations; ``None`` with fewer than
    :data:`MIN_CONVERSATIONS` conversations (see the module docstring)."""
    from lcm_lab.metrics.stats import cluster_paired_interval

    if folds < 2:
        raise OptionError("cross-validation needs at least 2 folds")
    conversations = list(dict.fromkeys(frame.conversation))
    if len(conversations) < MIN_CONVERSATIONS:
        return None
    metric, direction = next(iter(objectives.items()))
    sign = 1.0 if direction == "maximize" else -1.0
    values = _values(frame, metric)
    out: list[Fold] = []
    withheld: list[str] = []
    for held in fold_assignment(conversations, folds):
        training = [c for c in conversations if c not in held]
        try:
            chosen: str | None = choose(frame, objectives, constraints, training).config_id
            note = None
        except ValueError as exc:
            chosen, note = None, f"no choice on the training fold ({exc}): the defaults stand"
        gains: dict[str, float] = {}
        for conv in held:
            a, b = values.get((chosen or BASELINE_ID, conv)), values.get((BASELINE_ID, conv))
            if a is None or b is None:
                withheld.append(conv)
                continue
            gains[conv] = sign * (a - b)
        out.append(Fold(held, chosen, gains, note))
    per_conversation = {conv: [g] for f in out for conv, g in f.gains.items()}
    gain, lo, hi = cluster_paired_interval(per_conversation)
    defined = not math.isnan(lo)
    choices = {f.chosen or BASELINE_ID for f in out}
    transfers = bool(defined and lo > 0 and len(choices) == 1)
    return OutOfSample(metric, direction, out, None if math.isnan(gain) else gain, lo if defined else None,
                       hi if defined else None, transfers, withheld)


def _values(frame: pd.DataFrame, metric: str) -> dict[tuple[str, str], float]:
    """``(config_id, conversation) -> value`` of the ok runs that have one."""
    ok = frame[frame.status == "ok"]
    out = {}
    for cid, conv, v in zip(ok.config_id, ok.conversation, ok[metric], strict=True):
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            out[(str(cid), str(conv))] = float(v)
    return out
