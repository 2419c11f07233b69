"""Metric validity: run control strategies through the normal scoring and check what they earn.

Controls (:mod:`lcm_lab.summarizers.controls`): ``fixed-text``, ``entity-list`` (a bare list of the
source's names, numbers and dates), ``bare-list`` (a bare list of the source's hard facts),
``other-conversation`` (another conversation's text as the summaries), ``truncation`` (the
``truncate`` strategy: no summaries, newest messages to the budget), ``offline`` (the lab's
deterministic summarizer) and ``full-history`` (the ``full`` strategy: everything, no budget). Each
is scored by the one scorer (:func:`lcm_lab.metrics.verdicts.verdict_scores`: probes over the
conversation's life) on every conversation; per control the headline is averaged over
conversations with a bootstrap interval **by conversation** (the resampling unit; items are
resampled inside each conversation's own headline interval). :func:`check_properties` turns the
table into pass/fail lines.

A diagnostic row per summarizing control gives the share of probes whose context came from a
``degraded:*`` engine path (raw messages only): there every summarizer scores the same, so a
comparison of summarizers rests on the other probes. The end-of-run reading of ``qa_retention``
(one instant, ``run.sent()`` after the last turn) is kept as a row of its own for comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.errors import InputError, OptionError
from lcm_lab.io.model import LoadedConversation
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.locomo import raw_texts
from lcm_lab.metrics.stats import bootstrap_interval
from lcm_lab.metrics.verdicts import END_OF_RUN, verdict_scores
from lcm_lab.summarizers.controls import (
    BareListSummarizer,
    EntityListSummarizer,
    FixedTextSummarizer,
    OtherConversationSummarizer,
)
from lcm_lab.summarizers.offline import OfflineSummarizer

CONTROLS: tuple[str, ...] = ("fixed-text", "entity-list", "bare-list", "other-conversation", "truncation", "offline", "full-history")
NO_ANSWER_CONTROLS: tuple[str, ...] = ("fixed-text", "entity-list", "bare-list", "other-conversation")
DEGRADED_METRIC = "probes on degraded paths (share, diagnostic)"
MAX_NO_ANSWER = 0.05  # mean qa_retention a control without usable answers may reach
MIN_OFFLINE_MARGIN = 0.05  # offline must beat the other-conversation control by this much
DEFAULT_CONFIG = LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400)
HEADLINE_ROWS: tuple[str, ...] = ("qa_retention", "fact_retention", "decision_retention")


def control_run(name: str, conversation: LoadedConversation, other: LoadedConversation, budget: int, config: LcmConfig = DEFAULT_CONFIG) -> Any:
    """A run of ``conversation`` under control ``name`` (``other`` feeds the other-conversation control)."""
    conv = conversation.conversation
    if name in ("truncation", "full-history"):
        from lcm_lab.strategies import run_strategy

        return run_strategy(conv, "truncate" if name == "truncation" else "full", token_budget=budget)
    summarizers = {
        "fixed-text": FixedTextSummarizer,
        "entity-list": EntityListSummarizer,
        "bare-list": BareListSummarizer,
        "offline": OfflineSummarizer,
        "other-conversation": lambda: OtherConversationSummarizer("\n".join(raw_texts(other.conversation))),
    }
    if name not in summarizers:
        raise ValueError(f"unknown control {name!r}; choose one of {', '.join(CONTROLS)}")
    return replay(conv, config, summarizers[name](), token_budget=budget, run_id=name)


def fact_scores(run: Any, run_id: str) -> list[Score]:
    """Summary-scope fact retention of a run that has summaries (none for the memoryless controls)."""
    if hasattr(run, "strategy"):
        return []
    from lcm_lab.metrics.dag import Dag
    from lcm_lab.metrics.retention import FactBase, summary_fact_scores

    dag = Dag.from_replay(run)
    return summary_fact_scores(dag, run_id, FactBase.build(dag))


@dataclass
class ValidityRow:
    """One control × metric: per-conversation values and their mean with a by-conversation interval."""

    control: str
    metric: str
    values: dict[str, float] = field(default_factory=dict)
    withheld: int = 0
    chance: list[float] = field(default_factory=list)
    warnings: int = 0
    ci_low: list[float | None] = field(default_factory=list)  # each conversation's own lower bound

    @property
    def mean(self) -> float:
        return sum(self.values.values()) / len(self.values) if self.values else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return bootstrap_interval(list(self.values.values()))


def _metric_values(scores: Sequence[Score]) -> dict[str, tuple[float | None, dict[str, Any]]]:
    out: dict[str, tuple[float | None, dict[str, Any]]] = {}
    summary = [s.value for s in scores if s.metric == "fact_retention" and s.scope == "summary" and s.value is not None]
    if summary:
        out["summary fact_retention"] = (sum(summary) / len(summary), {})
    for s in scores:
        if s.scope != "run":
            continue
        if s.metric in HEADLINE_ROWS:
            out[s.metric] = (s.value, dict(s.details))
        if s.metric == "qa_retention":
            # the raw recall stays informative where the headline is withheld (floor = ceiling)
            out["qa_recall (raw, diagnostic)"] = (s.details.get("raw"), {})
            probes = s.details.get("probes") or 0
            out[DEGRADED_METRIC] = (s.details.get("probes_degraded", 0) / probes if probes else None, {})
        elif s.metric == END_OF_RUN["qa_retention"]:
            out[s.metric] = (s.value, dict(s.details))
    return out


def validate(
    locomo: Sequence[LoadedConversation],
    *,
    budget: int = 6000,
    coding: Sequence[LoadedConversation] = (),
    controls: Sequence[str] = CONTROLS,
    config: LcmConfig = DEFAULT_CONFIG,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    sink: Callable[[list[Score]], None] | None = None,
) -> list[ValidityRow]:
    """Score every control on every conversation; LoCoMo conversations also get ``qa_retention``
    (the chance partner of conversation *i* is conversation *i + 1*, cyclically). ``sink``
    receives every control run's scores (e.g. to write them to the lab store)."""
    if len(locomo) < 2:
        raise OptionError("validate needs at least two LoCoMo conversations (the chance control uses another one)")
    empty = [_label(conv) for conv in (*locomo, *coding) if not any(text.strip() for text in raw_texts(conv.conversation))]
    if empty:  # nothing to summarise, and no text for another conversation's chance control
        raise InputError(f"{len(empty)} conversation(s) hold no message text ({', '.join(map(str, empty[:5]))}): "
                         "validate needs every conversation to have messages; leave these out")
    rows: dict[tuple[str, str], ValidityRow] = {}
    jobs = [(c, i, conv, True) for c in controls for i, conv in enumerate(locomo)]
    jobs += [(c, i, conv, False) for c in controls if c != "other-conversation" for i, conv in enumerate(coding)]
    for control, i, conv, is_qa in progress(jobs) if progress else jobs:
        other = locomo[(i + 1) % len(locomo)] if is_qa else locomo[0]
        run = control_run(control, conv, other, budget, config)
        rid = f"{control}:{conv.conversation.session_id}"
        scores = fact_scores(run, rid)
        scores += verdict_scores(run, rid, qa_items=conv.qa_items if is_qa else None, chance_conversation=other.conversation,
                                 donor_text="\n".join(raw_texts(other.conversation)), donor_label=other.conversation.title)
        if sink is not None:
            sink(scores)
        label = _label(conv)
        values = _metric_values(scores)
        if hasattr(run, "strategy"):
            values.pop(DEGRADED_METRIC, None)  # memoryless: never degraded
        for metric, (value, details) in values.items():
            row = rows.setdefault((control, metric), ValidityRow(control, metric))
            if value is None:
                row.withheld += 1
            else:
                row.values[str(label)] = float(value)
            if metric == "qa_retention":
                row.ci_low.append(details.get("ci_low"))
                if details.get("chance_normalised") is not None:
                    row.chance.append(float(details["chance_normalised"]))
                row.warnings += sum(details.get("warnings", {}).values())
    return list(rows.values())


