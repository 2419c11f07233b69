"""Test helpers for assembly: reference lcm.db → engine values, and comparison with traces.

The adapter here is deliberately small (the production lcm.db loader lives in ``lcm_lab.io``);
it reads exactly what assembly needs from a reference run's database.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from lcm_lab.engine.assembly.bare import assemble
from lcm_lab.engine.types import Assembly, ContextItem, StoredMessage, StoredPart, Summary

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / "tests" / "fixtures" / "reference-runs" / "traces"


class EngineState(NamedTuple):
    """What assembly reads: messages by seq, summaries by id, ordered context items."""

    messages: dict[int, StoredMessage]
    summaries: dict[str, Summary]
    context: list[ContextItem]


def load_trace(run_id: str) -> dict[str, Any]:
    with gzip.open(TRACES / f"{run_id}.trace.json.gz", "rt", encoding="utf-8") as fh:
        trace: dict[str, Any] = json.load(fh)
    return trace


def load_state(db_path: Path) -> EngineState:
    """Read the (single) conversation of a reference lcm.db, read-only."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        db.row_factory = sqlite3.Row
        (conversation_id,) = {row[0] for row in db.execute("SELECT conversation_id FROM conversations")}
        parts: dict[int, list[StoredPart]] = {}
        for row in db.execute("SELECT * FROM message_parts ORDER BY message_id, ordinal"):
            parts.setdefault(row["message_id"], []).append(
                StoredPart(
                    part_type=row["part_type"],
                    ordinal=row["ordinal"],
                    text_content=row["text_content"],
                    tool_call_id=row["tool_call_id"],
                    tool_name=row["tool_name"],
                    tool_input=row["tool_input"],
                    tool_output=row["tool_output"],
                    metadata=row["metadata"],
                    part_id=row["part_id"],
                )
            )
        messages: dict[int, StoredMessage] = {}
        seq_of_id: dict[int, int] = {}
        for row in db.execute(
            "SELECT * FROM messages WHERE conversation_id = ? ORDER BY seq", (conversation_id,)
        ):
            seq_of_id[row["message_id"]] = row["seq"]
            messages[row["seq"]] = StoredMessage(
                seq=row["seq"],
                role=row["role"],
                content=row["content"],
                token_count=row["token_count"],
                created_at=row["created_at"],
                parts=tuple(parts.get(row["message_id"], ())),
                identity_hash=row["identity_hash"],
                sender_metadata=row["openclaw_sender_metadata"],
                transcript_entry_id=row["transcript_entry_id"],
                stable_event_key=row["stable_event_key"],
                large_content=row["large_content"],
                message_id=row["message_id"],
            )
        sources: dict[str, list[str]] = {}
        # Naming trap: summary_parents.summary_id is the condensed node, parent_summary_id its source.
        for row in db.execute(
            "SELECT summary_id, parent_summary_id FROM summary_parents ORDER BY summary_id, ordinal"
        ):
            sources.setdefault(row[0], []).append(row[1])
        source_seqs: dict[str, list[int]] = {}
        for row in db.execute(
            "SELECT summary_id, message_id FROM summary_messages ORDER BY summary_id, ordinal"
        ):
            source_seqs.setdefault(row[0], []).append(seq_of_id[row[1]])
        summaries: dict[str, Summary] = {}
        for row in db.execute(
            "SELECT * FROM summaries WHERE conversation_id = ? ORDER BY rowid", (conversation_id,)
        ):
            summaries[row["summary_id"]] = Summary(
                summary_id=row["summary_id"],
                kind=row["kind"],
                depth=row["depth"],
                content=row["content"],
                token_count=row["token_count"],
                earliest_at=row["earliest_at"],
                latest_at=row["latest_at"],
                descendant_count=row["descendant_count"],
                descendant_token_count=row["descendant_token_count"],
                source_message_token_count=row["source_message_token_count"],
                file_ids=tuple(json.loads(row["file_ids"] or "[]")),
                model=row["model"],
                created_at=row["created_at"],
                source_message_seqs=tuple(source_seqs.get(row["summary_id"], ())),
                source_summary_ids=tuple(sources.get(row["summary_id"], ())),
            )
        context: list[ContextItem] = []
        for row in db.execute(
            "SELECT item_type, message_id, summary_id FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
            (conversation_id,),
        ):
            if row["item_type"] == "message":
                context.append(ContextItem.message(seq_of_id[row["message_id"]]))
            else:
                context.append(ContextItem.summary(row["summary_id"]))
        return EngineState(messages, summaries, context)
    finally:
        db.close()


