"""A 1.0 replay as a reference trace (``lcref-trace-v1``, protocol ``commitTurn-deferred-v1``;
reference-runs-v1 README §3): per turn the commitTurn, background and host-maintain phase
records, debt snapshots, pending-table state; per-turn and end-of-run engine assemblies with the
emergency drain's phase record; summaries with their pipeline; totals.

Fields that describe the recording harness rather than the engine (``pump_ticks``, ``wall_ms``,
``log_counts``) are written with the lab's own values; :data:`HARNESS_FIELDS` lists the keys a
comparison with a reference trace skips.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from lcm_lab.engine.compaction.pending.maintenance import PhaseRecord
from lcm_lab.engine.js.json import js_stringify
from lcm_lab.engine.replay.driver import Replay
from lcm_lab.engine.replay.trace import (
    TRACE_FORMAT,
    CanonicalJson,
    _call,
    _debt,
    _item,
    _message,
    _sweeps,
    assembly_record,
    canon,
    sent_record,
    summary_keys,
)
from lcm_lab.engine.types import SentContext, Summary, TurnRecord
from lcm_lab.engine.versions import UPSTREAM

__all__ = ["HARNESS_FIELDS", "PROTOCOL", "v1_trace", "without_harness"]

PROTOCOL = "commitTurn-deferred-v1"
# Keys of the recording harness's event-loop pump and clock, not engine behaviour.
HARNESS_FIELDS = frozenset({"pump_ticks", "pump_capped", "wall_ms"})


def without_harness(value: Any) -> Any:
    """A trace without the :data:`HARNESS_FIELDS` keys, at every level (for comparisons)."""
    if isinstance(value, dict):
        return {k: without_harness(v) for k, v in value.items() if k not in HARNESS_FIELDS}
    if isinstance(value, list):
        return [without_harness(v) for v in value]
    return value


def _pipeline(summary: Summary) -> str:
    return "pending" if summary.level == "pending" else "legacy"


def _created(summaries: Sequence[Summary], keys: Mapping[str, str]) -> list[dict[str, Any]]:
    return [
        {"key": keys[s.summary_id], "kind": s.kind, "depth": s.depth, "token_count": s.token_count,
         "pipeline": _pipeline(s), "level": s.level}
        for s in summaries
    ]  # fmt: skip


def phase_record(record: PhaseRecord, keys: Mapping[str, str], tokens_after: int) -> dict[str, Any]:
    """A phase record (README §3.2) in the reference's shape."""
    out: dict[str, Any] = {
        "scheduled": dict(record.scheduled),
        "drains_run": dict(record.drains_run),
        "evaluate": [dict(e) for e in record.evaluate],
        "leaf_trigger": [dict(e) for e in record.leaf_trigger],
        "consume": [dict(e) for e in record.consume],
        "pending_core": [dict(e) for e in record.pending_core],
        "coordinator_steps": [dict(e) for e in record.coordinator_steps],
        "legacy_core": [{k: v for k, v in e.items()} for e in record.legacy_core],
        "sweeps": [{k: v for k, v in s.items() if k not in ("freshTailCount", "leafChunkTokens")}
                   for s in _sweeps(record.sweeps, keys)],
        "summarizer_calls": [{"pipeline": pipeline, **_call(call)} for pipeline, call in record.calls],
        "created_summaries": _created(record.created, keys),
    }  # fmt: skip
    if record.spend_backoff_would_open:
        out["spend_backoff_would_open"] = list(record.spend_backoff_would_open)
    out["tokens_after"] = tokens_after
    return out


def _session_label(replay: Replay) -> str:
    sid = replay.conversation.session_id
    return f"session={sid} sessionKey={_session_key(replay)}"


def _session_key(replay: Replay) -> str:
    return replay.conversation.session_key or f"agent:main:lcref-{replay.conversation.session_id}"


