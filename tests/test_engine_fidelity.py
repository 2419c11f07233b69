"""``fidelity="fixed"`` changes exactly the documented quirks; "faithful" is the plugin."""

from __future__ import annotations

import json

from test_engine_scenarios import Scripted, compactor, leaf, message

from lcm_lab.engine.quirks import QUIRKS, describe
from lcm_lab.engine.types import ContextItem, StoredMessage, StoredPart


def make(fidelity: str, *args, **kwargs):
    c, s = compactor(*args, **kwargs)
    c.fidelity, c.fixed = fidelity, fidelity == "fixed"
    c.state.include_sender_tokens = not c.fixed
    return c, s


def words(n: int) -> str:
    return "ab " * (n * 4 // 3)


def test_every_quirk_is_documented_and_switchable_ones_say_how() -> None:
    assert [q.number for q in QUIRKS] == list(range(1, 10))
    assert sum(q.fixed is not None for q in QUIRKS) == 7
    assert "fixed:" in describe()


def test_quirk_2_whole_backlog_vs_stop_under_threshold() -> None:
    msgs = [message(i + 1, words(200)) for i in range(10)]
    counts = {}
    for fidelity in ("faithful", "fixed"):
        c, s = make(fidelity, msgs, fresh_tail_count=2, leaf_chunk_tokens=400)
        c.compact_threshold(2600)  # threshold 1950: one leaf pass is enough
        counts[fidelity] = len(s.requests)
    assert counts == {"faithful": 4, "fixed": 1}


def test_quirk_3_first_leaf_pass_previous_context() -> None:
    prior = leaf(1, content="Earlier work summary.")
    msgs = [message(i + 1, words(200)) for i in range(6)]
    seen = {}
    for fidelity in ("faithful", "fixed"):
        c, s = make(fidelity, msgs, [prior], fresh_tail_count=2, leaf_chunk_tokens=400)
        c.full_sweep(100, force=True)
        seen[fidelity] = s.requests[0].previous_summary
    assert seen == {"faithful": None, "fixed": "Earlier work summary."}


def test_quirk_4_equality_with_target() -> None:
    msgs = [message(i + 1, words(100)) for i in range(8)]
    rounds = {}
    for fidelity in ("faithful", "fixed"):
        c, _ = make(fidelity, msgs, fresh_tail_count=2, leaf_chunk_tokens=200)
        target = c.state.stored_tokens()
        rounds[fidelity] = c.compact_until_under(10_000, target_tokens=target)[1]
    assert rounds["faithful"] >= 1 and rounds["fixed"] == 0


def test_quirk_5_condensation_tail_override() -> None:
    msgs = [message(1, "first"), message(2, "second"), message(3, "third")]
    leaves = [leaf(1), leaf(2)]
    context = [ContextItem.message(1), ContextItem.summary(leaves[0].summary_id), ContextItem.summary(leaves[1].summary_id),
               ContextItem.message(2), ContextItem.message(3)]  # fmt: skip
    found = {}
    for fidelity in ("faithful", "fixed"):
        c, _ = make(fidelity, msgs, leaves, context=context, fresh_tail_count=3, leaf_min_fanout=2,
                    leaf_chunk_tokens=200, condensed_target_tokens=10)  # fmt: skip
        found[fidelity] = c.condensation_candidate(False, fresh_tail_count=1)
    assert found == {"faithful": None, "fixed": (0, [1, 2])}


def test_quirk_6_sender_tokens() -> None:
    sender = {"senderId": "u-1", "senderName": "Ada"}
    msgs = [message(1, "hello", "user", sender=sender)]
    tokens = {}
    for fidelity in ("faithful", "fixed"):
        c, _ = make(fidelity, msgs)
        tokens[fidelity] = c.state.message_source_tokens(1)
    assert tokens["fixed"] == msgs[0].token_count < tokens["faithful"]


def test_quirk_7_tool_call_only_turn() -> None:
    call = StoredPart("tool", 0, None, "toolu_1", "read", json.dumps({"path": "a.txt"}), None,
                      json.dumps({"originalRole": "assistant", "rawType": "toolCall"}))  # fmt: skip
    msgs = [message(1, words(50), "user"), StoredMessage(2, "assistant", "", 20, "2026-01-01 10:02:00", (call,)),
            message(3, words(50), "user"), message(4, "done", "assistant")]  # fmt: skip
    sources = {}
    for fidelity in ("faithful", "fixed"):
        c, s = make(fidelity, msgs, fresh_tail_count=2, leaf_chunk_tokens=10_000)
        c.full_sweep(10, force=True)
        sources[fidelity] = s.requests[0].source_text
    assert "| assistant]\nnull" in sources["faithful"]
    assert '| assistant]\nTool input (read):\n{"path":"a.txt"}' in sources["fixed"]


def test_quirk_8_cap_uses_prompt_target() -> None:
    def reply(request):
        # Normal output does not shrink; the aggressive one is 80% of the input.
        return request.source_text + " more" if not request.aggressive else words(int(request.source_text.count(" ") * 0.6))

    msgs = [message(1, words(2000), "user"), message(2, "ok", "assistant"), message(3, "next", "user")]
    levels = {}
    for fidelity in ("faithful", "fixed"):
        c, _ = make(fidelity, msgs, summarizer=Scripted(reply), fresh_tail_count=1, leaf_chunk_tokens=100_000,
                    leaf_target_tokens=2400)  # fmt: skip
        c.full_sweep(10, force=True)
        levels[fidelity] = c.created[0].level
    assert levels == {"faithful": "aggressive", "fixed": "capped"}


def test_context_threshold_override_rules_apply_to_a_replay(tmp_path) -> None:
    from reference_runs import config_for, conversation_for, load_trace

    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.summarizers.stub import StubV1Summarizer

    trace = load_trace("golden__G0-golden")
    conversation = conversation_for("golden__G0-golden", tmp_path)
    base = config_for(trace)
    rule = {"match": {"modelContextWindowMax": 4000}, "contextThreshold": 0.5, "freshTailCount": 2, "name": "small windows"}
    overridden = LcmConfig.from_plugin_config({**trace["plugin_config"], "contextThresholdOverrides": [rule]})
    plain = replay(conversation, base, StubV1Summarizer(), token_budget=2000)
    ruled = replay(conversation, overridden, StubV1Summarizer(), token_budget=2000)
    assert plain.turns[0].threshold == 1500 and ruled.turns[0].threshold == 1000
    first = next(t for t in ruled.turns if t.sweeps)
    assert first.sweeps[0].fresh_tail_count == 2
    # A window outside the rule's range leaves the global settings in force.
    wide = replay(conversation, overridden, StubV1Summarizer(), token_budget=8000)
    assert wide.turns[0].threshold == 6000 and wide.meta.get("fresh_tail_count") is None
