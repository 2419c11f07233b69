"""Summarizer throughput: many replays against a 200 ms model, sequential vs concurrent vs cached.

The batch is every bundled LoCoMo conversation under three tight configurations (≥ 500
summarizer calls). A local OpenAI-compatible server (tests/fakeserver.py) answers every
request after 200 ms; litellm's real HTTP path is used. Three runs, side by side:

1. concurrency 1 (one replay at a time, one call in flight), ledger cache off;
2. concurrency 16 (16 replays in threads sharing one pool of 16 in-flight calls), ledger
   cache readwrite on a fresh store;
3. the same batch again at concurrency 16 from that ledger;
4. the same batch with an in-memory dict as summarizer: the engine's own replay cost, which
   bounds how fast any cached rerun can be.

Targets: run 1 / run 2 ≥ 10×; run 3 makes zero HTTP requests and takes < 5 % of the first
(uncached, sequential) run's wall time. All runs must produce identical summaries. Results go to
``reports/benchmarks/summarizers.json`` and ``.md``.

Run: ``.venv/bin/python -m benchmarks.bench_summarizers`` from the repository root.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from lcm_lab.engine.config.lcm_config import LcmConfig  # noqa: E402
from lcm_lab.engine.protocol import SummaryRequest, SummaryResult  # noqa: E402
from lcm_lab.io.transcripts import read_transcript  # noqa: E402
from lcm_lab.store import LabStore  # noqa: E402
from lcm_lab.store.ledger import Ledger  # noqa: E402
from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer  # noqa: E402
from lcm_lab.sweeps.batch import ReplayOutcome, ReplaySpec, replay_many  # noqa: E402
from tests.fakeserver import FakeOpenAIServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "datasets" / "locomo" / "locomo10.json"
REPORTS = ROOT / "reports" / "benchmarks"
LATENCY_S = 0.2
CONCURRENCY = 16
SPECS = [
    ReplaySpec("tight-2k", LcmConfig.from_plugin_config(
        {"freshTailCount": 8, "leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300}), 8000),
    ReplaySpec("deep-1.5k", LcmConfig.from_plugin_config(
        {"freshTailCount": 4, "leafChunkTokens": 1500, "leafMinFanout": 4, "condensedMinFanout": 3,
         "condensedMinFanoutHard": 2, "sweepMaxDepth": -1, "summaryPrefixTargetTokens": 1500,
         "condensedTargetTokens": 300}), 6000),
    ReplaySpec("tight-1k", LcmConfig.from_plugin_config(
        {"freshTailCount": 8, "leafChunkTokens": 1000, "leafTargetTokens": 300, "condensedTargetTokens": 200,
         "sweepMaxDepth": -1, "leafMinFanout": 4, "condensedMinFanout": 3}), 4000),
]


def run_batch(server: FakeOpenAIServer, store: LabStore, mode: str, concurrency: int, conversations: list[Any]) -> dict[str, Any]:
    """One timed batch; returns wall time, calls, HTTP requests and the summaries produced."""
    summarizer = LiteLLMSummarizer(
        "openai/bench-model", api_base=server.base_url, api_key="bench-key", ledger=Ledger(store, mode),  # type: ignore[arg-type]
        concurrency=concurrency, summary_timeout_ms=30_000, run_id=f"bench-{mode}-c{concurrency}",
    )
    before = len(server.completion_requests)
    started = time.perf_counter()
    outcomes: list[ReplayOutcome] = replay_many(conversations, SPECS, summarizer, concurrency=concurrency, progress=False)
    wall = time.perf_counter() - started
    calls = [c for o in outcomes for t in o.replay.turns for c in t.calls]
    return {
        "mode": mode,
        "concurrency": concurrency,
        "wall_s": round(wall, 3),
        "replays": len(outcomes),
        "summarizer_calls": len(calls),
        "cached_calls": sum(c.cached for c in calls),
        "http_requests": len(server.completion_requests) - before,
        "max_in_flight": summarizer.pool.max_in_flight,
        "longest_replay_calls": max(sum(len(t.calls) for t in o.replay.turns) for o in outcomes),
        "_summaries": [[s.content for s in o.replay.summaries] for o in outcomes],
        "_outputs": {(c.kind, c.depth, c.aggressive, c.source_text, c.previous_summary): c.output for c in calls},
    }


class MemoSummarizer:
    """Answers from a dict of earlier outputs: the engine's own cost with a free summarizer."""

    name = "memo"

    def __init__(self, outputs: dict[tuple[Any, ...], str]) -> None:
        self.outputs = outputs

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        key = (request.kind, request.depth, request.aggressive, request.source_text, request.previous_summary)
        return SummaryResult(text=self.outputs[key], model="openai/bench-model")


def run_memo(conversations: list[Any], outcomes_calls: dict[tuple[Any, ...], str]) -> dict[str, Any]:
    started = time.perf_counter()
    outcomes = replay_many(conversations, SPECS, MemoSummarizer(outcomes_calls), concurrency=CONCURRENCY, progress=False)
    wall = time.perf_counter() - started
    return {"wall_s": round(wall, 3), "_summaries": [[s.content for s in o.replay.summaries] for o in outcomes]}


