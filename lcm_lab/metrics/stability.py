"""Stability across repeated runs of one configuration, and the drift alarm between runs.

**Stability.** Replay the same conversation with the same config ``k`` times, each with a fresh
summarizer built for one seed/repeat (``make_summarizer(i)``): a deterministic summarizer (the
offline one) gives identical runs by construction; a sampled LLM does not. Scores (scope ``run``,
``scope_id`` = the configuration label):

* ``summary_stability`` — mean pairwise Jaccard similarity of the word sets of the final context's
  summary text across repeats (1 = identical; unit ``repeat pair``);
* ``<headline>_spread`` — for each headline (``fact_retention``, ``decision_retention``): the
  standard deviation across repeats, with mean, min, max, the per-repeat values and a 95 %
  t-interval of the mean (unit ``repeat``). This is the run-to-run noise a comparison between
  configurations has to beat.

**Drift.** :func:`drift_alarm` flags a headline that falls below the previous run's 95 % interval
(or a withheld/missing value where there was one). ``lcm-lab drift`` runs it over the store.

>>> prev = Score("r1", "run", "", "fact_retention", 0.40, {"ci_low": 0.35, "ci_high": 0.45})
>>> drift_alarm(prev, Score("r2", "run", "", "fact_retention", 0.30, {})).alarm
True
>>> drift_alarm(prev, Score("r2", "run", "", "fact_retention", 0.37, {})).status
'within'
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.protocol import Summarizer
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.types import Conversation
from lcm_lab.errors import OptionError
from lcm_lab.metrics.base import Score, runtime_text
from lcm_lab.metrics.decisions import decision_scores
from lcm_lab.metrics.fact_headline import fact_headline_scores
from lcm_lab.metrics.stats import t_interval

_WORD = re.compile(r"[a-z0-9_./-]+")


def repeat_replays(
    conversation: Conversation,
    config: LcmConfig,
    make_summarizer: Callable[[int], Summarizer],
    *,
    repeats: int,
    token_budget: int,
    label: str = "config",
) -> list[Replay]:
    """``repeats`` replays of one configuration, repeat ``i`` summarised by ``make_summarizer(i)``
    (e.g. ``lambda i: litellm_summarizer(model, seed=i)``)."""
    if repeats < 2:
        raise ValueError("stability needs at least two repeats")
    return [replay(conversation, config, make_summarizer(i), token_budget=token_budget, run_id=f"{label}#{i}") for i in range(repeats)]


def _summary_words(run: Any) -> frozenset[str]:
    text = "\n".join(runtime_text(item.message) for item in run.sent().items if item.kind == "summary")
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets (1 for two empty sets).

    >>> jaccard(frozenset("ab"), frozenset("bc"))
    0.3333333333333333
    """
    return len(a & b) / len(a | b) if a | b else 1.0


def stability_scores(runs: Sequence[Any], label: str, *, donor_text: str | None = None) -> list[Score]:
    """``summary_stability`` and ``<headline>_spread`` over repeated runs of one configuration."""
    if len(runs) < 2:
        raise ValueError("stability needs at least two repeated runs")
    words = [_summary_words(r) for r in runs]
    pairs = [jaccard(a, b) for a, b in itertools.combinations(words, 2)]
    identical = len(set(words)) == 1
    scores = [Score(label, "run", label, "summary_stability", float(np.mean(pairs)),
                    {"n": len(pairs), "unit": "repeat pair", "repeats": len(runs), "identical": identical, "min": float(min(pairs))})]
    per_metric: dict[str, list[float | None]] = {"fact_retention": [], "decision_retention": []}
    for i, run in enumerate(runs):
        rows = fact_headline_scores(run, f"{label}#{i}", donor_text=donor_text) + decision_scores(run, f"{label}#{i}", donor_text=donor_text)
        for row in rows:
            if row.metric in per_metric:
                per_metric[row.metric].append(row.value)
    for metric, values in per_metric.items():
        defined = [v for v in values if v is not None]
        if len(defined) < 2:
            scores.append(Score(label, "run", label, f"{metric}_spread", None, {"values": values, "reason": "headline withheld in fewer than two repeats"}))
            continue
        lo, hi = t_interval(defined)
        scores.append(Score(label, "run", label, f"{metric}_spread", float(np.std(defined, ddof=1)),
                            {"values": values, "mean": float(np.mean(defined)), "min": min(defined), "max": max(defined),
                             "n": len(defined), "unit": "repeat", "ci_low": lo, "ci_high": hi, "interval": "t, mean over repeats"}))
    return scores


class Drift(NamedTuple):
    """The drift check of one headline: ``status`` is ``drop`` (alarm), ``rise``, ``within``,
    ``lost`` (alarm: the new value is missing or withheld) or ``no-interval`` (nothing to compare)."""

    metric: str
    previous: float | None
    current: float | None
    ci_low: float | None
    ci_high: float | None
    status: str

    @property
    def alarm(self) -> bool:
        return self.status in ("drop", "lost")


def drift_alarm(previous: Score, current: Score | None) -> Drift:
    """Compare a new run's headline with the previous run's value and 95 % interval."""
    lo, hi = previous.details.get("ci_low"), previous.details.get("ci_high")
    value = None if current is None else current.value
    if previous.value is None or lo is None or hi is None or np.isnan(lo) or np.isnan(hi):
        status = "no-interval"
    elif value is None:
        status = "lost"
    elif value < lo:
        status = "drop"
    elif value > hi:
        status = "rise"
    else:
        status = "within"
    return Drift(previous.metric, previous.value, value, lo, hi, status)


def drift_checks(previous: Sequence[Score], current: Sequence[Score], metrics: Sequence[str] | None = None) -> list[Drift]:
    """:func:`drift_alarm` for every run-scope headline of the previous run that has an interval,
    or for each of ``metrics`` (one without an interval is ``no-interval``). A name in ``metrics``
    that is no run-scope headline of the previous run is an :class:`~lcm_lab.errors.OptionError`
    listing the ones it has (a misspelt name checked nothing, which read as "no alarm")."""
    headlines = {s.metric: s for s in previous if s.scope == "run"}
    cur = {s.metric: s for s in current if s.scope == "run"}
    if not metrics:
        return [drift_alarm(headlines[m], cur.get(m)) for m in sorted(headlines) if "ci_low" in headlines[m].details]
    unknown = [m for m in dict.fromkeys(metrics) if m not in headlines]
    if unknown:
        import difflib

        run = previous[0].run_id if previous else "the previous run"
        close = [c for m in unknown for c in difflib.get_close_matches(m, headlines, n=1)]
        hint = f"did you mean {', '.join(close)}? " if close else ""
        banded = sorted(m for m, s in headlines.items() if "ci_low" in s.details)
        rest = len(headlines) - len(banded)
        known = f"its headlines with an interval: {', '.join(banded) or 'none'}" + (f" (and {rest} without one)" if rest else "")
        raise OptionError(f"--metric {', '.join(repr(m) for m in unknown)}: run {run} has no run-scope headline of that "
                          f"name; {hint}{known}")
    return [drift_alarm(headlines[m], cur.get(m)) for m in dict.fromkeys(metrics)]
