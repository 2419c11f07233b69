"""Needle probes: plant synthetic facts into a transcript, replay it, see which survive.

:func:`plant_needles` appends one short sentence carrying a unique key (an identifier, a path,
a number with a unit, or a decision) to the user message of chosen turns; the planting is fully
determined by ``seed`` (and the turns, if given), so two strategies can be compared on exactly the
same needles. :func:`needle_scores` then follows every needle through the replay: is its key
visible (raw or inside a summary) in the assembled context after each later turn, and under which
summary depth did it end up.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.metrics.base import Score, age_bucket, mean, message_text
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.facts import Fact, TextIndex, fact_key
from lcm_lab.metrics.retention import ContextMode, shown_refs, shown_view

NEEDLE_KINDS: tuple[str, ...] = ("identifier", "path", "number_unit", "decision")
_WORDS = ("amber", "basalt", "cobalt", "dorado", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel", "lumen")


@dataclass(frozen=True)
class Needle:
    """One planted fact: the sentence added, the key that must survive, where it was put."""

    needle_id: str
    kind: str
    key: str
    sentence: str
    turn: int
    line: int  # input line of the user message it was appended to


def _needle_text(kind: str, rng: random.Random) -> tuple[str, str]:
    word = rng.choice(_WORDS)
    tag = "".join(rng.choice("0123456789abcdef") for _ in range(6))
    if kind == "identifier":
        key = f"NDL-{tag.upper()}"
        return key, f"For the record, the tracking ticket for this is {key}."
    if kind == "path":
        key = f"/srv/{word}-{tag}/config.toml"
        return key, f"Note that the settings live in {key} now."
    if kind == "number_unit":
        key = f"{rng.randint(1000, 99999)} ms"
        return key, f"The measured {word} latency budget is {key}."
    if kind == "decision":
        key = f"{word}-{tag}"
        return key, f"We decided to go with option {key} instead of the alternatives."
    raise ValueError(f"unknown needle kind {kind!r}; expected one of {NEEDLE_KINDS}")


def _user_turns(entries: Sequence[InputEntry]) -> list[tuple[int, int]]:
    """(turn, entry index) of the user message that opens each turn (reference turn split)."""
    out: list[tuple[int, int]] = []
    turn = -1
    started = False
    for index, entry in enumerate(entries):
        message = entry.message
        if entry.type != "message" or message is None:
            continue
        if message.get("role") == "user":
            turn += 1
            out.append((turn, index))
        elif not started:
            turn += 1  # leading non-user messages form turn 0 on their own
        started = True
    return out


def _append_text(message: Mapping[str, Any], sentence: str) -> dict[str, Any]:
    updated = copy.deepcopy(dict(message))
    content = updated.get("content")
    if isinstance(content, str):
        updated["content"] = f"{content} {sentence}".strip()
    elif isinstance(content, list):
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                block["text"] = f"{block['text']} {sentence}".strip()
                break
        else:
            content.append({"type": "text", "text": sentence})
    else:
        raise ValueError(f"user message has no string or list content: {type(content).__name__}")
    return updated


def plant_needles(
    conversation: Conversation,
    n: int,
    *,
    seed: int = 0,
    turns: Sequence[int] | None = None,
    kinds: Sequence[str] = NEEDLE_KINDS,
) -> tuple[Conversation, tuple[Needle, ...]]:
    """A copy of ``conversation`` with ``n`` needles planted, and the needles.

    ``turns`` chooses the turns (one needle each, cycled if shorter than ``n``); by default
    ``n`` distinct turns are drawn with ``seed``. Kinds rotate through ``kinds``.

    >>> from lcm_lab.engine.types import InputEntry
    >>> conv = Conversation("s", entries=(InputEntry(1, "message", {"role": "user", "content": "hi"}),))
    >>> planted, needles = plant_needles(conv, 1, seed=3)
    >>> needles[0].key in planted.entries[0].message["content"]
    True
    """
    if not conversation.entries:
        raise ValueError("plant_needles needs a transcript conversation (entries); loaded lcm.db conversations have none")
    if n < 1:
        raise ValueError("n must be at least 1")
    user_turns = _user_turns(conversation.entries)
    if not user_turns:
        raise ValueError(f"conversation {conversation.session_id} has no user messages to plant needles into")
    rng = random.Random(seed)
    index_of_turn = dict(user_turns)
    if turns is None:
        if n > len(user_turns):
            raise ValueError(f"cannot plant {n} needles in {len(user_turns)} user turns")
        chosen = sorted(rng.sample([t for t, _ in user_turns], n))
    else:
        unknown = [t for t in turns if t not in index_of_turn]
        if unknown:
            raise ValueError(f"turns {unknown} have no user message (valid: 0..{user_turns[-1][0]})")
        chosen = [turns[i % len(turns)] for i in range(n)]
    entries = list(conversation.entries)
    needles: list[Needle] = []
    for i, turn in enumerate(chosen):
        kind = kinds[i % len(kinds)]
        key, sentence = _needle_text(kind, rng)
        index = index_of_turn[turn]
        entry = entries[index]
        assert entry.message is not None
        entries[index] = dataclasses.replace(entry, message=_append_text(entry.message, sentence))
        needles.append(Needle(f"needle-{i}", kind, key, sentence, turn, entry.line))
    meta = {**conversation.meta, "needles": {"n": n, "seed": seed, "turns": chosen}}
    return dataclasses.replace(conversation, entries=tuple(entries), meta=meta), tuple(needles)


def needle_scores(
    replay: Any,
    needles: Sequence[Needle],
    run_id: str,
    *,
    mode: ContextMode = "assembled",
    budget: int | None = None,
    turns: Sequence[int] | None = None,
) -> list[Score]:
    """Survival of planted needles after each later turn (by age) and at the end (by depth).

    Per needle: ``needle_survived`` (1/0 at the final turn) with how it survived (``raw``,
    ``summary``) and the depth of the context summary covering its message. By age bucket
    (turns since planting, pooled over needles × scored turns): ``needle_survival``. By depth
    (final turn; ``raw`` for needles still raw): ``needle_survival_by_depth``.
    """
    dag = Dag.from_replay(replay)
    index = TextIndex((m.seq, message_text(m)) for m in dag.messages)
    facts = {n.needle_id: Fact(n.kind, n.key, fact_key(n.kind, n.key)) for n in needles}
    seq_of: dict[str, int] = {}
    for needle in needles:
        hits = index.containing(facts[needle.needle_id])
        if not hits:
            raise ValueError(f"needle {needle.needle_id} ({needle.key!r}) is in no stored message: was the planted conversation replayed?")
        seq_of[needle.needle_id] = min(int(h) for h in hits)  # type: ignore[call-overload]
    last = replay.turns[-1].turn
    chosen = sorted(set(turns if turns is not None else (t.turn for t in replay.turns)) | {last})
    by_age: dict[str, list[float]] = defaultdict(list)
    final: dict[str, tuple[bool, str | None, str]] = {}
    for turn in chosen:
        seqs, sids = shown_refs(replay, turn, mode, budget)
        shown = shown_view(replay, turn, mode, budget)
        view = TextIndex([("raw", shown.raw), ("summary", shown.stated)])  # summaries count when stated
        for needle in needles:
            if needle.turn > turn:
                continue
            fact = facts[needle.needle_id]
            hits = view.containing(fact)
            raw, in_summary = "raw" in hits, "summary" in hits
            present = raw or in_summary
            by_age[age_bucket(turn - needle.turn)].append(float(present))
            if turn == last:
                seq = seq_of[needle.needle_id]
                covering = [dag.summary_by_id[s].depth for s in sids if s in dag.summary_by_id and seq in dag.covered_seqs(s)]
                depth = "raw" if seq in seqs else (str(min(covering)) if covering else "dropped")
                final[needle.needle_id] = (present, "raw" if raw else ("summary" if in_summary else None), depth)
    scores: list[Score] = []
    by_depth: dict[str, list[float]] = defaultdict(list)
    for needle in needles:
        present, how, depth = final[needle.needle_id]
        by_depth[depth].append(float(present))
        details = {"kind": needle.kind, "key": needle.key, "turn": needle.turn, "seq": seq_of[needle.needle_id], "via": how, "depth": depth, "age_turns": last - needle.turn}
        scores.append(Score(run_id, "needle", needle.needle_id, "needle_survived", float(present), details))
    for bucket, values in sorted(by_age.items(), key=lambda kv: int(kv[0].split("-")[0].rstrip("+"))):
        scores.append(Score(run_id, "age", bucket, "needle_survival", mean(values), {"n": len(values), "unit": "turns", "mode": mode}))
    for depth, values in sorted(by_depth.items()):
        scores.append(Score(run_id, "depth", depth, "needle_survival_by_depth", mean(values), {"n": len(values)}))
    scores.append(Score(run_id, "run", "", "needle_survival", mean(float(final[n.needle_id][0]) for n in needles), {"n": len(needles), "mode": mode}))
    return scores
