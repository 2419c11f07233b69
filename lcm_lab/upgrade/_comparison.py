"""``compare_versions``: replay one conversation under several lossless-claw versions with the same
settings and show what changes for the model — per turn and in every headline."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.types import Conversation
from lcm_lab.engine.versions import ENGINE_VERSIONS
from lcm_lab.errors import DataError, OptionError
from lcm_lab.io.model import LoadedConversation, QAItem
from lcm_lab.upgrade._engines import check_versions, run_engine
from lcm_lab.upgrade._headlines import HEADLINE_COLUMNS, headline_outcomes, headline_rows
from lcm_lab.upgrade._turns import TURN_COLUMNS, totals, turn_rows

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    from lcm_lab.engine.protocol import Summarizer

TOTAL_COLUMNS: tuple[str, ...] = (
    "engine", "turns", "summarizer_calls", "summaries", "leaves", "condensed", "max_depth", "clamped_turns",
    "degraded_turns", "summaries_sent_per_turn", "mean_sent_tokens", "peak_sent_tokens", "final_stored_tokens",
    "turns_differing_bytes", "turns_differing_shape",
)  # fmt: skip


@dataclass(frozen=True)
class VersionComparison:
    """The same conversation and settings replayed under each of ``versions`` (the first is the
    baseline every difference is taken from).

    * :meth:`turns_df` — per turn and engine: path, clamp, summaries and messages sent, sent tokens,
      hashes, and whether the context differs from the baseline's in bytes or in shape;
    * :meth:`totals_df` — per engine: summarizer calls, summaries, clamped/degraded turns,
      summaries sent per turn, turns whose context differs;
    * :meth:`headlines_df` — every headline per engine with its own interval, and the difference
      from the baseline with a paired interval over the shared items.

    ``runs`` holds the replays themselves (views and widgets take them as they are).
    """

    session_id: str
    title: str | None
    versions: tuple[str, ...]
    token_budget: int
    summarizer: str
    config: LcmConfig
    runs: Mapping[str, Any] = field(repr=False)
    turns: tuple[Mapping[str, Any], ...] = field(repr=False)
    totals: tuple[Mapping[str, Any], ...] = field(repr=False)
    headlines: tuple[Mapping[str, Any], ...] = field(repr=False)
    warnings: tuple[str, ...] = ()  # per engine whose model calls partly failed: the counts (its summaries are partly the fallback)

    @property
    def baseline(self) -> str:
        return self.versions[0]

    def turns_df(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(list(self.turns), columns=list(TURN_COLUMNS))

    def totals_df(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([{k: t[k] for k in TOTAL_COLUMNS} for t in self.totals], columns=list(TOTAL_COLUMNS))

    def headlines_df(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(list(self.headlines), columns=list(HEADLINE_COLUMNS))

    def turns_pl(self) -> pl.DataFrame:
        import polars as pl

        return pl.DataFrame([dict(r) for r in self.turns], schema_overrides={"differs_bytes": pl.Boolean, "differs_shape": pl.Boolean})

    def wide_turns_df(self) -> pd.DataFrame:
        """One row per turn, one column group per engine (``path[1.0]``, ``clamped[1.0]``, …) and
        ``differs[<engine>]`` (bytes) for every engine but the baseline."""
        import pandas as pd

        rows: dict[int, dict[str, Any]] = {}
        for r in self.turns:
            row = rows.setdefault(int(r["turn"]), {"turn": int(r["turn"])})
            for key in ("path", "clamped", "summaries_sent", "sent_tokens"):
                row[f"{key}[{r['engine']}]"] = r[key]
            if r["differs_bytes"] is not None:
                row[f"differs[{r['engine']}]"] = r["differs_bytes"]
        return pd.DataFrame(list(rows.values()))

    def differing_turns(self, engine: str | None = None) -> list[int]:
        """Turns at which ``engine`` (default: the second version) sends a different context than the baseline."""
        engine = engine or self.versions[1]
        return [int(r["turn"]) for r in self.turns if r["engine"] == engine and r["differs_bytes"]]

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON values (NaN as ``None``)."""
        out: dict[str, Any] = _json_safe({
            "session_id": self.session_id, "title": self.title, "versions": list(self.versions), "baseline": self.baseline,
            "token_budget": self.token_budget, "summarizer": self.summarizer, "config": self.config.to_plugin_config(),
            "totals": [dict(t) for t in self.totals], "headlines": [dict(h) for h in self.headlines],
            "turns": [dict(t) for t in self.turns], "warnings": list(self.warnings),
        })  # fmt: skip
        return out

    def _repr_markdown_(self) -> str:
        from lcm_lab.upgrade._render import comparison_markdown

        return comparison_markdown(self)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _resolve_input(
    source: Conversation | LoadedConversation | str | Path, conversation: int | None
) -> tuple[Conversation, tuple[QAItem, ...], Conversation | None]:
    """The conversation to replay, its QA items and the chance-control partner (the next
    conversation of the same file, when the file holds several)."""
    if isinstance(source, Conversation):
        return source, (), None
    if isinstance(source, LoadedConversation):
        return source.conversation, tuple(source.qa_items), None
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.metrics.locomo import chance_partner

    read = read_transcript(source)
    found = read.conversations
    if not found:
        raise OptionError(f"{source}: holds no conversation to replay")
    if conversation is None:
        if len(found) > 1:
            raise OptionError(f"{source} holds {len(found)} conversations; pick one with conversation=N (--conversation N on the command line), N in 0..{len(found) - 1}")
        conversation = 0
    if not 0 <= conversation < len(found):
        raise OptionError(f"conversation={conversation}: {source} has {len(found)} conversation(s)")
    chosen = found[conversation]
    partner = chance_partner([c.conversation for c in found], conversation) if len(found) > 1 else None
    return chosen.conversation, tuple(chosen.qa_items), partner


