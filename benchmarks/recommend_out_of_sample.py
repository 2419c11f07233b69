"""The closing table of issue 20: LCM defaults vs the best out-of-sample setting vs truncation on
LoCoMo at 6k, 8k and 32k, with intervals.

For every budget, every LCM setting of the fixed grid of :mod:`benchmarks.verdict_reliability`
(13 settings, the plugin defaults among them) is replayed with the offline summarizer on all ten
LoCoMo conversations and scored by the lab's one scorer (:mod:`lcm_lab.metrics.verdicts`, probes
over the conversation's life, read through that benchmark's readers and replay cache, so the
replays it made are not made again); ``truncate`` is scored the same way. "Best out of sample" is
the recommendation procedure itself, cross-validated (:func:`lcm_lab.sweeps.choice.cross_validate`,
5 folds of two conversations): each conversation is scored with the setting chosen on the other
eight, so its value was never used to choose. Means are over conversations with 95% t-intervals
(the conversation is the unit); differences are paired by conversation. Writes
``reports/recommend-out-of-sample.{md,json}``.

    python -m benchmarks.recommend_out_of_sample
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.verdict_reliability import SETTINGS

REPO = Path(__file__).resolve().parents[1]
BUDGETS = (6000, 8000, 32000)
METRICS = ("qa_retention", "fact_retention")
FOLDS = 5


def measure(items: Sequence[Any], budget: int, settings: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (setting or ``truncate``, conversation): the headlines, read through the readers
    of :mod:`benchmarks.verdict_reliability` (whose whole value is the scorer's headline, checked
    there) and its on-disk cache, so replays that benchmark made are not made again."""
    import benchmarks.verdict_reliability as vr
    from lcm_lab.strategies import run_strategy

    names = list(vr.readers())
    data = vr.measure(items, settings, (budget,), names, "LoCoMo")
    rows = []
    for trial, name in enumerate(settings):
        for i in range(len(items)):
            rows.append({"config_id": name, "trial": trial, "baseline": name == "defaults", "conversation": f"locomo#{i}",
                         "status": "ok", **{m: vr.value(data[(name, budget, i, m)]) for m in METRICS}})
    for i, item in enumerate(items):
        run = run_strategy(item.conversation, "truncate", token_budget=budget)
        rows.append({"config_id": "truncate", "trial": None, "baseline": False, "conversation": f"locomo#{i}", "status": "ok",
                     **{m: vr.value(vr.readers()[m](run, item, budget)) for m in METRICS}})
    return rows


def _interval(values: Mapping[str, float]) -> dict[str, Any]:
    from lcm_lab.metrics.stats import cluster_paired_interval

    mean, lo, hi = cluster_paired_interval({k: [v] for k, v in values.items()})
    ok = not math.isnan(lo)
    return {"mean": None if math.isnan(mean) else mean, "ci_low": lo if ok else None, "ci_high": hi if ok else None,
            "n": len(values)}


def summarise(rows: list[dict[str, Any]], metric: str) -> dict[str, Any]:
    """Defaults, the cross-validated choice and truncation on ``metric``, with paired differences."""
    import pandas as pd

    from lcm_lab.sweeps.choice import choose, cross_validate

    frame = pd.DataFrame([r for r in rows if r["config_id"] != "truncate"])
    oos = cross_validate(frame, {metric: "maximize"}, [], folds=FOLDS)
    assert oos is not None  # ten conversations
    in_sample = choose(frame, {metric: "maximize"}, []).config_id
    value = {(r["config_id"], r["conversation"]): r[metric] for r in rows}
    conversations = list(dict.fromkeys(r["conversation"] for r in rows))
    chosen_for = {c: f.chosen or "defaults" for f in oos.folds for c in f.held_out}
    series = {
        "defaults": {c: value[("defaults", c)] for c in conversations},
        "best out of sample": {c: value[(chosen_for[c], c)] for c in conversations},
        "truncate": {c: value[("truncate", c)] for c in conversations},
    }
    defined = {name: {c: v for c, v in s.items() if v is not None} for name, s in series.items()}

    def paired(a: str, b: str) -> dict[str, Any]:
        both = [c for c in conversations if series[a][c] is not None and series[b][c] is not None]
        return _interval({c: float(series[a][c]) - float(series[b][c]) for c in both})  # type: ignore[arg-type]

    return {
        "rows": {name: _interval(v) for name, v in defined.items()},
        "withheld": {name: sum(v is None for v in s.values()) for name, s in series.items()},
        "differences": {"best out of sample − defaults": paired("best out of sample", "defaults"),
                        "defaults − truncate": paired("defaults", "truncate"),
                        "best out of sample − truncate": paired("best out of sample", "truncate")},
        "out_of_sample": oos.as_json(), "in_sample_choice": in_sample,
        "per_conversation": series,
    }


