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

Before the probed headlines landed (``lcm_lab.metrics.verdicts``), the headline *was* the end-of-run
reading and a "probe" an item read at that one instant; now :func:`readers` measures the probed
headlines (read through the scorer's own probe rows) and the end-of-run readings side by side. The only seam is :func:`readers`: each reader turns a run into aligned
per-probe arrays (method, floor, ceiling, weight, probe point).

    python -m benchmarks.verdict_reliability                      # everything, one process
    python -m benchmarks.verdict_reliability --part locomo --shard 0/2 &   # or fill the replay cache
    python -m benchmarks.verdict_reliability --part locomo --shard 1/2 &   # with two workers,
    python -m benchmarks.verdict_reliability --part pi &                   # (c) beside them,
    python -m benchmarks.verdict_reliability --part locomo && python -m benchmarks.verdict_reliability --render
    python -m benchmarks.verdict_reliability --quick              # 4 conversations, 4 settings: a smoke run

The 260 LoCoMo replays with their probes take about 2 CPU-seconds each (30 minutes of wall time
for two workers on a machine loaded 9x over its two cores); (c) took 32 minutes there.
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
        from lcm_lab.metrics import verdicts
    except ImportError:
        return {}

    def rows_reading(rows: Any) -> Reading:
        return Reading(rows.method, rows.floor, rows.ceiling, rows.weight, rows.turn)

    def qa_probes(run: Any, item: Any, budget: int) -> Reading:
        """LoCoMo QA items asked at the question turn at every session start after their last evidence."""
        from lcm_lab.metrics.locomo import usable_items

        items, _ = usable_items(run.conversation, item.qa_items)
        return rows_reading(verdicts.qa_probe_rows(run, items, budget)[0])

    def fact_probes(run: Any, item: Any, budget: int) -> Reading:
        """Hard facts of the history up to each probe point, asked at the question turn at the probe schedule."""
        return rows_reading(verdicts.history_probe_rows(run, budget, None)[0]["fact_retention"])

    return {"qa_retention": qa_probes, "fact_retention": fact_probes}


def check_seam(item: Any, plugin: Mapping[str, Any], budget: int) -> None:
    """Refuse to measure when a reader's whole value is not the scorer's headline for one run."""
    try:
        from lcm_lab.metrics.verdicts import verdict, verdict_scores
    except ImportError:
        return
    run = replay_run(item.conversation, plugin, budget)
    scores = verdict_scores(run, "seam", qa_items=item.qa_items, budget=budget)
    for name, read in readers().items():
        mine, theirs = value(read(run, item, budget)), verdict(scores, name)
        theirs_value = None if theirs is None else theirs.value
        if (mine is None) != (theirs_value is None) or (mine is not None and abs(mine - float(theirs_value)) > 1e-9):  # type: ignore[arg-type]
            raise AssertionError(f"reader {name} gives {mine}, the scorer's headline is {theirs_value}: the seam drifted")


# -- measurement ----------------------------------------------------------------------------


def replay_run(conversation: Any, plugin: Mapping[str, Any], budget: int) -> Any:
    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.summarizers.offline import OfflineSummarizer

    return replay(conversation, LcmConfig.from_plugin_config(dict(plugin)), OfflineSummarizer(), token_budget=budget)


CACHE = REPO / ".lcm_lab" / "bench" / "verdict_reliability"
CACHE_VERSION = 1  # bump when a reader or the scorer changes what it measures (or pass --fresh)
SHARD: tuple[int, int] = (0, 1)  # (this worker, workers): --shard I/K measures every K-th job only


def _job_key(label: str, index: int, plugin: Mapping[str, Any], budget: int, names: Sequence[str]) -> str:
    """A content key of one replay's readings: the conversation, the setting, the budget, the
    readers and :data:`CACHE_VERSION`."""
    import hashlib

    blob = json.dumps([label, index, dict(plugin), budget, list(names), CACHE_VERSION], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _load(blob: bytes) -> dict[str, Reading]:
    """Unpickle cached readings whichever module wrote them (``__main__`` when run with ``-m``)."""
    import io
    import pickle

    class _Readings(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            return Reading if name == "Reading" else super().find_class(module, name)

    return _Readings(io.BytesIO(blob)).load()  # type: ignore[no-any-return]


def measure(items: Sequence[Any], settings: Mapping[str, Mapping[str, Any]], budgets: Sequence[int],
            names: Sequence[str], progress: str) -> dict[tuple[str, int, int, str], Reading]:
    """``(setting, budget, conversation index, reading) -> Reading`` for every combination. Each
    replay's readings are kept in :data:`CACHE` (a killed run resumes; workers started with
    ``--shard I/K`` share the work; ``--fresh`` empties it); a sharded worker returns an empty result."""
    import pickle

    from tqdm.auto import tqdm

    chosen = {n: readers()[n] for n in names}
    out = {}
    CACHE.mkdir(parents=True, exist_ok=True)
    jobs = list(itertools.product(budgets, settings, range(len(items))))
    worker, workers = SHARD
    mine = jobs[worker::workers]
    for budget, name, i in tqdm(mine, desc=progress, leave=False):
        path = CACHE / f"{_job_key(progress, i, settings[name], budget, names)}.pkl"
        if path.exists():
            continue
        run = replay_run(items[i].conversation, settings[name], budget)
        readings = {reading: read(run, items[i], budget) for reading, read in chosen.items()}
        tmp = path.with_suffix(f".{worker}.tmp")
        tmp.write_bytes(pickle.dumps(readings))
        tmp.replace(path)
    if workers > 1:
        return {}
    for budget, name, i in jobs:
        readings = _load((CACHE / f"{_job_key(progress, i, settings[name], budget, names)}.pkl").read_bytes())
        for reading in names:
            out[(name, budget, i, reading)] = readings[reading]
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


def locomo_part(settings: Mapping[str, Mapping[str, Any]], n: int) -> dict[str, Any]:
    """(a) and (b), plus every setting's per-conversation headline values and truncate's (the
    closing table of :mod:`benchmarks.recommend_out_of_sample` reads them)."""
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.strategies import run_strategy

    locomo = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)[:n]
    names = list(readers())
    check_seam(locomo[0], next(iter(settings.values())), BUDGETS[0])
    probed = [r for r in names if r.startswith(("qa_", "fact_"))]
    data = measure(locomo, settings, BUDGETS, names, "LoCoMo")
    keys = list(settings)
    a, b = [i for i in EVEN if i < n], [i for i in ODD if i < n]
    truncate = {}
    for bd in BUDGETS:
        for i, item in enumerate(locomo):
            run = run_strategy(item.conversation, "truncate", token_budget=bd)
            for r in names:
                truncate[(bd, i, r)] = value(readers()[r](run, item, bd))
    part: dict[str, Any] = {
        "protocol": ("probed headlines and their end-of-run readings" if any(r.endswith("_end_of_run") for r in names)
                     else "today's headlines, which are end-of-run readings: one instant, run.sent() after the last turn"),
        "settings": dict(settings), "budgets": list(BUDGETS), "locomo_conversations": list(range(n)),
        "readings": {r: (readers()[r].__doc__ or "").strip().splitlines()[0] for r in names},
        "rank_stability": {r: {str(bd): rank_stability(data, keys, bd, r, a, b, n) for bd in BUDGETS} for r in names},
        "split_half_conversations": {r: {str(bd): split_half_over_conversations(data, keys, bd, r, n) for bd in BUDGETS}
                                     for r in probed},
        "split_half": {},
        "values": {r: {str(bd): {**{s: [value(data[(s, bd, i, r)]) for i in range(n)] for s in keys},
                                 "truncate": [truncate[(bd, i, r)] for i in range(n)]} for bd in BUDGETS} for r in names},
    }
    for r in probed:
        part["split_half"][r] = {}
        for bd in BUDGETS:
            rows = {}
            for i in range(n):
                row = split_half(data, keys, bd, i, r, "probe")
                if len(set(data[(keys[0], bd, i, r)].point.tolist())) > 1:
                    row["by_point"] = split_half(data, keys, bd, i, r, "point")
                rows[str(i)] = row
            part["split_half"][r][str(bd)] = rows
    return part


def pi_part(settings: Mapping[str, Mapping[str, Any]], budgets: Sequence[int]) -> dict[str, Any]:
    """(c): fact_retention on the two pi sessions."""
    from lcm_lab.io.transcripts import read_transcript

    pi = [read_transcript(REPO / "datasets" / "pi-mono" / f"{name}.jsonl").conversations[0] for name in PI_SESSIONS]
    fact_names = [r for r in readers() if r.startswith("fact_")]
    pi_data = measure(pi, settings, budgets, fact_names, "pi sessions")
    return {"pi": {r: {str(bd): pi_stability(pi_data, list(settings), bd, r) for bd in budgets} for r in fact_names},
            "pi_budgets": list(budgets)}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 conversations, 4 settings, no pi sessions (a smoke run)")
    parser.add_argument("--part", choices=("all", "locomo", "pi"), default="all",
                        help="measure one part only into OUT.<part>.json (run the two side by side, then --render)")
    parser.add_argument("--fresh", action="store_true", help="empty the replay cache first (measure everything again)")
    parser.add_argument("--shard", default="0/1", metavar="I/K",
                        help="measure every K-th replay only (into the cache), for K workers side by side; then run without it")
    parser.add_argument("--pi-budgets", default=",".join(map(str, BUDGETS)), help="budgets of (c), comma-separated")
    parser.add_argument("--out", default=str(REPO / "reports" / "verdict-reliability"), help="output path without suffix")
    parser.add_argument("--render", action="store_true",
                        help="only combine OUT.locomo.json / OUT.pi.json (or OUT.json) and rewrite OUT.json and OUT.md")
    args = parser.parse_args(argv)
    global SHARD
    if args.fresh:
        import shutil

        shutil.rmtree(CACHE, ignore_errors=True)
    worker, workers = (int(x) for x in args.shard.split("/"))
    SHARD = (worker, workers)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    settings = dict(list(SETTINGS.items())[:4]) if args.quick else SETTINGS
    if not args.render:
        parts = ("locomo", "pi") if args.part == "all" else (args.part,)
        for name in parts:
            if name == "pi" and args.quick:
                continue
            t0 = time.perf_counter()
            if workers > 1:  # fill the cache only
                if name == "locomo":
                    from lcm_lab.io.transcripts import read_transcript

                    items = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)[: 4 if args.quick else 10]
                    measure(items, settings, BUDGETS, list(readers()), "LoCoMo")
                continue
            part = locomo_part(settings, 4 if args.quick else 10) if name == "locomo" else pi_part(settings, [int(b) for b in args.pi_budgets.split(",")])
            part[f"{name}_seconds"] = time.perf_counter() - t0
            Path(f"{out}.{name}.json").write_text(json.dumps(part, indent=2, default=float) + "\n", encoding="utf-8")
        if args.part != "all" or workers > 1:
            return {}
    result: dict[str, Any] = {}
    whole = out.with_suffix(".json")
    if whole.exists() and not Path(f"{out}.locomo.json").exists():
        result = json.loads(whole.read_text(encoding="utf-8"))
    for name in ("locomo", "pi"):
        path = Path(f"{out}.{name}.json")
        if path.exists():
            result.update(json.loads(path.read_text(encoding="utf-8")))
    result["seconds"] = result.get("locomo_seconds", 0) + result.get("pi_seconds", 0)
    result["findings"] = findings(result)
    whole.write_text(json.dumps(result, indent=2, default=float) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    for name in ("locomo", "pi"):
        Path(f"{out}.{name}.json").unlink(missing_ok=True)
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