def _config(config: LcmConfig | Mapping[str, Any] | None) -> LcmConfig:
    if config is None:
        return LcmConfig()
    if isinstance(config, LcmConfig):
        return config
    return LcmConfig.from_plugin_config(dict(config))


def compare_versions(
    conversation_or_input: Conversation | LoadedConversation | str | Path,
    config: LcmConfig | Mapping[str, Any] | None = None,
    *,
    versions: Sequence[str] = ENGINE_VERSIONS,
    token_budget: int,
    summarizer: Summarizer | str = "offline",
    conversation: int | None = None,
    qa_items: Sequence[QAItem] | None = None,
    chance_conversation: Conversation | None = None,
    scores: bool = True,
    resamples: int = 2000,
    seed: int = 0,
) -> VersionComparison:
    """Replay ``conversation_or_input`` under every engine of ``versions`` with the same ``config``
    (an :class:`~lcm_lab.engine.config.lcm_config.LcmConfig` or plugin keys), budget and
    summarizer, and compare what the model receives (see :class:`VersionComparison`).

    The input is a conversation, a loaded conversation (its QA items are scored), or a transcript
    path (``conversation=`` picks one of several; a LoCoMo file brings QA items and the next
    conversation as the chance control). ``summarizer`` is a summarizer or its registry name.
    ``scores=False`` leaves the headlines out (what the model receives only: much faster).

    Failed model calls follow the lab's one rule (:mod:`lcm_lab.summarizers.call_checks`): a
    A conversation without turns (no user message) is a :class:`~lcm_lab.errors.DataError`. A
    version whose every call failed raises :class:`ModelCallsFailedError` (its column would
    measure the truncation fallback); some failed calls are counted in ``warnings``, and each such
    version's count is issued as a :class:`~lcm_lab.summarizers.call_checks.ModelCallsWarning`
    (shown under a notebook's cell).

    ``lab.compare_versions("session.jsonl", {"contextThreshold": 0.6}, token_budget=8000).totals_df()``
    """
    from lcm_lab.summarizers import get_summarizer
    from lcm_lab.summarizers.call_checks import warn_failed_calls

    engines = check_versions(versions)
    conv, own_qa, partner = _resolve_input(conversation_or_input, conversation)
    items = tuple(qa_items) if qa_items is not None else own_qa
    partner = chance_conversation if chance_conversation is not None else partner
    settings = _config(config)
    writer = get_summarizer(summarizer) if isinstance(summarizer, str) else summarizer
    runs: dict[str, Any] = {}
    failed: list[tuple[int, str]] = []  # per version whose calls partly failed: how many, and the warning
    for engine in engines:  # each version checked as it ends: a dead server stops the comparison at the first
        runs[engine] = run_engine(engine, conv, settings, writer, token_budget, check_calls=False)  # said below, per version
        if not runs[engine].turns:  # every version alike: a table of zeros and "at None of 0 turns" said nothing
            raise DataError(f"{conv.session_id} has no turns (no user message), so no version has anything to compare; "
                            "pick a conversation with at least one user message")
        failed += _call_warnings(runs[engine], writer, f"{conv.session_id} under lossless-claw {engine}")
    rows = turn_rows(runs)
    outcomes = {engine: headline_outcomes(run, f"{conv.session_id}:{engine}", qa_items=items, chance_conversation=partner, seed=seed)
                for engine, run in runs.items()} if scores else {}  # fmt: skip
    for count, warning in failed:  # once the comparison is made: shown under the notebook's cell too
        warn_failed_calls(count, warning)
    return VersionComparison(
        session_id=conv.session_id,
        title=conv.title,
        versions=engines,
        token_budget=token_budget,
        summarizer=getattr(writer, "name", type(writer).__name__),
        config=settings,
        runs=runs,
        turns=tuple(rows),
        totals=tuple(totals(runs, rows)),
        headlines=tuple(headline_rows(outcomes, resamples=resamples, seed=seed)) if outcomes else (),
        warnings=tuple(warning for _count, warning in failed),
    )


def _call_warnings(run: Any, summarizer: object, where: str) -> list[tuple[int, str]]:
    """One version's failed model calls by the lab's one rule: every call failed raises, some
    failed is a warning with the counts (returned with how many failed)."""
    from lcm_lab.summarizers.call_checks import check_calls, run_calls

    count, warning = check_calls(run_calls(run, summarizer), where, "no comparison was made")
    return [(count, warning)] if warning else []
