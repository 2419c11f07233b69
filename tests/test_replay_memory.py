"""A long replay saved in bounded memory (issue 22 item 3, the saved 20k-message run that peaked
at 1.4-1.6 GB): a replay keeps whole model contexts only for the calls used last and their
numbers for every call, and its payload is encoded, redacted and compressed a piece at a time,
to exactly the bytes the one-shot encoding gives; a context is stored as its refs and loaded
with one object per distinct item."""

from __future__ import annotations

import json
import tracemalloc
import zlib

import pytest

from benchmarks.bench_replay import generate
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay import driver
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.types import SentFacts
from lcm_lab.io.redaction import redact
from lcm_lab.store import replays as stored
from lcm_lab.summarizers.stub import StubV1Summarizer


@pytest.fixture(scope="module")
def long_run() -> Replay:
    # default settings at the CLI's default budget: every call sends a large context
    return replay(generate(800), LcmConfig(), StubV1Summarizer(), token_budget=128_000)


def test_a_replay_keeps_few_whole_contexts_and_the_numbers_of_every_call(long_run: Replay) -> None:
    calls = [*range(len(long_run.turns)), None]
    assert len(calls) > 2 * driver._SENT_CACHE_LIMIT
    facts = [long_run.sent_facts(k) for k in calls]
    assert len(long_run._sent_cache) == driver._SENT_CACHE_LIMIT  # before: one context per call
    assert len(long_run._sent_facts) == len(calls)
    again = replay(long_run.conversation, LcmConfig(), StubV1Summarizer(), token_budget=128_000)
    assert facts == [SentFacts.of(again.sent(k)) for k in calls]  # a fresh replay, every context whole
    first = long_run.sent(0)  # evicted long ago: assembled again, to the same context
    assert first == again.sent(0) and long_run.sent(0) is first  # and cached while it is recent
    assert facts[0].messages == len(first.items) and facts[-1].turn is None


def test_the_budget_of_a_call_is_part_of_its_key(long_run: Replay) -> None:
    small = long_run.sent_facts(5, 4000)
    assert small.token_budget == 4000 and small.estimated_tokens <= 4000 < long_run.sent_facts(5).estimated_tokens


def _one_shot(run: Replay) -> bytes:
    return zlib.compress(redact(json.dumps(stored._encode(run), ensure_ascii=False, separators=(",", ":"))).encode("utf-8"), 6)


@pytest.mark.parametrize("step", [1, 5, 4096, 1 << 20])
def test_the_payload_in_pieces_is_the_one_shot_payload(long_run: Replay, monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-lab-test-0123456789abcdef")
    monkeypatch.setattr(stored, "_PAYLOAD_STEP", step)
    secret = dict(long_run.meta, note="key sk-lab-test-0123456789abcdef in the run")
    run = Replay(**{**{f: getattr(long_run, f) for f in long_run.__dataclass_fields__}, "meta": secret})
    payload = stored.replay_to_bytes(run)
    assert payload == _one_shot(run)  # the same bytes, so the same content-derived run id
    assert "sk-lab-test" not in zlib.decompress(payload).decode()
    assert stored.replay_from_bytes(payload).turns == run.turns


def test_encoding_the_payload_holds_a_fraction_of_its_text(long_run: Replay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored, "_PAYLOAD_STEP", 1 << 16)  # (a megabyte is a small step of a big run's text)
    text = len(zlib.decompress(stored.replay_to_bytes(long_run)))
    tracemalloc.start()
    stored.replay_to_bytes(long_run)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    tracemalloc.start()
    _one_shot(long_run)
    _, before = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # one-shot: the object tree, the text and its copies; in pieces: a step's copies and the compressed bytes
    assert before > 2 * text and peak < before / 5 and peak < text / 2, (text, before, peak)


def test_contexts_are_stored_as_refs_and_shared_when_loaded(long_run: Replay, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = stored.replay_to_bytes(long_run)
    text = zlib.decompress(payload).decode()
    assert '"kind":"message"' not in text and '"ContextRefs"' in text
    loaded = stored.replay_from_bytes(payload)
    assert loaded == long_run  # exactly the run
    last, before = loaded.turns[-1].context_after, loaded.turns[-2].context_after
    assert last[0] is before[0] or last[0] in before[1:]  # the same item is one object
    distinct = {id(item) for turn in loaded.turns for item in turn.context_after}
    assert len(distinct) <= len(long_run.messages) + len(long_run.summaries)
    # a payload written before contexts were refs (an object per item) still loads, as the same run
    monkeypatch.setattr(stored, "_context_refs", lambda items: None)
    old = stored.replay_to_bytes(long_run)
    assert '"kind":"message"' in zlib.decompress(old).decode() and len(old) > len(payload)
    assert stored.replay_from_bytes(old) == long_run


def test_a_message_leaving_the_context_drops_its_parsed_metadata() -> None:
    """The parsed metadata of a message's parts is remembered while the message is in the context
    (assembly reads it every turn) and dropped when a summary replaces it or ``/new`` prunes it:
    a replay held it for every message it had seen, about 1.9 KB of its 5.4 KB per message."""
    from lcm_lab.engine.assembly.blocks import part_metadata
    from lcm_lab.engine.state import EngineState
    from lcm_lab.engine.types import METADATA_MEMO, StoredMessage, StoredPart, Summary

    def message(seq: int) -> StoredMessage:
        part = StoredPart("text", 0, text_content=f"m{seq}", metadata=json.dumps({"originalRole": "user", "raw": {"n": seq}}))
        return StoredMessage(seq, "user", f"m{seq}", 3, parts=(part,))

    state = EngineState()
    for seq in range(1, 7):
        state.append_message(message(seq))
    for seq in range(1, 7):
        assert part_metadata(state.messages[seq].parts[0]) == {"originalRole": "user", "raw": {"n": seq}}

    def remembered() -> list[int]:
        return [seq for seq, m in state.messages.items() if METADATA_MEMO in m.parts[0].__dict__]

    assert remembered() == [1, 2, 3, 4, 5, 6]
    state.add_summary(Summary("sum_a", "leaf", 0, "s", 1), 0, 2)  # messages 1-3 leave the context
    assert remembered() == [4, 5, 6]
    assert part_metadata(state.messages[1].parts[0])["raw"] == {"n": 1}  # read again: parsed again
    state.prune_for_new_session(retain_depth=0)
    assert remembered() == [1] and [item.kind for item in state.context] == ["summary"]
