"""How reliable are the verdicts? Split-half reliability and rank stability of the headlines.

Writes ``reports/verdict-reliability.{md,json}`` (issue 20, item 4). The grid of LCM settings
(:data:`SETTINGS`) was fixed before any result was read and is not tuned to pass; the offline
summarizer writes every summary.

(a) **Split-half reliability** per LoCoMo conversation and budget: each setting's headline is
    computed on the odd and on the even probes (rows in probe order; also, for probed headlines,
    on odd vs even probe *points*); the Pearson correlation of the two halves over the settings,
    stepped up with Spearman–Brown, says whether the probes of one conversation rank the
    settings consistently. The plugin defaults' two half values are listed too.
(b) **Rank stability**: every setting's mean headline over LoCoMo indexes {0,2,4,6,8} against
    {1,3,5,7,9} (withheld conversations skipped), Spearman over the settings (target ≥ 0.7), at
    6k and 8k; the same for every one of the 126 ways to split the ten conversations in two
    halves of five (median, range, share ≥ 0.7), so the fixed split is seen against its
    distribution. Every reading is measured in the same run: the headline and the end-of-run
    reading (``run.sent()`` after the last turn).
(c) The same for ``fact_retention`` on the two pi-mono sessions: split-half over facts (or
    probes) per session, and the Spearman of the settings' ranking on one session against the
    other.

Before the probed headlines landed (``lcm_lab.metrics.verdicts``), the headline *is* the end-of-run
reading and a "probe" is an item read at that one instant; with them, :func:`readers` adds the
probed headlines. The only seam is :func:`readers`: each reader turns a run into aligned
per-probe arrays (method, floor, ceiling, weight, probe point).

    python -m benchmarks.verdict_reliability            # about 15 minutes on 2 cores
    python -m benchmarks.verdict_reliability --quick    # 4 conversations, 4 settings: a smoke run
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TIGHT = {"leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300}
SETTINGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "threshold 0.5": {"contextThreshold": 0.5},
    "threshold 0.9": {"contextThreshold": 0.9},
    "fresh tail 16": {"freshTailCount": 16},
    "fresh tail 32": {"freshTailCount": 32},
    "leaf chunk 4000": {"leafChunkTokens": 4000},
    "leaf target 800": {"leafTargetTokens": 800},
    "tight chunk+targets": TIGHT,
    "tight, fresh tail 8": {**TIGHT, "freshTailCount": 8},
    "tight, depth cap 0": {**TIGHT, "sweepMaxDepth": 0},
    "tight, unlimited depth": {**TIGHT, "sweepMaxDepth": -1},
    "inline": {"proactiveThresholdCompactionMode": "inline"},
    "tight, inline": {**TIGHT, "proactiveThresholdCompactionMode": "inline"},
}
BUDGETS = (6000, 8000)
EVEN, ODD = (0, 2, 4, 6, 8), (1, 3, 5, 7, 9)
TARGET = 0.7
PI_SESSIONS = ("before-compaction", "large-session")


class Reading(NamedTuple):
    """One headline's probes of one run (aligned arrays)."""

    method: np.ndarray
    floor: np.ndarray
    ceiling: np.ndarray
    weight: np.ndarray
    point: np.ndarray  # the probe point (turn) of each probe


def value(r: Reading, mask: np.ndarray | None = None) -> float | None:
    """The headline over the probes in ``mask``: ``(Σw·method − Σw·floor) / (Σw·ceiling − Σw·floor)``,
    ``None`` (withheld) when the gap is below the headline's ``MIN_GAP`` or no probe is left."""
    from lcm_lab.metrics.headline import MIN_GAP

    keep = np.ones(r.method.size, bool) if mask is None else mask
    w = r.weight[keep]
    if w.size == 0 or float(w.sum()) == 0:
        return None
    m, f, c = (float((x[keep] * w).sum() / w.sum()) for x in (r.method, r.floor, r.ceiling))
    return None if c - f < MIN_GAP else (m - f) / (c - f)


