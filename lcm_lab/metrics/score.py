"""Run every offline metric over a replay or a loaded lcm.db conversation.

>>> from lcm_lab.engine.types import Conversation, InputEntry
>>> from lcm_lab.engine.replay.driver import replay
>>> from lcm_lab.engine.config.lcm_config import LcmConfig
>>> from lcm_lab.summarizers.stub import StubV1Summarizer
>>> chat = Conversation("demo", entries=(
...     InputEntry(2, "message", {"role": "user", "content": "edit src/app.py " * 100, "timestamp": 0}),
...     InputEntry(3, "message", {"role": "assistant", "content": [{"type": "text", "text": "done"}], "timestamp": 1000}),
...     InputEntry(4, "message", {"role": "user", "content": "and now?", "timestamp": 2000})))
>>> result = replay(chat, LcmConfig(fresh_tail_count=1), StubV1Summarizer(), token_budget=500, run_id="demo")
>>> scores = score_replay(result)
>>> sorted({s.scope for s in scores}) == ['age', 'depth', 'fact_type', 'run', 'summary', 'turn']
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lcm_lab.engine.types import Conversation
from lcm_lab.io.model import QAItem
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.doctor import diagnose, doctor_scores, rows_from_dag
from lcm_lab.metrics.locomo import raw_texts
from lcm_lab.metrics.needles import Needle, needle_scores
from lcm_lab.metrics.retention import (
    ContextMode,
    FactBase,
    context_fact_scores,
    dag_context_fact_scores,
    summary_fact_scores,
)
from lcm_lab.metrics.shape import budget_scores, summary_shape_scores
from lcm_lab.metrics.verdicts import ProbeRows, verdict_scores


def _progress(enabled: bool, desc: str) -> Any:
    if not enabled:
        return None

    def wrap(items: Iterable[Any]) -> Iterable[Any]:
        from tqdm.auto import tqdm

        return tqdm(list(items), desc=desc, leave=False)

    return wrap


def score_replay(
    replay: Any,
    *,
    run_id: str | None = None,
    qa_items: Sequence[QAItem] | None = None,
    needles: Sequence[Needle] | None = None,
    mode: ContextMode = "assembled",
    context_turns: Sequence[int] | None = None,
    progress: bool = False,
    chance_conversation: Conversation | None = None,
    donor_text: str | None = None,
    donor_label: str | None = None,
    rows_out: dict[str, ProbeRows] | None = None,
) -> list[Score]:
    """All offline scores of a replay: shape, budget, the headlines of :mod:`lcm_lab.metrics.verdicts`
    (probed over the conversation's life, with their end-of-run diagnostics), fact retention
    (summaries and context per turn), doctor findings, LoCoMo QA retention when ``qa_items`` are
    given and needle survival when the replayed conversation was planted with ``needles``. ``chance_conversation``
    (another conversation) gives ``qa_retention`` and ``fact_retention`` their chance control
    (``donor_text``: another conversation's text for the fact headline, default: that conversation's;
    ``donor_label`` names it in the headlines' ``details["chance_donor"]``).

    ``context_turns`` restricts the per-turn context metrics to some turns (the last turn is
    always included); ``mode`` chooses the assembled (default) or stored context. ``rows_out``
    receives each probed headline's probes of an LCM replay, to pair two settings probe by probe
    (:mod:`lcm_lab.metrics.paired`).
    """
    if donor_text is None and chance_conversation is not None:
        donor_text = "\n".join(raw_texts(chance_conversation))
        donor_label = donor_label or chance_conversation.title or chance_conversation.session_id
    if hasattr(replay, "strategy"):  # a StrategyRun (lcm_lab.strategies); an lcm run carries its Replay
        if replay.replay is None:
            # Same headline definitions as LCM runs: they read only what the model receives.
            from lcm_lab.metrics.strategies import strategy_scores

            rid = run_id or replay.run_id or f"{replay.strategy}-run"
            return strategy_scores(
                replay, run_id=rid, qa_items=qa_items, chance_conversation=chance_conversation, donor_text=donor_text,
                donor_label=donor_label,
            )
        replay = replay.replay
    rid = run_id or replay.run_id or "replay"
    dag = Dag.from_replay(replay)
    base = FactBase.build(dag)
    scores: list[Score] = []
    scores += summary_shape_scores(dag, rid)
    scores += budget_scores(replay.turns, replay.token_budget, rid)
    scores += summary_fact_scores(dag, rid, base)
    scores += verdict_scores(replay, rid, qa_items=qa_items, chance_conversation=chance_conversation, donor_text=donor_text,
                             donor_label=donor_label, rows_out=rows_out)
    scores += context_fact_scores(replay, rid, mode=mode, turns=context_turns, base=base, progress=_progress(progress, "fact retention"))
    scores += doctor_scores(diagnose(rows_from_dag(dag)), rid)
    if needles:
        scores += needle_scores(replay, needles, rid, mode=mode, turns=context_turns)
    return scores


def score_conversation(conversation: Conversation, run_id: str) -> list[Score]:
    """Offline scores of a loaded lcm.db conversation (no turns: shape, fact retention in
    summaries and in the stored context, doctor findings)."""
    dag = Dag.from_conversation(conversation)
    base = FactBase.build(dag)
    scores = summary_shape_scores(dag, run_id)
    scores += summary_fact_scores(dag, run_id, base)
    scores += dag_context_fact_scores(dag, run_id, base)
    scores += doctor_scores(diagnose(rows_from_dag(dag)), run_id)
    return scores
