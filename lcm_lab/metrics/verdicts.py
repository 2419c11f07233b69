"""The verdicts: every headline the lab reports, optimises and compares, defined once.

Every caller — ``score_replay``, ``strategy_scores``, the sweep metric registry, ``recommend``,
``compare``, the strategy comparison, ``validate-metrics``, the report — reads the headlines from
:func:`verdict_scores`. LCM and every other strategy are scored by the same code through
``run.ask`` (the question turn, :mod:`lcm_lab.engine.replay.question`): a probe is a branch of the
finished run, never a re-replay.

**Probes over the conversation's life** (schedule: :mod:`lcm_lab.metrics.probe_schedule`). A
headline pools probes — one item asked at one probe point — instead of reading one instant:

| headline | items | probe points | method | floor | ceiling | chance | cluster |
|---|---|---|---|---|---|---|---|
| ``qa_retention`` | LoCoMo QA items (BM25 answer recall@10, offline proxy) | the start of every session after the item's last evidence | ``run.ask(question, after_turn=k)`` | ``truncate``'s ``ask`` at k | the item's gold evidence turns alone, each stated with its day and relative times resolved (:func:`qa_ceiling`) | another conversation truncated to the budget | QA item |
| ``fact_retention`` | hard facts of the history up to k, type-weighted | session boundaries (LoCoMo) or user-turn starts at a stride | ``run.ask(PROBE_PROMPT, after_turn=k)`` usable (raw, or stated in a summary) | ``truncate``'s ``ask`` at k | 1 (every fact was extracted from the history) | a window of another conversation of the budget's size | fact |
| ``decision_retention``, ``todo_retention`` | decisions and TODOs said up to k | as facts | as facts | as facts | 1 | as facts | decision (``todo_retention``: todo) |

Value = ``(Σ method − Σ floor) / (Σ ceiling − Σ floor)`` over all probes (weighted by fact type for
facts), with a 95 % cluster bootstrap interval resampling the cluster (an item's probes are
correlated); withheld when ceiling − floor < :data:`~lcm_lab.metrics.headline.MIN_GAP` or no point
is eligible. ``n`` counts clusters (the resampling ``unit``); ``details`` carry ``protocol``,
``probes``, ``clusters``, ``probe_turns``,
``probes_degraded`` (probes whose method context came from a ``degraded:*`` engine path) and the
raw ``ceiling``, ``floor``, ``chance``.

Why this ceiling: BM25 over the full history is not an upper bound (retrieving among 600 passages
is harder than among 60, so a budget-sized context beat it). The gold evidence alone is the smallest
context that holds what answers the item, so no strategy beats it by reading less, and writing it as
the offline summarizer states a message (its day, relative times resolved) means no date-writing
summary holds more of the answer either. Items whose evidence names no dialogue line get no schedule
and no ceiling: they are skipped and counted (``details["warnings"]``).

The end-of-run reading (``run.sent()`` after the last turn) stays as a diagnostic under
``<headline>_end_of_run`` (:data:`END_OF_RUN`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from lcm_lab.engine.types import Conversation, SentContext
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.base import Score, per_conversation, runtime_text
from lcm_lab.metrics.decisions import UNITS, decision_scores, retained_all, tag_decisions
from lcm_lab.metrics.fact_headline import (
    conversation_texts,
    fact_headline_scores,
    facts_present,
    text_window,
)
from lcm_lab.metrics.facts import FACT_WEIGHTS, TextIndex, facts_from_texts
from lcm_lab.metrics.headline import headline
from lcm_lab.metrics.locomo import context_recall, qa_retention_scores, truncated_history, usable_items
from lcm_lab.metrics.probe_schedule import (
    PROBE_PROMPT,
    eligible,
    floor_context,
    history_probe_turns,
    qa_probe_turns,
    session_end_turns,
)
from lcm_lab.metrics.qa_reader import TOP_K, Bm25Index, reader_text
from lcm_lab.metrics.statements import split_statements
from lcm_lab.metrics.stats import cluster_bootstrap_normalised

PROBED: tuple[str, ...] = ("qa_retention", "fact_retention", "decision_retention", "todo_retention")
"""Headlines read over probes (this module)."""
COST: tuple[str, ...] = ("cost_usd", "cache_hit_rate")
"""Headlines of the prompt-cache cost model (:mod:`lcm_lab.cost.scores`; priced when asked for)."""
HEADLINES: tuple[str, ...] = (*PROBED, "recoverability", *COST)
END_OF_RUN: dict[str, str] = {name: f"{name}_end_of_run" for name in PROBED}
"""The end-of-run diagnostic of each probed headline (one instant: ``run.sent()`` after the run)."""
QA_PROTOCOL = "qa items asked at the question turn at the start of every session after their last evidence"
HISTORY_PROTOCOL = "items of the history up to the probe point, asked at the question turn at {schedule}"


class ProbeRows(NamedTuple):
    """One row per probe (aligned arrays): its cluster, turn, weight, and the four contexts' credit."""

    cluster: np.ndarray
    turn: np.ndarray
    weight: np.ndarray
    method: np.ndarray
    floor: np.ndarray
    ceiling: np.ndarray
    chance: np.ndarray | None
    degraded: np.ndarray  # the method's context came from a degraded engine path
    tokens: np.ndarray  # estimated tokens of the method's context