def _emergency_logs(replay: Replay, turn: TurnRecord, sent: SentContext, record: PhaseRecord) -> list[str]:
    """assemble's own warnings around its emergency drain (the record holds the whole call)."""
    drain = turn.emergency_drain
    assert drain is not None
    label = _session_label(replay)
    budget = replay.token_budget
    lines = [
        f"warn: [lcm] assemble: emergency deferred compaction debt draining pre-assembly conversation=1 {label} "
        f"storedContextTokens={drain.current_token_count} projectedTokenCount=null tokenBudget={budget} reason=over-budget"
    ]
    before = drain.debt_before
    consume = record.consume[0] if record.consume else None
    if consume and consume["force"] and before.backoff_active and before.next_attempt_after_ms is not None:
        from lcm_lab.engine.compaction.deferred import iso_ms

        lines.append(
            f"warn: [lcm] consumeDeferredCompactionDebt: force=true skipping backoff conversation=1 {label} "
            f"retryAttempts={before.retry_attempts} nextAttemptAfter={iso_ms(before.next_attempt_after_ms)}"
        )
    for legacy in record.legacy_core:
        if legacy.get("exhausted") and legacy.get("currentTokenCount") is not None:
            after, observed = legacy["tokensAfter"], legacy["currentTokenCount"]
            threshold = replay.config.threshold_tokens(legacy["tokenBudget"])
            lines.append(
                f"warn: [lcm] compact: transcript wedge detected conversation=1 {label} storedTokensAfter={after} "
                f"targetTokens={threshold} observedTokens={observed} observedRuntimeOverhead={max(0, observed - after)} "
                f"projectedTokensAfter={max(after, observed)} — stored compaction cannot reduce the live transcript; "
                "reset the session (/new) or re-bootstrap"
            )
    if sent.degraded:
        lines.append(
            f"warn: [lcm] assemble: degraded live fallback conversation=1 {label} reason={sent.path.split(':', 1)[1]} "
            f"storedContextTokens={drain.tokens_after if sent.path != 'degraded:emergency-debt-exhausted' else drain.current_token_count} "
            f"projectedTokenCount=null tokenBudget={budget} pressureThreshold={int(0.75 * budget)} "
            f"outputMessages={len(sent.items)} estimatedTokens={sent.estimated_tokens}"
        )
    elif sent.clamped and sent.path == "assembled" and sent.bare is not None:
        lines.append(
            f"warn: [lcm] assemble: serialized budget clamp conversation=1 {label} serializedTokensBefore={sent.serialized_before} "
            f"serializedTokens={sent.estimated_tokens} internalEstimatedTokens={sent.bare.estimated_tokens} "
            f"evictedMessages={sent.evicted} tokenBudget={budget} clamped=true overBudget={str(sent.estimated_tokens > budget).lower()}"
        )
    return lines


def _turn(record: TurnRecord, keys: Mapping[str, str]) -> dict[str, Any]:
    phases = record.phases or {}
    tokens_bg = record.tokens_after
    maintain = phases["host_maintain"]
    commit = phase_record(phases["commit"], keys, tokens_bg)
    commit["status"] = "committed"
    background = phase_record(phases["background"], keys, tokens_bg)
    background.update(pump_ticks=None, pump_capped=False)
    return {
        "turn": record.turn,
        "lines": list(record.lines) if record.lines else None,
        "input_messages": record.input_messages,
        "input_persistable_messages": record.input_persistable_messages,
        "time_ms": list(record.time_ms) if record.time_ms else None,
        "clock_ms": list(record.clock_ms) if record.clock_ms else None,
        "ingested_seqs": list(record.ingested_seqs),
        "ingested_count": len(record.ingested_seqs),
        "stored_tokens_before": record.stored_tokens_before,
        "threshold": record.threshold,
        "should_compact": record.should_compact,
        "leaf_trigger": phases["leaf_trigger"],
        "debt_start": _debt(phases["debt_start"]),
        "commit": commit,
        "background": background,
        "debt_after_background": _debt(phases["debt_after_background"]),
        "context_after_background": [_item(i, keys) for i in phases["context_after_background"]],
        "host_maintain": {"changed": maintain["changed"], "reason": maintain["reason"],
                          **phase_record(maintain["record"], keys, record.final_tokens)},  # fmt: skip
        "debt_after": _debt(record.debt_after),
        "tokens_end": record.final_tokens,
        "context_end": [_item(i, keys) for i in record.final_context],
        "pending_end": {k: dict(v) for k, v in phases["pending_end"].items()},
    }


def _v1_fields(sent: SentContext, out: dict[str, Any]) -> None:
    """Where 1.0's records differ from the 0.15.3 engine-level format: no clamp flag before a
    conversation exists, and an eviction count of 0 on the degraded and no-conversation paths."""
    if sent.path == "live-fallback:no-conversation":
        out["clamped"] = None
    if sent.degraded or sent.path == "live-fallback:no-conversation":
        out["evictedMessages"] = 0