def halves(r: Reading, by: str) -> tuple[float | None, float | None]:
    """The headline on odd and on even probes (``by="probe"``) or probe points (``by="point"``)."""
    if by == "probe":
        odd = np.arange(r.method.size) % 2 == 1
    else:
        points = sorted(set(r.point.tolist()))
        rank = {p: i for i, p in enumerate(points)}
        odd = np.array([rank[p] % 2 == 1 for p in r.point.tolist()], dtype=bool)
    return value(r, odd), value(r, ~odd)


# -- the seam: readers ----------------------------------------------------------------------


Reader = Callable[[Any, Any, int], Reading]


def qa_end_of_run(run: Any, item: Any, budget: int) -> Reading:
    """LoCoMo QA items read in ``run.sent()`` after the last turn (one instant)."""
    from lcm_lab.metrics.locomo import qa_retention_scores

    rows = [s for s in qa_retention_scores(run, item.qa_items, "r", budget=budget) if s.scope == "qa"]
    method = np.array([float(s.value) for s in rows])
    return Reading(method, np.array([float(s.details["floor"]) for s in rows]), np.array([float(s.details["ceiling"]) for s in rows]),
                   np.ones(len(rows)), np.full(len(rows), len(run.turns)))  # fmt: skip


def fact_end_of_run(run: Any, item: Any, budget: int) -> Reading:
    """Hard facts of the whole history read in ``run.sent()`` after the last turn (one instant)."""
    from lcm_lab.metrics.fact_headline import fact_outcome

    out = fact_outcome(run, budget=budget)
    n = len(out.facts)
    return Reading(out.method, out.floor, np.ones(n), out.weights, np.full(n, len(run.turns)))


def readers() -> dict[str, Reader]:
    """Every reading measured: the probed headlines when the lab has them, and the end-of-run
    reading (before the probes landed, that reading *was* the headline)."""
    out: dict[str, Reader] = {}
    probed = _probed_readers()
    out.update(probed)
    suffix = "_end_of_run" if probed else ""
    out[f"qa_retention{suffix}"] = qa_end_of_run
    out[f"fact_retention{suffix}"] = fact_end_of_run
    return out


def _probed_readers() -> dict[str, Reader]:
    try:
        from lcm_lab.metrics import verdicts  # noqa: F401
    except ImportError:
        return {}
    raise NotImplementedError("probed readers: wire lcm_lab.metrics.verdicts' probe rows here")


# -- measurement ----------------------------------------------------------------------------


def replay_run(conversation: Any, plugin: Mapping[str, Any], budget: int) -> Any:
    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.summarizers.offline import OfflineSummarizer

    return replay(conversation, LcmConfig.from_plugin_config(dict(plugin)), OfflineSummarizer(), token_budget=budget)


def measure(items: Sequence[Any], settings: Mapping[str, Mapping[str, Any]], budgets: Sequence[int],
            names: Sequence[str], progress: str) -> dict[tuple[str, int, int, str], Reading]:
    """``(setting, budget, conversation index, reading) -> Reading`` for every combination."""
    from tqdm.auto import tqdm

    chosen = {n: readers()[n] for n in names}
    out = {}
    jobs = list(itertools.product(settings, budgets, range(len(items))))
    for name, budget, i in tqdm(jobs, desc=progress, leave=False):
        run = replay_run(items[i].conversation, settings[name], budget)
        for reading, read in chosen.items():
            out[(name, budget, i, reading)] = read(run, items[i], budget)
    return out


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(v)]


def _mean(values: Sequence[float | None]) -> float | None:
    kept = _finite(values)
    return sum(kept) / len(kept) if kept else None


def _nan_to_none(v: float | None) -> float | None:
    return None if v is None or math.isnan(v) else float(v)


