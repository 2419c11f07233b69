"""How long ``lcm-lab --help`` takes, against the interpreter's own floor, measured side by side.

Three commands, interleaved, each run ``--repeats`` times in fresh processes: ``python -c pass``
(the floor: starting Python), ``python -m lcm_lab --help`` (every subcommand's parser is built) and
``python -c "import lcm_lab.engine.replay.driver"`` (what the CLI used to pay on every start, now
lazy). The target is ``--help`` under 0.4 s on a quiet machine; on this shared machine the ratio to
the floor is the result, the seconds are indicative. Writes ``reports/benchmarks/cli.{json,md}``.

    python -m benchmarks.bench_cli [--repeats 15] [--before path/to/an/older/checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPORTS = Path("reports") / "benchmarks"
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "lcm-lab --help": [sys.executable, "-m", "lcm_lab", "--help"],
    "import the replay engine": [sys.executable, "-c", "import lcm_lab.engine.replay.driver"],
}
TARGET_SECONDS = 0.4


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--before", metavar="CHECKOUT", default=None,
                        help="also time --help of another checkout of lcm_lab (e.g. one before a change), side by side")
    args = parser.parse_args(argv)
    commands: dict[str, tuple[list[str], dict[str, str] | None, str | None]] = {
        name: (command, None, None) for name, command in COMMANDS.items()}
    if args.before:
        env = {**os.environ, "PYTHONPATH": str(Path(args.before).resolve())}
        # run there: python -m puts the working directory first on sys.path
        commands[f"lcm-lab --help ({Path(args.before).name})"] = (COMMANDS["lcm-lab --help"], env, args.before)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeats):
        for name, (command, env, cwd) in commands.items():
            started = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=env, cwd=cwd)
            times[name].append(time.perf_counter() - started)
    median = {name: statistics.median(values) for name, values in times.items()}
    floor = median["python -c pass"]
    ratios = {name: value / floor for name, value in median.items()}
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / "cli.json").write_text(json.dumps({"repeats": args.repeats, "median_seconds": median, "ratio_to_python": ratios,
                                                  "target_seconds": TARGET_SECONDS, "seconds": times}, indent=2))
    lines = ["# `lcm-lab --help` start-up time", "",
             f"Median of {args.repeats} fresh processes per command, interleaved in one run (shared 2-core machine: the ratio to "
             "starting Python is the result, the seconds are indicative).", "",
             "| command | median s | / python -c pass |", "|---|---|---|"]
    lines += [f"| {name} | {median[name]:.3f} | {ratios[name]:.1f}x |" for name in commands]
    verdict = "meets" if median["lcm-lab --help"] < TARGET_SECONDS else "misses"
    lines += ["", f"`lcm-lab --help` {verdict} the {TARGET_SECONDS} s target in this run (load average {os.getloadavg()[0]:.1f} "
              "on 2 cores; the target is for a quiet machine)."]
    for name in commands:
        if name.startswith("lcm-lab --help ("):
            lines.append(f"Side by side, {name} takes {median[name] / median['lcm-lab --help']:.1f}x as long as this checkout's.")
    (REPORTS / "cli.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