def _ci(r: Mapping[str, Any]) -> str:
    if r["mean"] is None:
        return "— (withheld everywhere)"
    if r["ci_low"] is None:
        return f"{r['mean']:+.3f} (no interval)"
    return f"{r['mean']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"


def _conversations(result: Mapping[str, Any]) -> str:
    first = next(iter(result["budgets"].values()))["qa_retention"]["per_conversation"]["defaults"]
    return "All ten" if len(first) == 10 else f"{len(first)} (a quick run)"


def _verdict(oos: Mapping[str, Any]) -> str:
    if all(f["chosen"] == "defaults" for f in oos["fold_choices"]):
        return "no change (every fold keeps the defaults)"
    return "transfers" if oos["transfers"] else "does not transfer"


def markdown(result: Mapping[str, Any]) -> str:
    lines = ["# LCM defaults vs the best out-of-sample setting vs truncation (LoCoMo)", "",
             f"Generated by `python -m benchmarks.recommend_out_of_sample` in {result['seconds']:.0f} s (replays read from the cache "
             "`benchmarks/verdict_reliability.py` fills). "
             f"{_conversations(result)} LoCoMo conversations, offline summarizer, the {len(result['settings'])} LCM settings of `benchmarks/verdict_reliability.py` "
             "(fixed, not tuned), headlines probed over the conversation's life (`lcm_lab.metrics.verdicts`). "
             "*Best out of sample* = the recommendation procedure cross-validated over conversations (5 folds of two): every "
             "conversation is scored with the setting chosen on the other eight. Means over conversations with 95% t-intervals "
             "(conversation = unit); differences paired by conversation; `n` = conversations with a value (the rest withheld: "
             "no probe point where the history exceeds the budget).", ""]
    for metric in METRICS:
        lines += [f"## {metric}", "",
                  "| budget | LCM defaults | best out of sample | truncate | out of sample − defaults | defaults − truncate | verdict |",
                  "|---|---|---|---|---|---|---|"]
        for budget, by_metric in result["budgets"].items():
            r = by_metric[metric]
            rows, diff, oos = r["rows"], r["differences"], r["out_of_sample"]
            lines.append(f"| {budget} | {_ci(rows['defaults'])} n={rows['defaults']['n']} | {_ci(rows['best out of sample'])} "
                         f"n={rows['best out of sample']['n']} | {_ci(rows['truncate'])} n={rows['truncate']['n']} | "
                         f"{_ci(diff['best out of sample − defaults'])} | {_ci(diff['defaults − truncate'])} | "
                         f"{_verdict(oos)} |")
        lines += ["", "Fold choices (held-out conversations → setting chosen on the others) and the in-sample choice:", ""]
        for budget, by_metric in result["budgets"].items():
            r = by_metric[metric]
            folds = "; ".join(f"{', '.join(h.removeprefix('locomo') for h in f['held_out'])} → {f['chosen']}"
                              for f in r["out_of_sample"]["fold_choices"])
            lines.append(f"- {budget}: {folds}; in-sample choice: {r['in_sample_choice']}. {r['out_of_sample']['verdict']}")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "reports" / "recommend-out-of-sample"), help="output path without suffix")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="comma-separated token budgets")
    parser.add_argument("--quick", action="store_true", help="4 conversations and 3 settings (a smoke run)")
    parser.add_argument("--shard", default="0/1", metavar="I/K",
                        help="only fill the replay cache with every K-th replay (K workers side by side); then run without it")
    args = parser.parse_args(argv)
    import benchmarks.verdict_reliability as vr

    worker, workers = (int(x) for x in args.shard.split("/"))
    vr.SHARD = (worker, workers)
    from lcm_lab.io.transcripts import read_transcript

    started = time.perf_counter()
    items = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)[: 4 if args.quick else None]
    settings = dict(list(SETTINGS.items())[:3]) if args.quick else SETTINGS
    result: dict[str, Any] = {"settings": settings, "budgets": {}}
    for budget in (int(b) for b in args.budgets.split(",")):
        if workers > 1:
            vr.measure(items, settings, (budget,), list(vr.readers()), "LoCoMo")
            continue
        rows = measure(items, budget, settings)
        result.setdefault("rows", {})[str(budget)] = rows
        result["budgets"][str(budget)] = {metric: summarise(rows, metric) for metric in METRICS}
    if workers > 1:
        return {}
    result["seconds"] = time.perf_counter() - started
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
