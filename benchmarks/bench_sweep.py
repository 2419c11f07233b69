"""Sweep throughput, measured side by side in one run (this machine is shared and noisy).

1. **Offline summarizer**, ``--configs`` configurations (a freshTailCount × contextThreshold
   grid, plus the plugin defaults every sweep runs) × ``--conversations`` LoCoMo conversations:
   serial vs worker processes on every core (target ≥ 1.8× on 2 cores) vs a local Ray
   (``ray.init(num_cpus=workers)``). All must store identical runs (every stored table compared).
   Wall seconds, and CPU seconds of the sweep's process (the writer) and of its worker processes.
2. **LiteLLMSummarizer** against the local fake server (:mod:`lcm_lab.testing`, 200 ms per
   request), ``--llm-configs`` × ``--llm-conversations``: requests sent vs a naive sweep (the same
   sweep — threads, replays, scores, store — with every request sent: ``reuse_calls=False``),
   and wall time vs that naive sweep.
3. **Scoring cost**: scored / bare replay (:mod:`benchmarks.bench_qa_scoring`, CPU seconds).

    python -m benchmarks.bench_sweep            # 20 configurations × 10 conversations (all parts)
    python -m benchmarks.bench_sweep --quick    # 6 × 3 offline, 4 × 1 litellm, scoring on 3 conversations

Writes ``reports/benchmarks/sweep.json`` and ``sweep.md`` (with the mode, the machine's load
and whether the kernel groups processes per session for CPU shares, which caps what a parallel
run can gain on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "datasets" / "locomo" / "locomo10.json"
REPORTS = ROOT / "reports" / "benchmarks"
LATENCY_S = 0.2
TAILS = [4, 8, 16, 32, 64]
THRESHOLDS = [0.5, 0.6, 0.75, 0.9]
TARGET = 1.8
QUICK = {"configs": 6, "conversations": 3, "llm_configs": 4, "llm_conversations": 1, "scoring_conversations": 3}
FULL = {"configs": 20, "conversations": 10, "llm_configs": 20, "llm_conversations": 10, "scoring_conversations": 10}


def spec(configs: int, conversations: int, **changes: Any) -> dict[str, Any]:
    """A grid of ``configs`` points (freshTailCount × contextThreshold) on LoCoMo; QA not scored."""
    tails = TAILS[: min(len(TAILS), configs)]
    thresholds = THRESHOLDS[: max(1, min(len(THRESHOLDS), configs // len(tails)))]
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


def machine() -> dict[str, Any]:
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    return {
        "cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "load_avg_start": os.getloadavg(),
        "sched_autogroup": autogroup.read_text().strip() == "1" if autogroup.exists() else None,
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(spec_: dict[str, Any], directory: Path, name: str, **options: Any) -> tuple[dict[str, Any], Any, Any]:
    """Run one sweep into its own store: timings (wall, this process's CPU, reaped children's CPU)."""
    from lcm_lab.store import LabStore
    from lcm_lab.sweeps import sweep

    store = LabStore(directory / f"{name}.duckdb")
    load = os.getloadavg()[0]
    wall, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    result = sweep(spec_, store=store, progress=False, **options)
    timing = {"wall_s": time.perf_counter() - wall, "parent_cpu_s": time.process_time() - cpu,
              "workers_cpu_s": _children_cpu() - children, "load_avg_1m_start": load, "load_avg_1m_end": os.getloadavg()[0]}
    return timing, result, store


def stored(store: Any, sweep_id: str) -> dict[str, list[Any]]:
    """Everything a sweep stored, in a stable order (timings left out)."""
    runs = "(SELECT run_id FROM sweep_runs WHERE sweep_id = ?)"
    out = {
        "sweep_runs": store.fetch_all("SELECT config_id, conversation_key, run_id, status, error, metrics, model_calls"
                                      " FROM sweep_runs WHERE sweep_id = ? ORDER BY run_id", [sweep_id]),
        "replays": store.fetch_all(f"SELECT * EXCLUDE (created_at) FROM replays WHERE run_id IN {runs} ORDER BY run_id", [sweep_id]),
        "scores": store.fetch_all(f"SELECT run_id, scope, scope_id, metric, value, details FROM scores WHERE run_id IN {runs}"
                                  " ORDER BY run_id, scope, scope_id, metric", [sweep_id]),
    }
    for table in ("replay_turns", "replay_sent", "replay_summaries", "replay_summary_sources", "replay_calls"):
        out[table] = store.fetch_all(f"SELECT * FROM {table} WHERE run_id IN {runs} ORDER BY ALL", [sweep_id])
    return out


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def parallel_ceiling(workers: int, n: int = 4_000_000) -> dict[str, float]:
    """The control: a pure-CPU task run serially and then on a spawn pool of ``workers`` in this
    session, side by side: the most any process pool of this session could gain at this moment
    (about ``workers``× on idle cores; near 1× on a busy machine with per-session CPU shares)."""
    import multiprocessing

    def serial_s() -> float:
        started = time.perf_counter()
        for _ in range(workers):
            _burn(n)
        return time.perf_counter() - started

    before = serial_s()
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.map(_burn, [1] * workers)  # started and imported: not timed
        started = time.perf_counter()
        pool.map(_burn, [n] * workers)
        pooled = time.perf_counter() - started
    after = serial_s()
    return {"serial_s": (before + after) / 2, "pool_s": pooled, "speedup": (before + after) / 2 / pooled}


def offline(configs: int, conversations: int, directory: Path, with_ray: bool) -> dict[str, Any]:
    from lcm_lab.sweeps.executors import default_workers

    workers = default_workers("processes")
    s = spec(configs, conversations)
    ceiling_before = parallel_ceiling(workers)
    serial_t, serial, serial_store = timed(s, directory, "serial", executor="serial")
    reference = stored(serial_store, serial.sweep_id)
    processes_t, processes, processes_store = timed(s, directory, "processes", executor="processes", workers=workers)
    out: dict[str, Any] = {
        "configs": serial.configs, "conversations": conversations, "units": serial.runs_ok + serial.runs_failed,
        "runs_failed": serial.runs_failed, "workers": workers, "serial": serial_t, "processes": processes_t,
        "speedup_processes": serial_t["wall_s"] / processes_t["wall_s"],
        "processes_identical": stored(processes_store, processes.sweep_id) == reference,
        # CPU accounting: what parallel execution costs on top of the work itself, and how much of it the writer does
        "processes_cpu_overhead": (processes_t["parent_cpu_s"] + processes_t["workers_cpu_s"]) / serial_t["parent_cpu_s"],
        "processes_writer_cpu_share": processes_t["parent_cpu_s"] / (processes_t["parent_cpu_s"] + processes_t["workers_cpu_s"]),
    }
    ceiling_after = parallel_ceiling(workers)
    out["ceiling"] = {"before": ceiling_before, "after": ceiling_after,
                      "speedup": (ceiling_before["speedup"] + ceiling_after["speedup"]) / 2}
    out["processes_vs_ceiling"] = out["speedup_processes"] / out["ceiling"]["speedup"]
    if with_ray:
        out.update(ray_phase(s, directory, workers, reference))
        if "ray" in out:
            out["speedup_ray"] = serial_t["wall_s"] / out["ray"]["wall_s"]
            out["ray_vs_processes"] = processes_t["wall_s"] / out["ray"]["wall_s"]
    return out


def ray_phase(s: dict[str, Any], directory: Path, workers: int, reference: dict[str, list[Any]]) -> dict[str, Any]:
    try:
        from lcm_lab.sweeps.ray_executor import import_ray

        ray = import_ray()
    except RuntimeError as exc:
        return {"ray_error": str(exc)}
    try:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # a loaded machine: Ray's raylet gives up on a slow agent (ray-project/ray#65983)
        ray.shutdown()
        return {"ray_error": f"{type(exc).__name__}: {exc}"}
    try:
        ray_t, result, ray_store = timed(s, directory, "ray", executor="ray", workers=workers)
        # Ray's workers are not this process's children: their CPU is not in workers_cpu_s.
        ray_t["workers_cpu_s"] = None
        return {"ray": ray_t, "ray_identical": stored(ray_store, result.sweep_id) == reference}
    finally:
        ray.shutdown()


def llm(configs: int, conversations: int, directory: Path) -> dict[str, Any]:
    from lcm_lab.testing import FakeOpenAIServer

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-0123456789")
    with FakeOpenAIServer(latency=LATENCY_S) as server:
        import litellm

        # Warm up litellm's import and HTTP client (not timed), so neither timed sweep pays for it.
        litellm.completion(model="openai/bench", api_base=server.base_url, api_key=os.environ["OPENAI_API_KEY"],
                           messages=[{"role": "user", "content": "warm up"}], max_tokens=8)
        server.clear()
        s = spec(configs, conversations, summarizer={"name": "litellm", "model": "openai/bench", "api_base": server.base_url,
                                                     "concurrency": 16}, executor="threads", workers=16)
        sweep_t, result, _ = timed(s, directory, "llm")
        sweep_requests = len(server.completion_requests)
        # The naive sweep: the same sweep (replays, scores, store) with every request sent to the model.
        server.clear()
        naive_t, naive, _ = timed(s, directory, "llm-naive", reuse_calls=False)
        naive_requests = len(server.completion_requests)
    return {
        "configs": result.configs, "conversations": conversations, "units": result.runs_ok + result.runs_failed,
        "runs_failed": result.runs_failed + naive.runs_failed, "latency_s": LATENCY_S,
        "calls_made": result.calls_made, "server_requests": sweep_requests, "cache_hits": result.cache_hits,
        "naive_calls": result.naive_calls, "naive_sweep_requests": naive_requests,
        "calls_ratio": result.calls_made / max(1, naive_requests),
        "sweep": sweep_t, "naive": naive_t, "wall_ratio": sweep_t["wall_s"] / naive_t["wall_s"],
    }


def scoring(conversations: int, sweep_configs: int) -> dict[str, Any]:
    from benchmarks.bench_qa_scoring import measure

    result = measure(6000, conversations, sweep_configs)
    keys = ("ratio_scored_cold", "ratio_scored_warm", "ratio_scored_sweep", "ratio_probes_cold", "ratio_probes_warm", "target")
    return {"conversations": result["conversations"], "sweep_configs": sweep_configs, **{k: result[k] for k in keys}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"smaller sizes for a loaded machine: {QUICK}")
    parser.add_argument("--configs", type=int, help="offline grid points (default 20; quick 6)")
    parser.add_argument("--conversations", type=int, help="LoCoMo conversations (default 10; quick 3)")
    parser.add_argument("--llm-configs", type=int, help="litellm grid points (default 20; quick 4)")
    parser.add_argument("--llm-conversations", type=int, help="litellm conversations (default 10; quick 1)")
    parser.add_argument("--scoring-conversations", type=int, help="conversations for scored/bare (default 10; quick 3)")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--skip", action="append", default=[], choices=["offline", "llm", "scoring"], help="leave a part out")
    parser.add_argument("--output", type=Path, default=REPORTS, help="directory for sweep.json and sweep.md")
    args = parser.parse_args(argv)
    sizes = dict(QUICK if args.quick else FULL)
    for key in sizes:
        if getattr(args, key) is not None:
            sizes[key] = getattr(args, key)
    result: dict[str, Any] = {"mode": "quick" if args.quick else "full", "sizes": sizes, "machine": machine(),
                              "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        if "offline" not in args.skip:
            result["offline"] = offline(sizes["configs"], sizes["conversations"], directory, not args.no_ray)
        if "llm" not in args.skip:
            result["llm"] = llm(sizes["llm_configs"], sizes["llm_conversations"], directory)
        if "scoring" not in args.skip:
            result["scoring"] = scoring(sizes["scoring_conversations"], sizes["configs"] + 1)
    result["machine"]["load_avg_end"] = os.getloadavg()
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "sweep.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (args.output / "sweep.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 0


def _cpu(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [
        f"# Sweep benchmark ({r['mode']} mode)", "",
        f"Run {r['started_utc']} on {m['usable_cpus']} usable CPUs, Python {m['python']}; 1-minute load average "
        f"{m['load_avg_start'][0]:.1f} at the start and {m['load_avg_end'][0]:.1f} at the end. Every ratio compares runs "
        "made side by side in this one run; seconds are not comparable across runs (the machine is shared).",
    ]
    if m.get("sched_autogroup"):
        lines += ["", "The kernel groups processes per session for CPU shares (`sched_autogroup_enabled=1`): on a busy "
                  "machine a sweep's worker processes share one session's share, so the wall-clock speed-up of the "
                  "process executor is capped by the load, not by the code; the CPU columns show the work itself. "
                  "(Ray's workers run in the raylet's session, outside that share.)"]
    if "offline" in r:
        o = r["offline"]
        s, p = o["serial"], o["processes"]
        lines += [
            "", f"## Offline summarizer: {o['configs']} configurations (defaults included) × {o['conversations']} LoCoMo "
            f"conversations ({o['units']} runs)", "",
            "| executor | wall s | speed-up vs serial | sweep process CPU s | worker CPU s | load at start | identical runs |",
            "|---|---|---|---|---|---|---|",
            f"| serial | {s['wall_s']:.1f} | 1.00× | {_cpu(s['parent_cpu_s'])} | — | {s['load_avg_1m_start']:.1f} | — |",
            f"| processes ({o['workers']} workers) | {p['wall_s']:.1f} | **{o['speedup_processes']:.2f}×** (target ≥ {TARGET}×) | "
            f"{_cpu(p['parent_cpu_s'])} | {_cpu(p['workers_cpu_s'])} | {p['load_avg_1m_start']:.1f} | {o['processes_identical']} |",
        ]
        if "ray_error" in o:
            lines.append(f"| local Ray | could not start: {o['ray_error'][:160]} | | | | | |")
        if "ray" in o:
            y = o["ray"]
            lines.append(f"| local Ray ({o['workers']} CPUs) | {y['wall_s']:.1f} | {o['speedup_ray']:.2f}× | {_cpu(y['parent_cpu_s'])} | "
                         f"not measured | {y['load_avg_1m_start']:.1f} | {o['ray_identical']} |")
        c = o["ceiling"]
        lines += [
            "", f"Control, side by side: a pure-CPU task on a spawn pool of {o['workers']} in this session ran "
            f"{c['before']['speedup']:.2f}× (before the sweeps) and {c['after']['speedup']:.2f}× (after) faster than serially: "
            f"the most any process pool could gain here at that moment. The process executor reached "
            f"**{o['processes_vs_ceiling']:.2f}** of that ceiling.",
            "", f"Processes: CPU of sweep process + workers = {o['processes_cpu_overhead']:.2f}× the serial sweep's CPU "
            f"(parallel overhead: worker start-up, sending rows back); the writer (sweep process) does "
            f"{100 * o['processes_writer_cpu_share']:.0f}% of it.",
        ]
    if "llm" in r:
        g = r["llm"]
        lines += [
            "", f"## LiteLLMSummarizer against the fake server ({g['latency_s'] * 1000:.0f} ms per request): "
            f"{g['configs']} configurations × {g['conversations']} conversations ({g['units']} runs, threads)", "",
            "| | requests sent | wall s |", "|---|---|---|",
            f"| sweep (ledger: a request is sent once) | {g['calls_made']} | {g['sweep']['wall_s']:.1f} |",
            f"| naive (every request sent, same threads) | {g['naive_sweep_requests']} | {g['naive']['wall_s']:.1f} |",
            f"| **ratio** | **{g['calls_ratio']:.2f}** | **{g['wall_ratio']:.2f}** |",
        ]
    if "scoring" in r:
        c = r["scoring"]
        lines += [
            "", f"## Scoring cost: scored / bare replay (CPU seconds, {c['conversations']} LoCoMo conversations, budget 6000)", "",
            "| | scored / bare |", "|---|---|",
            f"| first configuration of a conversation (per-conversation caches cold) | {c['ratio_scored_cold']:.2f}× |",
            f"| every further configuration (caches warm) | {c['ratio_scored_warm']:.2f}× |",
            f"| **over a sweep of {c['sweep_configs']} configurations per conversation** | **{c['ratio_scored_sweep']:.2f}×** "
            f"(target ≤ {c['target']}×) |",
            f"| probed headlines alone, cold / warm | {c['ratio_probes_cold']:.2f}× / {c['ratio_probes_warm']:.2f}× |",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