def split_half(data: Mapping[tuple[str, int, int, str], Reading], settings: Sequence[str], budget: int, index: int,
               reading: str, by: str) -> dict[str, Any]:
    """Split-half reliability of one conversation × budget over the settings (see (a))."""
    from lcm_lab.metrics.stats import split_half_reliability

    pairs = [halves(data[(s, budget, index, reading)], by) for s in settings]
    whole = [value(data[(s, budget, index, reading)]) for s in settings]
    ok = [(a, b) for a, b in pairs if a is not None and b is not None]
    r, sb = split_half_reliability([a for a, _ in ok], [b for _, b in ok]) if len(ok) >= 3 else (math.nan, math.nan)
    # Settings sitting exactly on the floor give (0, 0) in both halves: a cluster of them makes r
    # large whatever the others do, so the same statistic over the settings off the floor too.
    off = [(a, b) for (a, b), v in zip(pairs, whole, strict=True) if a is not None and b is not None and v is not None and abs(v) > 1e-12]
    _, sb_off = split_half_reliability([a for a, _ in off], [b for _, b in off]) if len(off) >= 3 else (math.nan, math.nan)
    d_odd, d_even = halves(data[("defaults", budget, index, reading)], by) if "defaults" in settings else (None, None)
    return {"settings_defined": len(ok), "r": _nan_to_none(r), "spearman_brown": _nan_to_none(sb),
            "settings_off_floor": len(off), "spearman_brown_off_floor": _nan_to_none(sb_off),
            "defaults_odd": d_odd, "defaults_even": d_even, "probes": int(data[(settings[0], budget, index, reading)].method.size),
            "points": len(set(data[(settings[0], budget, index, reading)].point.tolist())),
            "settings_at_floor": sum(1 for v in whole if v is not None and abs(v) < 1e-12), "settings_withheld": sum(v is None for v in whole)}


def split_half_over_conversations(data: Mapping[tuple[str, int, int, str], Reading], settings: Sequence[str], budget: int,
                                  reading: str, n: int) -> dict[str, Any]:
    """Per setting: Pearson r over the conversations of its odd-probe vs even-probe headline,
    Spearman–Brown stepped up (the classic test reliability, conversations as the units)."""
    from lcm_lab.metrics.stats import split_half_reliability

    out = {}
    for s in settings:
        pairs = [halves(data[(s, budget, i, reading)], "probe") for i in range(n)]
        ok = [(a, b) for a, b in pairs if a is not None and b is not None]
        r, sb = split_half_reliability([a for a, _ in ok], [b for _, b in ok]) if len(ok) >= 3 else (math.nan, math.nan)
        out[s] = {"conversations": len(ok), "r": _nan_to_none(r), "spearman_brown": _nan_to_none(sb)}
    return out


def rank_stability(data: Mapping[tuple[str, int, int, str], Reading], settings: Sequence[str], budget: int,
                   reading: str, a: Sequence[int], b: Sequence[int], n: int) -> dict[str, Any]:
    """Spearman of the settings' mean headline on conversations ``a`` vs ``b``, and over every
    split of the ``n`` conversations into two halves (see (b))."""
    from lcm_lab.metrics.stats import spearman

    per = {s: [value(data[(s, budget, i, reading)]) for i in range(n)] for s in settings}

    def means(idx: Sequence[int]) -> list[float | None]:
        return [_mean([per[s][i] for i in idx]) for s in settings]

    def rho(x: Sequence[int], y: Sequence[int]) -> float:
        mx, my = means(x), means(y)
        ok = [(p, q) for p, q in zip(mx, my, strict=True) if p is not None and q is not None]
        return spearman([p for p, _ in ok], [q for _, q in ok]) if len(ok) >= 3 else math.nan

    fixed = rho(a, b)
    half = n // 2
    everyone = [c for c in itertools.combinations(range(n), half) if 0 in c] if n == 2 * half else []
    splits = [rho(c, [i for i in range(n) if i not in c]) for c in everyone]
    finite = [v for v in splits if not math.isnan(v)]
    return {
        "spearman": _nan_to_none(fixed), "meets_target": bool(not math.isnan(fixed) and fixed >= TARGET),
        "means_a": dict(zip(settings, means(a), strict=True)), "means_b": dict(zip(settings, means(b), strict=True)),
        "withheld": {s: sum(v is None for v in per[s]) for s in settings},
        "all_splits": {"count": len(splits), "defined": len(finite),
                       "median": float(np.median(finite)) if finite else None, "min": min(finite) if finite else None,
                       "max": max(finite) if finite else None,
                       "share_meeting_target": sum(v >= TARGET for v in finite) / len(finite) if finite else None},
    }


