"""Visualisation speed: the DAG figure at 5,000 summaries and the HTML report of a 100k-message replay.

The input is a real replay: the generated 100k-message session of ``bench_replay`` replayed under
its tight configuration with ``stub-v1`` (cached in ``benchmarks/_data/`` after the first run).
The 5,000-summary DAG is the first 5,000 summaries it created (a closed sub-DAG).

Ratios are against baselines measured in the same run: the DAG against the naive figure (one
plotly trace per edge, SVG markers), the report against the replay it shows.

    python -m benchmarks.bench_viz [--messages 100000] [--summaries 5000] [--no-browser]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.summarizers.stub import StubV1Summarizer

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "_data"
REPORT_DIR = REPO / "reports" / "benchmarks"


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """Best wall time of ``repeat`` runs, and the last result."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def big_replay(n_messages: int) -> tuple[Replay, float | None]:
    """The benchmark replay (and its replay time when it had to be computed)."""
    from benchmarks.bench_replay import BUDGET, TIGHT, generate
    from lcm_lab.store.replays import replay_from_bytes, replay_to_bytes

    cache = DATA / f"viz-replay-{n_messages}.bin"
    if cache.exists():
        return replay_from_bytes(cache.read_bytes()), None
    conversation = generate(n_messages)
    seconds, result = timed(lambda: replay(conversation, LcmConfig(**TIGHT), StubV1Summarizer(), token_budget=BUDGET,
                                           run_id=f"bench-{n_messages}"))
    DATA.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(replay_to_bytes(result))
    return result, seconds


def naive_dag_figure(summaries: tuple[Any, ...]) -> Any:
    """Baseline: what a straightforward implementation does (SVG, one trace per edge)."""
    import plotly.graph_objects as go

    from lcm_lab.viz.dag import dag_info

    info = dag_info(summaries)
    where = {n.node_id: n for n in info.nodes}
    fig = go.Figure()
    for s in summaries:
        for src in s.source_summary_ids:
            a, b = where[s.summary_id], where[src]
            fig.add_trace(go.Scatter(x=[a.x, b.x], y=[a.depth, b.depth], mode="lines", showlegend=False))
    fig.add_trace(go.Scatter(x=[n.x for n in info.nodes], y=[n.depth for n in info.nodes], mode="markers",
                             hovertext=[n.hover for n in info.nodes], marker={"size": [n.size for n in info.nodes]}))
    return fig


def browser_render_seconds(html_file: Path) -> tuple[float | None, str]:
    """Time from navigation to a drawn plot in headless Chromium (None when it cannot run)."""
    from lcm_lab.report.browser import chromium_path, headless_browser

    if chromium_path() is None:
        return None, "chromium not installed"
    errors: list[str] = []
    with headless_browser() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        started = time.perf_counter()
        page.goto(html_file.resolve().as_uri())
        page.wait_for_selector(".plotly-graph-div .main-svg", timeout=120_000)
        page.wait_for_function("document.querySelectorAll('.plotly-graph-div g.trace, .plotly-graph-div canvas').length > 0",
                               timeout=120_000)
        seconds = time.perf_counter() - started
        page.close()
    return seconds, "; ".join(errors[:3]) or "ok"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--summaries", type=int, default=5_000)
    parser.add_argument("--no-browser", action="store_true", help="skip the headless-Chromium render timings")
    args = parser.parse_args(argv)

    import plotly.io as pio

    from lcm_lab.report import write_report
    from lcm_lab.viz.budget import plot_budget_timeline
    from lcm_lab.viz.dag import WEBGL_ABOVE, dag_info, plot_dag

    started = time.perf_counter()
    run, replay_seconds = big_replay(args.messages)
    if replay_seconds is None:  # cached: time a fresh replay anyway, it is the report's baseline
        from benchmarks.bench_replay import BUDGET, TIGHT, generate

        conversation = generate(args.messages)
        replay_seconds, _ = timed(lambda: replay(conversation, LcmConfig(**TIGHT), StubV1Summarizer(), token_budget=BUDGET))
    print(f"replay of {args.messages:,} messages: {replay_seconds:.1f} s, {len(run.summaries):,} summaries")
    subset = run.summaries[: args.summaries]
    if len(subset) < args.summaries:
        raise SystemExit(f"the replay made only {len(subset)} summaries; pass a larger --messages")

    results: dict[str, Any] = {"messages": len(run.messages), "turns": len(run.turns), "summaries_total": len(run.summaries),
                               "dag_summaries": len(subset), "replay_seconds": replay_seconds}
    results["dag_info_seconds"], info = timed(lambda: dag_info(subset), repeat=3)
    results["dag_figure_seconds"], fig = timed(lambda: plot_dag(subset), repeat=3)
    results["dag_figure_json_seconds"], payload = timed(lambda: pio.to_json(fig), repeat=3)
    results["dag_figure_json_mb"] = len(payload) / 1e6
    results["dag_traces"] = len(fig.data)
    results["dag_webgl"] = all(t.type == "scattergl" for t in fig.data)
    results["dag_lod_seconds"], lod = timed(lambda: plot_dag(subset, max_nodes=WEBGL_ABOVE), repeat=3)
    results["dag_lod_nodes"] = sum(len(t.x) for t in lod.data if t.customdata is not None)
    results["dag_full_seconds"], _ = timed(lambda: plot_dag(run.summaries), repeat=1)
    results["naive_dag_figure_seconds"], naive = timed(lambda: naive_dag_figure(subset), repeat=1)
    results["naive_dag_json_seconds"], _ = timed(lambda: pio.to_json(naive), repeat=1)
    results["dag_speedup_vs_naive"] = (results["naive_dag_figure_seconds"] + results["naive_dag_json_seconds"]) / (
        results["dag_figure_seconds"] + results["dag_figure_json_seconds"])
    results["budget_timeline_seconds"], _ = timed(lambda: plot_budget_timeline(run), repeat=1)

    out_dir = DATA / "viz"
    out_dir.mkdir(parents=True, exist_ok=True)
    report_file = out_dir / f"report-{args.messages}.html"
    results["report_seconds"], _ = timed(lambda: write_report(run, report_file), repeat=1)
    results["report_mb"] = report_file.stat().st_size / 1e6
    results["report_vs_replay"] = results["report_seconds"] / replay_seconds

    if not args.no_browser:
        dag_file = out_dir / "dag-5000.html"
        lod_file = out_dir / "dag-5000-lod.html"
        fig.write_html(dag_file, include_plotlyjs=True)
        lod.write_html(lod_file, include_plotlyjs=True)
        results["browser_dag_webgl_seconds"], results["browser_dag_webgl_status"] = browser_render_seconds(dag_file)
        results["browser_dag_lod_seconds"], results["browser_dag_lod_status"] = browser_render_seconds(lod_file)
        results["browser_report_seconds"], results["browser_report_status"] = browser_render_seconds(report_file)
    results["wall_seconds"] = time.perf_counter() - started

    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    (REPORT_DIR / "viz.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (REPORT_DIR / "viz.md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))
    return 0


