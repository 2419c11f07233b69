"""Cost of scoring with probes: a probe-scored replay against the bare replay, side by side
(issue 20 item 8: a sweep scored with probes costs ≤ 3× the bare replay; issue 10's ≤ 2× was set
for the one-instant headlines).

For each bundled LoCoMo conversation at one budget, two configurations replayed with the offline
summarizer, and timed in CPU seconds of this process (robust to a shared machine's load; wall
seconds are recorded too):

* **scored** — everything a sweep unit scores (``score_replay`` with the QA items and the chance
  conversation, per-turn context metrics at the last turn): the headlines probed over the
  conversation's life (every probe a branch of the replay through ``run.ask``), their end-of-run
  diagnostics and the rest; *cold* on the first configuration (every per-conversation cache
  empty: QA ceiling, floors and chance at every probe point, extracted facts, the host's view,
  reader passages) and *warm* on the second (what every further configuration of a sweep pays);
* **probes** — the probed headlines alone (``verdict_scores`` without the end-of-run
  diagnostics), cold and warm.

The sweep figure amortises one cold and ``--sweep-configs − 1`` warm scorings over that many
replays. ``python -m benchmarks.bench_qa_scoring [--budget 6000] [--conversations 10] [--sweep-configs 21]``
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
REPORT_DIR = REPO / "reports" / "benchmarks"
TARGET = 3.0


def clear_caches() -> None:
    """Empty every per-conversation cache scoring keeps (a cold start)."""
    from lcm_lab.engine.replay import driver
    from lcm_lab.metrics import base, facts, locomo, qa_reader

    locomo._CACHE.clear()
    base._PER_CONVERSATION.clear()
    facts._FACTS_MEMO.clear()
    qa_reader._text_passages.cache_clear()
    qa_reader._passage_terms.cache_clear()
    driver._HOST_VIEWS.clear()


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float, float]:
    """``(fn(*args, **kwargs), cpu seconds, wall seconds)``."""
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.process_time() - cpu, time.perf_counter() - wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=6000)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--sweep-configs", type=int, default=21, help="configurations per conversation in the sweep figure")
    args = parser.parse_args(argv)
    result = measure(args.budget, args.conversations, args.sweep_configs)
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "qa_scoring.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    (REPORT_DIR / "qa_scoring.md").write_text(text)
    print(text)
    return 0 if result["ratio_scored_sweep"] <= TARGET else 1


def measure(budget: int, conversations: int, sweep_configs: int) -> dict[str, Any]:
    """Time bare and scored replays (see the module docstring); the result as plain data."""
    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.metrics.locomo import raw_texts
    from lcm_lab.metrics.score import score_replay
    from lcm_lab.metrics.verdicts import verdict_scores
    from lcm_lab.summarizers.offline import OfflineSummarizer

    convs = list(read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations)[:conversations]
    configs = [LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400),
               LcmConfig(fresh_tail_count=16, leaf_chunk_tokens=2000, leaf_target_tokens=400)]
    load_before = os.getloadavg()
    rows = []
    for i, conv in enumerate(convs):
        other = convs[(i + 1) % len(convs)].conversation
        runs, bare, bare_wall, scored, scored_wall = [], [], [], [], []
        clear_caches()
        for k, config in enumerate(configs):
            run, cpu, wall = timed(replay, conv.conversation, config, OfflineSummarizer(), token_budget=budget)
            runs.append(run)
            bare.append(cpu)
            bare_wall.append(wall)
            last = [run.turns[-1].turn] if run.turns else []
            _, cpu, wall = timed(score_replay, run, run_id=f"r{k}", qa_items=conv.qa_items, context_turns=last,
                                 chance_conversation=other)
            scored.append(cpu)
            scored_wall.append(wall)
        clear_caches()
        donor = "\n".join(raw_texts(other))
        probes = {"qa_items": conv.qa_items, "chance_conversation": other, "donor_text": donor, "end_of_run": False}
        _, qa_cold, _ = timed(verdict_scores, runs[0], "cold", **probes)
        _, qa_warm, _ = timed(verdict_scores, runs[1], "warm", **probes)
        rows.append({
            "conversation": conv.conversation.title or str(i),
            "replay_cpu_s": bare, "replay_wall_s": bare_wall,
            "scored_cold_cpu_s": scored[0], "scored_warm_cpu_s": scored[1],
            "scored_cold_wall_s": scored_wall[0], "scored_warm_wall_s": scored_wall[1],
            "qa_cold_cpu_s": qa_cold, "qa_warm_cpu_s": qa_warm,
            "ratio_scored_cold": (bare[0] + scored[0]) / bare[0], "ratio_scored_warm": (bare[1] + scored[1]) / bare[1],
        })
    bare_a, bare_b, cold, warm, qa_cold, qa_warm = _totals(rows)
    n = sweep_configs
    mean_bare = (bare_a + bare_b) / 2
    result = {
        "budget": budget,
        "conversations": len(rows),
        "timing": "CPU seconds of this process (time.process_time); wall seconds per row too",
        "load_avg_before": load_before,
        "load_avg_after": os.getloadavg(),
        "rows": rows,
        "ratio_scored_cold": (bare_a + cold) / bare_a,
        "ratio_scored_warm": (bare_b + warm) / bare_b,
        "sweep_configs": n,
        "ratio_scored_sweep": (n * mean_bare + cold + (n - 1) * warm) / (n * mean_bare),
        "ratio_probes_cold": (bare_a + qa_cold) / bare_a,
        "ratio_probes_warm": (bare_b + qa_warm) / bare_b,
        "target": TARGET,
    }
    return result


def _totals(rows: list[dict[str, Any]]) -> tuple[float, ...]:
    """CPU seconds over all conversations: bare replay (two runs), scored cold/warm, QA cold/warm."""
    return (
        sum(r["replay_cpu_s"][0] for r in rows), sum(r["replay_cpu_s"][1] for r in rows),
        sum(r["scored_cold_cpu_s"] for r in rows), sum(r["scored_warm_cpu_s"] for r in rows),
        sum(r["qa_cold_cpu_s"] for r in rows), sum(r["qa_warm_cpu_s"] for r in rows),
    )  # fmt: skip


def markdown(result: dict[str, Any]) -> str:
    rows, n, load_before = result["rows"], result["sweep_configs"], result["load_avg_before"]
    bare_a, bare_b, cold, warm, qa_cold, qa_warm = _totals(rows)
    lines = [
        "# Scoring cost with probes (scored replay / bare replay)",
        "",
        f"LoCoMo, budget {result['budget']}, offline summarizer, {len(rows)} conversations; CPU seconds of one process, "
        f"measured side by side in one run (load average {load_before[0]:.1f} at start, {result['load_avg_after'][0]:.1f} "
        f"at the end, 1-minute). Target ≤ {result['target']}.",
        "",
        "*Scored* is everything a sweep unit scores (`score_replay` with QA items and the chance conversation: the",
        "headlines probed over the conversation's life through `run.ask`, their end-of-run diagnostics, the rest):",
        "*cold* = first configuration of a conversation (per-conversation caches empty), *warm* = a further",
        "configuration (caches filled). *Probes* = the probed headlines alone (`verdict_scores`, no end-of-run diagnostics).",
        "",
        "| conversation | replay s | scored cold s | scored warm s | ratio cold | ratio warm | probes cold s | probes warm s |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {r['conversation']} | {r['replay_cpu_s'][0]:.2f} / {r['replay_cpu_s'][1]:.2f} | {r['scored_cold_cpu_s']:.2f} | "
          f"{r['scored_warm_cpu_s']:.2f} | {r['ratio_scored_cold']:.2f} | {r['ratio_scored_warm']:.2f} | "
          f"{r['qa_cold_cpu_s']:.2f} | {r['qa_warm_cpu_s']:.2f} |" for r in rows),
        f"| **all** | {bare_a:.2f} / {bare_b:.2f} | {cold:.2f} | {warm:.2f} | {result['ratio_scored_cold']:.2f} | "
        f"{result['ratio_scored_warm']:.2f} | {qa_cold:.2f} | {qa_warm:.2f} |",
        "",
        f"- scored / bare, first configuration of a conversation (cold): **{result['ratio_scored_cold']:.2f}×**",
        f"- scored / bare, every further configuration (warm): **{result['ratio_scored_warm']:.2f}×**",
        f"- scored / bare over a sweep of {n} configurations per conversation: **{result['ratio_scored_sweep']:.2f}×**",
        f"- probes alone: cold {result['ratio_probes_cold']:.2f}×, warm {result['ratio_probes_warm']:.2f}×",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
