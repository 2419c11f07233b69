"""LLM-judged metrics: shared machinery (prompts, parsing, repeats, intervals) and Factory-style
probe QA.

The model is injected: every function takes ``complete(messages, **params) -> str``. The
production callable is :class:`lcm_lab.summarizers.judge_model.LedgerJudge` (litellm through the
call ledger: cached, recorded with model, prompt and template hash); tests use the local fake
OpenAI server or plain functions. There is no fallback: a missing model, a failing call or an
unparseable verdict raises :class:`JudgeError`.

Hygiene: the judge only ever sees the probe, the reference answer and
the response — never the context's label, run id or strategy; each judgement is repeated
(``repeats >= 3``, each repeat with its own ``seed`` so the cache does not collapse them) and
reported with a t-interval over repeats.

Probe QA (Factory, Dec 2025): at a compaction point, probes of four kinds (recall, artifact,
continuation, decision) are generated from the raw history with reference answers, answered
from each compacted context, and judged on a 0-5 rubric of 14 criteria in 6 dimensions;
dimension = mean of its criteria, overall = mean of the dimensions.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from lcm_lab.metrics.base import Score, mean
from lcm_lab.metrics.stats import t_interval


class Complete(Protocol):
    """A chat model: ``complete(messages, **params) -> str`` (params: template_name,
    template_hash, seed, max_tokens, purpose)."""

    def __call__(self, messages: list[dict[str, str]], **params: Any) -> str: ...


class JudgeError(RuntimeError):
    """The judge could not produce a verdict (no model, call failed, output not parseable)."""


MIN_REPEATS = 3
PROBE_KINDS: tuple[str, ...] = ("recall", "artifact", "continuation", "decision")

RUBRIC: dict[str, tuple[str, ...]] = {
    "accuracy": ("accuracy_factual", "accuracy_technical"),
    "context": ("context_conversation_state", "context_artifact_state"),
    "artifact": ("artifact_files_created", "artifact_files_modified", "artifact_key_details"),
    "continuity": ("continuity_work_state", "continuity_todo_state", "continuity_reasoning"),
    "completeness": ("completeness_coverage", "completeness_depth"),
    "instruction": ("instruction_format", "instruction_constraints"),
}
CRITERIA: tuple[str, ...] = tuple(c for group in RUBRIC.values() for c in group)


@dataclass(frozen=True)
class Template:
    """A judge prompt: system text and a user text with ``{placeholders}``."""

    name: str
    system: str
    user: str

    @property
    def template_hash(self) -> str:
        return hashlib.sha256(json.dumps([self.name, self.system, self.user]).encode("utf-8")).hexdigest()

    def messages(self, **values: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user.format(**values)}]


PROBE_GENERATION = Template(
    "probe-generate-v1",
    "You write evaluation questions about a software-assistant conversation. Output JSON only.",
    "Below is the full history of a conversation up to a point where its context gets compacted.\n"
    "Write probe questions that an assistant continuing this conversation must be able to answer, "
    "one per kind: {kinds}.\n"
    "- recall: a specific earlier detail (an error message, a number, a name).\n"
    "- artifact: which files, commands or identifiers were created or changed, and how.\n"
    "- continuation: what the next step of the work is.\n"
    "- decision: what was decided about an option that was discussed, and why.\n"
    "For each give a reference answer taken from the history.\n"
    'Reply with a JSON array of objects {{"kind": ..., "question": ..., "reference": ...}}.\n\n'
    "<history>\n{history}\n</history>",
)
PROBE_ANSWER = Template(
    "probe-answer-v1",
    "You are an assistant continuing a conversation. Answer only from the context you are given; "
    "say so when the context does not contain the answer.",
    "<context>\n{context}\n</context>\n\nQuestion: {question}\nAnswer concisely.",
)
PROBE_JUDGE = Template(
    "probe-judge-v1",
    "You are an expert evaluator of assistant answers in software-development conversations. "
    "Score only what the response contains. Output JSON only.",
    "Question: {question}\n\nReference answer: {reference}\n\nResponse to evaluate:\n{response}\n\n"
    "Score each criterion from 0 (absent or wrong) through 3 (partly right) to 5 (complete and exact), "
    "with a short reason. Criteria: {criteria}.\n"
    'Reply with a JSON object {{"scores": {{<criterion>: {{"score": <0-5>, "reason": "..."}}}}}}.',
)


def parse_json(text: str, *, what: str) -> Any:
    """The first JSON object or array in a model reply (code fences allowed); JudgeError if none."""
    stripped = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    starts = sorted(i for i in (stripped.find("{"), stripped.find("[")) if i >= 0)
    for start in starts:
        try:
            value, _ = json.JSONDecoder().raw_decode(stripped[start:])
            return value
        except ValueError:
            continue
    raise JudgeError(f"{what}: the judge reply is not JSON: {text[:200]!r}")


def call(
    complete: Complete,
    template: Template,
    *,
    seed: int | None = None,
    max_tokens: int = 1024,
    purpose: str,
    validate: Callable[[str], object] | None = None,
    **values: str,
) -> str:
    """One model call with a template; empty replies are errors.

    ``validate`` (raising :class:`JudgeError` on a bad reply) is passed to the model callable
    too, so a caching client can refuse to cache replies that do not parse.
    """
    messages = template.messages(**values)
    try:
        reply = complete(
            messages, template_name=template.name, template_hash=template.template_hash, seed=seed,
            max_tokens=max_tokens, purpose=purpose, validate=validate,
        )
    except JudgeError:
        raise
    except Exception as exc:
        raise JudgeError(f"{template.name}: the model call failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(reply, str) or not reply.strip():
        raise JudgeError(f"{template.name}: the model returned an empty reply")
    if validate is not None:
        validate(reply)
    return reply


def model_name(complete: Complete) -> str:
    return str(getattr(complete, "model", getattr(complete, "__name__", type(complete).__name__)))


def check_repeats(repeats: int) -> None:
    if repeats < MIN_REPEATS:
        raise ValueError(f"judge metrics need at least {MIN_REPEATS} repeats for an interval, got {repeats}")


def repeat_independence(complete: Complete) -> dict[str, Any]:
    """Whether repeated judgements can count as independent (not at temperature 0).

    >>> repeat_independence(lambda m, **p: "")["repeats_independent"]
    False
    """
    temperature = getattr(complete, "temperature", 0.0)
    independent = bool(temperature)
    note = "" if independent else "judge at temperature 0: repeats differ only by seed and are not independent samples"
    return {"judge_temperature": temperature, "repeats_independent": independent, "repeats_note": note}


def interval_details(per_repeat: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    lo, hi = t_interval(list(per_repeat), confidence)
    return {"per_repeat": list(per_repeat), "ci_low": lo, "ci_high": hi, "confidence": confidence, "repeats": len(per_repeat)}


# -- probe QA --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    probe_id: str
    kind: str
    question: str
    reference: str


def _parse_probes(reply: str, prefix: str = "probe") -> list[Probe]:
    value = parse_json(reply, what="probe generation")
    if not isinstance(value, list) or not value:
        raise JudgeError(f"probe generation: expected a non-empty JSON array, got {reply[:200]!r}")
    probes = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping) or not all(isinstance(item.get(k), str) and item.get(k) for k in ("kind", "question", "reference")):
            raise JudgeError(f"probe generation: item {i} lacks kind/question/reference: {item!r}")
        if item["kind"] not in PROBE_KINDS:
            raise JudgeError(f"probe generation: item {i} has unknown kind {item['kind']!r}")
        probes.append(Probe(f"{prefix}-{i}", item["kind"], item["question"], item["reference"]))
    return probes


def generate_probes(history: str, complete: Complete, *, kinds: Sequence[str] = PROBE_KINDS, prefix: str = "probe") -> list[Probe]:
    """Probes with reference answers from the raw history at a compaction point."""
    reply = call(complete, PROBE_GENERATION, purpose="judge-probe-generate", validate=_parse_probes, history=history, kinds=", ".join(kinds))
    return _parse_probes(reply, prefix)


def _parse_criteria(reply: str, probe_id: str) -> dict[str, float]:
    value = parse_json(reply, what=f"probe judgement of {probe_id}")
    scores = value.get("scores") if isinstance(value, Mapping) else None
    if not isinstance(scores, Mapping):
        raise JudgeError(f"probe judgement of {probe_id}: no 'scores' object in {reply[:200]!r}")
    out: dict[str, float] = {}
    for criterion in CRITERIA:
        entry = scores.get(criterion)
        raw = entry.get("score") if isinstance(entry, Mapping) else entry
        if not isinstance(raw, int | float) or isinstance(raw, bool) or not 0 <= raw <= 5:
            raise JudgeError(f"probe judgement of {probe_id}: criterion {criterion!r} has no 0-5 score ({entry!r})")
        out[criterion] = float(raw)
    return out


def judge_response(probe: Probe, response: str, complete: Complete, *, seed: int) -> dict[str, float]:
    """Criterion scores (0-5) for one response; every criterion must be present and in range."""
    reply = call(
        complete,
        PROBE_JUDGE,
        seed=seed,
        purpose="judge-probe",
        validate=lambda text: _parse_criteria(text, probe.probe_id),
        question=probe.question,
        reference=probe.reference,
        response=response,
        criteria=", ".join(CRITERIA),
    )
    return _parse_criteria(reply, probe.probe_id)


def dimensions(criteria: Mapping[str, float]) -> dict[str, float]:
    """Dimension scores (mean of their criteria) and ``overall`` (mean of dimensions)."""
    dims = {dim: sum(criteria[c] for c in crit) / len(crit) for dim, crit in RUBRIC.items()}
    dims["overall"] = sum(dims.values()) / len(dims)
    return dims


def probe_scores(
    history: str,
    contexts: Mapping[str, str],
    complete: Complete,
    *,
    answer_complete: Complete | None = None,
    repeats: int = MIN_REPEATS,
    probes: Sequence[Probe] | None = None,
    confidence: float = 0.95,
    progress: Callable[[Sequence[Any]], Sequence[Any]] | None = None,
) -> list[Score]:
    """Probe QA scores for several compacted contexts of the same history.

    ``contexts`` maps a run id to the compacted context text; the run id becomes
    ``Score.run_id`` and is never shown to a model. Probes are generated once (or given),
    answered once per context by ``answer_complete`` (default: ``complete``) and judged
    ``repeats`` times. Scores: per probe (``scope="probe"``) each dimension and ``probe_overall``;
    per run ``probe_<dimension>`` means with t-intervals over repeats in ``details``.
    """
    check_repeats(repeats)
    answerer = answer_complete or complete
    probe_list = list(probes) if probes is not None else generate_probes(history, complete)
    meta = {
        "judge_model": model_name(complete),
        "answer_model": model_name(answerer),
        "templates": {t.name: t.template_hash for t in (PROBE_GENERATION, PROBE_ANSWER, PROBE_JUDGE)},
    }
    scores: list[Score] = []
    labels = list(contexts)
    for label in progress(labels) if progress else labels:
        context = contexts[label]
        per_repeat_dims: list[dict[str, list[float]]] = [{} for _ in range(repeats)]
        for probe in probe_list:
            response = call(answerer, PROBE_ANSWER, purpose="judge-probe-answer", context=context, question=probe.question)
            judged = [dimensions(judge_response(probe, response, complete, seed=r)) for r in range(repeats)]
            for r, dims in enumerate(judged):
                for dim, value in dims.items():
                    per_repeat_dims[r].setdefault(dim, []).append(value)
            for dim in (*RUBRIC, "overall"):
                values = [d[dim] for d in judged]
                details = {"kind": probe.kind, "question": probe.question, **interval_details(values, confidence), **meta}
                name = "probe_overall" if dim == "overall" else f"probe_{dim}"
                scores.append(Score(label, "probe", probe.probe_id, name, mean(values), details))
        for dim in (*RUBRIC, "overall"):
            per_repeat = [sum(d[dim]) / len(d[dim]) for d in per_repeat_dims]
            scores.append(Score(label, "run", "", f"probe_{dim}", mean(per_repeat), {"probes": len(probe_list), **interval_details(per_repeat, confidence), **meta}))
    return scores