def _rows(parts: list[dict[str, np.ndarray]], with_chance: bool) -> ProbeRows:
    def cat(name: str, dtype: Any = float) -> np.ndarray:
        return np.concatenate([p[name] for p in parts]).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    return ProbeRows(cat("cluster", object), cat("turn", int), cat("weight"), cat("method"), cat("floor"), cat("ceiling"),
                     cat("chance") if with_chance else None, cat("degraded", bool), cat("tokens", int))  # fmt: skip


def probe_headline(run_id: str, metric: str, rows: ProbeRows, *, unit: str, protocol: str, seed: int = 0,
                   extra: dict[str, Any] | None = None) -> Score:
    """The headline of ``rows``: weighted means, normalised, cluster bootstrap interval."""
    n = int(rows.method.size)
    details: dict[str, Any] = {
        "protocol": protocol,
        "probes": n,
        "clusters": int(len(set(rows.cluster.tolist()))),
        "probe_turns": sorted({int(t) for t in rows.turn}),
        "probes_degraded": int(rows.degraded.sum()),
        "method_tokens": round(float(np.mean([rows.tokens[rows.turn == t].mean() for t in set(rows.turn.tolist())]))) if n else None,
        "paired": True,
        **(extra or {}),
    }
    if n == 0:
        details.setdefault("no_probes", "no probe point is eligible: the history fits the budget at every scheduled point")
        return headline(run_id, metric, raw=None, ceiling=None, floor=None, chance=None, n=0, unit=unit, extra=details)
    w = rows.weight
    total = float(w.sum())

    def mean(values: np.ndarray) -> float:
        return float((values * w).sum() / total)

    ci = cluster_bootstrap_normalised(rows.method, rows.floor, rows.ceiling, rows.cluster, weights=w, seed=seed)
    gap = mean(rows.ceiling) - mean(rows.floor)
    if rows.chance is not None and gap > 0:
        details["chance_normalised"] = (mean(rows.chance) - mean(rows.floor)) / gap
    return headline(
        run_id, metric, raw=mean(rows.method), ceiling=mean(rows.ceiling), floor=mean(rows.floor),
        chance=mean(rows.chance) if rows.chance is not None else None, n=details["clusters"], unit=unit, ci=ci, extra=details,
    )  # fmt: skip


def reads_prompt(run: Any) -> bool:
    """Whether what ``run`` sends at a question turn depends on the question (then each question
    is its own branch; otherwise one branch per probe point serves every question)."""
    replay = run.replay if hasattr(run, "strategy") else run
    if replay is not None:
        return bool(replay.config.prompt_aware_eviction)
    from lcm_lab.strategies import get_strategy

    return bool(get_strategy(run.strategy, **run.strategy_params).reads_prompt(run))


def _degraded(sent: SentContext) -> bool:
    return sent.path.startswith("degraded")


# -- qa_retention ---------------------------------------------------------------------------


