"""LLM-judged summary quality and LoCoMo answer accuracy.

* **faithfulness** (FActScore / DeepEval alignment): atomic claims are extracted from a summary
  and each is checked against the summary's sources (raw messages for a leaf, input summaries for
  a condensed node); value = supported claims / claims.
* **coverage** (DeepEval / Ragas): closed questions whose answer is "yes" according to the
  sources are generated; value = share answered "yes" from the summary alone.
* ``summary_quality = min(faithfulness, coverage)``.
* **LoCoMo answer accuracy**: a question is answered from a replay's assembled context, and the
  judge decides whether the answer matches the gold answer (binary, like the "J" metric).

Claims and questions are generated once; the verification step is repeated ``repeats`` times
(different seeds) and each value carries a t-interval over repeats.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lcm_lab.io.model import QAItem
from lcm_lab.metrics.base import Score, assembled_message_text, mean
from lcm_lab.metrics.judge import (
    Complete,
    JudgeError,
    Template,
    call,
    check_repeats,
    interval_details,
    model_name,
    parse_json,
    repeat_independence,
)
from lcm_lab.metrics.locomo import CATEGORY_NAMES
from lcm_lab.metrics.stats import bootstrap_interval

CLAIMS = Template(
    "summary-claims-v1",
    "You split text into short, self-contained factual claims. Output JSON only.",
    "List every factual claim made by this summary, one short sentence each.\n"
    'Reply with a JSON array of strings.\n\n<summary>\n{summary}\n</summary>',
)
VERIFY = Template(
    "summary-verify-v1",
    "You check claims against a source text. Output JSON only.",
    "<source>\n{source}\n</source>\n\nFor each numbered claim decide whether the source supports it: "
    '"supported", "contradicted" or "unsupported" (not stated).\n{claims}\n'
    'Reply with a JSON array of verdict strings, one per claim, in order.',
)
QUESTIONS = Template(
    "summary-questions-v1",
    "You write closed yes/no questions about a text. Output JSON only.",
    "Write {n} yes/no questions about important specifics of this text whose answer, according to the text, "
    "is yes.\nReply with a JSON array of strings.\n\n<text>\n{source}\n</text>",
)
ANSWER_YES_NO = Template(
    "summary-answer-v1",
    "You answer questions strictly from a given text. Output JSON only.",
    "<text>\n{summary}\n</text>\n\nAnswer each numbered question with \"yes\", \"no\" or \"unknown\" (the text does "
    "not say), using only the text.\n{questions}\nReply with a JSON array of answers, one per question, in order.",
)
QA_ANSWER = Template(
    "locomo-answer-v1",
    "You answer questions about a conversation between two people using only the context given.",
    "<context>\n{context}\n</context>\n\nQuestion: {question}\nAnswer in a few words.",
)
QA_JUDGE = Template(
    "locomo-judge-v1",
    "You grade answers against a gold answer. Be generous about wording, strict about facts. Output JSON only.",
    "Question: {question}\nGold answer: {gold}\nAnswer to grade: {answer}\n"
    'Does the answer convey the same fact as the gold answer? Reply {{"verdict": "CORRECT"}} or {{"verdict": "WRONG"}}.',
)
VERDICTS = ("supported", "contradicted", "unsupported")


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i + 1}. {item}" for i, item in enumerate(items))


def _string_list(reply: str, what: str) -> list[str]:
    value = parse_json(reply, what=what)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise JudgeError(f"{what}: expected a JSON array of strings, got {reply[:200]!r}")
    return [v.strip() for v in value if v.strip()]


def _labels(reply: str, n: int, allowed: Sequence[str], what: str) -> list[str]:
    values = [v.lower() for v in _string_list(reply, what)]
    if len(values) != n or any(v not in allowed for v in values):
        raise JudgeError(f"{what}: expected {n} of {allowed}, got {values!r}")
    return values


def faithfulness(summary: str, source: str, complete: Complete, *, repeats: int = 3) -> tuple[float | None, dict[str, Any]]:
    """Share of the summary's claims the source supports, mean over repeats (None: no claims)."""
    check_repeats(repeats)
    def parse_claims(text: str) -> list[str]:
        return _string_list(text, "claim extraction")

    claims = parse_claims(call(complete, CLAIMS, purpose="judge-claims", validate=parse_claims, summary=summary))
    if not claims:
        return None, {"claims": 0, "reason": "summary makes no claims"}
    per_repeat: list[float] = []
    unsupported: dict[str, int] = defaultdict(int)
    def parse_verdicts(text: str) -> list[str]:
        return _labels(text, len(claims), VERDICTS, "claim verification")

    for r in range(repeats):
        verdicts = parse_verdicts(call(complete, VERIFY, seed=r, purpose="judge-verify", validate=parse_verdicts, source=source, claims=_numbered(claims)))
        per_repeat.append(sum(v == "supported" for v in verdicts) / len(claims))
        for claim, verdict in zip(claims, verdicts, strict=True):
            if verdict != "supported":
                unsupported[claim] += 1
    details = {"claims": len(claims), "not_supported": dict(unsupported), **interval_details(per_repeat)}
    return mean(per_repeat), details