def markdown(r: dict[str, Any]) -> str:
    def s(key: str) -> str:
        value = r.get(key)
        return "–" if value is None else f"{value:.2f} s"

    lines = [
        "# Visualisation benchmark",
        "",
        f"Input: a real replay (`stub-v1`, tight config, budget 8000) of a generated {r['messages']:,}-message session:"
        f" {r['turns']:,} turns, {r['summaries_total']:,} summaries. DAG timings use its first {r['dag_summaries']:,} summaries.",
        "",
        "| step | time | notes |",
        "|---|---:|---|",
        f"| DAG layout (`dag_info`, {r['dag_summaries']:,} summaries) | {s('dag_info_seconds')} | pure info step |",
        f"| DAG figure (`plot_dag`) | {s('dag_figure_seconds')} | {r['dag_traces']} traces, WebGL: {r['dag_webgl']} |",
        f"| DAG figure → JSON | {s('dag_figure_json_seconds')} | {r['dag_figure_json_mb']:.1f} MB |",
        f"| DAG, level of detail (`max_nodes=1500`) | {s('dag_lod_seconds')} | {r['dag_lod_nodes']:,} nodes, SVG |",
        f"| DAG of all {r['summaries_total']:,} summaries | {s('dag_full_seconds')} | |",
        f"| baseline: naive DAG figure (one trace per edge) + JSON | {r['naive_dag_figure_seconds'] + r['naive_dag_json_seconds']:.2f} s | |",
        f"| **speed-up over the naive figure** | **{r['dag_speedup_vs_naive']:.0f}×** | same run |",
        f"| budget timeline ({r['turns']:,} turns) | {s('budget_timeline_seconds')} | |",
        f"| HTML report of the {r['messages']:,}-message replay | {s('report_seconds')} | {r['report_mb']:.1f} MB |",
        f"| baseline: the replay itself | {r['replay_seconds']:.2f} s | |",
        f"| **report / replay** | **{r['report_vs_replay']:.2f}** | same run |",
    ]
    if "browser_dag_webgl_seconds" in r:
        lines += [
            f"| headless Chromium: 5,000-node DAG (WebGL) drawn | {s('browser_dag_webgl_seconds')} | {r['browser_dag_webgl_status']} |",
            f"| headless Chromium: DAG with level of detail drawn | {s('browser_dag_lod_seconds')} | {r['browser_dag_lod_status']} |",
            f"| headless Chromium: report drawn | {s('browser_report_seconds')} | {r['browser_report_status']} |",
        ]
    lines += ["", "Run: `python -m benchmarks.bench_viz` (the replay is cached under `benchmarks/_data/`).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
