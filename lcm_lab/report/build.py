"""Self-contained HTML reports of one replay or a comparison of several.

The page carries plotly.js inline (gzip-compressed; no CDN, works offline), every figure of the run (budget
timeline, DAG, context after the last turn) and tables; all transcript and summary text goes
through Jinja2's autoescaping, hover texts are escaped by the plot info steps.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
import numbers
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.types import SentContext
from lcm_lab.io.redaction import redact
from lcm_lab.io.tables import number_text
from lcm_lab.report._template import PAGE
from lcm_lab.report.verdict_text import MIN_ITEMS, VERDICT_METRICS, Verdict, interval_text, meaning_lines
from lcm_lab.summarizers.call_checks import calls_since, calls_so_far, check_calls, warn_failed_calls
from lcm_lab.viz.budget import plot_budget_comparison, plot_budget_timeline
from lcm_lab.viz.context import _context_figure, _text_of, context_info
from lcm_lab.viz.counts import ReplayStats, replay_stats
from lcm_lab.viz.dag import WEBGL_ABOVE, _coverage, plot_dag
from lcm_lab.viz.quality import plot_run_comparison

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from lcm_lab.engine.protocol import Summarizer
    from lcm_lab.engine.replay.driver import Replay
    from lcm_lab.store.core import LabStore

TEXT_LIMIT = 2_000  # characters of one message or summary shown in a table cell


def _figure_html(fig: go.Figure) -> Markup:
    from lcm_lab.report.figures import figure_html

    return figure_html(fig)


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f" … ({len(text) - limit:,} more characters)"


def _labels(replays: Sequence[Replay], labels: Sequence[str] | None) -> list[str]:
    if labels is not None:
        if len(labels) != len(replays):
            raise ValueError(f"{len(labels)} labels for {len(replays)} replays")
        return [str(x) for x in labels]
    names = [r.run_id or f"{r.conversation.session_id} · {r.summarizer} · {r.token_budget:,}" for r in replays]
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def _stats_rows(stats: ReplayStats) -> list[tuple[str, str]]:
    return [
        ("turns", f"{stats.turns:,}"),
        ("messages", f"{stats.messages:,}"),
        ("message tokens", f"{stats.message_tokens:,}"),
        ("summaries", f"{stats.summaries:,} ({stats.leaves:,} leaf, {stats.condensed:,} condensed)"),
        ("by depth", ", ".join(f"d{d}: {n:,}" for d, n in stats.summaries_by_depth.items()) or "–"),
        ("escalation levels", ", ".join(f"{k}: {v:,}" for k, v in stats.levels.items()) or "–"),
        ("compacting turns", f"{stats.compacting_turns:,}"),
        ("sweeps", f"{stats.sweeps:,}"),
        ("summarizer calls", f"{stats.summarizer_calls:,}"),
        ("peak stored tokens", f"{stats.peak_stored_tokens:,}"),
        ("final context tokens", f"{stats.final_tokens:,} / {stats.token_budget:,}"),
        ("compression (message tokens / final)", f"{stats.compression:.1f}×" if stats.compression else "–"),
        ("turns with a clamped model context", f"{stats.clamped_turns:,}"),
        ("turns with a degraded model context (no summaries)", f"{stats.degraded_turns:,}"),
    ]


def _config_changes(config: LcmConfig) -> list[tuple[str, str, str]]:
    defaults = LcmConfig()
    changes = []
    for f in dataclasses.fields(LcmConfig):
        value, default = getattr(config, f.name), getattr(defaults, f.name)
        if value != default:
            changes.append((f.name, str(value), str(default)))
    return changes


def _sent_note(sent: SentContext) -> str:
    """What the engine sent after the run, in one line (path, clamp, serialized estimate vs the bare assembler)."""
    note = f"{sent.path}{', clamped' if sent.clamped else ''}: {sent.estimated_tokens:,} tokens of {sent.token_budget:,}"
    note += f" (serialized estimate); {len(sent.items)} messages"
    if sent.bare is not None:
        note += f"; the bare assembler alone: {len(sent.bare.items)} messages, {sent.bare.estimated_tokens:,} stored-estimate tokens"
    return note


def _run_section(replay: Replay, label: str, anchor: str, max_summaries: int) -> dict[str, Any]:
    stats = replay_stats(replay)
    # What the model receives after the run (the engine-level assembly), not the bare assembler.
    context = context_info(replay, None, source="sent") if replay.turns else None
    sent = replay.sent() if replay.turns else None
    by_id = {s.summary_id: s for s in replay.summaries}
    coverage = _coverage(replay.summaries, by_id)
    listed = sorted(replay.summaries, key=lambda s: (-s.depth, s.created_turn or 0))[:max_summaries]
    return {
        "label": label,
        "anchor": anchor,
        "session": replay.conversation.title or replay.conversation.session_id,
        "summarizer": replay.summarizer,
        "token_budget": int(replay.token_budget),
        "fidelity": replay.fidelity,
        "engine": replay.engine,
        "stats": _stats_rows(stats),
        "config_changes": _config_changes(replay.config),
        "budget_figure": _figure_html(plot_budget_timeline(replay, title=f"{label}: context tokens per turn"))
        if replay.turns else Markup("<p class='note'>No turns.</p>"),
        "dag_figure": _figure_html(plot_dag(replay, color_by="depth", max_nodes=WEBGL_ABOVE, title=f"{label}: summary DAG"))
        if replay.summaries else None,
        "context_figure": _figure_html(_context_figure(context)) if context else Markup(""),
        "context_note": _sent_note(sent) if sent else "no context",
        "context_rows": [
            {"position": i, "kind": item.kind, "ref": "" if item.ref is None else item.ref, "role": item.role,
             "tokens": row.tokens, "text": _clip(_text_of(item.message))}
            for i, (item, row) in enumerate(zip(sent.items if sent else (), context.rows if context else (), strict=False))
        ],
        "summary_rows": [
            {"summary_id": s.summary_id, "kind": s.kind, "depth": s.depth, "level": s.level or "",
             "tokens": s.token_count, "turn": "" if s.created_turn is None else s.created_turn,
             "span": f"{coverage[s.summary_id][0]}–{coverage[s.summary_id][1]}" if s.summary_id in coverage else "",
             "text": _clip(s.content)}
            for s in listed
        ],
        "summary_note": (
            f"{len(listed):,} of {len(replay.summaries):,} summaries, deepest first"
            if len(listed) < len(replay.summaries) else f"all {len(replay.summaries):,} summaries, deepest first"
        ),
        "_stats": stats,
    }


def _comparison(replays: Sequence[Replay], labels: list[str], sections: list[dict[str, Any]]) -> dict[str, Any]:
    import pandas as pd

    names = [name for name, _ in sections[0]["stats"]]
    rows = [(name, [dict(sec["stats"])[name] for sec in sections]) for name in names]
    records = []
    for label, sec in zip(labels, sections, strict=True):
        st: ReplayStats = sec["_stats"]
        for metric, value in (("final context tokens", st.final_tokens), ("peak stored tokens", st.peak_stored_tokens),
                              ("summaries", st.summaries), ("summarizer calls", st.summarizer_calls)):
            records.append({"run_id": label, "metric": metric, "value": float(value)})
    return {
        "rows": rows,
        "budget_figure": _figure_html(plot_budget_comparison(replays, labels)),
        "bars_figure": _figure_html(plot_run_comparison(pd.DataFrame(records))),
    }


def _scores_section(scores: pd.DataFrame, labels: dict[str, str]) -> dict[str, Any]:
    """The headline table (first screen), a chart of the headlines with their intervals, and every
    run-level metric as one row per metric and one column per run (rows with no value left out);
    per-item scores stay in the lab store (``scores_df``)."""
    frame = scores.copy()
    if "run_id" in frame.columns:
        frame["run_id"] = frame["run_id"].map(lambda r: labels.get(r, r))
    headlines = _headline_rows(frame)
    figure = _headline_figure(frame)
    run_level = frame[frame["scope"] == "run"] if "scope" in frame.columns else frame
    runs = list(dict.fromkeys(run_level["run_id"])) if "run_id" in run_level.columns else []
    table: dict[str, dict[str, str]] = {}
    if {"metric", "value"} <= set(run_level.columns):
        for rec in run_level.to_dict("records"):
            value = rec.get("value")
            if value is None or (isinstance(value, float) and value != value):
                continue
            table.setdefault(str(rec["metric"]), {})[str(rec.get("run_id", ""))] = _format_cell(value)
    return {
        "headline_columns": list(HEADLINE_COLUMNS),
        "headlines": headlines,
        "figure": figure,
        "runs": runs,
        "metric_rows": [(metric, [values.get(r, "") for r in runs]) for metric, values in table.items()],
        "item_scores": int((frame["scope"] != "run").sum()) if "scope" in frame.columns else 0,
    }


def _headline_figure(frame: pd.DataFrame) -> Markup | None:
    """Each headline with a value, one bar per run with its interval (clipped to the scale)."""
    import json

    import pandas as pd

    from lcm_lab.report.verdict_text import clipped_interval, scale

    if not {"scope", "details", "metric", "value"} <= set(frame.columns):
        return None
    records = []
    for rec in frame[frame["scope"] == "run"].to_dict("records"):
        details = rec["details"]
        details = json.loads(details) if isinstance(details, str) else (details or {})
        value = rec.get("value")
        if not isinstance(details, dict) or "unit" not in details or "chance" not in details or value is None or value != value:
            continue
        ci = clipped_interval(details.get("ci_low"), details.get("ci_high"), scale(details)) or (float("nan"), float("nan"))
        records.append({"run_id": str(rec.get("run_id", "")), "metric": str(rec["metric"]), "value": float(value),
                        "low": ci[0], "high": ci[1]})
    if not records:
        return None
    return _figure_html(plot_run_comparison(pd.DataFrame(records), low="low", high="high",
                                            title="Headlines per run (0 = plain truncation, 1 = the ceiling; 95% intervals)"))


_RECOVERABILITY_COLUMNS = (
    "label", "lost", "attempted", "recovered_share", "ci_low", "ci_high", "chance", "oracle_expand",
    "tokens_per_item", "calls_per_item", "model_calls", "footer_precision", "footer_recall",
)  # fmt: skip


def _recoverability_section(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Table and figure of ``RecoverabilityReport.summary()`` rows (a ``label`` key per run)."""
    from lcm_lab.viz.recall import plot_recoverability

    answerers = sorted({str(r.get("answerer")) for r in rows})
    return {
        "columns": list(_RECOVERABILITY_COLUMNS),
        "rows": [[_format_cell(r.get(c, r.get("run_id") if c == "label" else None)) for c in _RECOVERABILITY_COLUMNS] for r in rows],
        "figure": _figure_html(plot_recoverability(rows)),
        "answerers": ", ".join(answerers),
        "offline": "offline-quote" in answerers,
    }