def _per_turn(replay: Replay, k: int, canonical: CanonicalJson) -> dict[str, Any]:
    sent = replay.sent(k)
    out = sent_record(sent, canonical)
    _v1_fields(sent, out)
    turn = replay.turns[k]
    record = (turn.phases or {}).get("emergency_drain")
    drain = turn.emergency_drain
    if record is None or drain is None:
        out["emergency_drain"] = None
    else:
        keys = canonical.keys
        phase = phase_record(record, keys, drain.tokens_after)
        phase["logs"] = _emergency_logs(replay, turn, sent, record)
        phase.update(debt_before=_debt(drain.debt_before), debt_after=_debt(drain.debt_after),
                     context_after=[_item(i, keys) for i in drain.context_after])  # fmt: skip
        out["emergency_drain"] = phase
    # key order as the reference writes it
    return {**{k2: out[k2] for k2 in out if k2 not in ("emergency_drain", "bare", "differs_from_bare", "items")},
            "emergency_drain": out["emergency_drain"], "bare": out["bare"],
            "differs_from_bare": out["differs_from_bare"], "items": out["items"]}  # fmt: skip


def v1_trace(
    replay: Replay,
    *,
    tight_budget: int | None = None,
    input_label: str | None = None,
    input_file: str | None = None,
    input_sha256: str | None = None,
    run_id: str | None = None,
    config_name: str | None = None,
    plugin_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``replay`` (made with ``engine="1.0"``) as an ``lcref-trace-v1`` document of the v1 set."""
    if not replay.is_v1:
        raise ValueError("v1_trace takes a replay made with engine='1.0' (reference_trace writes 0.15.3 replays)")
    keys = summary_keys(replay)
    budget = replay.token_budget
    tight = budget // 4 if tight_budget is None else tight_budget
    canonical = CanonicalJson(keys)
    per_turn = [_per_turn(replay, k, canonical) for k in range(len(replay.turns))]
    at_end = []
    for b in (budget, tight):
        sent = replay.sent(None, b)
        record = sent_record(sent, canonical, canonical_json=True)
        _v1_fields(sent, record)
        at_end.append(record)
    summaries = replay.summaries
    turns = [_turn(t, keys) for t in replay.turns]
    records = [r for t in replay.turns for r in _phase_records(t)]
    steps = Counter(f"{s['policy']}:{s['status']}" for r in records for s in r.coordinator_steps)
    calls = Counter(pipeline for r in records for pipeline, _ in r.calls)
    last = replay.turns[-1] if replay.turns else None
    final = replay.final_context
    batches, nodes = last.phases["pending_rows"] if last and last.phases else (0, 0)
    branch, commit = UPSTREAM["1.0"]
    return {
        "trace_format": TRACE_FORMAT,
        "input": input_label,
        "input_file": input_file,
        "input_sha256": input_sha256,
        "engine": {"repo": "lcm_lab", "commit": commit, "package_version": "1.0.0-beta.4"},
        "driver": {
            "protocol": PROTOCOL,
            "description": "lcm_lab.engine.replay.commit_turn: assemble (emergency drain) -> commitTurn -> background "
            "work to quiescence -> maintain, on the transcript clock",
            "stub_variant": replay.summarizer,
            "session_key": _session_key(replay),
            "maintain_order": "after-quiescence",
            "clock": {"mode": "transcript", "sqlite_now": "transcript",
                      "start_ms": replay.turns[0].clock_ms[0] if replay.turns and replay.turns[0].clock_ms else None,
                      "end_ms": last.clock_ms[1] if last and last.clock_ms else None},
        },  # fmt: skip
        "summarizer": replay.summarizer,
        "run_id": run_id or replay.run_id,
        "config_name": config_name,
        "plugin_config": dict(plugin_config or {}),
        "harness_config": {"summaryMaxCallsPerWindow": 1_000_000_000, "independentLogFile": {"enabled": False}},
        "resolved_config": replay.config.to_plugin_config(),
        "token_budget": budget,
        "tight_budget": tight,
        "session_id": replay.conversation.session_id,
        "conversation": {"conversation_id": 1, "session_id": replay.conversation.session_id,
                         "session_key": _session_key(replay), "title": None, "bootstrapped_at": None},  # fmt: skip
        "turn_count": len(replay.turns),
        "totals": {
            "summarizer_calls": sum(calls.values()),
            "summarizer_calls_by_pipeline": dict(calls),
            "summaries": len(summaries),
            "leaves": sum(1 for s in summaries if s.kind == "leaf"),
            "condensed": sum(1 for s in summaries if s.kind == "condensed"),
            "max_depth": max((s.depth for s in summaries), default=-1),
            "summaries_by_creator": dict(Counter(s.created_by for s in summaries if s.created_by)),
            "summaries_by_pipeline": dict(Counter(_pipeline(s) for s in summaries)),
            "levels": dict(Counter(s.level for s in summaries if s.level)),
            "over_threshold_turns": sum(1 for t in replay.turns if t.should_compact),
            "leaf_prep_turns": sum(1 for t in turns if t["leaf_trigger"] and t["leaf_trigger"]["shouldPrepare"]),
            "per_turn_paths": dict(Counter(p["path"] for p in per_turn)),
            "degraded_turns": sum(1 for p in per_turn if p["path"].startswith("degraded:")),
            "clamped_turns": sum(1 for p in per_turn if p["clamped"]),
            "emergency_drains_ran": sum(1 for t in replay.turns if t.emergency_drain is not None),
            "coordinator_steps": dict(sorted(steps.items())),
            "legacy_fallback_runs": sum(len(r.legacy_core) for r in records),
            "final_stored_tokens": replay.final_tokens,
            "pending_end": turns[-1]["pending_end"] if turns else {"batches": {}, "active_nodes": {}},
            "row_counts": {
                "messages": len(replay.messages),
                "message_parts": sum(len(m.parts) for m in replay.messages),
                "summaries": len(summaries),
                "summary_messages": sum(len(s.source_message_seqs) for s in summaries),
                "summary_parents": sum(len(s.source_summary_ids) for s in summaries),
                "context_items": len(final),
                "large_files": len(replay.large_files),
                "pending_compaction_batches": batches,
                "pending_summary_nodes": nodes,
                "turn_advancements": len(replay.turns),
            },
            "pump_ticks": None,
            "pump_caps": sum(r.capped for r in records),
            "wall_ms": None,
        },
        "turns": turns,
        "summaries": [
            {
                "key": keys[s.summary_id], "summary_id": s.summary_id, "created_turn": s.created_turn,
                "created_by": s.created_by, "pipeline": _pipeline(s), "level": s.level, "kind": s.kind,
                "depth": s.depth, "token_count": s.token_count, "source_message_seqs": list(s.source_message_seqs),
                "parent_keys": [keys[p] for p in s.source_summary_ids], "earliest_at": s.earliest_at,
                "latest_at": s.latest_at, "descendant_count": s.descendant_count,
                "descendant_token_count": s.descendant_token_count,
                "source_message_token_count": s.source_message_token_count,
                "file_ids": canon(js_stringify(list(s.file_ids))), "model": s.model, "content": s.content,
            }  # fmt: skip
            for s in summaries
        ],
        "messages": [{k: v for k, v in _message(m).items() if k != "sender"} for m in replay.messages],
        "large_files": [
            {"file_id": canon(f.file_id), "file_name": f.file_name, "mime_type": f.mime_type, "byte_size": f.byte_size,
             "line_count": f.line_count, "exploration_summary_sha256": _sha(f.exploration_summary or "")}
            for f in replay.large_files
        ],  # fmt: skip
        "assembled": [assembly_record(replay.assemble(budget=b), keys) for b in (budget, tight)],
        "engine_assembled_per_turn": per_turn,
        "engine_assembled": at_end,
        "log_counts": {},
        "log_samples": {},
    }


def _sha(text: str) -> str:
    from lcm_lab.engine.replay.trace import canon_sha256

    return canon_sha256(text)


def _phase_records(turn: TurnRecord) -> list[PhaseRecord]:
    phases = turn.phases or {}
    out = [phases.get("emergency_drain"), phases.get("commit"), phases.get("background")]
    maintain = phases.get("host_maintain")
    if maintain:
        out.append(maintain["record"])
    return [r for r in out if r is not None]