def coverage(summary: str, source: str, complete: Complete, *, questions: int = 5, repeats: int = 3) -> tuple[float | None, dict[str, Any]]:
    """Share of source yes-questions the summary alone answers "yes", mean over repeats."""
    check_repeats(repeats)
    def parse_questions(text: str) -> list[str]:
        return _string_list(text, "question generation")

    asked = parse_questions(call(complete, QUESTIONS, purpose="judge-questions", validate=parse_questions, source=source, n=str(questions)))
    if not asked:
        raise JudgeError("question generation returned no questions")
    per_repeat: list[float] = []
    def parse_answers(text: str) -> list[str]:
        return _labels(text, len(asked), ("yes", "no", "unknown"), "coverage answers")

    for r in range(repeats):
        answers = parse_answers(call(complete, ANSWER_YES_NO, seed=r, purpose="judge-coverage", validate=parse_answers, summary=summary, questions=_numbered(asked)))
        per_repeat.append(sum(a == "yes" for a in answers) / len(asked))
    return mean(per_repeat), {"questions": asked, **interval_details(per_repeat)}


def summary_judge_scores(
    dag: Any,
    complete: Complete,
    run_id: str,
    *,
    summary_ids: Sequence[str] | None = None,
    repeats: int = 3,
    questions: int = 5,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> list[Score]:
    """``faithfulness``, ``coverage`` and ``summary_quality`` per summary of a
    :class:`~lcm_lab.metrics.dag.Dag` (all summaries unless ``summary_ids``), plus run means."""
    from lcm_lab.metrics.base import message_text

    meta = {"judge_model": model_name(complete), "templates": {t.name: t.template_hash for t in (CLAIMS, VERIFY, QUESTIONS, ANSWER_YES_NO)}}
    chosen = [dag.summary_by_id[s] for s in summary_ids] if summary_ids is not None else list(dag.summaries)
    scores: list[Score] = []
    for summary in progress(chosen) if progress else chosen:
        if summary.source_summary_ids:
            source = "\n\n".join(dag.summary_by_id[s].content for s in summary.source_summary_ids if s in dag.summary_by_id)
        else:
            source = "\n\n".join(f"[{m.role}] {message_text(m)}" for m in (dag.message_by_seq.get(s) for s in summary.source_message_seqs) if m)
        if not source.strip():
            raise JudgeError(f"summary {summary.summary_id} has no source text to judge against")
        faith, faith_details = faithfulness(summary.content, source, complete, repeats=repeats)
        cover, cover_details = coverage(summary.content, source, complete, questions=questions, repeats=repeats)
        base = {"depth": summary.depth, "kind": summary.kind, **meta}
        scores.append(Score(run_id, "summary", summary.summary_id, "faithfulness", faith, base | faith_details))
        scores.append(Score(run_id, "summary", summary.summary_id, "coverage", cover, base | cover_details))
        quality = min(faith, cover) if faith is not None and cover is not None else None
        scores.append(Score(run_id, "summary", summary.summary_id, "summary_quality", quality, base))
    for metric in ("faithfulness", "coverage", "summary_quality"):
        values = [s.value for s in scores if s.metric == metric and s.value is not None]
        scores.append(Score(run_id, "run", "", f"mean_{metric}", mean(values), {"n": len(values), **meta}))
    return scores


def parse_locomo_verdict(text: str, qa_id: str) -> float:
    """1.0 for ``{"verdict": "CORRECT"}``, 0.0 for WRONG; anything else is a :class:`JudgeError`."""
    value = parse_json(text, what=f"LoCoMo judgement of {qa_id}")
    verdict = value.get("verdict") if isinstance(value, Mapping) else None
    if verdict not in ("CORRECT", "WRONG"):
        raise JudgeError(f"LoCoMo judgement of {qa_id}: verdict must be CORRECT or WRONG, got {text[:200]!r}")
    return 1.0 if verdict == "CORRECT" else 0.0


def locomo_judge_scores(
    replay: Any,
    qa_items: Sequence[QAItem],
    complete: Complete,
    run_id: str,
    *,
    answer_complete: Complete | None = None,
    budget: int | None = None,
    repeats: int = 3,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> list[Score]:
    """LoCoMo answer accuracy from the replay's final assembled context, judged against gold.

    Category 5 (adversarial) items are skipped. Per item ``qa_judged_correct`` (mean over
    repeats); per category and run ``qa_judged_accuracy`` with a t-interval over repeats.
    """
    check_repeats(repeats)
    answerer = answer_complete or complete
    sent = replay.sent(None, budget)
    context = "\n\n".join(assembled_message_text(item.message) for item in sent.items)
    meta = {
        "judge_model": model_name(complete),
        "answer_model": model_name(answerer),
        "templates": {t.name: t.template_hash for t in (QA_ANSWER, QA_JUDGE)},
        "context_tokens": sent.estimated_tokens,
    }
    per_repeat: dict[str, list[list[float]]] = defaultdict(lambda: [[] for _ in range(repeats)])
    per_item: dict[str, list[float]] = defaultdict(list)
    scores: list[Score] = []
    items = [q for q in qa_items if q.category != 5 and q.answer]
    for item in progress(items) if progress else items:
        answer = call(answerer, QA_ANSWER, purpose="judge-locomo-answer", context=context, question=item.question)

        def parse_verdict(text: str, qa_id: str = item.qa_id) -> float:
            return parse_locomo_verdict(text, qa_id)

        verdicts = [
            parse_verdict(call(complete, QA_JUDGE, seed=r, purpose="judge-locomo", validate=parse_verdict, question=item.question, gold=str(item.answer), answer=answer))
            for r in range(repeats)
        ]
        category = str(item.category)
        for key in (category, "all"):
            per_item[key].append(mean(verdicts) or 0.0)
            for r, v in enumerate(verdicts):
                per_repeat[key][r].append(v)
        details = {"category": item.category, "question": item.question, "gold": item.answer, "answer": answer, **interval_details(verdicts), **meta}
        scores.append(Score(run_id, "qa", item.qa_id, "qa_judged_correct", mean(verdicts), details))
    for key, repeats_values in sorted(per_repeat.items()):
        accuracy = [sum(v) / len(v) for v in repeats_values]
        scope, scope_id = ("run", "") if key == "all" else ("category", key)
        # the interval is over QA items (item variation); the repeats' spread is kept apart
        lo, hi = bootstrap_interval(per_item[key])
        over_repeats = interval_details(accuracy)
        extra = {"n": len(repeats_values[0]), **over_repeats, "ci_low": lo, "ci_high": hi, "interval": "bootstrap over QA items",
                 "repeat_ci_low": over_repeats["ci_low"], "repeat_ci_high": over_repeats["ci_high"], **meta, **repeat_independence(complete)}
        if key != "all":
            extra["category_name"] = CATEGORY_NAMES.get(int(key), "unknown")
        scores.append(Score(run_id, scope, scope_id, "qa_judged_accuracy", mean(accuracy), extra))
    return scores
