"""qa_retention: a reader that needs the question, controls fixed per conversation x budget,
data warnings counted, and adversarial contexts (bare lists, keyword soup, another conversation,
nothing) that must earn no credit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lcm_lab.engine.types import AssembledItem, Conversation, InputEntry, SentContext
from lcm_lab.io.model import LoadedConversation, QAItem
from lcm_lab.io.transcripts.locomo import read_locomo_json
from lcm_lab.metrics.locomo import newest_within, qa_retention_scores, raw_texts, usable_items
from lcm_lab.metrics.qa_reader import Bm25Index, passages, reader_text
from lcm_lab.summarizers.controls import ControlRun

REPO = Path(__file__).resolve().parents[1]
LOCOMO = REPO / "datasets" / "locomo" / "locomo10.json"

QUESTIONS = [
    ("When did Caroline go to the LGBTQ support group?", "7 May 2023"),
    ("What did Caroline research?", "Adoption agencies"),
    ("Where did Melanie go camping?", "the mountains"),
    ("What instrument does Melanie play?", "clarinet"),
]
PROSE = [
    "Caroline went to the LGBTQ support group on 7 May 2023 and found it powerful.",
    "Caroline has been researching adoption agencies for weeks.",
    "Melanie went camping in the mountains with her kids last summer.",
    "Melanie plays the clarinet in a community band.",
]
ENTITIES = "Caroline, Melanie, LGBTQ, 7 May 2023, adoption agencies, the mountains, clarinet, Sweden, 2022, pottery"


def recall(texts: list[str]) -> list[float]:
    questions, answers = zip(*QUESTIONS, strict=True)
    return Bm25Index.of_texts(texts).answer_recall(list(questions), list(answers)).tolist()


def test_prose_with_the_answer_is_credited() -> None:
    assert recall(PROSE) == [1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    "attack",
    [
        ENTITIES,  # comma list of every candidate answer
        ENTITIES.replace(", ", "\n"),  # one per line
        ENTITIES.replace(", ", "; "),
        "- " + ENTITIES.replace(", ", "\n- "),  # bullets
        ENTITIES.replace(",", ""),  # keyword soup without separators
        "Entities: " + ENTITIES + "\nDates: 7 May 2023, 8 May 2023, 2022, 2023",
    ],
)
def test_bare_lists_earn_nothing(attack: str) -> None:
    assert recall([attack]) == [0.0, 0.0, 0.0, 0.0]
    # ... even next to unrelated prose that carries the question's words
    assert recall([attack, "Caroline and Melanie talked about the support group, research, camping and music."]) == [0.0] * 4


def test_nothing_and_unrelated_text_earn_nothing() -> None:
    assert recall([]) == [0.0] * 4
    assert recall(["The conversation continued."]) == [0.0] * 4
    assert recall(["Jon opened a dance studio in Paris.", "Gina lost her job at the bank in 2023."]) == [0.0] * 4


def test_answer_without_the_question_context_is_not_retrieved() -> None:
    # the answer string is present, but in a passage unrelated to the question
    assert recall(["We had pizza on 7 May 2023.", "I like adoption agencies documentaries."])[0] == 0.0


def test_metadata_is_stripped_from_every_context() -> None:
    summary = {"content": '<summary id="s" earliest_at="2023-05-07T10:00:00"><content>\n[2023-05-07 10:00 UTC | user]\nI went hiking.\n</content></summary>'}
    assert reader_text(summary) == "I went hiking."
    assert "2023" not in " ".join(passages(reader_text(summary)))


def _conversation(texts: list[str], name: str) -> Conversation:
    entries = tuple(
        InputEntry(i + 2, "message", {"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "text", "text": t}], "timestamp": i},
                   entry_id=f"D1:{i + 1}")
        for i, t in enumerate(texts)
    )
    return Conversation(name, entries=entries)


class SentOnlyRun:
    """A run of another strategy: only sent/conversation/token_budget/turns; assemble raises."""

    def __init__(self, conversation: Conversation, texts: list[str], budget: int) -> None:
        self.conversation, self.token_budget, self.turns = conversation, budget, (object(), object())
        self._items = tuple(AssembledItem("user", "live", None, {"role": "user", "content": t}, 10) for t in texts)

    def sent(self, turn: int | None = None, budget: int | None = None) -> SentContext:
        return SentContext(budget or self.token_budget, 10 * len(self._items), "test", False, self._items, turn=turn)

    def assemble(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("context-based scores must read run.sent(), never run.assemble()")


def _items() -> list[QAItem]:
    return [QAItem(f"q{i}", q, a, 4, ("D1:1",)) for i, (q, a) in enumerate(QUESTIONS)]


def test_scores_read_only_what_the_model_receives() -> None:
    filler = [f"Filler message number {i} about the weather and the news." for i in range(40)]
    conv = _conversation(PROSE + filler, "c1")
    other = _conversation([f"Jon talked about dancing, day {i}." for i in range(60)], "c2")
    budget = sum(len(t) for t in filler) // 4  # the floor holds the filler only
    run = SentOnlyRun(conv, PROSE[:2], budget)
    scores = qa_retention_scores(run, _items(), "r", chance_conversation=other)
    head = next(s for s in scores if s.metric == "qa_retention")
    d = head.details
    assert (d["raw"], d["ceiling"], d["floor"], d["chance"]) == (0.5, 1.0, 0.0, 0.0)
    assert head.value == pytest.approx(0.5) and d["unit"] == "qa_item" and d["n"] == 4 and d["proxy"] is True
    assert d["ci_low"] <= 0.5 <= d["ci_high"] and d["turns"] == 2
    assert {s.scope for s in scores} == {"qa", "category", "run"}


def test_missing_chance_control_is_reported_not_invented() -> None:
    conv = _conversation(PROSE, "c1")
    scores = qa_retention_scores(SentOnlyRun(conv, PROSE, 10), _items(), "r")
    head = next(s for s in scores if s.metric == "qa_retention")
    assert head.details["chance"] is None and "chance_conversation" in head.details["chance_missing"]


def test_gap_below_minimum_is_withheld() -> None:
    conv = _conversation(PROSE, "c1")
    scores = qa_retention_scores(SentOnlyRun(conv, PROSE, 10_000), _items(), "r")  # floor = ceiling = everything
    head = next(s for s in scores if s.metric == "qa_retention")
    assert head.value is None and "scale is undefined" in head.details["withheld"]


def test_bad_annotations_are_counted_not_raised() -> None:
    conv = _conversation(PROSE, "c1")
    items = [
        QAItem("a", "Where did Melanie go camping?", "the mountains", 4, ("D:11:26",)),
        QAItem("b", "What?", "", 1, ("D1:1",)),
        QAItem("c", "What did Caroline say?", "nothing", 5, ("D1:1",)),
        QAItem("d", "What?", "the", 1, ("D1:1",)),
        QAItem("e", "What instrument does Melanie play?", "clarinet", 4, ()),
    ]
    usable, warnings = usable_items(conv, items)
    assert [i.qa_id for i in usable] == ["a", "e"]
    assert sum(warnings.values()) == 5 and warnings["kept: evidence id names no dialogue line"] == 1


@pytest.fixture(scope="module")
def locomo() -> list[LoadedConversation]:
    return list(read_locomo_json(LOCOMO).conversations)


def test_all_ten_locomo_conversations_score(locomo: list[LoadedConversation]) -> None:
    assert len(locomo) == 10
    warnings = 0
    for i, conv in enumerate(locomo):
        other = locomo[(i + 1) % 10].conversation
        scores = qa_retention_scores(ControlRun(conv.conversation, 4000), conv.qa_items, "t", chance_conversation=other)
        head = next(s for s in scores if s.metric == "qa_retention")
        assert head.value is not None and np.isfinite(head.value), head.details
        assert head.value == 0.0  # truncation is the floor, rendered identically
        full = qa_retention_scores(ControlRun(conv.conversation, 4000, full=True), conv.qa_items, "t", chance_conversation=other)
        assert next(s for s in full if s.metric == "qa_retention").value == 1.0
        assert head.details["chance"] <= head.details["floor"]
        warnings += sum(head.details["warnings"].values())
    assert warnings > 0  # adversarial items and bad evidence ids exist in the published file


def test_controls_are_cached_per_conversation_and_budget(locomo: list[LoadedConversation]) -> None:
    conv = locomo[1]
    history = raw_texts(conv.conversation)
    assert newest_within(history, 2000) == newest_within(history, 2000)
    a = qa_retention_scores(ControlRun(conv.conversation, 2000), conv.qa_items, "a", chance_conversation=locomo[2].conversation)
    b = qa_retention_scores(ControlRun(conv.conversation, 2000, full=True), conv.qa_items, "b", chance_conversation=locomo[2].conversation)
    ha, hb = (next(s for s in x if s.metric == "qa_retention").details for x in (a, b))
    assert (ha["ceiling"], ha["floor"], ha["chance"]) == (hb["ceiling"], hb["floor"], hb["chance"])
