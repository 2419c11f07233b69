"""ClawVault's observer benchmark over *any* strategy's memory (ClawVault's ``src/observer/benchmark/*``).

Each fixture's transcript is replayed as one session (every line a message, all at the fixture's
``now``) through a strategy with a budget large enough to show everything; the strategy's
memory is then scored by :func:`lcm_lab.metrics.fixtures.score_output` (``overall = 0.30·P +
0.35·R + 0.20·K + 0.15·T``), per fixture and as dev / held-out means
(:func:`~lcm_lab.metrics.fixtures.split_fixtures`).

What counts as a strategy's "observations":

* ``clawvault`` / ``observer_regex`` — the observation lines in memory (typed);
* ``lcm`` — the text lines of the summaries in the final context (untyped; no summaries ⇒ none);
* ``truncate`` / ``full`` / ``recorded`` — the lines of the raw messages they show (untyped).

**These numbers are not comparable across fixture sets.** A score depends on the fixtures'
gold lines and their wording (the match is token overlap), on the keyword set each transcript
yields, and on how many gold lines clear the recall floor; three ClawVault fixtures with eleven
gold lines, tuned against by the same loop that reported "100 %", say nothing about the lab's
eight (see docs/strategies.md). Compare strategies on one fixture set, and report held-out.

>>> from lcm_lab.metrics.fixtures import Fixture, Observation
>>> fx = Fixture("demo", ("user: We decided to adopt Redis for caching.",), (Observation("Decided to adopt Redis for caching", "decision", 0.9, 0.9),))
>>> outputs = strategy_outputs([fx], "observer_regex")
>>> round(score_output(fx, outputs["demo"])["recall"], 2)
1.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.metrics.base import Score, assembled_message_text
from lcm_lab.metrics.fixtures import (
    Fixture,
    Observation,
    fixture_scores,
    load_fixture,
    score_output,
    split_fixtures,
)
from lcm_lab.strategies import get_strategy
from lcm_lab.strategies.observations import parse_markdown

NOW_MS = 1_773_144_000_000  # 2026-03-10T12:00:00Z, ClawVault's default benchmark "now"
FIXTURE_DIR = Path(__file__).resolve().parent / "observer_fixtures"  # the lab's own fixtures (README there)

__all__ = [
    "FIXTURE_DIR",
    "fixture_conversation",
    "load_fixtures",
    "observer_benchmark",
    "score_output",
    "strategy_outputs",
]


def load_fixtures(root: str | Path = FIXTURE_DIR) -> list[Fixture]:
    """Every fixture directory under ``root`` (sorted by name)."""
    return [load_fixture(d) for d in sorted(Path(root).iterdir()) if d.is_dir()]


def fixture_conversation(fixture: Fixture) -> Conversation:
    """A fixture transcript as a session: one message per line, all at ClawVault's ``now``."""
    entries = []
    for n, line in enumerate(fixture.transcript):
        role, _, text = line.partition(":")
        role = role.strip().lower()
        content: Any = text.strip() if role != "assistant" else [{"type": "text", "text": text.strip()}]
        entries.append(InputEntry(n + 2, "message", {"role": role, "content": content, "timestamp": NOW_MS}))
    return Conversation(f"fixture:{fixture.name}", entries=tuple(entries))


def run_observations(run: Any) -> list[Observation]:
    """A run's memory as observation lines (see the module docstring for each strategy)."""
    if run.strategy in ("clawvault", "observer_regex"):
        lines = [m.text for m in run.memory_at(None) if m.kind == "observation"]
        return [
            Observation(o.content, o.type, o.confidence, o.importance)
            for o in parse_markdown("## 2026-03-10\n" + "\n".join(lines))
        ]
    sent = run.sent(None)
    kinds = ("summary",) if run.strategy == "lcm" else ("message", "summary", "live")
    out: list[Observation] = []
    for item in sent.items:
        if item.kind in kinds:
            out += [
                Observation(line.strip("-* ").strip())
                for line in assembled_message_text(item.message).splitlines()
                if line.strip()
            ]
    return out


def strategy_outputs(
    fixtures: Sequence[Fixture],
    strategy: str,
    summarizer: Any = None,
    *,
    token_budget: int = 100_000,
    **params: Any,
) -> dict[str, list[Observation]]:
    """``fixture name -> observations`` of ``strategy`` run over each fixture transcript."""
    chosen = get_strategy(strategy, **params)
    return {
        f.name: run_observations(chosen.run(fixture_conversation(f), summarizer, token_budget))
        for f in fixtures
    }


def observer_benchmark(
    strategy: str,
    summarizer: Any = None,
    *,
    fixtures: Sequence[Fixture] | None = None,
    split: Mapping[str, str] | None = None,
    run_id: str | None = None,
    mode: str = "f1",
    **params: Any,
) -> list[Score]:
    """Per-fixture and dev/held-out scores of ``strategy``'s memory on the lab's fixtures."""
    fixtures = list(fixtures) if fixtures is not None else load_fixtures()
    outputs = strategy_outputs(fixtures, strategy, summarizer, **params)
    split = split or split_fixtures([f.name for f in fixtures])
    return fixture_scores(fixtures, outputs, run_id or f"observer-bench:{strategy}", split=split, mode=mode)  # type: ignore[arg-type]
