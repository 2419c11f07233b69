"""Scores for any context strategy's run, read only through ``run.sent``/``run.ask`` (see docs/strategies.md).

The equal-token diagnostic ``fact_retention_equal_tokens`` measures every strategy (LCM, ClawVault,
truncation, full context, the recorded host) on what the model receives at the end-of-run call,
as text, with these controls:

* **ceiling** — the full history (every message so far);
* **floor** — plain truncation to the *same number of tokens* the strategy's context used
  (so a strategy cannot win by simply sending more);
* **chance** — a seeded random subset of messages of that same size.

The headlines (``qa_retention``, ``fact_retention``, ``decision_retention``) have one definition
for every run, LCM included: :func:`lcm_lab.metrics.verdicts.verdict_scores`, probes over the
conversation's life through ``run.ask``. Here only the diagnostics around them: the equal-token
fact control (``fact_retention_equal_tokens``), per-turn context tokens and model calls, fact
survival by age and type.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lcm_lab.engine.types import SentContext
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.base import Score, age_bucket, assembled_message_text, mean, message_text
from lcm_lab.metrics.facts import Fact, TextIndex, extract_facts
from lcm_lab.metrics.headline import headline
from lcm_lab.metrics.locomo import answer_tokens, raw_texts
from lcm_lab.metrics.verdicts import verdict_scores


def sent_text(sent: SentContext) -> str:  # noqa: D401
    """All text the model receives in one call."""
    return "\n".join(assembled_message_text(m) for m in sent.messages)


def _as_run(run: Any) -> Any:
    if hasattr(run, "strategy"):
        return run
    from lcm_lab.strategies.lcm import from_replay

    return from_replay(run)


def _controls(run: Any, tokens: int, seed: int) -> tuple[list[int], list[int], list[int]]:
    """Message seqs of the (ceiling, floor, chance) contexts: all messages; the newest that fit
    ``tokens``; a seeded random subset that fits ``tokens``."""
    messages = [m for m in run.messages if m.role != "system"]
    sized = [(m.seq, sum(i.tokens for i in run.message_items([m]))) for m in messages]
    floor: list[int] = []
    used = 0
    for seq, size in reversed(sized):
        if used + size > tokens:
            break
        floor.append(seq)
        used += size
    order = list(range(len(sized)))
    random.Random(seed).shuffle(order)
    chance: list[int] = []
    used = 0
    for index in order:
        seq, size = sized[index]
        if used + size <= tokens:
            chance.append(seq)
            used += size
    return [seq for seq, _ in sized], floor, chance


def _context_refs(sent: SentContext) -> tuple[set[object], list[tuple[object, str]]]:
    """Refs of what ``sent`` shows: raw messages by seq, other items by position (with their text)."""
    refs: set[object] = set()
    extra: list[tuple[object, str]] = []
    for n, item in enumerate(sent.items):
        if item.kind in ("message", "live") and isinstance(item.ref, int):
            refs.add(("m", item.ref))
        else:
            refs.add(("x", n))
            extra.append((("x", n), assembled_message_text(item.message)))
    if sent.prompt is not None:
        refs.add(("x", "prompt"))
        extra.append((("x", "prompt"), assembled_message_text(sent.prompt.message)))
    return refs, extra


def _normalised_interval(
    method: np.ndarray, floor: np.ndarray, ceiling: np.ndarray, seed: int
) -> tuple[float, float] | None:
    if method.size < 2:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, method.size, size=(2000, method.size))
    m, f, c = method[idx].mean(axis=1), floor[idx].mean(axis=1), ceiling[idx].mean(axis=1)
    gap = c - f
    ok = gap > 1e-9
    if ok.sum() < 100:
        return None
    values = (m[ok] - f[ok]) / gap[ok]
    return float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))


def _headline(
    run_id: str,
    metric: str,
    rows: Sequence[tuple[float, float, float, float]],
    unit: str,
    extra: Mapping[str, Any],
    seed: int,
) -> Score:
    if not rows:
        return headline(
            run_id, metric, raw=None, ceiling=None, floor=None, chance=None, n=0, unit=unit, extra=extra
        )
    arr = np.asarray(rows, dtype=float)
    method, ceiling, floor, chance = (arr[:, k] for k in range(4))
    return headline(
        run_id, metric, raw=float(method.mean()), ceiling=float(ceiling.mean()), floor=float(floor.mean()),
        chance=float(chance.mean()), n=len(rows), unit=unit, ci=_normalised_interval(method, floor, ceiling, seed),
        extra={**extra, "raw_ci": _raw_interval(method, seed)},
    )  # fmt: skip


def _raw_interval(values: np.ndarray, seed: int) -> list[float] | None:
    if values.size < 2:
        return None
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(2000, values.size))].mean(axis=1)
    return [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]


def budget_and_call_scores(run: Any, run_id: str) -> list[Score]:
    """Per turn: ``context_tokens`` and ``model_calls``; per run: their peak/mean/totals."""
    scores: list[Score] = []
    sizes = [t.context_tokens for t in run.turns]
    calls = [c for t in run.turns for c in t.calls]
    for t in run.turns:
        details = {"budget": run.token_budget, "events": list(t.events)}
        scores.append(Score(run_id, "turn", str(t.turn), "context_tokens", float(t.context_tokens), details))
        scores.append(Score(run_id, "turn", str(t.turn), "model_calls", float(len(t.calls)), details))
    costs = [c.cost_usd for c in calls if c.cost_usd is not None]
    run_values: dict[str, float | None] = {
        "peak_context_tokens": float(max(sizes)) if sizes else None,
        "mean_context_tokens": mean(sizes),
        "over_budget_turns": float(sum(1 for s in sizes if s > run.token_budget)),
        "model_calls": float(len(calls)),
        "model_calls_per_turn": len(calls) / len(sizes) if sizes else None,
        "model_input_tokens": float(sum(c.input_tokens for c in calls)),
        "model_output_tokens": float(sum(c.output_tokens for c in calls)),
        "model_cost_usd": float(sum(costs)) if costs else None,
        "failed_model_calls": float(sum(1 for c in calls if c.failed)),
    }
    for metric, value in run_values.items():
        scores.append(
            Score(run_id, "run", "", metric, value, {"budget": run.token_budget, "strategy": run.strategy})
        )
    return scores


@dataclass(frozen=True)
class MessageBase:
    """What every run of one conversation shares: its messages' facts, text index and answer tokens.

    Build it once (:func:`message_base`) and pass it to :func:`strategy_scores` when scoring many
    strategies on the same conversation: fact extraction and matching then happen once.
    """

    facts: tuple[Fact, ...]
    index: TextIndex
    tokens: Mapping[object, frozenset[str]]


def message_base(messages: Sequence[Any]) -> MessageBase:
    facts: dict[tuple[str, str], Fact] = {}
    texts: list[tuple[object, str]] = []
    for message in messages:
        if message.role == "system":
            continue
        text = message_text(message)
        texts.append((("m", message.seq), text))
        for fact in extract_facts(text, seq=message.seq):
            facts.setdefault((fact.kind, fact.key), fact)
    return MessageBase(
        tuple(facts.values()), TextIndex(texts), {ref: frozenset(answer_tokens(t)) for ref, t in texts}
    )


def strategy_scores(
    run: Any,
    *,
    run_id: str | None = None,
    qa_items: Sequence[QAItem] | None = None,
    seed: int = 0,
    base: MessageBase | None = None,
    chance_conversation: Any = None,
    donor_text: str | None = None,
    donor_label: str | None = None,
) -> list[Score]:
    """Context, call, fact and (with ``qa_items``) LoCoMo QA scores of any strategy's run.

    The headlines come from :func:`~lcm_lab.metrics.verdicts.verdict_scores`; ``chance_conversation`` and
    ``donor_text`` (another conversation, its text) give them their chance controls, and
    ``donor_label`` names it in ``details["chance_donor"]``.
    """
    run = _as_run(run)
    base = base or message_base(run.messages)
    rid = run_id or run.run_id or f"{run.strategy}-run"
    scores = budget_and_call_scores(run, rid)
    final = run.sent(None)
    ceiling, floor, chance = _controls(run, final.estimated_tokens, seed)
    method, extra_texts = _context_refs(final)
    contexts = [method, {("m", s) for s in ceiling}, {("m", s) for s in floor}, {("m", s) for s in chance}]
    extra = {
        "strategy": run.strategy,
        "context_tokens": final.estimated_tokens,
        "budget": final.token_budget,
        "path": final.path,
    }
    scores.append(
        Score(
            rid,
            "run",
            "",
            "final_context_over_budget",
            float(final.estimated_tokens > final.token_budget),
            extra,
        )
    )
    scores += _fact_scores(run, rid, base, extra_texts, contexts, extra, seed)
    if donor_text is None and chance_conversation is not None:
        donor_text = "\n".join(raw_texts(chance_conversation))
        donor_label = donor_label or chance_conversation.title or chance_conversation.session_id
    scores += verdict_scores(run, rid, qa_items=qa_items, chance_conversation=chance_conversation, donor_text=donor_text,
                             donor_label=donor_label, seed=seed)
    return scores


def _fact_scores(
    run: Any,
    rid: str,
    base: MessageBase,
    extra_texts: list[tuple[object, str]],
    contexts: list[set[object]],
    extra: Mapping[str, Any],
    seed: int,
) -> list[Score]:
    own = TextIndex(extra_texts)
    turn_of = {seq: t.turn for t in run.turns for seq in t.ingested_seqs}
    last = run.turns[-1].turn if run.turns else 0
    rows: list[tuple[float, float, float, float]] = []
    by_age: dict[str, list[float]] = defaultdict(list)
    by_type: dict[str, list[float]] = defaultdict(list)
    for fact in base.facts:
        hits = base.index.containing(fact) | own.containing(fact)
        row = tuple(float(bool(hits & refs)) for refs in contexts)
        rows.append(row)  # type: ignore[arg-type]
        by_age[age_bucket(last - turn_of.get(fact.seq or 0, last))].append(row[0])
        by_type[fact.kind].append(row[0])
    # The equal-token control (floor = truncation to the strategy's own tokens) is a diagnostic;
    # the fact_retention headline is metrics.fact_headline's, like every other run's.
    scores = [_headline(rid, "fact_retention_equal_tokens", rows, "fact", extra, seed)]
    for bucket, values in by_age.items():
        scores.append(
            Score(
                rid,
                "age",
                bucket,
                "fact_survival",
                mean(values),
                {"n": len(values), "unit": "turns", **extra},
            )
        )
    for kind, values in by_type.items():
        scores.append(
            Score(rid, "fact_type", kind, "fact_survival", mean(values), {"n": len(values), **extra})
        )
    return scores

