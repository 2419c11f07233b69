"""LLM-judged metrics end-to-end against the local fake OpenAI server (scripted judge outputs):
probe QA, faithfulness/coverage, LoCoMo accuracy; repeats with intervals; blind judging; caching
through the ledger; loud failures."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fakeserver import FakeOpenAIServer, Reply

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.engine.types import ContextItem, Conversation, InputEntry, StoredMessage, Summary
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.judge import CRITERIA, JudgeError, Probe, dimensions, parse_json, probe_scores
from lcm_lab.metrics.judge_summary import faithfulness, locomo_judge_scores, summary_judge_scores
from lcm_lab.store.core import LabStore
from lcm_lab.store.ledger import Ledger
from lcm_lab.summarizers import get_summarizer
from lcm_lab.summarizers.judge_model import JUDGE_MODEL_ENV, LedgerJudge, judge_from_environment

HISTORY = (
    "user: the build fails with KeyError: 'port' in src/app.py\n"
    "assistant: I changed src/app.py to read PORT from the env; we decided to use Redis for the cache.\n"
    "user: next we need to add a test for the port parsing."
)
GOOD_CONTEXT = "Summary: KeyError: 'port' fixed in src/app.py (PORT from env). Decision: Redis cache. Next: add port parsing test."
POOR_CONTEXT = "user: next we need to add a test for the port parsing."
PROBES = [
    {"kind": "recall", "question": "What was the original error?", "reference": "KeyError: 'port'"},
    {"kind": "artifact", "question": "Which file changed?", "reference": "src/app.py"},
    {"kind": "continuation", "question": "What is next?", "reference": "add a port parsing test"},
    {"kind": "decision", "question": "What cache was chosen?", "reference": "Redis"},
]
ANSWER_KEYS = {"error": "KeyError: 'port'", "file": "src/app.py", "next": "add a port parsing test", "cache": "Redis"}


def _user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def scripted_judge(body: dict[str, Any]) -> str:
    """Plays answerer and judge by looking at the request; repeats differ by seed (jitter)."""
    system = body["messages"][0]["content"]
    user = _user(body)
    seed = int(body.get("seed") or 0)
    if "evaluation questions" in system:
        return "```json\n" + json.dumps(PROBES) + "\n```"
    if "continuing a conversation" in system:
        context = user.split("</context>")[0]
        question = user.split("Question:")[1]
        key = {"error": "error", "file": "file", "next": "next", "cache": "cache"}
        for word, answer_key in key.items():
            if word in question.lower():
                answer = ANSWER_KEYS[answer_key]
                return answer if answer.split()[0] in context else "The context does not say."
        return "The context does not say."
    if "expert evaluator" in system:
        response = user.split("Response to evaluate:\n")[1].split("\n\nScore each")[0]
        good = "does not say" not in response
        base = 4 if good else 1
        scores = {c: {"score": base + (seed % 2 if good else 0), "reason": "scripted"} for c in CRITERIA}
        return json.dumps({"scores": scores})
    if "factual claims" in system:
        return json.dumps(["The port error was fixed.", "Redis was chosen.", "Postgres was removed."])
    if "check claims" in system:
        n = len(re.findall(r"^\d+\. ", user, re.M))
        verdicts = ["supported", "supported", "unsupported"] if seed != 1 else ["supported", "supported", "supported"]
        return json.dumps(verdicts[:n])
    if "yes/no questions" in system:
        return json.dumps(["Was a KeyError fixed?", "Was Redis chosen?", "Is a test planned?", "Was src/app.py changed?"])
    if "strictly from a given text" in system:
        return json.dumps(["yes", "yes", "unknown", "yes"])
    if "conversation between two people" in system:
        return "Paris" if "Paris" in user else "I don't know"
    if "grade answers" in system:
        return json.dumps({"verdict": "CORRECT" if "Answer to grade: Paris" in user and "Gold answer: Paris" in user else "WRONG"})
    raise AssertionError(f"unexpected request: {system[:60]}")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=scripted_judge) as running:
        yield running


@pytest.fixture
def fake(server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    server.clear()
    server.set_responder(scripted_judge)
    yield server


@pytest.fixture
def judge(fake: FakeOpenAIServer) -> LedgerJudge:
    return LedgerJudge("openai/judge-model", api_base=fake.base_url, api_key="sk-test-not-a-real-key", ledger=Ledger(LabStore(":memory:")),
                       backoff_base_ms=5, backoff_max_ms=20)


def test_probe_qa_end_to_end_with_repeats_blindness_and_cache(fake: FakeOpenAIServer, judge: LedgerJudge) -> None:
    contexts = {"strategy-lcm-C2": GOOD_CONTEXT, "strategy-truncation": POOR_CONTEXT}
    scores = probe_scores(HISTORY, contexts, judge, repeats=3)
    overall = {s.run_id: s for s in scores if s.scope == "run" and s.metric == "probe_overall"}
    good, poor = overall["strategy-lcm-C2"], overall["strategy-truncation"]
    assert good.value is not None and poor.value is not None and good.value > poor.value
    assert good.details["repeats"] == 3 and len(good.details["per_repeat"]) == 3
    assert good.details["ci_low"] < good.value < good.details["ci_high"]  # seed jitter -> a real interval
    # poor context: three probes unanswerable (1 each), the "next" probe answerable (4/5/4 by seed)
    assert poor.details["per_repeat"] == pytest.approx([1.75, 2.0, 1.75])
    per_probe = [s for s in scores if s.scope == "probe" and s.metric == "probe_artifact"]
    assert len(per_probe) == 8
    assert good.details["judge_model"] == "openai/judge-model"
    assert set(good.details["templates"]) == {"probe-generate-v1", "probe-answer-v1", "probe-judge-v1"}
    # Blind: no request ever names a strategy or run.
    bodies = [json.dumps(r.body) for r in fake.completion_requests]
    assert bodies and not any("strategy" in b for b in bodies)
    # 1 generation + 2 contexts x 4 probes x (1 answer + 3 judgements); both contexts answer the
    # "next" probe identically, so its 3 judgements of the second context come from the cache.
    calls = judge.ledger.calls()  # type: ignore[union-attr]
    assert len(calls) == 1 + 2 * 4 * 4
    assert sum(c["cache_hit"] for c in calls) == 3 and len(fake.completion_requests) == 30
    assert {c["purpose"] for c in calls} == {"judge-probe-generate", "judge-probe-answer", "judge-probe"}
    assert all(c["template_hash"] for c in calls)
    # Everything again: served from the ledger, no HTTP.
    fake.clear()
    again = probe_scores(HISTORY, contexts, judge, repeats=3)
    assert fake.completion_requests == []
    assert [(s.run_id, s.scope_id, s.metric, s.value) for s in again] == [(s.run_id, s.scope_id, s.metric, s.value) for s in scores]


def test_summary_faithfulness_and_coverage(fake: FakeOpenAIServer, judge: LedgerJudge) -> None:
    messages = (StoredMessage(1, "user", HISTORY, 60),)
    summary = Summary("sum_1", "leaf", 0, GOOD_CONTEXT, 30, source_message_seqs=(1,))
    dag = Dag(messages, (summary,), (ContextItem.summary("sum_1"),))
    scores = summary_judge_scores(dag, judge, "run-x", repeats=3, questions=4)
    by = {(s.scope, s.metric): s for s in scores}
    faith = by[("summary", "faithfulness")]
    assert faith.value == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)
    assert faith.details["not_supported"] == {"Postgres was removed.": 2}
    assert by[("summary", "coverage")].value == pytest.approx(0.75)
    assert by[("summary", "summary_quality")].value == pytest.approx(min(faith.value, 0.75))  # type: ignore[arg-type]
    assert by[("run", "mean_faithfulness")].details["n"] == 1


def test_locomo_accuracy_against_gold(fake: FakeOpenAIServer, judge: LedgerJudge) -> None:
    entries = []
    for i, (role, text) in enumerate([("user", "I moved to Paris last May."), ("assistant", "How is Paris?"), ("user", "Great, thanks.")]):
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        entries.append(InputEntry(i + 2, "message", {"role": role, "content": content, "timestamp": 1_700_000_000_000 + i * 1000}, entry_id=f"D1:{i + 1}"))
    rep = replay(Conversation("qa", entries=tuple(entries)), LcmConfig(), get_summarizer("offline"), token_budget=8000, run_id="qa")
    items = [
        QAItem("q0", "Where did she move?", "Paris", 4, ("D1:1",)),
        QAItem("q1", "When did she move?", "May 2023", 2, ("D1:1",)),
        QAItem("q2", "Adversarial?", None, 5, ("D1:1",), adversarial_answer="x"),
    ]
    scores = locomo_judge_scores(rep, items, judge, "qa", repeats=3)
    per = {s.scope_id: s.value for s in scores if s.metric == "qa_judged_correct"}
    assert per == {"q0": 1.0, "q1": 0.0}
    run = next(s for s in scores if s.scope == "run")
    assert run.value == 0.5 and run.details["n"] == 2 and run.details["repeats"] == 3
    assert {s.scope_id for s in scores if s.scope == "category"} == {"2", "4"}


def test_failures_are_loud(fake: FakeOpenAIServer, judge: LedgerJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    probes = [Probe("p0", "recall", "What was the error?", "KeyError")]
    fake.enqueue(Reply(text="fine"), *[Reply(status=500)] * 4)  # the first try and three retries
    with pytest.raises(JudgeError, match="failed"):
        probe_scores(HISTORY, {"a": GOOD_CONTEXT}, judge, probes=probes, repeats=3)
    errors = [c for c in judge.ledger.calls() if c["error_class"]]  # type: ignore[union-attr]
    assert errors and errors[0]["cacheable"] is False
    # The answer "fine" is cached now; the judge replies below are consumed by judgements.
    fake.enqueue(Reply(text="I think it deserves a 4."))
    with pytest.raises(JudgeError, match="not JSON"):
        probe_scores(HISTORY, {"b": GOOD_CONTEXT}, judge, probes=probes, repeats=3)
    fake.enqueue(Reply(text=json.dumps({"scores": {"accuracy_factual": {"score": 9}}})))
    with pytest.raises(JudgeError, match="0-5 score"):
        probe_scores(HISTORY, {"c": GOOD_CONTEXT}, judge, probes=probes, repeats=3)
    invalid = [c for c in judge.ledger.calls() if c["error_class"] == "invalid_output"]  # type: ignore[union-attr]
    assert len(invalid) == 2 and not any(c["cacheable"] for c in invalid)
    # Unparseable replies were not cached: with a working model the same request now succeeds.
    assert probe_scores(HISTORY, {"c": GOOD_CONTEXT}, judge, probes=probes, repeats=3)
    fake.enqueue(Reply(text=None))
    with pytest.raises(JudgeError, match="empty"):
        faithfulness("s", "src", LedgerJudge("openai/j2", api_base=fake.base_url, api_key="k"), repeats=3)
    with pytest.raises(ValueError, match="at least 3 repeats"):
        probe_scores(HISTORY, {"d": GOOD_CONTEXT}, judge, probes=probes, repeats=2)
    monkeypatch.delenv(JUDGE_MODEL_ENV, raising=False)
    with pytest.raises(JudgeError, match="no judge model configured"):
        judge_from_environment()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(JudgeError, match="needs an API key"):
        LedgerJudge("openai/gpt-4o-mini")


def test_plain_callable_judge_and_helpers() -> None:
    assert parse_json('prefix {"a": [1, 2]} suffix', what="x") == {"a": [1, 2]}
    dims = dimensions(dict.fromkeys(CRITERIA, 3.0))
    assert dims["overall"] == 3.0 and set(dims) == {"accuracy", "context", "artifact", "continuity", "completeness", "instruction", "overall"}

    def constant(messages: list[dict[str, str]], **params: Any) -> str:
        return scripted_judge({"messages": messages, "seed": params.get("seed")})

    scores = probe_scores(HISTORY, {"only": GOOD_CONTEXT}, constant, repeats=4)
    run = next(s for s in scores if s.scope == "run" and s.metric == "probe_overall")
    assert run.details["repeats"] == 4 and not math.isnan(run.details["ci_low"])


def test_transient_failures_are_retried_honouring_retry_after(fake: FakeOpenAIServer, judge: LedgerJudge) -> None:
    fake.enqueue(Reply(status=429, headers={"Retry-After": "1"}), Reply(status=503), Reply(text="4"))
    started = time.monotonic()
    assert judge([{"role": "user", "content": "rate this"}], purpose="judge-test") == "4"
    assert time.monotonic() - started >= 0.9  # waited as the provider asked, not the 5 ms backoff
    classes = [c["error_class"] for c in judge.ledger.calls()]  # type: ignore[union-attr]
    assert classes == ["rate_limit", "server_error", None]
def test_judged_qa_retention_has_the_proxy_structure(fake: FakeOpenAIServer, judge: LedgerJudge) -> None:
    from lcm_lab.metrics.judge_qa import qa_judged_retention_scores
    from lcm_lab.summarizers.controls import ControlRun

    def conv(name: str, texts: list[str]) -> Conversation:
        return Conversation(name, entries=tuple(
            InputEntry(i + 2, "message", {"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "text", "text": t}], "timestamp": i},
                       entry_id=f"D1:{i + 1}") for i, t in enumerate(texts)))

    filler = [f"We talked about the weather on day {i} and nothing else of note." for i in range(12)]
    history = conv("qa", ["I moved to Paris last May.", *filler])
    other = conv("other", [f"Jon danced in Berlin on day {i}." for i in range(20)])
    items = [QAItem("q0", "Where did she move?", "Paris", 4, ("D1:1",)), QAItem("q1", "Adversarial?", None, 5, ("D1:1",))]
    budget = sum(len(t) for t in filler) // 4  # the floor holds the filler only
    truncation = qa_judged_retention_scores(ControlRun(history, budget), items, judge, "t", chance_conversation=other, repeats=3)
    full = qa_judged_retention_scores(ControlRun(history, budget, full=True), items, judge, "f", chance_conversation=other, repeats=3)
    head_t = next(s for s in truncation if s.metric == "qa_judged_retention")
    head_f = next(s for s in full if s.metric == "qa_judged_retention")
    assert (head_t.details["ceiling"], head_t.details["floor"], head_t.details["chance"]) == (1.0, 0.0, 0.0)
    assert head_t.value == 0.0 and head_f.value == 1.0 and head_f.details["unit"] == "qa_item"
    assert head_f.details["repeats_independent"] is False and "temperature 0" in head_f.details["repeats_note"]
    assert head_f.details["warnings"] == {"skipped: adversarial (category 5, unanswerable by design)": 1}
    per = {s.metric: s.value for s in full if s.scope == "qa"}
    assert per == {"qa_judged_correct": 1.0, "qa_judged_correct_ceiling": 1.0, "qa_judged_correct_floor": 0.0, "qa_judged_correct_chance": 0.0}
    # every call went through the ledger; the controls were answered once and then served from the cache
    calls = judge.ledger.calls()  # type: ignore[union-attr]
    assert any(c["cache_hit"] for c in calls)


def test_pairwise_judging_swaps_positions(fake: FakeOpenAIServer, judge: LedgerJudge) -> None:
    from lcm_lab.metrics.judge_pairwise import SummaryPair, pairwise_scores

    def responder(body: dict[str, Any]) -> str:
        user = _user(body)
        first = user.split("<summary_1>\n")[1].split("\n</summary_1>")[0]
        if "biased" in user:  # a judge that always picks the first position
            return json.dumps({"winner": "1"})
        return json.dumps({"winner": "1" if "Redis" in first else "2"})

    fake.set_responder(responder)
    pairs = [SummaryPair("p0", HISTORY, "Decision: Redis cache; KeyError fixed.", "Some work happened."),
             SummaryPair("p1", HISTORY, "Nothing.", "We chose Redis."),
             SummaryPair("p2", HISTORY + " biased", "x", "y")]
    scores = pairwise_scores(pairs, judge, "ab", repeats=3)
    per = {s.scope_id: s.value for s in scores if s.scope == "summary"}
    assert per == {"p0": 1.0, "p1": -1.0, "p2": 0.0}  # the position-following judge earns a tie, not a win
    run = next(s for s in scores if s.scope == "run")
    assert run.details["position_inconsistent"] == 3 and run.details["judgements"] == 18 and run.details["unit"] == "summary pair"
    assert run.details["ci_low"] <= run.value <= run.details["ci_high"]
