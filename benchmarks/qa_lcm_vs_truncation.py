"""What qa_retention says about LCM against plain truncation on all 10 LoCoMo conversations.

For two configurations (the validity config and the plugin defaults) and budgets 6k and 32k:
the offline-summarizer LCM replay and truncation to the budget, both scored by the BM25 reader;
the headline per conversation (mean over the conversations that are not withheld) and the paired
item-level difference of ``qa_recall`` (LCM − truncation, bootstrap over QA items).
Writes ``reports/lcm-vs-truncation.{md,json}``.

    python -m benchmarks.qa_lcm_vs_truncation
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def main() -> dict[str, Any]:
    from tqdm.auto import tqdm

    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.metrics.compare import compare
    from lcm_lab.metrics.locomo import qa_retention_scores
    from lcm_lab.metrics.validity import DEFAULT_CONFIG
    from lcm_lab.summarizers.controls import ControlRun
    from lcm_lab.summarizers.offline import OfflineSummarizer

    convs = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)
    out: dict[str, Any] = {}
    for cfg_name, cfg in (("validity config", DEFAULT_CONFIG), ("plugin defaults", LcmConfig())):
        for budget in (6000, 32000):
            lcm, trunc, heads = [], [], []
            for i, c in enumerate(tqdm(convs, desc=f"{cfg_name} @ {budget}", leave=False)):
                other = convs[(i + 1) % len(convs)].conversation
                run = replay(c.conversation, cfg, OfflineSummarizer(), token_budget=budget)
                s = qa_retention_scores(run, c.qa_items, f"lcm:{i}", chance_conversation=other)
                lcm += s
                trunc += qa_retention_scores(ControlRun(c.conversation, budget), c.qa_items, f"trunc:{i}", chance_conversation=other)
                heads.append(next(x for x in s if x.metric == "qa_retention"))
            tab = compare({"truncation": trunc, "lcm": lcm}, ["qa_recall"], scope="qa", baseline="truncation").set_index("run")
            values = [h.value for h in heads if h.value is not None]

            def avg(key: str, hs: list[Any] = heads) -> float:
                return sum(float(h.details[key]) for h in hs) / len(hs)

            out[f"{cfg_name} @ {budget}"] = {
                "qa_retention_mean": sum(values) / len(values) if values else None, "withheld": len(heads) - len(values),
                "lcm_recall": avg("raw"), "truncation_recall": avg("floor"), "full_history_recall": avg("ceiling"),
                "chance_recall": avg("chance"), "lcm_context_tokens": avg("method_tokens"),
                "paired_diff": float(tab.loc["lcm", "diff"]), "diff_ci": [float(tab.loc["lcm", "diff_ci_low"]), float(tab.loc["lcm", "diff_ci_high"])],
                "items": int(tab.loc["lcm", "n"]),
            }
    (REPO / "reports" / "lcm-vs-truncation.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = ["# LCM vs truncation on LoCoMo (qa_retention, offline BM25 proxy)", "",
             "All 10 conversations, offline summarizer, answer recall@10. `qa_retention` = mean over conversations "
             "not withheld; `diff` = LCM − truncation in item recall, paired bootstrap over QA items.", "",
             "| setting | qa_retention | withheld | LCM recall | truncation | full history | chance | LCM tokens | diff [95% CI] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in out.items():
        q = "—" if r["qa_retention_mean"] is None else f"{r['qa_retention_mean']:.3f}"
        lines.append(f"| {name} | {q} | {r['withheld']} | {r['lcm_recall']:.3f} | {r['truncation_recall']:.3f} | {r['full_history_recall']:.3f} "
                     f"| {r['chance_recall']:.3f} | {r['lcm_context_tokens']:.0f} | {r['paired_diff']:+.3f} [{r['diff_ci'][0]:+.3f}, {r['diff_ci'][1]:+.3f}] |")
    (REPO / "reports" / "lcm-vs-truncation.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return out


if __name__ == "__main__":
    main()
