"""Recoverability: of what the model can no longer see, how much can grep → describe → expand find?

For a replay (after its last turn, at its budget) the *lost* items are the hard facts of the
history (:mod:`lcm_lab.metrics.facts`) and the LoCoMo QA answers that are not usable in
``run.sent()`` — neither in a raw message nor in a summary the model receives. Each lost item is
then looked for the way the plugin's tool descriptions tell the agent to (``src/tools/``), stopping as soon as it is found:

1. ``grep`` full text with a *cue* (for a fact: the words around it in its message, never the
   fact itself; for a question: its content words), all terms, then any term if nothing matched;
   found if a snippet contains it;
2. ``describe`` the best summary hit; found if its content contains it;
3. ``expand_query`` (prompt = the question) from the best summary hits; found if the answer does.

"Contains" is the metrics' own test: a fact's key with word boundaries (``TextIndex``); a QA answer
when its normalised tokens appear contiguously (``best_window_f1 == 1``). Cost per item: tool
calls, model calls and tokens the agent reads (grep results as JSON, described summary, source
passages read by the expansion, its answer).

Controls (same as the other headlines): **floor** 0 (lost means not usable: without recall
nothing is found); **ceiling** — the item can be found in the full raw history at all (as the
QA-retention ceiling; 1 for facts by construction); **chance** — ``expand_query`` from as many
randomly chosen summaries as the oracle uses. A diagnostic **oracle** expands the summaries that
really cover the item's source messages under the same caps and answerer (search failure vs.
expansion failure). ``recoverability`` = share recovered, normalised between floor and ceiling,
with a bootstrap interval over items.

The footer score asks whether each summary's ``Expand for details about:`` line names what left
the context: recall = share of the facts of the summary's sources that are missing from its body
and named in its footer; precision = share of footer entries that name such a dropped fact.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.metrics.base import Score, assembly_refs, message_text
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.facts import Fact, TextIndex, normalize
from lcm_lab.metrics.headline import headline
from lcm_lab.metrics.qa_reader import answer_tokens
from lcm_lab.metrics.retention import FactBase
from lcm_lab.metrics.statements import split_statements
from lcm_lab.metrics.stats import bootstrap_interval
from lcm_lab.recall_tools.answer_match import best_window_f1, dialogue_seqs
from lcm_lab.recall_tools.api import Recall, recall
from lcm_lab.recall_tools.query import terms_of

if TYPE_CHECKING:
    import pandas as pd

    from lcm_lab.engine.replay.driver import Replay
    from lcm_lab.io.model import QAItem
    from lcm_lab.recall_tools.answer import Answerer

FOOTER = "expand for details about:"
_STOP = frozenset(
    """a an and are as at be but by did do does for from had has have he her his how i in is it its me my of on or
    our she so that the their them they this to was we were what when where which who whom why will with would you
    your yes no not""".split()
)


@dataclass(frozen=True)
class LostItem:
    """A fact or QA answer not usable in the context the model receives."""

    kind: str  # "fact" | "qa"
    item_id: str
    prompt: str
    cue: str
    source_seqs: tuple[int, ...]
    fact: Fact | None = None
    gold: tuple[str, ...] = ()

    def found_in(self, text: str) -> bool:
        if self.fact is not None:
            return bool(TextIndex([(0, text)]).containing(self.fact))
        return best_window_f1(list(self.gold), answer_tokens(text)) >= 1.0


@dataclass(frozen=True)
class Attempt:
    """How one lost item fared: recovered or not, at which step, and at what cost."""

    kind: str
    item_id: str
    cue: str
    recovered: bool
    step: str | None  # "grep" | "describe" | "expand" | None
    tool_calls: int
    model_calls: int
    tokens: int
    ceiling: bool
    oracle: bool
    chance: bool


def _content_words(text: str, limit: int) -> list[str]:
    out: list[str] = []
    for word in terms_of(text):
        if len(word) > 2 and word not in _STOP and word not in out:
            out.append(word)
    return out[:limit]


def _fact_cue(fact: Fact, text: str, width: int = 80, limit: int = 4) -> str:
    """Words near the fact's first mention, without the fact's own words (what the agent remembers)."""
    lowered = normalize(text)
    pos = max(0, lowered.find(fact.key))
    window = lowered[max(0, pos - width) : pos] + " " + lowered[pos + len(fact.key) : pos + len(fact.key) + width]
    own = set(terms_of(fact.key))
    return " ".join([w for w in _content_words(window, limit + len(own)) if w not in own][:limit])


def lost_items(
    run: Replay, qa_items: Sequence[QAItem] | None = None, *, budget: int | None = None, base: FactBase | None = None
) -> list[LostItem]:
    """Facts and QA answers of ``run`` not usable in ``run.sent(budget=budget)`` (after the last turn)."""
    sent = run.sent(None, budget)
    seqs, sids = assembly_refs(sent)  # type: ignore[arg-type]
    base = base or FactBase.build(Dag.from_replay(run))
    by_seq = run.messages_by_seq
    items: list[LostItem] = []
    for fact in base.facts:
        if fact.seq is None or base.shown(fact, seqs, sids)[0]:
            continue
        cue = _fact_cue(fact, message_text(by_seq[fact.seq]))
        if cue:
            prompt = f"What exact {fact.kind.replace('_', ' ')} was mentioned about {cue}?"
            items.append(LostItem("fact", f"{fact.kind}:{fact.key}", prompt, cue, (fact.seq,), fact=fact))
    if qa_items:
        seq_of = dialogue_seqs(run.conversation, run.messages)
        visible_tokens = answer_tokens(" ".join(_visible_texts(run, seqs, sids)))
        history_tokens = answer_tokens(" ".join(message_text(m) for m in run.messages))
        for qa in qa_items:
            if qa.category == 5 or not qa.answer or not answer_tokens(qa.answer):
                continue
            gold = tuple(answer_tokens(qa.answer))
            # An answer never written verbatim in the history cannot be judged by containment: not "lost".
            if best_window_f1(list(gold), history_tokens) < 1.0 or best_window_f1(list(gold), visible_tokens) >= 1.0:
                continue
            evidence = tuple(sorted(seq_of[e] for e in qa.evidence if e in seq_of))
            cue = " ".join(_content_words(qa.question, 6))
            if cue:
                items.append(LostItem("qa", qa.qa_id, qa.question, cue, evidence, gold=gold))
    return items


def _visible_texts(run: Replay, seqs: frozenset[int], sids: frozenset[str]) -> list[str]:
    texts = [message_text(run.messages_by_seq[s]) for s in sorted(seqs) if s in run.messages_by_seq]
    texts += [run.summaries_by_id[s].content for s in sorted(sids) if s in run.summaries_by_id]
    return texts


def _covering(run: Replay, seqs: Sequence[int]) -> list[str]:
    wanted = set(seqs)
    return [s.summary_id for s in run.summaries if s.kind == "leaf" and wanted & set(s.source_message_seqs)]


def attempt(rec: Recall, item: LostItem, *, answerer: Answerer | None = None, max_expand_tokens: int = 4000,
            oracle_ids: Sequence[str] = (), chance_ids: Sequence[str] = (), in_history: bool = True) -> Attempt:  # fmt: skip
    """Run grep → describe → expand for one lost item (and its oracle and chance controls)."""
    calls = tokens = model_calls = 0
    step: str | None = None
    summary_hits: list[str] = []
    for any_term in (False, True):
        hits = rec.grep(item.cue, "full_text", "both", sort="relevance", limit=10, any_term=any_term)
        calls += 1
        tokens += hits.tokens
        if any(item.found_in(m.snippet) for m in hits.matches):
            step = "grep"
        summary_hits = [m.id for m in hits.matches if m.type == "summary"]
        if hits.matches:
            break
    if step is None and summary_hits:
        info = rec.describe(summary_hits[0])
        calls += 1
        tokens += estimate_tokens(str(info["content"]))
        if item.found_in(info["content"]):
            step = "describe"
    if step is None and summary_hits:
        result = rec.expand_query(item.prompt, summary_ids=summary_hits[:3], answerer=answerer, max_expand_tokens=max_expand_tokens)
        calls += 1
        model_calls += result.model_calls
        tokens += result.total_source_tokens + result.answer_tokens
        if item.found_in(result.answer):
            step = "expand"
    oracle = bool(oracle_ids) and _expand_finds(rec, item, oracle_ids, answerer, max_expand_tokens)
    chance = bool(chance_ids) and _expand_finds(rec, item, chance_ids, answerer, max_expand_tokens)
    recovered = step is not None
    return Attempt(item.kind, item.item_id, item.cue, recovered, step, calls, model_calls, tokens,
                   in_history or recovered, oracle, chance)  # fmt: skip


def _expand_finds(rec: Recall, item: LostItem, ids: Sequence[str], answerer: Answerer | None, cap: int) -> bool:
    return item.found_in(rec.expand_query(item.prompt, summary_ids=list(ids), answerer=answerer, max_expand_tokens=cap).answer)


@dataclass(frozen=True)
class RecoverabilityReport:
    """Per-item attempts and the headline/cost scores of one run."""

    run_id: str
    attempts: tuple[Attempt, ...]
    footer: dict[str, Any]
    answerer: str
    base: FactBase | None = field(default=None, repr=False)  # reusable for other runs of the same conversation (``facts=``)
    lost: int = 0  # lost items found (before sampling)
    sampled: int = 0  # lost items attempted

    def df(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([asdict(a) for a in self.attempts], columns=list(Attempt.__dataclass_fields__))

    def scores(self) -> list[Score]:
        """``recoverability`` headlines (all items, facts, QA) with costs, and the footer scores."""
        out: list[Score] = []
        for kind, label in ((None, ""), ("fact", "fact"), ("qa", "qa")):
            chosen = [a for a in self.attempts if kind is None or a.kind == kind]
            if kind is not None and not chosen:
                continue
            out.extend(_headline_scores(self.run_id, chosen, label, self.answerer))
        for name in ("footer_precision", "footer_recall"):
            out.append(Score(self.run_id, "run", "", name, self.footer.get(name), dict(self.footer)))
        return out

    def summary(self) -> dict[str, Any]:
        """One row: share recovered with controls and costs (what the report and notebook show)."""
        rows = {s.metric: s for s in self.scores() if s.scope_id == ""}
        main = rows["recoverability"]
        return {
            "run_id": self.run_id, "lost": self.lost, "attempted": main.details["n"], "recovered_share": main.details["raw"],
            "recoverability": main.value, "ci_low": main.details["ci_low"], "ci_high": main.details["ci_high"],
            "ceiling": main.details["ceiling"], "chance": main.details["chance"], "oracle_expand": main.details["oracle_expand"],
            "tokens_per_item": main.details["tokens_per_item"], "calls_per_item": main.details["calls_per_item"],
            "model_calls": main.details["model_calls"], "tokens_per_recovered": main.details["tokens_per_recovered"],
            "footer_precision": self.footer.get("footer_precision"), "footer_recall": self.footer.get("footer_recall"),
            "answerer": self.answerer,
        }  # fmt: skip


def _headline_scores(run_id: str, attempts: Sequence[Attempt], label: str, answerer: str) -> list[Score]:
    n = len(attempts)
    recovered = [float(a.recovered) for a in attempts]
    raw = sum(recovered) / n if n else None
    ceiling = sum(a.ceiling for a in attempts) / n if n else None
    chance = sum(a.chance for a in attempts) / n if n else None
    floor = 0.0
    ci = None
    if n and ceiling and ceiling > floor:
        low, high = bootstrap_interval(recovered)
        ci = ((low - floor) / (ceiling - floor), (high - floor) / (ceiling - floor))
    tokens = sum(a.tokens for a in attempts)
    hits = sum(recovered)
    extra = {
        "items": label or "facts+qa", "answerer": answerer, "tokens_per_item": tokens / n if n else None,
        "calls_per_item": sum(a.tool_calls for a in attempts) / n if n else None,
        "model_calls": sum(a.model_calls for a in attempts), "tokens_per_recovered": tokens / hits if hits else None,
        "by_step": {s: sum(1 for a in attempts if a.step == s) for s in ("grep", "describe", "expand")},
        "oracle_expand": sum(a.oracle for a in attempts) / n if n else None,
    }  # fmt: skip
    metric = f"{label}_recoverability" if label else "recoverability"
    score = headline(run_id, metric, raw=raw, ceiling=ceiling, floor=floor, chance=chance, n=n,
                     unit="lost_item" if not label else f"lost_{label}", ci=ci, extra=extra)  # fmt: skip
    return [score]


def footer_scores(run: Replay, *, budget: int | None = None, base: FactBase | None = None) -> dict[str, Any]:
    """Footer precision/recall over the summaries in ``run.sent()`` (see module docstring)."""
    sent = run.sent(None, budget)
    _, sids = assembly_refs(sent)  # type: ignore[arg-type]
    base = base or FactBase.build(Dag.from_replay(run))
    entries = matched_entries = dropped_total = dropped_named = with_footer = 0
    for sid in sorted(sids):
        summary = run.summaries_by_id[sid]
        body, footer = _split_footer(summary.content)
        if footer is None:
            continue
        with_footer += 1
        facts = {(f.kind, f.key): f for seq in _leaf_seqs(run, sid) for f in base.facts_by_seq.get(seq, ())}
        body_index = TextIndex([(0, body)])
        footer_index = TextIndex([(0, footer)])
        dropped = [f for f in facts.values() if not body_index.containing(f)]
        named = [f for f in dropped if footer_index.containing(f)]
        dropped_total += len(dropped)
        dropped_named += len(named)
        items = [normalize(e) for e in re.split(r"[,;]", footer) if e.strip()]
        entries += len(items)
        matched_entries += sum(1 for e in items if any(f.key in e or (len(e) > 2 and e in f.key) for f in dropped))
    return {
        "footer_precision": matched_entries / entries if entries else None,
        "footer_recall": dropped_named / dropped_total if dropped_total else None,
        "footer_entries": entries,
        "dropped_facts": dropped_total,
        "summaries_in_context": len(sids),
        "summaries_with_footer": with_footer,
    }


def _split_footer(content: str) -> tuple[str, str | None]:
    lowered = content.lower()
    at = lowered.rfind(FOOTER)
    if at < 0:
        return content, None
    return content[:at], content[at + len(FOOTER) :].split("\n", 1)[0]


def _leaf_seqs(run: Replay, summary_id: str) -> list[int]:
    out: list[int] = []
    stack = [summary_id]
    while stack:
        s = run.summaries_by_id[stack.pop()]
        out.extend(s.source_message_seqs)
        stack.extend(s.source_summary_ids)
    return out


def _fact_base(run: Replay, shared: FactBase | None) -> FactBase:
    """``shared`` with this run's summaries indexed (its facts come from the same messages), or a new base."""
    if shared is None:
        return FactBase.build(Dag.from_replay(run))
    if set(shared.facts_by_seq) != {m.seq for m in run.messages if m.role != "system"}:
        raise ValueError("facts= must come from a run of the same conversation (its messages differ)")
    splits = {s.summary_id: split_statements(s.content) for s in run.summaries}  # stated vs pointer, as FactBase.build
    return replace(
        shared,
        summary_index=TextIndex((sid, sp.stated) for sid, sp in splits.items()),
        pointer_index=TextIndex((sid, sp.pointers) for sid, sp in splits.items()),
    )


