"""``compare(runs, metrics)``: a compact table of runs side by side, with differences from a
baseline run and their uncertainty.

For every metric the per-item values are used (QA items, needles, summaries, turns, probes,
... — the most specific scope every run has), so each run gets a mean with a bootstrap interval
and each non-baseline run a difference ``run − baseline`` with a bootstrap interval; the
difference is *paired* when both runs scored the same items (same QA ids, same needles), which
removes item difficulty from the noise; the ``unit`` column says what was resampled and whether
the difference was paired. Items that name their conversation (``details["cluster"]``, as
``qa_probe_recall`` from :mod:`lcm_lab.metrics.verdicts` does) and span several conversations are
resampled by conversation (a cluster bootstrap: items of one conversation are not independent). Categories, depths, fact types and age buckets are never resampled
(a handful of values is not a sample), nor are per-turn series (cumulative, correlated): metrics
that exist only at such scopes get their value and no interval. Run-scope values (headlines) are
resampled by run when each label holds several runs (e.g. one per conversation: the unit is then
the conversation), otherwise they get no interval. A metric present
at two item scopes (``fact_retention`` per summary and per turn mean different things) must be
given ``scope=``: compare refuses to choose.

>>> from lcm_lab.metrics.base import Score
>>> a = [Score("a", "qa", f"q{i}", "qa_answer_f1", v) for i, v in enumerate([0.2, 0.4, 0.6, 0.8])]
>>> b = [Score("b", "qa", f"q{i}", "qa_answer_f1", v + 0.1) for i, v in enumerate([0.2, 0.4, 0.6, 0.8])]
>>> table = compare([a, b], ["qa_answer_f1"])
>>> table[["run", "n", "mean", "diff", "paired"]].round(2).values.tolist()
[['a', 4, 0.5, nan, False], ['b', 4, 0.6, 0.1, True]]
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lcm_lab.errors import OptionError
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.stats import bootstrap_difference, bootstrap_interval, cluster_bootstrap_difference

if TYPE_CHECKING:
    import pandas as pd

# Scopes whose values are independent-enough items to resample (the unit of the interval).
ITEM_SCOPES: tuple[str, ...] = ("qa", "needle", "probe", "fixture", "summary")
# Scopes that are never resampled: groupings with a handful of values (categories, depths, fact
# types, age buckets) and per-turn series (cumulative and correlated: no interval).
NO_INTERVAL_SCOPES: tuple[str, ...] = ("turn", "category", "fact_type", "age", "depth", "run")
COLUMNS = ["metric", "scope", "run", "n", "mean", "ci_low", "ci_high", "diff", "diff_ci_low", "diff_ci_high", "paired", "unit"]
UNITS = {"qa": "qa item", "needle": "needle", "probe": "probe", "fixture": "fixture", "summary": "summary", "run": "run (conversation)"}


def _as_runs(runs: Mapping[str, Iterable[Score]] | Sequence[Iterable[Score]] | Any) -> dict[str, list[Score]]:
    if hasattr(runs, "to_dict") and hasattr(runs, "columns"):  # a scores DataFrame
        import json

        out: dict[str, list[Score]] = defaultdict(list)
        for row in runs.to_dict("records"):
            value = row["value"]
            value = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
            details = row.get("details") or "{}"
            out[str(row["run_id"])].append(
                Score(str(row["run_id"]), row["scope"], str(row["scope_id"]), row["metric"], value, json.loads(details) if isinstance(details, str) else details)
            )
        return dict(out)
    if isinstance(runs, Mapping):
        return {str(k): list(v) for k, v in runs.items()}
    out = {}
    for scores in runs:
        items = list(scores)
        ids = {s.run_id for s in items}
        if len(ids) != 1:
            raise OptionError(f"each run must hold scores of one run_id, got {sorted(ids)}; pass a mapping label -> scores instead")
        out[ids.pop()] = items
    return out


def _unknown_metric(metric: str, by_run: Mapping[str, Sequence[Score]]) -> OptionError:
    """No run has a value of ``metric``: name the closest metric they score, and how many they do."""
    import difflib

    known = sorted({s.metric for scores in by_run.values() for s in scores})
    close = difflib.get_close_matches(metric, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return OptionError(f"metric {metric!r} was not found in any run{hint} (the runs score {len(known)} metrics: "
                       f"{', '.join(known[:12])}{', ...' if len(known) > 12 else ''})")


def compare(
    runs: Mapping[str, Iterable[Score]] | Sequence[Iterable[Score]] | Any,
    metrics: Sequence[str],
    *,
    baseline: str | None = None,
    scope: str | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (metric, run): n, mean and interval; difference from ``baseline`` (default:
    the first run) with its interval and whether it was paired. ``runs`` is a list of score
    lists (one run each), a mapping ``label -> scores``, or a ``scores_df()`` frame."""
    import pandas as pd

    by_run = _as_runs(runs)
    if isinstance(metrics, str):  # one metric's name, not a sequence of one-letter names
        metrics = [metrics]
    if not by_run:
        raise OptionError("compare needs at least one run")
    labels = list(by_run)
    base = baseline or labels[0]
    if base not in by_run:
        raise OptionError(f"baseline {base!r} is not among the runs {labels}")
    rows: list[dict[str, Any]] = []
    for metric in metrics:
        values: dict[str, dict[str, dict[str, float]]] = {label: defaultdict(dict) for label in labels}
        clusters: dict[str, object] = {}  # item key -> its cluster (the conversation), when the scorer names one
        for label, scores in by_run.items():
            for s in scores:
                if s.metric == metric and s.value is not None and not math.isnan(s.value):
                    # run-scope values of a label holding several runs (one per conversation) are the
                    # conversations: keyed by run id, resampled like items
                    key = s.run_id if s.scope == "run" else s.scope_id
                    values[label][s.scope][key] = float(s.value)
                    if s.scope != "run" and s.details.get("cluster") is not None:
                        clusters[key] = s.details["cluster"]
        missing = [label for label in labels if not values[label]]
        if len(missing) == len(labels):
            raise _unknown_metric(metric, by_run)
        present = [label for label in labels if label not in missing]
        item_scopes = sorted({sc for label in present for sc in values[label] if sc in (*ITEM_SCOPES, "turn")})
        if scope is None and len(item_scopes) > 1:
            raise OptionError(f"metric {metric!r} is scored at several item scopes {item_scopes}; they mean different things, pass scope=")
        chosen = scope or next((sc for sc in (*ITEM_SCOPES, *NO_INTERVAL_SCOPES) if all(values[label].get(sc) for label in present)), None)
        if chosen is None:
            raise OptionError(f"metric {metric!r} has no scope shared by all runs; pass scope=")
        resample = chosen in ITEM_SCOPES or (chosen == "run" and all(len(values[label].get("run", {})) >= 2 for label in present))
        base_items = values[base].get(chosen, {})
        for label in labels:
            items = values[label].get(chosen, {})
            row: dict[str, Any] = {"metric": metric, "scope": chosen, "run": label, "n": len(items)}
            if not items:
                rows.append(row | {"mean": math.nan, "ci_low": math.nan, "ci_high": math.nan, "diff": math.nan, "diff_ci_low": math.nan,
                                   "diff_ci_high": math.nan, "paired": False, "unit": ""})
                continue
            vals = list(items.values())
            # items of several conversations are clustered: the conversation is the resampling unit
            groups = [clusters.get(key) for key in items]
            clustered = chosen in ITEM_SCOPES and None not in groups and len(set(groups)) >= 2
            if clustered:
                _, lo, hi = cluster_bootstrap_difference([0.0] * len(vals), vals, groups, confidence=confidence, resamples=resamples, seed=seed)
            else:
                lo, hi = bootstrap_interval(vals, confidence=confidence, resamples=resamples, seed=seed) if resample else (math.nan, math.nan)
            unit = UNITS.get(chosen, f"none ({chosen} values are not resampled)")
            row |= {"mean": sum(vals) / len(vals), "ci_low": lo, "ci_high": hi, "unit": f"{unit}, clustered by conversation" if clustered else unit}
            if label == base or not base_items or not resample:
                diff = sum(vals) / len(vals) - sum(base_items.values()) / len(base_items) if base_items and label != base else math.nan
                row |= {"diff": diff, "diff_ci_low": math.nan, "diff_ci_high": math.nan, "paired": False}
            else:
                shared = sorted(set(items) & set(base_items))
                paired = len(shared) >= 2 and len(shared) == len(items) == len(base_items)
                if paired:
                    a, b = [base_items[k] for k in shared], [items[k] for k in shared]
                else:
                    a, b = list(base_items.values()), vals
                if paired and clustered:
                    diff, dlo, dhi = cluster_bootstrap_difference(a, b, [clusters[k] for k in shared], confidence=confidence,
                                                                  resamples=resamples, seed=seed)  # fmt: skip
                else:
                    diff, dlo, dhi = bootstrap_difference(a, b, paired=paired, confidence=confidence, resamples=resamples, seed=seed)
                how = ("paired" if paired else "unpaired") + (", clustered by conversation" if paired and clustered else "")
                row |= {"diff": diff, "diff_ci_low": dlo, "diff_ci_high": dhi, "paired": paired, "unit": f"{UNITS[chosen]} ({how})"}
            rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
