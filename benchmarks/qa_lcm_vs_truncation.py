"""LCM against plain truncation on all 10 LoCoMo conversations, read by the probed verdicts.

For two configurations (the plugin defaults and the validity config) and budgets 6k, 8k and 32k:
the offline-summarizer LCM replay and the ``truncate`` strategy, both scored by the one scorer
(:mod:`lcm_lab.metrics.verdicts`: every QA item asked at the question turn at the start of every
session after its last evidence). Per setting:

* ``qa_retention`` — mean over the conversations not withheld, 95 % bootstrap interval **by
  conversation**; the end-of-run reading (``qa_retention_end_of_run``) beside it for comparison;
* pooled recall of LCM, truncation (the floor), the evidence ceiling and the chance control;
* ``diff`` — LCM − truncation in answer recall, paired probe by probe (both are asked at the same
  probes) with a cluster bootstrap **by conversation**;
* the share of LCM's probes that fell on a degraded engine path.

Writes ``reports/lcm-vs-truncation.{md,json}``.

    python -m benchmarks.qa_lcm_vs_truncation
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
BUDGETS = (6000, 8000, 32000)


def main() -> dict[str, Any]:
    from tqdm.auto import tqdm

    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.metrics.locomo import qa_retention_scores, usable_items
    from lcm_lab.metrics.stats import bootstrap_interval, cluster_bootstrap_difference
    from lcm_lab.metrics.validity import DEFAULT_CONFIG
    from lcm_lab.metrics.verdicts import END_OF_RUN, qa_probe_rows, qa_verdict_scores, verdict
    from lcm_lab.strategies import run_strategy
    from lcm_lab.summarizers.offline import OfflineSummarizer

    convs = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)
    out: dict[str, Any] = {}
    for cfg_name, cfg in (("plugin defaults", LcmConfig()), ("validity config", DEFAULT_CONFIG)):
        for budget in BUDGETS:
            heads, ends, lcm_m, trunc_m, ceil, chance, floor, groups, degraded = [], [], [], [], [], [], [], [], []
            for i, c in enumerate(tqdm(convs, desc=f"{cfg_name} @ {budget}", leave=False)):
                other = convs[(i + 1) % len(convs)].conversation
                run = replay(c.conversation, cfg, OfflineSummarizer(), token_budget=budget)
                trunc = run_strategy(c.conversation, "truncate", token_budget=budget)
                probes: dict[str, Any] = {}
                heads.append(verdict(qa_verdict_scores(run, c.qa_items, f"lcm:{i}", chance_conversation=other, rows_out=probes),
                                     "qa_retention"))
                ends.append(verdict(qa_retention_scores(run, c.qa_items, f"lcm:{i}", chance_conversation=other), "qa_retention"))
                items, _ = usable_items(c.conversation, c.qa_items)
                rows = probes["qa_retention"]  # the probes the headline read
                floor_rows, _ = qa_probe_rows(trunc, items, budget, chance_conversation=other)
                assert np.array_equal(rows.cluster, floor_rows.cluster) and np.array_equal(rows.turn, floor_rows.turn)  # same probes
                lcm_m.append(rows.method)
                trunc_m.append(floor_rows.method)
                floor.append(rows.floor)
                ceil.append(rows.ceiling)
                chance.append(rows.chance if rows.chance is not None else np.zeros(0))
                groups.append(np.full(rows.method.size, i))
                degraded.append(rows.degraded)
            values = [h.value for h in heads if h is not None and h.value is not None]
            end_values = [h.value for h in ends if h is not None and h.value is not None]
            lo, hi = bootstrap_interval(values) if len(values) >= 2 else (float("nan"), float("nan"))
            m, t, f, cl = (np.concatenate(x) for x in (lcm_m, trunc_m, floor, ceil))
            cluster = np.concatenate(groups)
            diff, dlo, dhi = cluster_bootstrap_difference(t, m, cluster) if m.size else (float("nan"),) * 3
            assert np.array_equal(t, f)  # truncate is the floor, probe by probe
            out[f"{cfg_name} @ {budget}"] = {
                "qa_retention_mean": sum(values) / len(values) if values else None, "ci": [lo, hi], "scored": len(values),
                "withheld": len(heads) - len(values),
                "qa_retention_end_of_run_mean": sum(end_values) / len(end_values) if end_values else None,
                "end_of_run_withheld": len(ends) - len(end_values),
                "probes": int(m.size), "lcm_recall": float(m.mean()) if m.size else None,
                "truncation_recall": float(t.mean()) if t.size else None, "ceiling_recall": float(cl.mean()) if cl.size else None,
                "chance_recall": float(np.concatenate(chance).mean()) if m.size else None,
                "degraded_share": float(np.concatenate(degraded).mean()) if m.size else None,
                "paired_diff": diff, "diff_ci": [dlo, dhi], "diff_unit": "probe (paired), clustered by conversation",
                "end_of_run_metric": END_OF_RUN["qa_retention"],
            }  # fmt: skip
    write(out)
    return out


def write(out: dict[str, Any]) -> None:
    (REPO / "reports" / "lcm-vs-truncation.json").write_text(json.dumps(out, indent=2) + "\n")
    text = markdown(out)
    (REPO / "reports" / "lcm-vs-truncation.md").write_text(text)
    print(text)


def _f(value: float | None, fmt: str = "{:.3f}") -> str:
    return "—" if value is None or value != value else fmt.format(value)


def markdown(out: dict[str, Any]) -> str:
    lines = [
        "# LCM vs truncation on LoCoMo (qa_retention over the conversation's life, offline BM25 proxy)",
        "",
        "All 10 conversations, offline summarizer, answer recall@10, regenerated by `python -m benchmarks.qa_lcm_vs_truncation`. "
        "Every QA item is asked at the question turn (`run.ask`) at the start of every session after its last evidence, "
        "where the history no longer fits the budget (`lcm_lab/metrics/verdicts.py`, `docs/metrics.md` §0). Floor = what "
        "the `truncate` strategy sends at that probe; ceiling = the item's gold evidence alone, dated. `qa_retention` = "
        "mean over the conversations not withheld, 95 % bootstrap interval by conversation; `end of run` = the old "
        "one-instant reading (`qa_retention_end_of_run`, its ceiling the full history); `diff` = LCM − truncation in "
        "recall, paired probe by probe, cluster bootstrap by conversation; `degraded` = share of LCM's probes whose "
        "context came from a degraded engine path.",
        "",
        "| setting | qa_retention [95% CI] | scored / withheld | end of run (withheld) | probes | LCM recall | truncation | "
        "ceiling | chance | degraded | diff [95% CI] |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in out.items():
        lines.append(
            f"| {name} | {_f(r['qa_retention_mean'])} [{_f(r['ci'][0])}, {_f(r['ci'][1])}] | {r['scored']} / {r['withheld']} | "
            f"{_f(r['qa_retention_end_of_run_mean'])} ({r['end_of_run_withheld']}) | {r['probes']} | {_f(r['lcm_recall'])} | "
            f"{_f(r['truncation_recall'])} | {_f(r['ceiling_recall'])} | {_f(r['chance_recall'])} | {_f(r['degraded_share'], '{:.2f}')} | "
            f"{_f(r['paired_diff'], '{:+.3f}')} [{_f(r['diff_ci'][0], '{:+.3f}')}, {_f(r['diff_ci'][1], '{:+.3f}')}] |"
        )
    lines += [
        "",
        "## What changed (issue 20: verdicts over the conversation's life)",
        "",
        "Before, this table read one instant — the end-of-run call, with no user message and no emergency drain — "
        "against the full history as ceiling and a truncation floor priced apart from the `truncate` strategy. Now every "
        "number pools probes at the question turn, the floor is exactly what `truncate` sends there and the ceiling is "
        "the gold evidence (the full history was beaten by budget-sized contexts). Per setting, the end-of-run mean → "
        "the probed mean:",
        "",
        *(f"- {name}: {_f(r['qa_retention_end_of_run_mean'])} → {_f(r['qa_retention_mean'])} "
          f"(LCM − truncation {_f(r['paired_diff'], '{:+.3f}')} [{_f(r['diff_ci'][0], '{:+.3f}')}, "
          f"{_f(r['diff_ci'][1], '{:+.3f}')}]; {_f(r['degraded_share'], '{:.0%}')} of LCM's probes on a degraded path)"
          for name, r in out.items()),
        "",
        "Conclusions that change: with the plugin defaults at 6k LCM is *worse* than truncation (the end-of-run reading "
        "called it equal), because most question turns fall on a degraded path (the deferred debt cannot drain within "
        "the budget) that sends fewer raw messages than truncation; at 8k the defaults' advantage is a third of what the "
        "end-of-run reading said. The validity configuration beats truncation at 6k and 8k with intervals clear of 0. "
        "At 32k truncation keeps most of the conversation raw and beats LCM under both configurations, as before, now "
        "on 8 scored conversations instead of 4-5 (probes reach points where the history exceeds the budget even when "
        "the whole conversation barely does).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
