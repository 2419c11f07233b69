"""Judged LoCoMo QA with the same structure as the offline proxy: ``qa_judged_retention``.

The same QA items as :mod:`lcm_lab.metrics.locomo` are answered by a model from four contexts
rendered the same way (:func:`~lcm_lab.metrics.qa_reader.reader_text`: content only) — method
(``run.sent``), ceiling (full history), floor (truncation to the budget) and chance (another
conversation truncated to the budget) — and each answer is graded CORRECT/WRONG against gold
``repeats`` times (LoCoMo "J"). Per item: mean verdict over repeats. Headline: the method's
accuracy placed between floor and ceiling, with a paired bootstrap over **items** (item
variation; repeats only average the grader's noise). With a judge at temperature 0 the repeats
are not independent samples, and ``details["repeats_independent"]`` says so.

Every call goes through the injected ``complete`` (a :class:`LedgerJudge` in production: cached
in the ledger, so the controls are paid for once per conversation × budget × model).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from lcm_lab.engine.types import Conversation
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.headline import headline
from lcm_lab.metrics.judge import Complete, call, check_repeats, model_name, repeat_independence
from lcm_lab.metrics.judge_summary import QA_ANSWER, QA_JUDGE, parse_locomo_verdict
from lcm_lab.metrics.locomo import newest_within, raw_costs, raw_texts, sent_texts, usable_items
from lcm_lab.metrics.stats import bootstrap_normalised


def judged_correct(context: str, items: Sequence[QAItem], complete: Complete, answerer: Complete, repeats: int) -> tuple[np.ndarray, list[str]]:
    """Per item: mean CORRECT over ``repeats`` judgements of one answer from ``context``."""
    values = np.zeros(len(items))
    answers: list[str] = []
    for i, item in enumerate(items):
        answer = call(answerer, QA_ANSWER, purpose="judge-locomo-answer", context=context, question=item.question)
        answers.append(answer)

        def validate(text: str, qa_id: str = item.qa_id) -> float:
            return parse_locomo_verdict(text, qa_id)

        verdicts = [validate(call(complete, QA_JUDGE, seed=r, purpose="judge-locomo", validate=validate, question=item.question,
                                  gold=str(item.answer), answer=answer)) for r in range(repeats)]
        values[i] = sum(verdicts) / repeats
    return values, answers


def qa_judged_retention_scores(
    run: Any,
    qa_items: Sequence[QAItem],
    complete: Complete,
    run_id: str,
    *,
    answer_complete: Complete | None = None,
    budget: int | None = None,
    chance_conversation: Conversation | None = None,
    repeats: int = 3,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> list[Score]:
    """``qa_judged_retention`` (headline structure) and per-item ``qa_judged_correct_<context>``."""
    check_repeats(repeats)
    answerer = answer_complete or complete
    budget = budget or run.token_budget
    items, warnings = usable_items(run.conversation, qa_items)
    history = raw_texts(run.conversation)
    contexts: dict[str, list[str]] = {"method": sent_texts(run, budget), "ceiling": history, "floor": newest_within(history, budget, raw_costs(run.conversation))}
    if chance_conversation is not None:
        contexts["chance"] = newest_within(raw_texts(chance_conversation), budget, raw_costs(chance_conversation))
    values: dict[str, np.ndarray] = {}
    answers: dict[str, list[str]] = {}
    for name in progress(list(contexts)) if progress else list(contexts):
        values[name], answers[name] = judged_correct("\n".join(contexts[name]), items, complete, answerer, repeats)
    meta = {"judge_model": model_name(complete), "answer_model": model_name(answerer), "repeats": repeats,
            "templates": {t.name: t.template_hash for t in (QA_ANSWER, QA_JUDGE)}, **repeat_independence(complete)}
    scores: list[Score] = []
    for i, item in enumerate(items):
        for name in values:
            suffix = "" if name == "method" else f"_{name}"
            scores.append(Score(run_id, "qa", item.qa_id, f"qa_judged_correct{suffix}", float(values[name][i]),
                                {"category": item.category, "question": item.question, "gold": item.answer, "answer": answers[name][i]}))
    means = {name: float(v.mean()) if v.size else None for name, v in values.items()}
    ci = bootstrap_normalised(values["method"], values["floor"], values["ceiling"]) if items else None
    extra = {**meta, "budget": budget, "warnings": dict(warnings), "paired": True, "interval": "paired bootstrap over QA items"}
    if "chance" not in values:
        extra["chance_missing"] = "no chance_conversation given: pass another conversation to compute the chance control"
    scores.append(headline(run_id, "qa_judged_retention", raw=means["method"], ceiling=means["ceiling"], floor=means["floor"],
                           chance=means.get("chance"), n=len(items), unit="qa_item", ci=ci, extra=extra))
    return scores

