"""Run every benchmark in turn (``make bench``); each writes reports/benchmarks/<name>.{json,md}.

    python -m benchmarks.run_all [--only replay viz ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

BENCHMARKS = ("bench_load", "transcript_parse", "bench_replay", "bench_summarizers", "bench_viz", "bench_grep",
              "bench_qa_scoring", "bench_engine", "bench_sweep", "bench_cli")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS))
    args = parser.parse_args()
    failed = []
    for name in args.only:
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        status = subprocess.call([sys.executable, "-m", f"benchmarks.{name}"])
        print(f"== {name}: exit {status} after {time.perf_counter() - start:.0f}s", flush=True)
        if status:
            failed.append(name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
