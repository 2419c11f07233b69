"""Replay values for viz/widget/report tests, rebuilt from the real engine's reference traces.

The traces (tests/fixtures/reference-runs) hold every turn, summary and message row the real
lossless-claw engine wrote, minus message text (only hashes); message content here is a short
placeholder naming the seq. That is enough for layout, budgets and reports, and independent
of the Python engine.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay
from lcm_lab.engine.types import (
    ContextItem,
    Conversation,
    StoredMessage,
    Summary,
    SweepRecord,
    TurnRecord,
)

TRACES = Path(__file__).parent / "fixtures" / "reference-runs" / "traces"


def _item(pair: list[Any], ids: dict[str, str]) -> ContextItem:
    kind, ref = pair
    return ContextItem.message(int(ref)) if kind == "message" else ContextItem.summary(ids[ref])


@cache
def trace_replay(run: str) -> Replay:
    """A ``Replay`` holding exactly what the reference trace ``run`` recorded."""
    data = json.loads(gzip.decompress((TRACES / f"{run}.trace.json.gz").read_bytes()))
    ids = {s["key"]: s["summary_id"] for s in data["summaries"]}
    # The reference runs compacted inline (their harness_config); the plugin's default is deferred.
    config = LcmConfig.from_plugin_config({**data["plugin_config"], "proactiveThresholdCompactionMode": "inline"})
    messages = tuple(
        StoredMessage(
            seq=m["seq"],
            role=m["role"],
            content=f"message {m['seq']} ({m['role']})",
            token_count=m["token_count"],
            created_at=m["created_at"],
        )
        for m in data["messages"]
    )
    summaries = tuple(
        Summary(
            summary_id=s["summary_id"],
            kind=s["kind"],
            depth=s["depth"],
            content=s["content"],
            token_count=s["token_count"],
            earliest_at=s["earliest_at"],
            latest_at=s["latest_at"],
            descendant_count=s["descendant_count"],
            descendant_token_count=s["descendant_token_count"],
            source_message_token_count=s["source_message_token_count"],
            created_at=None,
            source_message_seqs=tuple(s["source_message_seqs"]),
            source_summary_ids=tuple(ids[k] for k in s["parent_keys"]),
            level=s["level"],
            created_turn=s["created_turn"],
        )
        for s in data["summaries"]
    )
    turns = tuple(
        TurnRecord(
            turn=t["turn"],
            lines=tuple(t["lines"]) if t["lines"] else None,
            input_messages=t["input_messages"],
            input_persistable_messages=t["input_persistable_messages"],
            ingested_seqs=tuple(t["ingested_seqs"]),
            stored_tokens_before=t["stored_tokens_before"],
            threshold=t["threshold"],
            should_compact=t["should_compact"],
            compacted=bool(t["compact"] and t["compact"][0]["compacted"]),
            sweeps=tuple(
                SweepRecord(
                    force=w["force"],
                    stop_at_tokens=w["stopAtTokens"],
                    stored_before=w["storedBefore"],
                    action_taken=w["actionTaken"],
                    tokens_before=w["tokensBefore"],
                    tokens_after=w["tokensAfter"],
                    condensed=w["condensed"],
                    level=w["level"],
                    auth_failure=w["authFailure"],
                    stopped_at_budget=w["stoppedAtBudget"],
                    created_summary_id=ids.get(w["createdSummary"]) if w["createdSummary"] else None,
                    passes=1,
                )
                for w in t["sweeps"]
            ),
            calls=(),
            created_summary_ids=tuple(ids[c["key"]] for c in t["created_summaries"]),
            tokens_after=t["tokens_after"],
            context_after=tuple(_item(p, ids) for p in t["context_after"]),
            compact_result=t["compact"][0] if t["compact"] else None,
        )
        for t in data["turns"]
    )
    return Replay(
        conversation=Conversation(session_id=data["session_id"], stored_messages=messages),
        config=config,
        token_budget=data["token_budget"],
        summarizer=data["summarizer"] if isinstance(data["summarizer"], str) else "stub-v1",
        turns=turns,
        messages=messages,
        summaries=summaries,
        run_id=run,
    )
