"""Replay throughput and scaling: generated conversations of 10k, 30k and 100k messages.

Each size runs in its own process (so peak RSS is per size) under a tight configuration with
the ``stub-v1`` summarizer. The scaling exponent is the slope of log(time) against log(length):
1.0 is linear; the target is ≤ 1.1 (no quadratic rescans of the context per turn).

    python -m benchmarks.bench_replay [--sizes 10000 30000 100000]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.types import Conversation, InputEntry

REPORT_DIR = Path(__file__).resolve().parent.parent / "reports" / "benchmarks"
TIGHT = dict(  # C6-like: small chunks and targets so compaction runs often and condenses deep
    fresh_tail_count=8,
    leaf_chunk_tokens=2000,
    leaf_target_tokens=400,
    condensed_target_tokens=300,
    leaf_min_fanout=4,
    condensed_min_fanout=3,
    condensed_min_fanout_hard=2,
    sweep_max_depth=-1,
    summary_prefix_target_tokens=1500,
    timezone="UTC",
)
BUDGET = 8000
VOCAB = ("deploy", "retry", "cache", "token", "error", "src/app/main.py", "latency", "queue", "v2.4.1",
         "database", "migration", "worker", "200ms", "review", "branch", "commit", "schema", "index")  # fmt: skip


def generate(n_messages: int, seed: int = 7) -> Conversation:
    """A deterministic tool-heavy session of ``n_messages`` pi-format messages."""
    rng = random.Random(seed)
    entries = []
    t0 = 1_767_261_600_000
    role_cycle = ("user", "assistant", "toolResult", "assistant")
    for i in range(n_messages):
        role = role_cycle[i % 4]
        words = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(20, 160)))
        ts = t0 + i * 30_000
        if role == "user":
            message = {"role": "user", "content": [{"type": "text", "text": f"[{i}] {words}"}], "timestamp": ts}
        elif role == "toolResult":
            message = {"role": "toolResult", "toolCallId": f"toolu_{i:020d}", "toolName": "exec",
                       "content": [{"type": "text", "text": words}], "isError": False, "timestamp": ts}  # fmt: skip
        elif i % 4 == 1:
            message = {"role": "assistant", "content": [{"type": "text", "text": words},
                       {"type": "toolCall", "id": f"toolu_{i + 1:020d}", "name": "exec", "arguments": {"command": "ls"}}],
                       "stopReason": "toolUse", "timestamp": ts}  # fmt: skip
        else:
            message = {"role": "assistant", "content": [{"type": "text", "text": words}], "stopReason": "stop", "timestamp": ts}
        entries.append(InputEntry(line=i + 2, type="message", message=message))
    return Conversation(f"bench-{n_messages}", entries=tuple(entries))


def measure(n_messages: int) -> dict[str, float]:
    """Generate, replay and measure in this process."""
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.summarizers.stub import StubV1Summarizer

    conversation = generate(n_messages)
    start = time.perf_counter()
    result = replay(conversation, LcmConfig(**TIGHT), StubV1Summarizer(), token_budget=BUDGET)
    seconds = time.perf_counter() - start
    return {
        "messages": n_messages,
        "turns": len(result.turns),
        "summaries": len(result.summaries),
        "max_depth": max(s.depth for s in result.summaries),
        "summarizer_calls": sum(len(t.calls) for t in result.turns),
        "seconds": seconds,
        "messages_per_second": n_messages / seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def scaling_exponent(rows: list[dict[str, float]]) -> float:
    xs = [math.log(r["messages"]) for r in rows]
    ys = [math.log(r["seconds"]) for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    rows = []
    for size in args.sizes:
        out = subprocess.run([sys.executable, "-m", "benchmarks.bench_replay", "--child", str(size)],
                             capture_output=True, text=True, check=True)  # fmt: skip
        rows.append(json.loads(out.stdout))
        r = rows[-1]
        print(f"{size:>7} messages: {r['seconds']:.1f}s, {r['messages_per_second']:,.0f} msg/s, "
              f"{r['summaries']} summaries (depth {r['max_depth']}), peak RSS {r['peak_rss_mb']:.0f} MB")  # fmt: skip
    exponent = scaling_exponent(rows)
    print(f"scaling exponent of time vs length: {exponent:.3f} (target <= 1.1)")
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    report = {"benchmark": "replay", "config": TIGHT, "token_budget": BUDGET, "summarizer": "stub-v1",
              "rows": rows, "scaling_exponent": exponent, "target_exponent": 1.1, "meets_target": exponent <= 1.1}  # fmt: skip
    (REPORT_DIR / "replay.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# Replay benchmark",
        "",
        f"Tight configuration (C6-like), budget {BUDGET}, `stub-v1` summarizer; one process per size.",
        "",
        "| messages | turns | summaries | max depth | calls | seconds | messages/s | peak RSS (MB) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['messages']:,} | {r['turns']:,} | {r['summaries']:,} | {r['max_depth']} | {r['summarizer_calls']:,} "
                     f"| {r['seconds']:.1f} | {r['messages_per_second']:,.0f} | {r['peak_rss_mb']:.0f} |")  # fmt: skip
    lines += ["", f"Scaling exponent (slope of log time vs log length): **{exponent:.3f}** (target ≤ 1.1)."]
    (REPORT_DIR / "replay.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