HEADLINE_COLUMNS = ("run", "metric", "value", "95% CI", "raw", "ceiling", "floor", "chance", "n", "unit", "note")


def _headline_rows(frame: pd.DataFrame) -> list[list[str]]:
    """Run-scope scores built by ``metrics.headline`` (their details carry ceiling/floor/chance); the
    probed verdicts (:mod:`lcm_lab.metrics.verdicts`) say how many probes they pooled."""
    import json

    rows: list[list[str]] = []
    if not {"scope", "details", "metric"} <= set(frame.columns):
        return rows
    order = {m: i for i, m in enumerate(VERDICT_METRICS)}
    # the headlines only (diagnostics such as *_end_of_run are in the folded table of every score)
    records = [r for r in frame[frame["scope"] == "run"].to_dict("records") if str(r["metric"]) in order]
    for rec in sorted(records, key=lambda r: order[str(r["metric"])]):
        details = rec["details"]
        details = json.loads(details) if isinstance(details, str) else (details or {})
        if not isinstance(details, dict) or "unit" not in details or "chance" not in details:
            continue
        few = int(details.get("n") or 0) < MIN_ITEMS
        ci = "" if few else interval_text(rec.get("value"), details)
        note = details.get("withheld") or ("offline proxy" if details.get("proxy") else "")
        if few and not details.get("withheld"):
            note = "; ".join(n for n in (f"n too small for an interval (fewer than {MIN_ITEMS})", note) if n)
        if details.get("chance_donor") and not details.get("withheld"):
            note = "; ".join(n for n in (note, f"chance donor: {details['chance_donor']}") if n)
        elif details.get("chance_withheld") and not details.get("withheld"):
            note = "; ".join(n for n in (note, "chance withheld: no donor") if n)
        if details.get("probes"):  # a verdict probed over the conversation's life (metrics.verdicts)
            note = "; ".join(n for n in (note, f"{details['probes']} probes at {len(details.get('probe_turns') or [])} points, "
                                         f"{details.get('probes_degraded', 0)} on degraded paths") if n)
        rows.append([str(rec.get("run_id", "")), str(rec["metric"]), _format_cell(rec.get("value")), ci,
                     *(_format_cell(details.get(k)) for k in ("raw", "ceiling", "floor", "chance", "n", "unit")), str(note)])
    return rows