def _speaker(conversation: Conversation, role: str) -> str:
    meta = conversation.meta or {}
    name = meta.get("speaker_a") if role == "user" else meta.get("speaker_b")
    return str(name) if name else role


def evidence_statements(conversation: Conversation, item: QAItem) -> list[str]:
    """The item's gold evidence turns, each as the offline summarizer states a message."""
    from lcm_lab.summarizers.offline import dated_statement

    by_id = {e.entry_id: e for e in conversation.entries if e.entry_id and e.message is not None}
    out = []
    for ref in dict.fromkeys(item.evidence):
        entry = by_id.get(ref)
        if entry is None or entry.message is None:
            continue
        day = entry.timestamp[:10] if entry.timestamp else None
        out.append(dated_statement(reader_text(entry.message), day, _speaker(conversation, str(entry.message.get("role")))))
    return out


def qa_ceiling(conversation: Conversation, items: Sequence[QAItem], k: int = TOP_K) -> np.ndarray:
    """Answer recall of each item from its own evidence statements alone (fixed per conversation)."""
    key = f"qa_ceiling:{k}:{hash(tuple(i.qa_id for i in items))}"

    def compute() -> np.ndarray:
        out = np.zeros(len(items))
        for j, item in enumerate(items):
            texts = evidence_statements(conversation, item)
            if texts:
                out[j] = Bm25Index.of_texts(texts).answer_recall([item.question], [str(item.answer)], k)[0]
        return out

    return per_conversation(conversation, key, compute)  # type: ignore[no-any-return]


def _recall(sent_texts: list[str], items: Sequence[QAItem], k: int) -> np.ndarray:
    return context_recall(sent_texts, [i.question for i in items], [str(i.answer) for i in items], k)


def _texts(sent: SentContext) -> list[str]:
    return [reader_text(item.message) for item in sent.items]


def qa_probe_rows(run: Any, items: Sequence[QAItem], budget: int, *, chance_conversation: Conversation | None = None,
                  k: int = TOP_K) -> tuple[ProbeRows, list[QAItem]]:
    """The probes of ``items`` (and the items that have a schedule)."""
    conversation = run.conversation
    known = {e.entry_id for e in conversation.entries if e.entry_id}
    ends = session_end_turns(run)
    scheduled = [(item, qa_probe_turns(item, ends, known)) for item in items]
    kept = [item for item, turns in scheduled if turns]
    at: dict[int, list[int]] = defaultdict(list)
    for j, (_, turns) in enumerate((i, t) for i, t in scheduled if t):
        for turn in turns:
            if eligible(conversation, turn, budget):
                at[turn].append(j)
    ceiling = qa_ceiling(conversation, kept, k)
    chance = _recall(truncated_history(chance_conversation, budget), kept, k) if chance_conversation is not None else None
    per_question = reads_prompt(run)
    parts: list[dict[str, np.ndarray]] = []
    for turn in sorted(at):
        js = at[turn]
        asked = [kept[j] for j in js]
        floor = _recall(_texts(floor_context(conversation, turn, budget)), asked, k)
        if per_question:
            sents = [run.ask(item.question, turn, budget=budget) for item in asked]
            method = np.array([_recall(_texts(s), [item], k)[0] for s, item in zip(sents, asked, strict=True)])
            degraded = np.array([_degraded(s) for s in sents])
            tokens = np.array([s.estimated_tokens for s in sents])
        else:
            sent = run.ask(asked[0].question, turn, budget=budget)
            method = _recall(_texts(sent), asked, k)
            degraded = np.full(len(js), _degraded(sent))
            tokens = np.full(len(js), sent.estimated_tokens)
        idx = np.array(js)
        parts.append({"cluster": np.array([kept[j].qa_id for j in js], dtype=object), "turn": np.full(len(js), turn),
                      "weight": np.ones(len(js)), "method": method, "floor": floor, "ceiling": ceiling[idx],
                      "chance": chance[idx] if chance is not None else np.zeros(len(js)), "degraded": degraded, "tokens": tokens})  # fmt: skip
    return _rows(parts, chance is not None), kept