@dataclass(frozen=True)
class Check:
    """One validity property and whether the table satisfies it."""

    name: str
    passed: bool | None  # None: not applicable (e.g. every conversation withheld)
    evidence: str


def check_properties(rows: Sequence[ValidityRow]) -> list[Check]:
    """The properties of issue #9 over a validity table."""
    qa = {r.control: r for r in rows if r.metric == "qa_retention"}
    checks: list[Check] = []

    def add(name: str, value: float, ok: bool, fmt: str = "{:.3f}") -> None:
        na = math.isnan(value)
        checks.append(Check(name, None if na else ok, "n/a: every conversation withheld (ceiling - floor < MIN_GAP)" if na else fmt.format(value)))

    for control in NO_ANSWER_CONTROLS:
        if control in qa:
            add(f"{control}: mean qa_retention <= {MAX_NO_ANSWER}", qa[control].mean, qa[control].mean <= MAX_NO_ANSWER)
    if "offline" in qa and "other-conversation" in qa:
        gap = qa["offline"].mean - qa["other-conversation"].mean
        add(f"offline beats other-conversation by >= {MIN_OFFLINE_MARGIN}", gap, gap >= MIN_OFFLINE_MARGIN, "{:+.3f}")
    if "full-history" in qa:
        full = qa["full-history"]
        beyond = [low for low in full.ci_low if low is not None and low > 1.0]  # the whole interval above the ceiling
        above = sum(1 for v in full.values.values() if v > 1.0)
        checks.append(Check("full-history does not exceed the ceiling beyond its interval", not beyond if full.values else None,
                            f"mean {full.mean:.3f}; {above} of {len(full.values)} conversations above 1, {len(beyond)} with the whole interval above"))
    if "truncation" in qa:
        m = qa["truncation"].mean
        add("truncation sits at the floor (qa_retention = 0 exactly)", m, all(v == 0.0 for v in qa["truncation"].values.values()))
    chance = [c for r in qa.values() for c in r.chance]
    add("chance control below the floor (normalised chance <= 0)", max(chance) if chance else math.nan, bool(chance) and max(chance) <= 0, "max {:.3f}")
    return checks


