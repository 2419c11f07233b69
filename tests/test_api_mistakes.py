"""What a notebook user passes by mistake to the library is a typed lab.UserError naming the fix, not
an AttributeError from deep in the engine (hostile round 4, Q12)."""

from __future__ import annotations

from pathlib import Path

import pytest

import lcm_lab as lab

SESSION = Path(__file__).resolve().parents[1] / "datasets" / "lossless-claw-ref" / "golden-session.jsonl"


@pytest.fixture(scope="module")
def read() -> lab.TranscriptRead:
    return lab.read_transcript(SESSION)


def test_a_summarizer_given_by_name_says_how_to_get_one(read: lab.TranscriptRead) -> None:
    with pytest.raises(lab.UserError, match=r"got str \(for 'offline': lcm_lab.get_summarizer\('offline'\)\)"):
        lab.replay(read.conversations[0].conversation, lab.LcmConfig(), "offline", token_budget=8000)  # type: ignore[arg-type]
    with pytest.raises(lab.UserError, match="got none"):
        lab.replay(read.conversations[0].conversation, lab.LcmConfig(), None, token_budget=8000)


def test_a_mapping_of_plugin_keys_for_a_config_names_the_constructor(read: lab.TranscriptRead) -> None:
    with pytest.raises(lab.UserError, match=r"got dict \(plugin keys: LcmConfig.from_plugin_config"):
        lab.replay(read.conversations[0].conversation, {"freshTailCount": 4}, lab.get_summarizer("offline"))  # type: ignore[arg-type]
    config = lab.LcmConfig.from_plugin_config({"freshTailCount": 4})  # the constructor it names works
    assert lab.replay(read.conversations[0].conversation, config, lab.get_summarizer("offline")).turns


def test_the_read_result_for_a_conversation_says_to_take_its_conversation(read: lab.TranscriptRead) -> None:
    with pytest.raises(lab.UserError, match=r"got LoadedConversation \(this holds one: pass its .conversation\)"):
        lab.replay(read.conversations[0], lab.LcmConfig(), lab.get_summarizer("offline"))  # type: ignore[arg-type]


def test_compare_with_a_misspelt_metric_names_the_close_one(read: lab.TranscriptRead) -> None:
    run = lab.replay(read.conversations[0].conversation, lab.LcmConfig(), lab.get_summarizer("offline"), token_budget=4000)
    scores = {"a": lab.score_replay(run)}
    with pytest.raises(lab.UserError, match=r"metric 'fact_retension' was not found in any run; did you mean 'fact_retention'\?"):
        lab.compare(scores, ["fact_retension"])
    one = lab.compare(scores, "fact_retention")  # one name, not its letters
    assert list(one.metric.unique()) == ["fact_retention"]