def qa_verdict_scores(run: Any, qa_items: Sequence[QAItem], run_id: str, *, budget: int | None = None,
                      chance_conversation: Conversation | None = None, seed: int = 0, k: int = TOP_K,
                      rows_out: dict[str, ProbeRows] | None = None) -> list[Score]:
    """``qa_retention`` over probes, and ``qa_probe_recall`` per item (mean over its probes; scope
    ``qa``, so ``compare`` pairs settings item by item); ``rows_out`` receives the probes."""
    budget = run.token_budget if budget is None else budget
    items, warnings = usable_items(run.conversation, qa_items)
    rows, kept = qa_probe_rows(run, items, budget, chance_conversation=chance_conversation, k=k)
    if rows_out is not None:
        rows_out["qa_retention"] = rows
    unscheduled = len(items) - len(kept)
    if unscheduled:
        warnings["skipped: no evidence id names a dialogue line (no schedule, no ceiling)"] += unscheduled
    extra: dict[str, Any] = {"reader": f"bm25 answer recall@{k} (offline proxy)", "proxy": True, "k": k, "budget": budget,
                             "warnings": dict(warnings), "items": len(kept),
                             "ceiling_context": "the item's gold evidence turns alone, dated, relative times resolved",
                             "floor_context": "what the truncate strategy sends at the probe point",
                             "chance_context": "another conversation truncated to the budget"}  # fmt: skip
    if chance_conversation is None:
        extra["chance_missing"] = "no chance_conversation given: pass another conversation to compute the chance control"
    else:
        extra["chance_donor"] = chance_conversation.title or chance_conversation.session_id
    scores = [probe_headline(run_id, "qa_retention", rows, unit="qa_item", protocol=QA_PROTOCOL, seed=seed, extra=extra)]
    cluster = run.conversation.session_id
    ids, codes = np.unique(rows.cluster.astype(str), return_inverse=True)
    counts = np.bincount(codes, minlength=ids.size)
    method, floor, ceiling = (np.bincount(codes, weights=v, minlength=ids.size) / np.maximum(counts, 1)
                              for v in (rows.method, rows.floor, rows.ceiling))  # fmt: skip
    for j, qa_id in enumerate(ids):
        scores.append(Score(run_id, "qa", str(qa_id), "qa_probe_recall", float(method[j]),
                            {"probes": int(counts[j]), "floor": float(floor[j]), "ceiling": float(ceiling[j]), "cluster": cluster}))
    return scores


# -- fact_retention, decision_retention -----------------------------------------------------


def _cutoffs(run: Any) -> list[int]:
    """The last history index (entry line, or stored seq) of each turn, as facts and decisions record it."""
    if run.conversation.entries:
        return [t.lines[1] if t.lines else 0 for t in run.turns]
    out, top = [], 0
    for t in run.turns:
        top = max([top, *t.ingested_seqs])
        out.append(top)
    return out


class _HistoryProbe(NamedTuple):
    """One fact/decision probe point: the method's context and every item's credit in the three contexts."""

    turn: int
    cutoff: int
    sent: SentContext
    facts: tuple[np.ndarray, np.ndarray, np.ndarray | None]  # method, floor, chance over all facts
    decisions: tuple[np.ndarray, np.ndarray, np.ndarray | None]  # the same over all decisions


def _usable_texts(sent: SentContext) -> list[str]:
    """What the model can use in ``sent``, one text per item: a raw message whole, a summary's stated sentences."""
    out = []
    for item in sent.items:
        text = runtime_text(item.message)
        out.append(split_statements(text).stated if item.kind == "summary" else text)
    return out


