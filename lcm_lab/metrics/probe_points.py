"""Where to probe: the raw history and each strategy's compacted context at a compaction point.

Factory-style probe evaluation asks questions generated from the full history at a moment when
compaction has happened, and answers them from what the model would see. This module cuts those
two texts out of replays of the same conversation, ready for
:func:`lcm_lab.metrics.judge.probe_scores`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from lcm_lab.engine.replay import Replay
from lcm_lab.metrics.base import assembled_message_text, message_text


class ProbePoint(NamedTuple):
    turn: int
    history: str  # every message ingested up to and including ``turn``, in order
    contexts: dict[str, str]  # label → what the model sees after ``turn`` (assembled, run budget)


def compaction_turns(replay: Replay) -> list[int]:
    """Turns at which the replay compacted."""
    return [t.turn for t in replay.turns if t.compacted]


def _history(replay: Replay, turn: int) -> str:
    seqs = {s for t in replay.turns[: turn + 1] for s in t.ingested_seqs}
    return "\n\n".join(f"[{m.role}] {message_text(m)}" for m in replay.messages if m.seq in seqs)


def _context(replay: Replay, turn: int) -> str:
    return "\n\n".join(f"[{item.role}] {assembled_message_text(item.message)}" for item in replay.assemble(turn).items)


def probe_point(replays: Mapping[str, Replay], turn: int | None = None) -> ProbePoint:
    """History and contexts of several replays of one conversation at ``turn``.

    The default turn is the last one at which every replay had compacted at least once (so each
    context holds summaries), or the last turn when some replay never compacted.

    >>> probe_point({})
    Traceback (most recent call last):
    ...
    ValueError: probe_point needs at least one replay
    """
    if not replays:
        raise ValueError("probe_point needs at least one replay")
    runs = list(replays.values())
    counts = {len(r.turns) for r in runs}
    if len(counts) != 1:
        raise ValueError(f"replays differ in length ({sorted(counts)} turns): are they of the same conversation?")
    if turn is None:
        firsts = [compaction_turns(r)[:1] for r in runs]
        turn = max(f[0] for f in firsts) if all(firsts) else counts.pop() - 1
    reference = runs[0]
    return ProbePoint(turn, _history(reference, turn), {label: _context(r, turn) for label, r in replays.items()})