def pi_stability(data: Mapping[tuple[str, int, int, str], Reading], settings: Sequence[str], budget: int,
                 reading: str) -> dict[str, Any]:
    """(c): the settings ranked on one pi session against the other, and split-half per session."""
    from lcm_lab.metrics.stats import spearman

    values = [[value(data[(s, budget, i, reading)]) for s in settings] for i in range(len(PI_SESSIONS))]
    ok = [(p, q) for p, q in zip(*values, strict=True) if p is not None and q is not None]
    rho = spearman([p for p, _ in ok], [q for _, q in ok]) if len(ok) >= 3 else math.nan
    return {
        "spearman_sessions": _nan_to_none(rho), "settings_defined": len(ok),
        "values": {name: dict(zip(settings, v, strict=True)) for name, v in zip(PI_SESSIONS, values, strict=True)},
        "split_half": {name: split_half(data, settings, budget, i, reading, "probe") for i, name in enumerate(PI_SESSIONS)},
    }


# -- the report -----------------------------------------------------------------------------


def _f(v: float | None, digits: int = 3) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:+.{digits}f}"


def markdown(result: Mapping[str, Any]) -> str:
    settings = result["settings"]
    lines = [
        "# Verdict reliability", "",
        f"Generated by `python -m benchmarks.verdict_reliability` ({result['protocol']}). Offline summarizer, "
        f"{len(settings)} LCM settings fixed before any result was read (not tuned to pass), LoCoMo conversations "
        f"{result['locomo_conversations']}, budgets {', '.join(str(b) for b in result['budgets'])}; "
        f"{result['seconds']:.0f} s.", "",
        "Settings: " + "; ".join(f"**{k}** `{json.dumps(v)}`" for k, v in settings.items()) + ".", "",
        "Readings: " + "; ".join(f"`{k}`: {v}" for k, v in result["readings"].items()), "",
        "How to read it: split-half within one conversation measures the noise of sampling probes at the contexts the "
        "settings produced (both halves read the same contexts); rank stability across conversations measures whether "
        "a ranking of settings found on some conversations holds on others, which is what a recommendation needs.", "",
        "## (b) Rank stability on LoCoMo", "",
        f"Spearman of the settings' mean headline on conversations {list(EVEN)} vs {list(ODD)} (target ≥ {TARGET}); "
        "`all splits` = the same over every split of the ten conversations into two halves of five.", "",
        "| reading | budget | Spearman {0,2,4,6,8} vs {1,3,5,7,9} | meets target | all splits: median [min, max] | share ≥ 0.7 | withheld (conversation × setting) |",
        "|---|---|---|---|---|---|---|",
    ]
    for reading, by_budget in result["rank_stability"].items():
        for budget, r in by_budget.items():
            s = r["all_splits"]
            share = "—" if s["share_meeting_target"] is None else f"{s['share_meeting_target']:.0%}"
            lines.append(f"| `{reading}` | {budget} | {_f(r['spearman'])} | {'yes' if r['meets_target'] else 'no'} | "
                         f"{_f(s['median'])} [{_f(s['min'])}, {_f(s['max'])}] | {share} | {sum(r['withheld'].values())} |")
    lines += ["", "Mean headline per setting on each half (even indexes | odd indexes):", ""]
    header = "| setting | " + " | ".join(f"`{r}` @ {b}" for r, bb in result["rank_stability"].items() for b in bb) + " |"
    lines += [header, "|---|" + "---|" * (header.count("|") - 2)]
    for s in settings:
        cells = [f"{_f(r['means_a'][s])} \\| {_f(r['means_b'][s])}" for bb in result["rank_stability"].values() for r in bb.values()]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines += ["", "## (a) Split-half reliability per LoCoMo conversation", "",
              "Per conversation × budget: Pearson r over the settings of the headline on odd vs even probes, stepped up "
              "with Spearman–Brown (`SB`); `by point` splits odd vs even probe points instead (probed headlines only). "
              "`defaults odd | even` = the plugin defaults' two half values. `at floor` = settings whose whole value is "
              "exactly 0 (the context scored as the truncation floor); `withheld` = gap below MIN_GAP.", ""]
    for reading, by_budget in result["split_half"].items():
        lines += [f"### `{reading}`", "", "| budget | conversation | probes | points | SB (probes) | SB off floor | SB (points) | defaults odd \\| even | at floor | withheld |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for budget, rows in by_budget.items():
            for i, row in rows.items():
                point = row.get("by_point", {}).get("spearman_brown")
                lines.append(f"| {budget} | {i} | {row['probes']} | {row['points']} | {_f(row['spearman_brown'])} | "
                             f"{_f(row['spearman_brown_off_floor'])} ({row['settings_off_floor']}) | {_f(point)} | "
                             f"{_f(row['defaults_odd'])} \\| {_f(row['defaults_even'])} | {row['settings_at_floor']} | {row['settings_withheld']} |")
            defined = _finite([row["spearman_brown"] for row in rows.values()])
            off = _finite([row["spearman_brown_off_floor"] for row in rows.values()])
            lines.append(f"| {budget} | **median** | | | {_f(float(np.median(defined)) if defined else None)} "
                         f"({len(defined)} of {len(rows)} defined) | {_f(float(np.median(off)) if off else None)} "
                         f"({len(off)} defined) | | | | |")
        lines.append("")
    lines += ["### Over conversations, per setting", "",
              "Per setting × budget: Pearson r over the LoCoMo conversations of the odd-probe vs even-probe headline, "
              "Spearman–Brown stepped up (conversations as the units of a classic split-half).", "",
              "| setting | " + " | ".join(f"`{r}` @ {b}" for r, bb in result["split_half_conversations"].items() for b in bb) + " |",
              "|---|" + "---|" * sum(len(bb) for bb in result["split_half_conversations"].values())]
    for s in settings:
        cells = [f"{_f(bb[b][s]['spearman_brown'])} (n={bb[b][s]['conversations']})"
                 for bb in result["split_half_conversations"].values() for b in bb]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines.append("")
    if result.get("pi"):
        lines += ["## (c) fact_retention on the two pi-mono sessions", "",
                  "Spearman of the settings' values on one session against the other; split-half (odd vs even facts or probes) "
                  "over the settings within each session.", "",
                  "| reading | budget | Spearman session vs session | settings defined | SB " + " | SB ".join(PI_SESSIONS) + " |",
                  "|---|---|---|---|---|---|"]
        for reading, by_budget in result["pi"].items():
            for budget, r in by_budget.items():
                sb = [_f(r["split_half"][n]["spearman_brown"]) for n in PI_SESSIONS]
                lines.append(f"| `{reading}` | {budget} | {_f(r['spearman_sessions'])} | {r['settings_defined']} | " + " | ".join(sb) + " |")
        lines += ["", "Values per setting (" + " \\| ".join(PI_SESSIONS) + "):", "",
                  "| setting | " + " | ".join(f"`{r}` @ {b}" for r, bb in result["pi"].items() for b in bb) + " |",
                  "|---|" + "---|" * sum(len(bb) for bb in result["pi"].values())]
        for s in settings:
            cells = [" \\| ".join(_f(r["values"][n][s]) for n in PI_SESSIONS) for bb in result["pi"].values() for r in bb.values()]
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## What this says", "", *result.get("findings", []), ""]
    return "\n".join(lines)


def findings(result: Mapping[str, Any]) -> list[str]:
    """Plain sentences from the numbers (no judgement beyond what they show)."""
    out = []
    for reading, by_budget in result["rank_stability"].items():
        for budget, r in by_budget.items():
            s = r["all_splits"]
            verdict = "meets" if r["meets_target"] else "misses"
            out.append(f"- `{reading}` at {budget}: the fixed split's Spearman is {_f(r['spearman'], 2)} ({verdict} the {TARGET} "
                       f"target); over all {s['count']} splits the median is {_f(s['median'], 2)} and "
                       f"{'—' if s['share_meeting_target'] is None else format(s['share_meeting_target'], '.0%')} reach the target.")
    for reading, by_budget in result["split_half"].items():
        for budget, rows in by_budget.items():
            defined = _finite([row["spearman_brown"] for row in rows.values()])
            floor = sum(row["settings_at_floor"] for row in rows.values())
            off = _finite([row["spearman_brown_off_floor"] for row in rows.values()])
            out.append(f"- `{reading}` at {budget}: split-half reliability over the settings defined on {len(defined)} of {len(rows)} "
                       f"conversations (median SB {_f(float(np.median(defined)) if defined else None, 2)}; over the settings off the "
                       f"floor {_f(float(np.median(off)) if off else None, 2)} on {len(off)}); {floor} conversation × setting values "
                       "sit exactly on the truncation floor.")
    for reading, by_budget in (result.get("pi") or {}).items():
        for budget, r in by_budget.items():
            constant = [n for n in PI_SESSIONS if len({round(v, 12) for v in _finite(list(r["values"][n].values()))}) <= 1]
            why = (f" (undefined: every setting scores the same on {', '.join(constant)}, so that session ranks nothing)"
                   if r["spearman_sessions"] is None and constant else "")
            out.append(f"- `{reading}` on the pi sessions at {budget}: session-vs-session Spearman {_f(r['spearman_sessions'], 2)} "
                       f"over {r['settings_defined']} settings{why}.")
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 conversations, 4 settings, no pi sessions (a smoke run)")
    parser.add_argument("--no-pi", action="store_true", help="skip (c), the pi sessions")
    parser.add_argument("--out", default=str(REPO / "reports" / "verdict-reliability"), help="output path without suffix")
    parser.add_argument("--render", action="store_true", help="only rewrite the markdown (and findings) from OUT.json")
    args = parser.parse_args(argv)
    if args.render:
        path = Path(args.out).with_suffix(".json")
        result = json.loads(path.read_text(encoding="utf-8"))
        result["findings"] = findings(result)
        path.write_text(json.dumps(result, indent=2, default=float) + "\n", encoding="utf-8")
        Path(args.out).with_suffix(".md").write_text(markdown(result), encoding="utf-8")
        return result
    from lcm_lab.io.transcripts import read_transcript

    started = time.perf_counter()
    settings = dict(list(SETTINGS.items())[:4]) if args.quick else SETTINGS
    locomo = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)[: 4 if args.quick else 10]
    n = len(locomo)
    names = list(readers())
    qa_names = [r for r in names if r.startswith("qa_")]
    fact_names = [r for r in names if r.startswith("fact_")]
    data = measure(locomo, settings, BUDGETS, names, "LoCoMo")
    keys = list(settings)
    a, b = [i for i in EVEN if i < n], [i for i in ODD if i < n]
    result: dict[str, Any] = {
        "protocol": ("probed headlines and their end-of-run readings" if any(r.endswith("_end_of_run") for r in names)
                     else "today's headlines, which are end-of-run readings: one instant, run.sent() after the last turn"),
        "settings": settings, "budgets": list(BUDGETS), "locomo_conversations": list(range(n)),
        "readings": {r: (readers()[r].__doc__ or "").strip().splitlines()[0] for r in names},
        "rank_stability": {r: {str(bd): rank_stability(data, keys, bd, r, a, b, n) for bd in BUDGETS} for r in names},
        "split_half": {},
    }
    result["split_half_conversations"] = {r: {str(bd): split_half_over_conversations(data, keys, bd, r, n) for bd in BUDGETS}
                                          for r in qa_names + fact_names}
    for r in qa_names + fact_names:
        result["split_half"][r] = {}
        for bd in BUDGETS:
            rows = {}
            for i in range(n):
                row = split_half(data, keys, bd, i, r, "probe")
                if len(set(data[(keys[0], bd, i, r)].point.tolist())) > 1:
                    row["by_point"] = split_half(data, keys, bd, i, r, "point")
                rows[str(i)] = row
            result["split_half"][r][str(bd)] = rows
    if not (args.quick or args.no_pi):
        pi = [read_transcript(REPO / "datasets" / "pi-mono" / f"{name}.jsonl").conversations[0] for name in PI_SESSIONS]
        pi_data = measure(pi, settings, BUDGETS, fact_names, "pi sessions")
        result["pi"] = {r: {str(bd): pi_stability(pi_data, keys, bd, r) for bd in BUDGETS} for r in fact_names}
    result["seconds"] = time.perf_counter() - started
    result["findings"] = findings(result)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=float) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