def _facts_in(facts: Sequence[Any], texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Which facts each of ``texts`` holds, found with one index over all of them."""
    index = TextIndex(enumerate(texts))
    found = np.zeros((len(texts), len(facts)))
    for j, fact in enumerate(facts):
        for i in index.containing(fact):
            found[int(str(i)), j] = 1.0
    return dict(zip(texts, found, strict=True))


def _facts_usable(conversation: Conversation, facts: Sequence[Any], texts: Sequence[str]) -> np.ndarray:
    """1.0 per fact usable in one of ``texts``. Contexts at different points and settings share most
    of their messages, so each text's facts are found once per conversation (the texts a context
    brings that were not seen before, all in one index)."""
    cache: dict[str, np.ndarray] = per_conversation(conversation, "facts_in_text", dict)
    missing = [t for t in dict.fromkeys(texts) if t not in cache]
    if missing:
        cache.update(_facts_in(facts, missing))
    out = np.zeros(len(facts))
    for text in texts:
        np.maximum(out, cache[text], out=out)
    return out


def _history_probes(run: Any, budget: int, facts: Sequence[Any], decisions: Sequence[Any], donor_text: str | None
                    ) -> tuple[list[_HistoryProbe], str]:
    conversation = run.conversation
    turns, schedule = history_probe_turns(run, budget)
    cutoffs = _cutoffs(run)
    # floor and chance depend on conversation x budget x point only: computed once for every run of a sweep
    floors: dict[int, tuple[np.ndarray, np.ndarray]] = per_conversation(conversation, f"history_floor:{budget}", dict)
    chances: dict[int, tuple[np.ndarray, np.ndarray]] = per_conversation(
        conversation, f"history_chance:{budget}:{hash(donor_text)}", dict)  # fmt: skip
    out = []
    for turn in turns:
        sent = run.ask(PROBE_PROMPT, turn, budget=budget)
        texts = _usable_texts(sent)
        if turn not in floors:
            floor_texts = _usable_texts(floor_context(conversation, turn, budget))
            floors[turn] = (_facts_usable(conversation, facts, floor_texts), retained_all(decisions, "\n".join(floor_texts)))
        chance: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
        if donor_text:
            if turn not in chances:
                window = text_window(donor_text, budget, f"{conversation.session_id}:{turn}")
                chances[turn] = (facts_present(facts, window), retained_all(decisions, window))
            chance = chances[turn]
        out.append(_HistoryProbe(turn, cutoffs[turn], sent, (_facts_usable(conversation, facts, texts), floors[turn][0], chance[0]),
                                 (retained_all(decisions, "\n".join(texts)), floors[turn][1], chance[1])))  # fmt: skip
    return out, HISTORY_PROTOCOL.format(schedule=schedule)


def _history_rows(probes: Sequence[_HistoryProbe], items: Sequence[Any], chosen: np.ndarray, weights: np.ndarray, kind: str) -> ProbeRows:
    """Rows of the ``chosen`` items (indexes into the probes' arrays) said up to each point."""
    parts = []
    said_at = np.array([getattr(items[j], "seq", 0) or 0 for j in chosen], dtype=int)
    with_chance = bool(probes) and all(getattr(p, kind)[2] is not None for p in probes)
    for probe in probes:
        idx = chosen[said_at <= probe.cutoff]
        if not idx.size:
            continue
        method, floor, chance = getattr(probe, kind)
        parts.append({"cluster": idx.astype(object), "turn": np.full(idx.size, probe.turn), "weight": weights[idx],
                      "method": method[idx], "floor": floor[idx], "ceiling": np.ones(idx.size),
                      "chance": chance[idx] if chance is not None else np.zeros(idx.size),
                      "degraded": np.full(idx.size, _degraded(probe.sent)), "tokens": np.full(idx.size, probe.sent.estimated_tokens)})  # fmt: skip
    return _rows(parts, with_chance)


HISTORY_HEADLINES: dict[str, tuple[str, ...]] = {"decision_retention": ("decision", "todo"), "todo_retention": ("todo",)}
"""The decision headlines and the decision kinds each one reads."""


def history_probe_rows(run: Any, budget: int | None = None, donor_text: str | None = None) -> tuple[dict[str, ProbeRows], str]:
    """The probes of ``fact_retention``, ``decision_retention`` and ``todo_retention`` (one
    :class:`ProbeRows` each; runs of one conversation at one budget share clusters, turns, floor
    and ceiling, so they pair row by row) and the protocol they follow."""
    budget = run.token_budget if budget is None else budget
    conversation = run.conversation
    texts = per_conversation(conversation, "texts", lambda: conversation_texts(conversation))
    facts = per_conversation(conversation, "facts", lambda: tuple(facts_from_texts(texts)))
    decisions = per_conversation(conversation, "decisions",
                                 lambda: tag_decisions(conversation_texts(conversation, roles=("user", "assistant"))))
    probes, protocol = _history_probes(run, budget, facts, decisions, donor_text)
    fact_weights = np.array([FACT_WEIGHTS[f.kind] for f in facts], dtype=float)
    rows = {"fact_retention": _history_rows(probes, facts, np.arange(len(facts)), fact_weights, "facts")}
    for metric, kinds in HISTORY_HEADLINES.items():
        chosen = np.array([j for j, d in enumerate(decisions) if d.kind in kinds], dtype=int)
        rows[metric] = _history_rows(probes, decisions, chosen, np.ones(len(decisions)), "decisions")
    return rows, protocol


def history_verdict_scores(run: Any, run_id: str, *, budget: int | None = None, donor_text: str | None = None,
                           donor_label: str | None = None, seed: int = 0,
                           rows_out: dict[str, ProbeRows] | None = None) -> list[Score]:
    """``fact_retention``, ``decision_retention`` and ``todo_retention`` over probes; ``rows_out``
    receives the probes of each."""
    budget = run.token_budget if budget is None else budget
    rows, protocol = history_probe_rows(run, budget, donor_text)
    if rows_out is not None:
        rows_out.update(rows)
    extra: dict[str, Any] = {"budget": budget}
    if donor_text is None:
        extra["chance_withheld"] = "no donor conversation given (pass donor_text)"
    elif donor_label:
        extra["chance_donor"] = donor_label
    scores = [probe_headline(run_id, "fact_retention", rows["fact_retention"], unit="fact", protocol=protocol, seed=seed,
                             extra={**extra, "weighted_by": "fact type"})]
    for metric in HISTORY_HEADLINES:
        scores.append(probe_headline(run_id, metric, rows[metric], unit=UNITS[metric], protocol=protocol, seed=seed, extra=extra))
    return scores


# -- the scorer -----------------------------------------------------------------------------


def _renamed(scores: Iterable[Score], names: dict[str, str]) -> list[Score]:
    return [replace(s, metric=names[s.metric]) if s.scope == "run" and s.metric in names else s for s in scores]


def verdict_scores(
    run: Any,
    run_id: str,
    *,
    qa_items: Sequence[QAItem] | None = None,
    budget: int | None = None,
    chance_conversation: Conversation | None = None,
    donor_text: str | None = None,
    donor_label: str | None = None,
    seed: int = 0,
    end_of_run: bool = True,
    rows_out: dict[str, ProbeRows] | None = None,
) -> list[Score]:
    """Every probed headline of ``run`` (any strategy's run or an LCM replay), with the end-of-run
    diagnostics (``end_of_run``) under :data:`END_OF_RUN` names; ``rows_out`` receives each probed
    headline's probes (for pairing two runs probe by probe)."""
    scores = history_verdict_scores(run, run_id, budget=budget, donor_text=donor_text, donor_label=donor_label, seed=seed,
                                    rows_out=rows_out)
    if qa_items:
        scores += qa_verdict_scores(run, qa_items, run_id, budget=budget, chance_conversation=chance_conversation, seed=seed,
                                    rows_out=rows_out)
    if end_of_run:
        diagnostics = fact_headline_scores(run, run_id, budget=budget, donor_text=donor_text, seed=seed, donor_label=donor_label)
        diagnostics += decision_scores(run, run_id, budget=budget, donor_text=donor_text, seed=seed, donor_label=donor_label)
        if qa_items:
            diagnostics += qa_retention_scores(run, qa_items, run_id, budget=budget, chance_conversation=chance_conversation)
        scores += _renamed(diagnostics, END_OF_RUN)
    return scores


def verdict(scores: Iterable[Score], name: str) -> Score | None:
    """The run-scope headline ``name`` among ``scores`` (``None`` if absent)."""
    return next((s for s in scores if s.scope == "run" and s.metric == name), None)