def _format_cell(value: Any) -> str:
    """A table cell: numbers by :func:`~lcm_lab.io.tables.number_text` (a count held as a float
    reads as an integer), NaN and None empty."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, numbers.Real):
        return number_text(value) if math.isfinite(value) else "" if value != value else str(value)
    return str(value)


def report(
    replays: Replay | Sequence[Replay],
    title: str | None = None,
    labels: Sequence[str] | None = None,
    scores: pd.DataFrame | None = None,
    max_summaries: int = 300,
    qa_items: Any = None,
    costs: Mapping[str, Any] | None = None,
    recoverability: Sequence[dict[str, Any]] | None = None,
    sweep: dict[str, Any] | None = None,
    run_labels: Mapping[str, str] | None = None,
    verdicts: Sequence[tuple[str, Sequence[Verdict]]] | None = None,
    upgrade: Any = None,
    summarizer: Summarizer | None = None,
) -> str:
    """The HTML page (a string) for one replay or a comparison of several.

    ``sweep`` adds a sweep section (see :func:`lcm_lab.report.sweep_section.sweep_section`);
    ``upgrade`` (a :func:`lcm_lab.compare_versions` result) adds what an upgrade of lossless-claw changes.

    ``scores`` is an optional table such as ``scores_df()`` (columns ``run_id``, ``scope``,
    ``metric``, ``value``, ...); run-level metrics are also charted. ``max_summaries`` caps the
    summary table (the DAG always shows every summary, binned above a few thousand). Runs of
    other context strategies (``lcm_lab.strategies``) add a strategies section scored on the same
    footing (``qa_items``: LoCoMo QA for it); only LCM runs get a per-run DAG section. ``costs``
    (``label -> SessionCost``, e.g. from :func:`lcm_lab.price_replay`) adds "What it costs";
    ``recoverability`` adds that section from ``RecoverabilityReport.summary()`` rows.
    ``run_labels`` (run id -> label) names stored runs in the score tables; ``verdicts`` (from
    :func:`lcm_lab.report.verdict_text.compare_settings`) lead the page, in words.

    The strategies section asks every run questions; a question turn may have to compact (an
    emergency drain). A replay rebuilt from the store carries its summarizer for that when the
    lab can build it exactly again (offline, the stubs); ``summarizer`` writes those drains for
    the others (a model's runs), whose question turns otherwise raise ``SummarizerNeededError``.
    Its model calls follow the rule for failed calls (:mod:`lcm_lab.summarizers.call_checks`):
    every one failed raises ``ModelCallsFailedError``, some failed is one ``ModelCallsWarning``.
    """
    from lcm_lab.engine.replay.driver import Replay
    from lcm_lab.report.cost_section import cost_section
    from lcm_lab.report.figures import LOADER, plotly_js_gzip_base64
    from lcm_lab.report.glossary import GLOSSARY

    everything = [replays] if not isinstance(replays, Sequence) else list(replays)
    if not everything:
        raise ValueError("report needs at least one replay")
    if summarizer is not None:
        everything = [r.with_compaction_summarizer(summarizer) if isinstance(r, Replay) else r for r in everything]
    before = calls_so_far(summarizer)
    all_names = _labels(everything, labels)
    strategies = None
    if any(hasattr(r, "strategy") for r in everything):  # StrategyRuns (lcm_lab.strategies): a strategies section
        from lcm_lab.report.strategies import strategies_section

        strategies = strategies_section(everything, all_names, _figure_html, qa_items=qa_items)
    lcm = [(getattr(r, "replay", r), n) for r, n in zip(everything, all_names, strict=True) if getattr(r, "replay", r) is not None]
    runs, names = [r for r, _ in lcm], [n for _, n in lcm]
    sections = [_run_section(r, name, f"run-{i + 1}", max_summaries) for i, (r, name) in enumerate(zip(runs, names, strict=True))]
    by_run_id = {r.run_id: name for r, name in zip(runs, names, strict=True) if r.run_id} | dict(run_labels or {})
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, finalize=_shown)
    page = env.from_string(PAGE)
    html = page.render(
        title=title or (f"lcm_lab report: {all_names[0]}" if len(everything) == 1 else f"lcm_lab report: {len(everything)} runs compared"),
        version=_version(),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        plotly_js_gzip=_PLOTLY_MARK,
        loader=Markup(LOADER),
        runs=sections,
        comparison=_comparison(runs, names, sections) if len(runs) > 1 else None,
        strategies=strategies,
        scores=_scores_section(scores, by_run_id) if scores is not None and not scores.empty else None,
        cost=cost_section(costs or {}),
        recoverability=_recoverability_section(recoverability) if recoverability else None,
        sweep=sweep,
        verdicts=[(group, list(found)) for group, found in verdicts or ()],
        meanings=meaning_lines(verdicts or ()),
        glossary=GLOSSARY,
        upgrade=_upgrade(upgrade),
    )
    failed, warning = check_calls(calls_since(summarizer, before), "the report's question turns", "no report was made")
    warn_failed_calls(failed, warning)
    # Everything on the page but plotly's own code is text the lab derived from transcripts:
    # secrets are redacted there (lcm_lab.io.redaction); the library is inserted afterwards.
    return redact(html).replace(_PLOTLY_MARK, plotly_js_gzip_base64(), 1)


_PLOTLY_MARK = "lcm_lab-plotly-js-goes-here"


def _shown(value: Any) -> Any:
    """Every value the page template prints (Jinja2's ``finalize``, before autoescaping): text from
    transcripts (a session title, a summary) with control characters, C1 controls, bidi overrides
    and lone surrogates shown as their escapes (``\\x1b``), as the terminal shows them; the
    page's own markup (:class:`Markup`, built by the lab) passes as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        from lcm_lab.io.terminal import terminal_text

        return terminal_text(value)
    return value


def _upgrade(comparison: Any) -> dict[str, Any] | None:
    if comparison is None:
        return None
    from lcm_lab.report.upgrade_section import upgrade_section

    return upgrade_section(comparison)


def _version() -> str:
    try:
        return importlib.metadata.version("lcm_lab")
    except importlib.metadata.PackageNotFoundError:
        return "dev"


def write_report(
    replays_or_run_ids: Replay | str | Sequence[Replay | str],
    path: str | Path,
    store: LabStore | None = None,
    **options: Any,
) -> Path:
    """Write the report of replays (or run ids saved in the lab store) to ``path``; returns the path.

    Run ids are loaded from ``store`` (default: the lab store at its default location).
    ``options`` go to :func:`report` (``title``, ``labels``, ``scores``, ``max_summaries``, ``costs``,
    ``recoverability``, ``sweep``, ``upgrade``, ``summarizer``: the summarizer of the question
    turns' drains for stored runs a model wrote). Nothing is written when :func:`report` raises.
    """
    items = [replays_or_run_ids] if isinstance(replays_or_run_ids, str) or not isinstance(replays_or_run_ids, Sequence) \
        else list(replays_or_run_ids)
    replays = _resolve(items, store)
    from lcm_lab.io.atomic import write_text_atomic

    return write_text_atomic(path, report(replays, **options))  # a full disk leaves no half page


def _resolve(items: list[Any], store: LabStore | None) -> list[Replay]:
    if not any(isinstance(x, str) for x in items):
        return items
    from lcm_lab.store.core import open_store
    from lcm_lab.store.replays import load_replay

    own = store is None
    lab = open_store(None) if store is None else store
    try:
        return [load_replay(lab, x) if isinstance(x, str) else x for x in items]
    finally:
        if own:
            lab.close()
