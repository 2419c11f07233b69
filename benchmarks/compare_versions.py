"""What upgrading lossless-claw from 0.15.3 to 1.0 changes, on the bundled data (issue 21 item 4).

For each bundled coding session (pi-mono ``before-compaction``, ``large-session``, the Claude Code
session) and the first LoCoMo conversations, at 6k, 8k and 32k tokens, with the plugin defaults and
the offline summarizer: ``lab.compare_versions`` replays the conversation under both engines and
reports per turn what the model receives, the totals, and every probed headline with its 95%
interval and the paired difference (1.0 − 0.15.3, cluster bootstrap over the shared probes). Chance
controls read another conversation of the same kind (the next LoCoMo conversation; the other pi
session). Across the LoCoMo conversations of one budget the per-conversation differences are pooled
with a cluster bootstrap by conversation.

First section: the lab against the recording — the comparison the issue quotes (stub-v1 under the
reference configs), recomputed by ``compare_versions`` beside the numbers recorded with the real
engines (``tests/fixtures/reference-runs-v1/index.json``, ``vs_0153_deferred``).

Writes ``reports/upgrade-1.0.{md,json}``. Run: ``python -m benchmarks.compare_versions`` (about 15
minutes on 2 cores; ``--quick`` for one budget and one conversation of each kind).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports"
FIXTURES = REPO / "tests" / "fixtures"
CODING = ("pi-mono/before-compaction.jsonl", "pi-mono/large-session.jsonl", "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
CODING_DONOR = {CODING[0]: CODING[1], CODING[1]: CODING[0], CODING[2]: CODING[0]}
LOCOMO = "locomo/locomo10.json"
BUDGETS = (6000, 8000, 32000)
RECORDED = ("before-compaction__C2-tight", "before-compaction__C1-defaults-32k", "locomo-conv-0__C2-tight", "synth-1__C2-tight")
HEADLINES = ("qa_retention", "fact_retention", "decision_retention", "todo_retention")
MIN_POOLED = 3  # conversations a pooled interval needs
LABELS = {"before-compaction": "pi before-compaction", "large-session": "pi large-session",
          "fe5e1c67-53e7-4862-81ae-d0e013e3270b": "Claude Code session"}


def label(name: str) -> str:
    """A reader's name for an input (no session UUIDs in the tables)."""
    return LABELS.get(name, name)