def validity_markdown(rows: Sequence[ValidityRow], checks: Sequence[Check], *, budget: int, note: str = "") -> str:
    """The validity report: one table row per control × metric, then the property checks."""
    lines = [
        "# Metric validity",
        "",
        f"Controls scored through the normal pipeline at a {budget}-token budget. Mean over conversations, "
        "95% bootstrap interval by conversation; `withheld` = conversations whose ceiling − floor was below "
        "MIN_GAP. `qa_retention` is the offline BM25 answer-recall@k proxy, not a judged score. "
        f"`{DEGRADED_METRIC}`: share of probes whose context came from a degraded engine path (raw messages only), "
        "where every summarizer scores alike. Headlines are probed over the conversation's life "
        "(`lcm_lab.metrics.verdicts`); `qa_retention_end_of_run` is the old one-instant reading, for comparison.",
        "",
    ]
    if note:
        lines += [note, ""]
    lines += ["| control | metric | conversations | withheld | mean | 95% CI | mean chance (normalised) |", "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r.metric, CONTROLS.index(r.control) if r.control in CONTROLS else 99)):
        lo, hi = r.interval
        ci = "—" if math.isnan(lo) else f"[{lo:.3f}, {hi:.3f}]"
        chance = f"{sum(r.chance) / len(r.chance):.3f}" if r.chance else "—"
        mean = "—" if math.isnan(r.mean) else f"{r.mean:.3f}"
        lines.append(f"| {r.control} | {r.metric} | {len(r.values)} | {r.withheld} | {mean} | {ci} | {chance} |")
    lines += ["", "## Properties", ""]
    verdict = {True: "PASS", False: "FAIL", None: "N/A"}
    lines += [f"- {verdict[c.passed]} — {c.name}: {c.evidence}" for c in checks]
    return "\n".join(lines) + "\n"


def _label(conv: LoadedConversation) -> Any:
    return conv.meta.get("sample_id") or conv.conversation.title or conv.conversation.session_id
