"""Hard-fact retention: which extracted facts survive in each summary and in the context.

Two views (see ``docs/metrics.md``):

* **in summaries** — for every summary, the facts of the raw messages it covers (transitively)
  and the type-weighted share *stated* in its body (:mod:`lcm_lab.metrics.statements`: pointer
  lines such as ``Expand for details about: …`` and bare lists do not count);
  ``fact_pointer_rate`` is the share only named in a pointer line. By depth and by fact type.
* **in context, per turn** — after every turn, the facts of all messages ingested so far and the
  fraction usable in what the model receives next (``run.sent``): verbatim in a raw message, or
  stated in a summary. ``compacted_fact_retention`` restricts to facts no raw message shows, which
  isolates what summarisation kept. Reported by fact type and by age (turns since the first
  mention) for the final turn.

The run-level headline lives in :mod:`lcm_lab.metrics.fact_headline`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lcm_lab.engine.types import StoredMessage, TurnRecord
from lcm_lab.metrics.base import Score, age_bucket, mean, message_text
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.fact_headline import ContextView, context_view
from lcm_lab.metrics.facts import FACT_TYPES, FACT_WEIGHTS, Fact, TextIndex, extract_facts
from lcm_lab.metrics.statements import split_statements

ContextMode = Literal["assembled", "stored"]


@dataclass(frozen=True)
class FactBase:
    """Facts of a conversation's messages plus indexes to find them in messages and in what
    summaries state or only point to."""

    facts: tuple[Fact, ...]  # de-duplicated, each with the seq of its first mention
    facts_by_seq: dict[int, tuple[Fact, ...]]
    message_index: TextIndex
    summary_index: TextIndex  # stated text of each summary
    pointer_index: TextIndex  # pointer lines of each summary

    @staticmethod
    def build(dag: Dag, kinds: Sequence[str] = FACT_TYPES) -> FactBase:
        """Extract facts from every message of ``dag`` and index messages and summaries."""
        facts_by_seq: dict[int, tuple[Fact, ...]] = {}
        texts: list[tuple[int, str]] = []
        seen: set[tuple[str, str]] = set()
        firsts: list[Fact] = []
        for message in dag.messages:
            if message.role == "system":
                continue  # old plugin versions stored compaction log lines as system rows
            text = message_text(message)
            texts.append((message.seq, text))
            found = tuple(extract_facts(text, seq=message.seq, kinds=kinds))
            facts_by_seq[message.seq] = found
            for fact in found:
                if (fact.kind, fact.key) not in seen:
                    seen.add((fact.kind, fact.key))
                    firsts.append(fact)
        splits = {s.summary_id: split_statements(s.content) for s in dag.summaries}
        return FactBase(
            facts=tuple(firsts),
            facts_by_seq=facts_by_seq,
            message_index=TextIndex(texts),
            summary_index=TextIndex((sid, sp.stated) for sid, sp in splits.items()),
            pointer_index=TextIndex((sid, sp.pointers) for sid, sp in splits.items()),
        )

    def shown(self, fact: Fact, seqs: frozenset[int], summary_ids: frozenset[str]) -> tuple[bool, str | None]:
        """Whether ``fact`` is usable given shown raw messages and summaries (stated), and where."""
        if self.message_index.containing(fact) & seqs:
            return True, "raw"
        if self.summary_index.containing(fact) & summary_ids:
            return True, "summary"
        return False, None


def weighted_share(rows: Iterable[tuple[Fact, bool]]) -> float | None:
    """Type-weighted share of facts marked present (``None`` for no facts).

    >>> weighted_share([(Fact("path", "a.py", "a.py"), True), (Fact("name", "Bo", "bo"), False)])
    0.75
    """
    pairs = [(FACT_WEIGHTS[f.kind], present) for f, present in rows]
    total = sum(w for w, _ in pairs)
    return sum(w for w, p in pairs if p) / total if total else None


def _by_type(rows: Iterable[tuple[Fact, bool]]) -> dict[str, list[bool]]:
    out: dict[str, list[bool]] = defaultdict(list)
    for fact, present in rows:
        out[fact.kind].append(present)
    return out


def summary_fact_scores(dag: Dag, run_id: str, base: FactBase | None = None) -> list[Score]:
    """``fact_retention`` per summary (type-weighted share of the facts of its covered messages
    that its body states) and ``fact_pointer_rate`` (share only named in a pointer line), per
    depth, and per fact type pooled over all summaries (``scope="fact_type"``, metric
    ``summary_fact_retention``, unweighted within a type)."""
    base = base or FactBase.build(dag)
    scores: list[Score] = []
    depth_values: dict[int, list[float]] = defaultdict(list)
    pooled: dict[str, list[bool]] = defaultdict(list)
    for summary in dag.summaries:
        facts: dict[tuple[str, str], Fact] = {}
        for seq in dag.covered_seqs(summary.summary_id):
            for fact in base.facts_by_seq.get(seq, ()):
                facts.setdefault((fact.kind, fact.key), fact)
        sid = summary.summary_id
        rows = [(f, sid in base.summary_index.containing(f)) for f in facts.values()]
        if not rows:
            for metric in ("fact_retention", "fact_pointer_rate"):
                scores.append(Score(run_id, "summary", sid, metric, None, {"facts": 0, "reason": "no facts in sources"}))
            continue
        value = weighted_share(rows)
        pointer_only = [(f, not p and sid in base.pointer_index.containing(f)) for f, p in rows]
        types = {k: [sum(v), len(v)] for k, v in _by_type(rows).items()}
        lost = [f.text for f, p in rows if not p][:20]
        details = {"depth": summary.depth, "kind": summary.kind, "facts": len(rows), "by_type": types, "lost_sample": lost,
                   "unweighted": sum(p for _, p in rows) / len(rows), "weighted_by": "fact type"}
        scores.append(Score(run_id, "summary", sid, "fact_retention", value, details))
        scores.append(Score(run_id, "summary", sid, "fact_pointer_rate", weighted_share(pointer_only),
                            {"facts": len(rows), "pointer_only": sum(p for _, p in pointer_only), "weighted_by": "fact type"}))
        depth_values[summary.depth].append(value)
        for kind, values in _by_type(rows).items():
            pooled[kind].extend(values)
    for depth, values in sorted(depth_values.items()):
        scores.append(Score(run_id, "depth", str(depth), "mean_fact_retention", mean(values), {"n": len(values)}))
    for kind in FACT_TYPES:
        values = pooled.get(kind, [])
        value = sum(values) / len(values) if values else None
        scores.append(Score(run_id, "fact_type", kind, "summary_fact_retention", value, {"n": len(values)}))
    return scores


def _turn_of_seq(turns: Sequence[TurnRecord]) -> dict[int, int]:
    return {seq: turn.turn for turn in turns for seq in turn.ingested_seqs}


def shown_refs(replay: Any, turn: int, mode: ContextMode, budget: int | None = None) -> tuple[frozenset[int], frozenset[str]]:
    """Stored message seqs and summary ids in the context after ``turn`` (live fallback items,
    whose refs are input lines, are not stored messages and are left out); see :func:`shown_view`."""
    if mode == "assembled":
        next_turn = turn + 1 if turn + 1 < len(replay.turns) else None
        items = replay.sent(next_turn, budget).items
    elif mode == "stored":
        items = replay.context_at(turn)
    else:
        raise ValueError(f"unknown context mode {mode!r}; use 'assembled' or 'stored'")
    seqs = frozenset(int(i.ref) for i in items if i.kind == "message" and i.ref is not None)
    return seqs, frozenset(str(i.ref) for i in items if i.kind == "summary" and i.ref is not None)


def shown_view(replay: Any, turn: int, mode: ContextMode, budget: int | None = None) -> ContextView:
    """The context after ``turn`` as raw text and the stated/pointer text of its summaries.

    ``mode="assembled"`` reads what the model receives next (``replay.sent``: at the start of the
    following turn, or the end-of-run call after the last turn) at ``budget`` (default: the run
    budget); ``"stored"`` uses the context items as stored (no budget eviction, the plugin's own
    view).
    """
    if mode == "assembled":
        next_turn = turn + 1 if turn + 1 < len(replay.turns) else None
        return context_view(replay.sent(next_turn, budget).items)
    if mode == "stored":
        items = replay.context_at(turn)
        raw = [message_text(replay.messages_by_seq[int(i.ref)]) for i in items if i.kind == "message"]
        splits = [split_statements(replay.summary(str(i.ref)).content) for i in items if i.kind == "summary"]
        return ContextView("\n".join(raw), "\n".join(sp.stated for sp in splits), "\n".join(sp.pointers for sp in splits))
    raise ValueError(f"unknown context mode {mode!r}; use 'assembled' or 'stored'")


def context_fact_scores(
    replay: Any,
    run_id: str,
    *,
    mode: ContextMode = "assembled",
    budget: int | None = None,
    turns: Sequence[int] | None = None,
    base: FactBase | None = None,
    progress: Callable[[Iterable[int]], Iterable[int]] | None = None,
) -> list[Score]:
    """Fact retention in the context after each turn of a replay (see module docstring).

    ``turns`` limits the turns scored (default: all); the final turn is always scored and gets
    the by-type and by-age breakdowns.
    """
    dag = Dag.from_replay(replay)
    base = base or FactBase.build(dag)
    turn_records: Sequence[TurnRecord] = replay.turns
    if not turn_records:
        return []
    turn_of = _turn_of_seq(turn_records)
    last = turn_records[-1].turn
    chosen = sorted(set(turns if turns is not None else (t.turn for t in turn_records)) | {last})
    iterator: Iterable[int] = progress(chosen) if progress else chosen
    scores: list[Score] = []
    for turn in iterator:
        known = [f for f in base.facts if f.seq is not None and turn_of.get(f.seq, 0) <= turn]
        view = shown_view(replay, turn, mode, budget)
        index = TextIndex([("raw", view.raw), ("summary", view.stated)])
        rows = [(f, bool(hit), "raw" if "raw" in hit else ("summary" if hit else None)) for f in known for hit in [index.containing(f)]]
        compacted = [r for r in rows if r[2] != "raw"]
        details = {
            "mode": mode,
            "facts": len(rows),
            "compacted_facts": len(compacted),
            "via_summary": sum(1 for r in rows if r[2] == "summary"),
        }
        scores.append(Score(run_id, "turn", str(turn), "fact_retention", mean(float(r[1]) for r in rows), details))
        scores.append(Score(run_id, "turn", str(turn), "compacted_fact_retention", mean(float(r[1]) for r in compacted), details))
        if turn != last:
            continue
        for kind in FACT_TYPES:
            sub = [r for r in rows if r[0].kind == kind]
            sub_c = [r for r in compacted if r[0].kind == kind]
            n = {"n": len(sub), "n_compacted": len(sub_c), "turn": turn, "mode": mode}
            scores.append(Score(run_id, "fact_type", kind, "fact_retention", mean(float(r[1]) for r in sub), n))
            scores.append(Score(run_id, "fact_type", kind, "compacted_fact_retention", mean(float(r[1]) for r in sub_c), n))
        by_age: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        for fact, present, where in rows:
            age = turn - turn_of.get(fact.seq or 0, 0)
            by_age[age_bucket(age)].append((present, where != "raw"))
        for bucket, values in sorted(by_age.items(), key=lambda kv: _bucket_order(kv[0])):
            comp = [p for p, c in values if c]
            details_age = {"n": len(values), "n_compacted": len(comp), "turn": turn, "unit": "turns", "mode": mode}
            scores.append(Score(run_id, "age", bucket, "fact_retention", mean(float(p) for p, _ in values), details_age))
            scores.append(Score(run_id, "age", bucket, "compacted_fact_retention", mean(float(p) for p in comp), details_age))
    return scores


def _bucket_order(label: str) -> int:
    return int(label.split("-")[0].rstrip("+"))


def dag_context_fact_scores(dag: Dag, run_id: str, base: FactBase | None = None) -> list[Score]:
    """Fact retention in the stored context of a loaded conversation (no turns: one snapshot;
    age in messages since the first mention)."""
    base = base or FactBase.build(dag)
    seqs = frozenset(int(i.ref) for i in dag.context if i.kind == "message")
    sids = frozenset(str(i.ref) for i in dag.context if i.kind == "summary")
    last_seq = max((m.seq for m in dag.messages), default=0)
    rows = [(f, base.shown(f, seqs, sids)[0]) for f in base.facts]
    scores = [Score(run_id, "run", "", "context_fact_retention", mean(float(p) for _, p in rows), {"facts": len(rows), "mode": "stored"})]
    compacted = [(f, p) for f, p in rows if f.seq not in seqs]
    scores.append(Score(run_id, "run", "", "context_compacted_fact_retention", mean(float(p) for _, p in compacted), {"facts": len(compacted)}))
    for kind in FACT_TYPES:
        sub = [p for f, p in compacted if f.kind == kind]
        scores.append(Score(run_id, "fact_type", kind, "compacted_fact_retention", mean(float(p) for p in sub), {"n": len(sub), "mode": "stored"}))
    by_age: dict[str, list[bool]] = defaultdict(list)
    for fact, present in compacted:
        by_age[age_bucket(last_seq - (fact.seq or 0))].append(present)
    for bucket, values in sorted(by_age.items(), key=lambda kv: _bucket_order(kv[0])):
        scores.append(Score(run_id, "age", bucket, "compacted_fact_retention", mean(float(p) for p in values), {"n": len(values), "unit": "messages"}))
    return scores


def messages_facts(messages: Iterable[StoredMessage]) -> list[Fact]:
    """All facts of some messages (first mention wins), e.g. to inspect what will be measured."""
    seen: set[tuple[str, str]] = set()
    out = []
    for message in messages:
        for fact in extract_facts(message_text(message), seq=message.seq):
            if (fact.kind, fact.key) not in seen:
                seen.add((fact.kind, fact.key))
                out.append(fact)
    return out