def _num(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def recorded_check() -> list[dict[str, Any]]:
    """The issue's table: compare_versions (stub-v1, reference configs) beside the recording."""
    import gzip
    import sys

    sys.path.insert(0, str(REPO / "tests"))
    from reference_runs import config_for, conversation_for

    from lcm_lab.summarizers.stub import StubV1Summarizer
    from lcm_lab.upgrade import compare_versions

    runs = {r["run_id"]: r for r in json.loads((FIXTURES / "reference-runs-v1" / "index.json").read_text())["runs"]}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for run_id in RECORDED:
            trace = json.loads(gzip.open(FIXTURES / "reference-runs-v1" / "traces" / f"{run_id}.trace.json.gz").read())
            cmp = compare_versions(conversation_for(run_id, Path(tmp)), config_for(trace), token_budget=trace["token_budget"],
                                   summarizer=StubV1Summarizer(), scores=False)  # fmt: skip
            old, new = cmp.totals
            rec = runs[run_id]["vs_0153_deferred"]
            got = {"turns": new["turns"], "differs": new["turns_differing_bytes"],
                   "calls": [new["summarizer_calls"], old["summarizer_calls"]],
                   "clamped": [new["clamped_turns"], old["clamped_turns"]],
                   "summaries_sent": [round(new["summaries_sent_per_turn"], 2), round(old["summaries_sent_per_turn"], 2)]}  # fmt: skip
            want = {"turns": rec["turns"], "differs": rec["sent_context_differs_bytes"], "calls": rec["summarizer_calls"],
                    "clamped": rec["clamped_turns"], "summaries_sent": rec["mean_summaries_sent"]}  # fmt: skip
            out.append({"run_id": run_id, "lab": got, "recorded": want, "equal": got == want})
    return out


def _comparisons(budgets: Sequence[int], locomo: Sequence[int], coding: Sequence[str], save: Any = None) -> list[dict[str, Any]]:
    """Every (input, budget) comparison, LoCoMo first; ``save(rows)`` after each (partial results survive a stop)."""
    import lcm_lab as lab
    from lcm_lab.io.transcripts import read_transcript

    rows: list[dict[str, Any]] = []

    def done(row: dict[str, Any]) -> None:
        rows.append(row)
        print(f"{row['input']} @ {row['budget']}: {row['seconds']:.0f} s", flush=True)
        if save is not None:
            save(rows)

    for budget in budgets:
        for index in locomo:
            started = time.perf_counter()
            cmp = lab.compare_versions(lab.datasets_path(LOCOMO), None, token_budget=budget, summarizer="offline", conversation=index)
            done(_row("locomo", f"locomo-{index}", budget, cmp, time.perf_counter() - started))
    for budget in budgets:
        for path in coding:
            donor = read_transcript(lab.datasets_path(CODING_DONOR[path])).conversations[0].conversation
            started = time.perf_counter()
            cmp = lab.compare_versions(read_transcript(lab.datasets_path(path)).conversations[0].conversation, None,
                                       token_budget=budget, summarizer="offline", chance_conversation=donor)  # fmt: skip
            done(_row("coding", path.split("/")[-1].removesuffix(".jsonl"), budget, cmp, time.perf_counter() - started))
    return rows


def _row(kind: str, name: str, budget: int, cmp: Any, seconds: float) -> dict[str, Any]:
    doc = cmp.to_dict()
    return {"kind": kind, "input": name, "budget": budget, "seconds": round(seconds, 1), "totals": doc["totals"],
            "headlines": doc["headlines"]}  # fmt: skip


def pooled(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per kind and budget, each headline's 1.0 − 0.15.3 averaged over conversations, with a
    bootstrap over conversations (the cluster); only conversations where both values exist."""
    from lcm_lab.metrics.stats import cluster_bootstrap_difference

    out = []
    for kind in ("locomo", "coding"):
        for budget in sorted({r["budget"] for r in rows}):
            group = [r for r in rows if r["kind"] == kind and r["budget"] == budget]
            for metric in HEADLINES:
                pairs = []
                for r in group:
                    got = {h["engine"]: h["value"] for h in r["headlines"] if h["metric"] == metric}
                    if got.get("0.15.3") is not None and got.get("1.0") is not None:
                        pairs.append((r["input"], got["0.15.3"], got["1.0"]))
                if not pairs:
                    continue
                names, a, b = zip(*pairs, strict=True)
                diff, low, high = cluster_bootstrap_difference(list(a), list(b), list(names))
                if len(pairs) < MIN_POOLED:  # two clusters resample into a degenerate interval
                    low = high = math.nan
                out.append({"kind": kind, "budget": budget, "metric": metric, "conversations": len(pairs),
                            "mean_0153": sum(a) / len(a), "mean_10": sum(b) / len(b), "diff": diff,
                            "ci_low": None if math.isnan(low) else low, "ci_high": None if math.isnan(high) else high})  # fmt: skip
    return out


def _verdict(diff: float, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return f"no interval (fewer than {MIN_POOLED} conversations)"
    if low <= 0 <= high:
        return "within noise"
    return "1.0 better" if diff > 0 else "1.0 worse"


def markdown(check: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], pools: Sequence[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = ["# Upgrading lossless-claw 0.15.3 → 1.0: what the model receives, and what the headlines say", "",
             *(["**Partial run**: the benchmark was stopped before every input and budget ran; the tables hold what finished.", ""]
               if meta.get("partial") else []),
             f"Generated by `python -m benchmarks.compare_versions` ({meta['seconds']:.0f} s on {meta['machine']}). "
             "Every number comes from `lab.compare_versions` (`lcm-lab compare-versions` prints the same for one input); "
             "1.0 is the lab's replay of `next/1.0` @ bf3d69ef, 0.15.3 of `main` @ 4214b480, both with deferred compaction "
             "(the plugin default) and the same settings.", ""]  # fmt: skip
    lines += ["## The lab against the recording", "",
              "The comparison issue 21 quotes (stub-v1 summarizer, reference configs), recomputed by `compare_versions` and "
              "beside the numbers recorded with the real engines. Pairs are 1.0 / 0.15.3.", "",
              "| run | turns where the model receives a different context | summarizer calls | clamped turns | summaries sent per turn | equal to the recording |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for c in check:
        g = c["lab"]
        lines.append(f"| {c['run_id']} | {g['differs']} / {g['turns']} | {g['calls'][0]} / {g['calls'][1]} | "
                     f"{g['clamped'][0]} / {g['clamped'][1]} | {g['summaries_sent'][0]:.2f} / {g['summaries_sent'][1]:.2f} | "
                     f"{'yes' if c['equal'] else 'NO: recorded ' + json.dumps(c['recorded'])} |")  # fmt: skip
    lines += ["", "## The bundled data under the plugin defaults (offline summarizer)", "",
              "Per input and budget; pairs are 1.0 / 0.15.3. \"different context\": turns whose engine-level `assemble` "
              "output differs in bytes from 0.15.3's at the same turn.", "",
              "| input | budget | turns with a different context | summarizer calls | clamped turns | degraded turns | summaries sent per turn | sent tokens per turn (mean) |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        old, new = r["totals"]
        lines.append(f"| {label(r['input'])} | {r['budget']:,} | {new['turns_differing_bytes']} / {new['turns']} | "
                     f"{new['summarizer_calls']} / {old['summarizer_calls']} | {new['clamped_turns']} / {old['clamped_turns']} | "
                     f"{new['degraded_turns']} / {old['degraded_turns']} | {_num(new['summaries_sent_per_turn'])} / "
                     f"{_num(old['summaries_sent_per_turn'])} | {_num(new['mean_sent_tokens'], 0)} / {_num(old['mean_sent_tokens'], 0)} |")  # fmt: skip
    lines += ["", "### Headlines per input (probes over the conversation's life; 0 = truncation floor, 1 = ceiling)", "",
              "Each engine's value with its 95% cluster-bootstrap interval, and 1.0 − 0.15.3 paired over the same probes.", "",
              "| input | budget | headline | 0.15.3 [95% CI] | 1.0 [95% CI] | chance (0.15.3) | n (unit) | 1.0 − 0.15.3 [paired 95% CI] |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    from lcm_lab.upgrade._render import interval

    for r in rows:
        by = {}
        for h in r["headlines"]:
            by.setdefault(h["metric"], {})[h["engine"]] = h
        for metric, pair in by.items():
            old, new = pair.get("0.15.3"), pair.get("1.0")
            if old is None or new is None:
                continue
            cell = lambda h: f"withheld ({h['withheld']})" if h.get("withheld") else interval(h["value"], h["ci_low"], h["ci_high"])  # noqa: E731
            diff = interval(new["diff"], new["diff_ci_low"], new["diff_ci_high"]) if new.get("paired") else "—"
            lines.append(f"| {label(r['input'])} | {r['budget']:,} | {metric} | {cell(old)} | {cell(new)} | {_num(old['chance'])} | "
                         f"{old['n']} ({old['unit']}) | {diff} |")  # fmt: skip
    lines += ["", "### Pooled over conversations", "",
              "Mean 1.0 − 0.15.3 of each headline over the conversations of a kind, with a bootstrap over conversations "
              "(the unit). Three conversations make a rough interval: read it with the per-input paired intervals above.", "",
              "| kind | budget | headline | conversations | 0.15.3 | 1.0 | 1.0 − 0.15.3 [95% CI] | reading |", "|---|---|---|---|---|---|---|---|"]
    for p in pools:
        lines.append(f"| {p['kind']} | {p['budget']:,} | {p['metric']} | {p['conversations']} | {_num(p['mean_0153'])} | "
                     f"{_num(p['mean_10'])} | {interval(p['diff'], p['ci_low'], p['ci_high'])} | {_verdict(p['diff'], p['ci_low'], p['ci_high'])} |")  # fmt: skip
    lines += ["", "## What it means for someone upgrading", ""] + [f"- {line}" for line in upgrade_notes(rows, pools)]
    return "\n".join(lines) + "\n"


def upgrade_notes(rows: Sequence[dict[str, Any]], pools: Sequence[dict[str, Any]]) -> list[str]:
    """The reading of the tables, in words, from their numbers."""
    notes = []
    total = sum(r["totals"][1]["turns"] for r in rows)
    differ = sum(r["totals"][1]["turns_differing_bytes"] or 0 for r in rows)
    calls_old = sum(r["totals"][0]["summarizer_calls"] for r in rows)
    calls_new = sum(r["totals"][1]["summarizer_calls"] for r in rows)
    clamped_old = sum(r["totals"][0]["clamped_turns"] for r in rows)
    clamped_new = sum(r["totals"][1]["clamped_turns"] for r in rows)
    notes.append(f"Same settings, different context: over all {len(rows)} runs the model receives a different context at "
                 f"{differ:,} of {total:,} turns ({differ / total:.0%}) after the upgrade.")
    notes.append(f"Summarizer calls: {calls_new:,} under 1.0 against {calls_old:,} under 0.15.3 ({calls_new / calls_old:.2f}×). "
                 "1.0 prepares leaf summaries in the background once the raw tokens outside the fresh tail reach "
                 "leafChunkTokens and publishes them at the threshold, one call per node without escalation; 0.15.3 "
                 "sweeps when the threshold is crossed." if calls_old else "No summarizer calls under either engine.")
    notes.append(f"Clamped turns: {clamped_new:,} under 1.0 against {clamped_old:,} under 0.15.3. 1.0's final clamp fires above "
                 "0.9 × budget and prices tool results higher, so a setting that just fitted under 0.15.3 can be clamped under 1.0.")
    readings = [(label(r["input"]), r["budget"], h) for r in rows for h in r["headlines"]
                if h["engine"] == "1.0" and h.get("paired") and not math.isnan(h["diff_ci_low"] if h["diff_ci_low"] is not None else math.nan)]
    worse = [x for x in readings if x[2]["diff_ci_high"] < 0]
    better = [x for x in readings if x[2]["diff_ci_low"] > 0]
    notes.append(f"Per input, paired over the same probes: of {len(readings)} headline readings with an interval, 1.0 is worse "
                 f"beyond noise on {len(worse)} and better on {len(better)}; the rest are within noise.")
    for name, budget, h in sorted(worse + better, key=lambda x: x[2]["diff"]):
        notes.append(f"{h['metric']} on {name} at {budget:,} tokens: {h['diff']:+.3f} "
                     f"(paired 95% CI {h['diff_ci_low']:+.3f} .. {h['diff_ci_high']:+.3f}, {h['n']} {h['unit']}s).")
    for p in pools:
        reading = _verdict(p["diff"], p["ci_low"], p["ci_high"])
        if p["conversations"] > 1:
            notes.append(f"Pooled over {p['conversations']} {p['kind']} conversations at {p['budget']:,} tokens, {p['metric']}: "
                         f"{p['diff']:+.3f}" + ("" if p["ci_low"] is None else f" (95% CI {p['ci_low']:+.3f} .. {p['ci_high']:+.3f})")
                         + f": {reading}.")
    wild = sorted({label(r["input"]) for r in rows for h in r["headlines"] if h["value"] is not None and abs(h["value"]) > 1})
    if wild:
        notes.append(f"Headline values far outside 0..1 ({', '.join(wild)}) come from a small ceiling − floor gap: the "
                     "normalisation magnifies small raw differences there; read their raw values beside them.")
    notes.append("Settings tuned on 0.15.3 are not tuned for 1.0: re-run the sweep with `space: {engine: [\"0.15.3\", \"1.0\"], ...}` and "
                 "`lcm-lab recommend SWEEP --engine 1.0` (recommend refuses to pick across versions).")
    return notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one budget (8k), one conversation of each kind")
    parser.add_argument("--out", default=str(REPORTS / "upgrade-1.0"), help="report path without suffix")
    parser.add_argument("--render", action="store_true", help="only pool and write the markdown again from the JSON at --out")
    args = parser.parse_args(argv)
    if args.render:
        doc = json.loads(Path(f"{args.out}.json").read_text())
        doc["pooled"] = pooled(doc["runs"])
        Path(f"{args.out}.json").write_text(json.dumps(doc, indent=1) + "\n")
        Path(f"{args.out}.md").write_text(markdown(doc["recorded_check"], doc["runs"], doc["pooled"], doc["meta"]))
        return 0
    started = time.perf_counter()
    budgets = (8000,) if args.quick else BUDGETS
    locomo = (0,) if args.quick else (0, 1, 2)
    coding = CODING[:1] if args.quick else CODING
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    check = recorded_check()

    def write(rows: list[dict[str, Any]], *, partial: bool = True) -> None:
        meta = {"seconds": time.perf_counter() - started, "machine": f"{platform.machine()}, {platform.python_version()}",
                "budgets": list(budgets), "locomo": list(locomo), "coding": list(coding), "config": "plugin defaults",
                "summarizer": "offline", "partial": partial}  # fmt: skip
        pools = pooled(rows)
        Path(f"{out}.json").write_text(json.dumps({"meta": meta, "recorded_check": check, "runs": rows, "pooled": pools}, indent=1) + "\n")
        Path(f"{out}.md").write_text(markdown(check, rows, pools, meta))

    rows = _comparisons(budgets, locomo, coding, save=write)
    write(rows, partial=False)
    print(f"wrote {out}.md")
    return 0 if all(c["equal"] for c in check) else 1


if __name__ == "__main__":
    raise SystemExit(main())