def score_recoverability(
    run: Replay,
    *,
    qa_items: Sequence[QAItem] | None = None,
    rec: Recall | None = None,
    answerer: Answerer | None = None,
    budget: int | None = None,
    max_items: int | None = None,
    max_expand_tokens: int = 4000,
    seed: int = 0,
    facts: FactBase | None = None,
) -> RecoverabilityReport:
    """Recoverability of ``run``'s lost facts and QA answers (see module docstring).

    ``max_items`` samples that many lost items of each kind (seeded) to bound the cost. ``facts``
    reuses the fact base of another run of the same conversation (fact extraction is the slow part).
    """
    rec = rec or recall(run)
    base = _fact_base(run, facts)
    items = lost_items(run, qa_items, budget=budget, base=base)
    rng = random.Random(seed)
    items_all = items
    if max_items is not None:
        items = []
        for kind in ("fact", "qa"):
            of_kind = [i for i in items_all if i.kind == kind]
            items.extend(sorted(rng.sample(of_kind, max_items), key=lambda i: i.item_id) if len(of_kind) > max_items else of_kind)
    all_ids = [s.summary_id for s in run.summaries]
    attempts = []
    for item in items:
        oracle_ids = _covering(run, item.source_seqs)
        chance_ids = rng.sample(all_ids, min(len(all_ids), max(1, len(oracle_ids)))) if all_ids else []
        in_history = item.fact is None or bool(base.message_index.containing(item.fact))
        attempts.append(attempt(rec, item, answerer=answerer, max_expand_tokens=max_expand_tokens,
                                oracle_ids=oracle_ids, chance_ids=chance_ids, in_history=in_history))  # fmt: skip
    label = getattr(answerer, "label", "offline-quote") if answerer is not None else "offline-quote"
    footer = footer_scores(run, budget=budget, base=base)
    return RecoverabilityReport(run.run_id or rec.target, tuple(attempts), footer, label, base, len(items_all), len(items))
