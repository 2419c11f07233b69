"""Where to probe: the raw history and each strategy's compacted context at a compaction point.

Factory-style probe evaluation asks questions generated from the full history at a moment when
compaction has happened, and answers them from what the model would see. This module cuts those
two texts out of replays of the same conversation, ready for
:func:`lcm_lab.metrics.judge.probe_scores`. Contexts are what the model receives at the start of
the next turn (``run.sent``). :func:`probe_points` gives several points per conversation (probe QA
on one point measures one moment); :func:`probe_controls` adds the probe QA's own ceiling (the
raw history at that point) and floor (its newest raw messages up to the budget), and
:func:`probe_retention` places a run's ``probe_overall`` between them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from lcm_lab.engine.replay.driver import Replay
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.metrics.base import Score, assembled_message_text, message_text
from lcm_lab.metrics.headline import headline
from lcm_lab.metrics.stats import bootstrap_normalised

CEILING, FLOOR = "ceiling", "floor"  # context labels of the probe controls


class ProbePoint(NamedTuple):
    turn: int
    history: str  # every message ingested up to and including ``turn``, in order
    contexts: dict[str, str]  # label → what the model sees after ``turn`` (assembled, run budget)


def compaction_turns(replay: Replay) -> list[int]:
    """Turns at which the replay compacted."""
    return [t.turn for t in replay.turns if t.compacted]


def _history_lines(replay: Replay, turn: int) -> list[str]:
    seqs = {s for t in replay.turns[: turn + 1] for s in t.ingested_seqs}
    return [f"[{m.role}] {message_text(m)}" for m in replay.messages if m.seq in seqs]


def _history(replay: Replay, turn: int) -> str:
    return "\n\n".join(_history_lines(replay, turn))


def _context(replay: Replay, turn: int) -> str:
    """What the model receives right after ``turn``: at the start of the next turn, or the end-of-run call."""
    sent = replay.sent(None) if turn >= len(replay.turns) - 1 else replay.sent(turn + 1)
    return "\n\n".join(f"[{item.role}] {assembled_message_text(item.message)}" for item in sent.items)


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


def probe_points(replays: Mapping[str, Replay], count: int = 3) -> list[ProbePoint]:
    """Up to ``count`` probe points spread evenly from the first turn at which every replay had
    compacted to the last turn (one point when no common compaction exists)."""
    if not replays:
        raise ValueError("probe_points needs at least one replay")
    runs = list(replays.values())
    firsts = [compaction_turns(r)[:1] for r in runs]
    last = len(runs[0].turns) - 1
    if not all(firsts):
        return [probe_point(replays)]
    start = max(f[0] for f in firsts)
    turns = sorted({int(round(t)) for t in np.linspace(start, last, num=max(1, count))})
    return [probe_point(replays, t) for t in turns]


def probe_controls(point: ProbePoint, replay: Replay, budget: int | None = None) -> dict[str, str]:
    """The point's contexts plus ``ceiling`` (the whole raw history at the point) and ``floor``
    (its newest raw messages fitting ``budget``, default the run budget), rendered like the history."""
    budget = budget or replay.token_budget
    lines = _history_lines(replay, point.turn)
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        used += estimate_tokens(line)
        if used > budget:
            break
        kept.append(line)
    return {**point.contexts, CEILING: "\n\n".join(lines), FLOOR: "\n\n".join(reversed(kept))}


def probe_retention(scores: Sequence[Score], label: str, run_id: str | None = None) -> Score:
    """``probe_retention`` of ``label``: its per-probe ``probe_overall`` between the floor's and
    the ceiling's (same probes; paired bootstrap over probes).

    >>> rows = [Score(run, "probe", f"p{i}", "probe_overall", v) for run, vals in
    ...         {"a": [3, 4, 3], "ceiling": [5, 5, 4], "floor": [1, 2, 2]}.items() for i, v in enumerate(vals)]
    >>> round(probe_retention(rows, "a").value, 3)
    0.556
    """
    per = {lab: {s.scope_id: float(s.value) for s in scores if s.run_id == lab and s.scope == "probe" and s.metric == "probe_overall" and s.value is not None}
           for lab in (label, CEILING, FLOOR)}
    shared = sorted(set(per[label]) & set(per[CEILING]) & set(per[FLOOR]))
    m, c, f = (np.array([per[lab][p] for p in shared]) for lab in (label, CEILING, FLOOR))
    ci = bootstrap_normalised(m, f, c) if shared else None
    return headline(run_id or label, "probe_retention", raw=float(m.mean()) if shared else None, ceiling=float(c.mean()) if shared else None,
                    floor=float(f.mean()) if shared else None, chance=None, n=len(shared), unit="probe", ci=ci,
                    extra={"scale": "probe_overall 0-5", "paired": True})
