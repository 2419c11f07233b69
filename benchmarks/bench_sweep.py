"""Sweep throughput, measured side by side in one run (this machine is shared and noisy).

1. Offline summarizer, ``CONFIGS`` configurations (a freshTailCount × contextThreshold grid) ×
   ``CONVERSATIONS`` LoCoMo conversations: serial vs processes on every core (target ≥ 1.8× on
   2 cores) vs a local Ray (``ray.init(num_cpus=workers)``); all three must store identical runs.
2. The same kind of sweep through ``LiteLLMSummarizer`` against the local fake server (200 ms per
   request): calls made vs the calls a naive sweep sends, and wall time vs that naive sweep (the
   same sweep, same threads, replays, scores and store, but every request sent: ``reuse_calls=False``).

    python -m benchmarks.bench_sweep [--configs 20] [--conversations 10] [--llm-configs 4] [--llm-conversations 2]

Writes ``reports/benchmarks/sweep.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from lcm_lab.store import LabStore  # noqa: E402
from lcm_lab.sweeps import sweep, sweep_df  # noqa: E402
from lcm_lab.sweeps.executors import default_workers  # noqa: E402
from tests.fakeserver import FakeOpenAIServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "datasets" / "locomo" / "locomo10.json"
REPORTS = ROOT / "reports" / "benchmarks"
LATENCY_S = 0.2
TAILS = [4, 8, 16, 32, 64]
THRESHOLDS = [0.5, 0.6, 0.75, 0.9]


def spec(configs: int, conversations: int, **changes: Any) -> dict[str, Any]:
    thresholds = THRESHOLDS[: max(1, min(len(THRESHOLDS), configs // len(TAILS) or 1))]
    tails = TAILS[: max(1, configs // len(thresholds))]
    out: dict[str, Any] = {
        "name": f"bench-{configs}x{conversations}",
        "conversations": [{"path": str(DATA), "limit": conversations}],
        "token_budget": 6000,
        "base": {"leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300},
        "space": {"freshTailCount": tails, "contextThreshold": thresholds},
        "objectives": [{"metric": "fact_retention", "direction": "maximize"},
                       {"metric": "peak_context_tokens", "direction": "minimize"}],
        "scoring": {"qa": False},
    }
    out.update(changes)
    return out


def timed(spec_: dict[str, Any], directory: Path, name: str, **options: Any) -> tuple[float, Any, LabStore]:
    store = LabStore(directory / f"{name}.duckdb")
    started = time.perf_counter()
    result = sweep(spec_, store=store, progress=False, **options)
    return time.perf_counter() - started, result, store


def same_runs(a: LabStore, b: LabStore, sweep_id: str) -> bool:
    columns = ["config_id", "conversation", "run_id", "status", "peak_context_tokens", "fact_retention", "summarizer_calls"]
    left = sweep_df(sweep_id, a)[columns].sort_values(["config_id", "conversation"]).reset_index(drop=True)
    right = sweep_df(sweep_id, b)[columns].sort_values(["config_id", "conversation"]).reset_index(drop=True)
    return bool(left.equals(right))


def offline(configs: int, conversations: int, directory: Path, with_ray: bool) -> dict[str, Any]:
    workers = default_workers("processes")
    s = spec(configs, conversations)
    serial_s, serial, serial_store = timed(s, directory, "serial", executor="serial")
    parallel_s, parallel, parallel_store = timed(s, directory, "processes", executor="processes", workers=workers)
    out: dict[str, Any] = {
        "configs": serial.configs, "conversations": conversations, "units": serial.runs_ok + serial.runs_failed,
        "workers": workers, "serial_s": serial_s, "processes_s": parallel_s, "speedup_processes": serial_s / parallel_s,
        "processes_identical": same_runs(serial_store, parallel_store, serial.sweep_id),
    }
    if with_ray:
        import ray

        try:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        except Exception as exc:  # a loaded machine: Ray's raylet gives up on a slow agent (ray-project/ray#65983)
            ray.shutdown()
            out["ray_error"] = f"{type(exc).__name__}: {exc}"
            return out
        try:
            ray_s, _, ray_store = timed(s, directory, "ray", executor="ray", workers=workers)
        finally:
            ray.shutdown()
        out.update(ray_s=ray_s, speedup_ray=serial_s / ray_s, ray_vs_processes=parallel_s / ray_s,
                   ray_identical=same_runs(serial_store, ray_store, serial.sweep_id))
    return out


def llm(configs: int, conversations: int, directory: Path) -> dict[str, Any]:
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-0123456789")
    with FakeOpenAIServer(latency=LATENCY_S) as server:
        import litellm

        # Warm up litellm's import and HTTP client (not timed), so neither timed sweep pays for it.
        litellm.completion(model="openai/bench", api_base=server.base_url, api_key=os.environ["OPENAI_API_KEY"],
                           messages=[{"role": "user", "content": "warm up"}], max_tokens=8)
        server.clear()
        s = spec(configs, conversations, summarizer={"name": "litellm", "model": "openai/bench", "api_base": server.base_url,
                                                     "concurrency": 16}, executor="threads", workers=16)
        sweep_s, result, _ = timed(s, directory, "llm")
        sweep_calls = len(server.completion_requests)
        # The naive sweep: the same sweep (replays, scores, store) with every request sent to the model.
        server.clear()
        naive_s, _, _ = timed(s, directory, "llm-naive", reuse_calls=False)
        naive_calls = len(server.completion_requests)
    return {
        "configs": result.configs, "conversations": conversations, "latency_s": LATENCY_S,
        "calls_made": result.calls_made, "server_requests": sweep_calls, "naive_calls": result.naive_calls,
        "naive_sweep_requests": naive_calls, "calls_ratio": result.calls_made / max(1, naive_calls),
        "sweep_s": sweep_s, "naive_s": naive_s, "wall_ratio": sweep_s / naive_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=20)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--llm-configs", type=int, default=4)
    parser.add_argument("--llm-conversations", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        result = {
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()},
            "offline": offline(args.configs, args.conversations, directory, not args.no_ray),
            "llm": llm(args.llm_configs, args.llm_conversations, directory),
        }
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / "sweep.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (REPORTS / "sweep.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 0


def markdown(r: dict[str, Any]) -> str:
    o, m = r["offline"], r["llm"]
    lines = [
        "# Sweep benchmark", "",
        f"Measured side by side in one run on {r['machine']['cpus']} CPUs (load average at start "
        f"{r['machine']['load_avg'][0]:.1f}: the machine is shared, so ratios matter, not seconds).", "",
        f"## Offline summarizer: {o['configs']} configurations (defaults included) × {o['conversations']} LoCoMo conversations ({o['units']} runs)", "",
        "| executor | seconds | speedup vs serial | identical runs |", "|---|---|---|---|",
        f"| serial | {o['serial_s']:.1f} | 1.00× | — |",
        f"| processes ({o['workers']} workers) | {o['processes_s']:.1f} | {o['speedup_processes']:.2f}× (target ≥ 1.8×) | {o['processes_identical']} |",
    ]
    if "ray_error" in o:
        lines.append(f"| local Ray | could not start: {o['ray_error'][:120]} | | |")
    if "ray_s" in o:
        lines.append(f"| local Ray ({o['workers']} CPUs) | {o['ray_s']:.1f} | {o['speedup_ray']:.2f}× | {o['ray_identical']} |")
    lines += [
        "", f"## LiteLLMSummarizer against the fake server ({m['latency_s'] * 1000:.0f} ms per request): "
        f"{m['configs']} configurations × {m['conversations']} conversations", "",
        "| | requests sent | wall seconds |", "|---|---|---|",
        f"| sweep (ledger, threads) | {m['calls_made']} | {m['sweep_s']:.1f} |",
        f"| naive (every request sent, same threads) | {m['naive_sweep_requests']} | {m['naive_s']:.1f} |",
        f"| ratio | {m['calls_ratio']:.2f} | {m['wall_ratio']:.2f} |", "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
