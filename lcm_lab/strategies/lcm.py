"""LCM (the lossless-claw summary DAG) as one strategy: :func:`lcm_lab.engine.replay.driver.replay`, wrapped.

Parameters are the plugin's config keys (camelCase, as in ``openclaw.json``) plus ``engine``
(``0.15.3``, the default, or ``1.0``: :mod:`lcm_lab.engine.versions`) and ``fidelity``
(``faithful`` reproduces the plugin's quirks, ``fixed`` corrects them). The run keeps the
:class:`~lcm_lab.engine.replay.driver.Replay` (``run.replay``), so every LCM view still works, and
``run.sent`` is the replay's own.

>>> from lcm_lab.engine.types import Conversation, InputEntry
>>> from lcm_lab.summarizers.stub import StubV1Summarizer
>>> chat = Conversation("demo", entries=(
...     InputEntry(2, "message", {"role": "user", "content": "hello " * 400, "timestamp": 0}),
...     InputEntry(3, "message", {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 1000}),
...     InputEntry(4, "message", {"role": "user", "content": "and now?", "timestamp": 2000})))
>>> run = LcmStrategy(params={"freshTailCount": 1}).run(chat, StubV1Summarizer(), 500)
>>> run.strategy, [len(t.calls) for t in run.turns], run.replay.summaries[0].kind
('lcm', [0, 1], 'leaf')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.config.surface import check_plugin_keys
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.replay.question import Question
from lcm_lab.engine.types import Conversation, SentContext
from lcm_lab.engine.versions import DEFAULT_ENGINE, ENGINE_VERSIONS
from lcm_lab.strategies.base import ModelCall, StrategyBase, StrategyError, StrategyRun, StrategyTurn


@dataclass(frozen=True)
class LcmStrategy(StrategyBase):
    """The lossless-claw engine under plugin config keys (``params``)."""

    name: str = "lcm"
    params: Mapping[str, Any] = field(default_factory=dict)

    def config(self) -> tuple[LcmConfig, str]:
        plugin = {k: v for k, v in self.params.items() if k not in ("fidelity", "engine")}
        fidelity = str(self.params.get("fidelity", "faithful"))
        if fidelity not in ("faithful", "fixed"):
            raise StrategyError("lcm: fidelity is faithful|fixed")
        try:
            check_plugin_keys(self.engine, plugin)
            return LcmConfig.from_plugin_config(plugin), fidelity
        except (TypeError, ValueError) as exc:
            raise StrategyError(f"lcm: {exc}") from None

    @property
    def engine(self) -> str:
        """``params["engine"]``: the lossless-claw version (default :data:`DEFAULT_ENGINE`)."""
        engine = str(self.params.get("engine", DEFAULT_ENGINE))
        if engine not in ENGINE_VERSIONS:
            raise StrategyError(f"lcm: engine is {'|'.join(ENGINE_VERSIONS)}")
        return engine

    def replay_turns(self, conversation: Conversation, summarizer: Any, token_budget: int) -> StrategyRun:
        config, fidelity = self.config()
        if summarizer is None:
            raise StrategyError("lcm needs a summarizer (e.g. lcm_lab.summarizers.get_summarizer('offline'))")
        result = replay(conversation, config, summarizer, token_budget=token_budget, fidelity=fidelity,  # type: ignore[arg-type]
                        engine=self.engine, check_calls=False)  # type: ignore[arg-type]  # run() checks, as for every strategy
        run = from_replay(result, dict(self.params))
        return run

    def sent(self, run: StrategyRun, turn: int | None, budget: int) -> SentContext:
        if run.replay is None:
            raise StrategyError("an lcm run carries its replay")
        return run.replay.sent(turn, budget)

    def ask(self, run: StrategyRun, question: Question) -> SentContext:
        if run.replay is None:
            raise StrategyError("an lcm run carries its replay")
        return run.replay.ask(question.text, question.after_turn, question.at_ms, budget=question.budget)


def from_replay(result: Replay, params: Mapping[str, Any] | None = None) -> StrategyRun:
    """A :class:`StrategyRun` over an existing LCM replay (``params``: its plugin config keys)."""
    if params is None:
        params = result.config.to_plugin_config(minimal=True)
        if result.fidelity != "faithful":
            params = {**params, "fidelity": result.fidelity}
    turns = []
    last = len(result.turns) - 1
    for t in result.turns:
        calls = tuple(
            ModelCall(c.kind, c.model, c.source_tokens, c.output_tokens, c.cost_usd, c.cached, c.failure)
            for c in t.calls
        )
        events = ("compacted",) if t.compacted else ()
        tokens = result.sent(None if t.turn == last else t.turn + 1).estimated_tokens
        turns.append(StrategyTurn(t.turn, t.lines, t.ingested_seqs, tokens, calls, events=events))
    return StrategyRun(
        "lcm", dict(params), result.conversation, result.token_budget, result.summarizer, tuple(turns), result.messages,
        replay=result, run_id=result.run_id,
    )  # fmt: skip
