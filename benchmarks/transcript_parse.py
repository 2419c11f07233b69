"""Parse throughput of the pi JSONL reader against a naive ``json.loads`` loop (same run).

Generates a ≥ 200 MB linear v3 session under ``benchmarks/_data/`` from the bundled
``before-compaction.v3`` reference input (ids renumbered, parent chain kept), then parses it

* naively: ``json.loads`` per line into a list (no validation, no leaf path), and
* with :func:`lcm_lab.io.transcripts.read_transcript` (orjson, leaf-path selection, events,
  ``InputEntry`` values),

each in a fresh subprocess so peak RSS is measured per method. Writes
``reports/benchmarks/transcript_parse.{json,md}``. Run: ``python -m benchmarks.transcript_parse``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tests" / "fixtures" / "reference-runs" / "inputs" / "before-compaction.v3.jsonl.gz"
DATA = REPO / "benchmarks" / "_data"
REPORTS = REPO / "reports" / "benchmarks"


def generate(target_mb: int) -> Path:
    """Write (once) a linear v3 session of at least ``target_mb`` MB; return its path."""
    path = DATA / f"pi-session-{target_mb}mb.jsonl"
    if path.exists() and path.stat().st_size >= target_mb * 1_000_000:
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    with gzip.open(SOURCE, "rt", encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    header, body = lines[0], lines[1:]
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        out.write(json.dumps(header, separators=(",", ":")) + "\n")
        number, previous = 0, None
        while out.tell() < target_mb * 1_000_000:
            for entry in body:
                number += 1
                entry = {**entry, "id": f"{number:08x}", "parentId": previous}
                previous = entry["id"]
                out.write(json.dumps(entry, separators=(",", ":")) + "\n")
    tmp.replace(path)
    return path


def _measure(method: str, path: Path) -> dict[str, float]:
    start = time.perf_counter()
    if method == "naive":
        values = []
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                values.append(json.loads(line))
        entries = len(values) - 1
    else:
        from lcm_lab.io.transcripts import read_transcript

        read = read_transcript(path)
        entries = len(read.conversations[0].conversation.entries)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": seconds, "entries": entries, "peak_rss_bytes": peak}


def _run_child(method: str, path: Path) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, "-m", "benchmarks.transcript_parse", "--child", method, str(path)],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("METHOD", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_measure(args.child[0], Path(args.child[1]))))
        return 0
    path = generate(args.size_mb)
    size = path.stat().st_size
    runs: dict[str, list[dict[str, float]]] = {"naive": [], "reader": []}
    for _ in range(args.repeat):  # interleaved: the machine is shared and noisy
        for method in runs:
            runs[method].append(_run_child(method, path))
    best = {method: min(results, key=lambda r: r["seconds"]) for method, results in runs.items()}
    result = {
        "input_bytes": size,
        "entries": best["reader"]["entries"],
        "repeat": args.repeat,
        "methods": {
            method: {
                "best_seconds": round(r["seconds"], 3),
                "mb_per_s": round(size / 1e6 / r["seconds"], 1),
                "entries_per_s": round(r["entries"] / r["seconds"]),
                "peak_rss_mb": round(r["peak_rss_bytes"] / 1e6, 1),
            }
            for method, r in best.items()
        },
        "speedup_vs_naive": round(best["naive"]["seconds"] / best["reader"]["seconds"], 2),
    }
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / "transcript_parse.json").write_text(json.dumps(result, indent=2) + "\n")
    rows = "\n".join(
        f"| {method} | {m['best_seconds']} | {m['mb_per_s']} | {m['entries_per_s']:,} | {m['peak_rss_mb']} |"
        for method, m in result["methods"].items()
    )
    (REPORTS / "transcript_parse.md").write_text(
        "# Transcript parse throughput (pi JSONL reader)\n\n"
        f"Input: generated linear v3 session, {size / 1e6:.1f} MB, {result['entries']:,} entries; "
        f"best of {args.repeat} interleaved runs, each method in its own process.\n\n"
        "| method | seconds | MB/s | entries/s | peak RSS (MB) |\n|---|---|---|---|---|\n"
        f"{rows}\n\n"
        f"Reader vs naive `json.loads` loop: **{result['speedup_vs_naive']}×** (parse only; the reader also "
        "selects the leaf path and builds entries and events). Peak RSS includes the parsed "
        "conversation, which a reader must hold to select the leaf path.\n"
    )
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