def summary_keys(trace: Mapping[str, Any]) -> dict[str, str]:
    """Real summary_id → trace S-key."""
    return {s["summary_id"]: s["key"] for s in trace["summaries"]}


def assemble_like_trace(state: EngineState, trace: Mapping[str, Any], index: int) -> Assembly:
    """Run ``assemble`` with the settings the reference driver used for ``assembled[index]``."""
    config = trace["resolved_config"]
    return assemble(
        state.messages,
        state.summaries,
        state.context,
        token_budget=trace["assembled"][index]["tokenBudget"],
        fresh_tail_count=config["freshTailCount"],
        fresh_tail_max_tokens=config.get("freshTailMaxTokens"),
        timezone=config.get("timezone") or "UTC",
    )


def differences(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """Human-readable differences between two ``assembled[i]`` records."""
    problems = [
        f"{field}: got {actual[field]!r}, expected {expected.get(field)!r}"
        for field in actual
        if field not in ("items", "messages_canonical_json") and actual[field] != expected.get(field)
    ]
    got_items, want_items = actual["items"], [list(i) for i in expected["items"]]
    if got_items != want_items:
        problems.append(
            f"items differ: {len(got_items)} vs {len(want_items)} (first at {_first_diff(got_items, want_items)})"
        )
    got_json, want_json = actual["messages_canonical_json"], expected["messages_canonical_json"]
    if got_json != want_json:
        i = _first_diff(got_json, want_json)
        got = got_json[i] if i < len(got_json) else None
        want = want_json[i] if i < len(want_json) else None
        problems.append(f"message {i} differs:\n  got  {got!r:.600}\n  want {want!r:.600}")
    return problems


def _first_diff(a: Sequence[Any], b: Sequence[Any]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


# -- the small always-on fixture ----------------------------------------------------------------


def state_to_json(state: EngineState) -> dict[str, Any]:
    return {
        "messages": [asdict(m) for m in state.messages.values()],
        "summaries": [asdict(s) for s in state.summaries.values()],
        "context": [[c.kind, c.ref] for c in state.context],
    }


def state_from_json(data: Mapping[str, Any]) -> EngineState:
    messages = {}
    for m in data["messages"]:
        fields = dict(m)
        fields["parts"] = tuple(StoredPart(**p) for p in fields["parts"])
        messages[fields["seq"]] = StoredMessage(**fields)
    summaries = {}
    for s in data["summaries"]:
        fields = dict(s)
        for key in ("file_ids", "source_message_seqs", "source_summary_ids"):
            fields[key] = tuple(fields[key])
        summaries[fields["summary_id"]] = Summary(**fields)
    context = [ContextItem(kind, ref) for kind, ref in data["context"]]
    return EngineState(messages, summaries, context)


SMALL_FIXTURE = REPO / "tests" / "fixtures" / "assembly" / "reference-assemblies.json.gz"
SMALL_FIXTURE_RUNS = (
    "golden__G0-golden",
    "golden__C1-defaults-32k",
    "synth-1__C2-tight",
    "synth-2__C2-tight",
    "synth-2__C6-deep-reachable",
    "before-compaction__C2-tight",
)


def build_small_fixture(db_dir: Path, out: Path = SMALL_FIXTURE) -> None:
    """Write the always-on regression fixture: the final state of a few reference runs,
    trimmed to the rows assembly reads, with the trace's expected assemblies and settings."""
    runs = []
    for run_id in SMALL_FIXTURE_RUNS:
        trace = load_trace(run_id)
        state = load_state(db_dir / f"{run_id}.db")
        used = {item.ref for item in state.context}
        trimmed = EngineState(
            {seq: m for seq, m in state.messages.items() if seq in used},
            {sid: s for sid, s in state.summaries.items() if sid in used},
            state.context,
        )
        config = trace["resolved_config"]
        runs.append(
            {
                "run_id": run_id,
                "settings": {
                    "fresh_tail_count": config["freshTailCount"],
                    "fresh_tail_max_tokens": config.get("freshTailMaxTokens"),
                    "timezone": config.get("timezone") or "UTC",
                },
                "summary_keys": summary_keys(trace),
                "state": state_to_json(trimmed),
                "expected": trace["assembled"],
            }
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(
        {"format": "lcm-lab-assembly-fixture-v1", "runs": runs}, ensure_ascii=False, sort_keys=True
    )
    with gzip.GzipFile(out, "wb", mtime=0) as fh:
        fh.write(payload.encode("utf-8"))


if __name__ == "__main__":  # regenerate: python tests/assembly_reference.py <dir with unpacked .db files>
    import sys

    build_small_fixture(Path(sys.argv[1]))