def main() -> int:
    if not DATA.exists():
        print(f"bundled LoCoMo data not found: {DATA}", file=sys.stderr)
        return 1
    conversations = [c.conversation for c in read_transcript(DATA).conversations]
    with FakeOpenAIServer(latency=LATENCY_S) as server:
        # Warm up litellm's import and HTTP client (not timed).
        LiteLLMSummarizer("openai/bench-model", api_base=server.base_url, api_key="bench-key").summarize(
            SummaryRequest("warm-up " * 50, "leaf", 0, False, None, 192, 2240)
        )
        with LabStore(":memory:") as cold_store:
            print("run 1: concurrency 1, cache off ...", flush=True)
            sequential = run_batch(server, cold_store, "off", 1, conversations)
        with LabStore(":memory:") as store:
            print(f"run 2: concurrency {CONCURRENCY}, cache readwrite (fresh ledger) ...", flush=True)
            concurrent = run_batch(server, store, "readwrite", CONCURRENCY, conversations)
            print("run 3: the same batch from the ledger ...", flush=True)
            cached = run_batch(server, store, "readwrite", CONCURRENCY, conversations)
            ledger_rows = Ledger(store).totals()
    print("run 4: the same batch with an in-memory dict as summarizer (engine floor) ...", flush=True)
    memo = run_memo(conversations, concurrent["_outputs"])
    identical = sequential["_summaries"] == concurrent["_summaries"] == cached["_summaries"] == memo["_summaries"]
    for run in (sequential, concurrent, cached, memo):
        run.pop("_summaries")
        run.pop("_outputs", None)
    speedup = sequential["wall_s"] / concurrent["wall_s"]
    cache_share = cached["wall_s"] / concurrent["wall_s"]
    result = {
        "benchmark": "summarizers",
        "description": "LoCoMo ×3 tight configs through LiteLLMSummarizer against a local OpenAI-compatible server with 200 ms latency",
        "latency_s": LATENCY_S,
        "configs": [s.name for s in SPECS],
        "conversations": len(conversations),
        "runs": {"sequential": sequential, "concurrent": concurrent, "cached": cached},
        "speedup_concurrent_vs_sequential": round(speedup, 2),
        "cached_wall_share_of_concurrent": round(cache_share, 4),
        "cached_wall_share_of_sequential": round(cached["wall_s"] / sequential["wall_s"], 4),
        "engine_floor_wall_s": memo["wall_s"],
        "ledger_overhead_ms_per_cached_call": round(1000 * (cached["wall_s"] - memo["wall_s"]) / max(1, cached["summarizer_calls"]), 3),
        "identical_summaries": identical,
        "ledger_totals_after_runs_2_3": {k: (float(v) if isinstance(v, float) else v) for k, v in ledger_rows.items()},
        "targets": {
            "calls>=500": sequential["summarizer_calls"] >= 500,
            "speedup>=10": speedup >= 10,
            "cached_http_requests==0": cached["http_requests"] == 0,
            "cached_wall<5%_of_first_run": cached["wall_s"] / sequential["wall_s"] < 0.05,
            "identical_summaries": identical,
        },
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
    }
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / "summarizers.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (REPORTS / "summarizers.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 0 if all(result["targets"].values()) else 1


def markdown(result: dict[str, Any]) -> str:
    runs = result["runs"]
    lines = [
        "# Summarizer throughput benchmark",
        "",
        f"{result['description']}; {result['conversations']} conversations × configs {', '.join(result['configs'])}.",
        "Generated by `python -m benchmarks.bench_summarizers` (ratios measured side by side in one run).",
        "",
        "| run | concurrency | cache | wall s | summarizer calls | cache hits | HTTP requests | max in flight |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for name, run in runs.items():
        lines.append(
            f"| {name} | {run['concurrency']} | {run['mode']} | {run['wall_s']:.2f} | {run['summarizer_calls']} |"
            f" {run['cached_calls']} | {run['http_requests']} | {run['max_in_flight']} |"
        )
    lines += [
        "",
        f"- speed-up at concurrency {runs['concurrent']['concurrency']} vs 1: **{result['speedup_concurrent_vs_sequential']}×** (target ≥ 10×)",
        f"- cached rerun: **{runs['cached']['http_requests']} HTTP requests**, wall time "
        f"**{100 * result['cached_wall_share_of_concurrent']:.2f} %** of the concurrent run "
        f"and **{100 * result['cached_wall_share_of_sequential']:.2f} %** of the first (sequential, uncached) run (target < 5 %)",
        f"- engine floor (same batch, concurrency 16, summaries from an in-memory dict): {result['engine_floor_wall_s']:.2f} s — "
        f"the cached rerun costs {result['ledger_overhead_ms_per_cached_call']:.2f} ms per call on top (render, ledger lookup, hit row)",
        f"- identical summaries across the three runs: {result['identical_summaries']}",
        f"- longest single replay: {runs['sequential']['longest_replay_calls']} sequential calls "
        f"(≈ {runs['sequential']['longest_replay_calls'] * result['latency_s']:.1f} s at {result['latency_s']} s each: the floor for any concurrency)",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
