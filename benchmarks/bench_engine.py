"""Engine and JSONL-load hot paths against the targets of issue 10 (deliverable 5).

* **Engine**: the pure replay of ``before-compaction.v3.jsonl`` under the reference C2 config with
  ``stub-v1`` (transcript already parsed; ingest, compaction and assembly bookkeeping included, as
  the plugin's ``afterTurn`` does them). Best of N, wall and CPU time. The baseline is the real
  plugin's engine time on this machine type, 2.33 s (measured outside this repository: Node is not
  part of the lab); target ratio ≥ 10×.
* **JSONL load**: ``lcm_lab.load`` of an OpenClaw-style session directory into a fresh lab store,
  in MB/s, against DuckDB's ``read_json`` of the same files in the same run (the floor of what
  any loader can do: it parses, but projects nothing); target ≥ 25 MB/s on 2 cores.

Writes ``reports/benchmarks/engine.{json,md}``. Run: ``python -m benchmarks.bench_engine``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.generate import DATA, generate_session_dir

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports" / "benchmarks"
FIXTURES = REPO / "tests" / "fixtures" / "reference-runs"
PLUGIN_ENGINE_SECONDS = 2.33  # lossless-claw main, Node 22, same input/config/stub (issue 10)


def _best(fn: Any, repeats: int) -> tuple[float, float]:
    """Best wall and best CPU seconds of ``fn()`` over ``repeats`` runs."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return wall, cpu


def engine(repeats: int) -> dict[str, Any]:
    from lcm_lab.engine.config import LcmConfig
    from lcm_lab.engine.replay import replay
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.summarizers.stub import StubV1Summarizer

    trace = json.loads(gzip.open(FIXTURES / "traces" / "before-compaction__C2-tight.trace.json.gz").read())
    config = LcmConfig.from_plugin_config(trace["plugin_config"]).replace(proactive_threshold_compaction_mode="inline")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "before-compaction.v3.jsonl"
        path.write_bytes(gzip.open(FIXTURES / "inputs" / "before-compaction.v3.jsonl.gz").read())
        conversation = read_transcript(path).conversations[0].conversation
    budget = int(trace["token_budget"])
    wall, cpu = _best(lambda: replay(conversation, config, StubV1Summarizer(), token_budget=budget), repeats)
    return {
        "input": "before-compaction.v3.jsonl",
        "config": "C2-tight",
        "repeats": repeats,
        "wall_s": round(wall, 4),
        "cpu_s": round(cpu, 4),
        "plugin_s": PLUGIN_ENGINE_SECONDS,
        "ratio_wall": round(PLUGIN_ENGINE_SECONDS / wall, 2),
        "ratio_cpu": round(PLUGIN_ENGINE_SECONDS / cpu, 2),
        "target_ratio": 10.0,
    }


def jsonl_load(mb: int) -> dict[str, Any]:
    import duckdb

    from lcm_lab.load import load
    from lcm_lab.store import LabStore

    root = generate_session_dir(DATA / f"sessions-{mb}mb", target_mb=mb)
    files = sorted((root / "agents" / "main" / "sessions").glob("*.jsonl"))
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        store = LabStore(Path(tmp) / "lab.duckdb")
        w0 = time.perf_counter()
        results = load(root, store, progress=False)
        lab_s = time.perf_counter() - w0
        messages = sum(r.messages for r in results)
        store.close()
    con = duckdb.connect()
    w0 = time.perf_counter()
    rows = con.execute(
        "SELECT count(*) FROM read_json(?, format='newline_delimited', records=false, maximum_object_size=67108864)",
        [[str(f) for f in files]],
    ).fetchone()
    duck_s = time.perf_counter() - w0
    return {
        "input_mb": round(size_mb, 1),
        "files": len(files),
        "messages": messages,
        "lab_s": round(lab_s, 3),
        "lab_mb_s": round(size_mb / lab_s, 2),
        "duckdb_read_json_s": round(duck_s, 3),
        "duckdb_mb_s": round(size_mb / duck_s, 1),
        "duckdb_rows": rows[0] if rows else None,
        "lab_vs_duckdb": round(lab_s / duck_s, 1),
        "target_mb_s": 25.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--load-mb", type=int, default=50)
    args = parser.parse_args()
    result = {"engine": engine(args.repeats), "jsonl_load": jsonl_load(args.load_mb)}
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / "engine.json").write_text(json.dumps(result, indent=2) + "\n")
    e, j = result["engine"], result["jsonl_load"]
    md = [
        "# Engine and JSONL load (issue 10, deliverable 5)",
        "",
        "Written by `python -m benchmarks.bench_engine`. The machine is shared: wall times vary with load;",
        "CPU time is the steadier number.",
        "",
        "| measure | lab | baseline | ratio | target |",
        "|---|---|---|---|---|",
        f"| engine: replay {e['input']} / {e['config']} / stub-v1 (best of {e['repeats']}) | {e['wall_s']} s wall, {e['cpu_s']} s CPU"
        f" | real plugin {e['plugin_s']} s | {e['ratio_wall']}x wall, {e['ratio_cpu']}x CPU | ≥ {e['target_ratio']:.0f}x |",
        f"| JSONL load: {j['input_mb']} MB, {j['files']} files, {j['messages']} messages | {j['lab_mb_s']} MB/s ({j['lab_s']} s)"
        f" | DuckDB read_json {j['duckdb_mb_s']} MB/s ({j['duckdb_read_json_s']} s) | lab takes {j['lab_vs_duckdb']}x DuckDB's time"
        f" | ≥ {j['target_mb_s']:.0f} MB/s |",
        "",
    ]
    (REPORTS / "engine.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
