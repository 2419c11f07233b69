"""The reference trace format (``lcref-trace-v1``) and a structural comparison of two traces.

The reference runs of the real lossless-claw engine are recorded in this format (see the
reference-runs README §4). Writing a lab replay in the same format makes "does the lab behave
like the plugin?" a diff. Summary ids become creation-order keys ``S1, S2, …`` and externalised
file ids are canonicalised, because both are random in the plugin.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from lcm_lab.engine.compaction.source_text import FILE_ID, may_name_file_id
from lcm_lab.engine.js.json import js_stringify
from lcm_lab.engine.replay.driver import Replay
from lcm_lab.engine.types import (
    AssembledItem,
    Assembly,
    ContextItem,
    DebtSnapshot,
    DrainAttempt,
    SentContext,
    SummarizerCall,
    Summary,
    SweepRecord,
    TurnRecord,
)

TRACE_FORMAT = "lcref-trace-v1"
_CANON_FILE_ID = "file_0000000000000000"
_EXTERNALISED = ("LCM file:", "[LCM Tool Output:", "[LCM File:", "[LCM Raw Payload:")


def canon(text: str) -> str:
    """Replace externalised-payload ids (random in the plugin) by a constant."""
    return FILE_ID.sub(_CANON_FILE_ID, text) if may_name_file_id(text) else text


def canon_sha256(text: str) -> str:
    return hashlib.sha256(canon(text).encode("utf-8")).hexdigest()


def summary_keys(replay: Replay) -> dict[str, str]:
    """``summary_id`` → ``S<k>`` in creation order."""
    return {s.summary_id: f"S{i}" for i, s in enumerate(replay.summaries, start=1)}


def _item(item: ContextItem, keys: Mapping[str, str]) -> list[Any]:
    return ["message", item.ref] if item.kind == "message" else ["summary", keys.get(str(item.ref), item.ref)]


def _call(call: SummarizerCall) -> dict[str, Any]:
    return {
        "kind": call.kind,
        "depth": call.depth,
        "aggressive": call.aggressive,
        "source_sha256": canon_sha256(call.source_text),
        "source_tokens": call.source_tokens,
        "source_chars": len(call.source_text),
        "previous_summary_sha256": None if call.previous_summary is None else canon_sha256(call.previous_summary),
        "output": call.output,
        "output_tokens": call.output_tokens,
    }


def _sweeps(sweeps: Sequence[SweepRecord], keys: Mapping[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "force": s.force,
            "stopAtTokens": s.stop_at_tokens,
            "freshTailCount": s.fresh_tail_count,
            "leafChunkTokens": s.leaf_chunk_tokens,
            "storedBefore": s.stored_before,
            "actionTaken": s.action_taken,
            "tokensBefore": s.tokens_before,
            "tokensAfter": s.tokens_after,
            "condensed": s.condensed,
            "level": s.level,
            "authFailure": s.auth_failure,
            "stoppedAtBudget": s.stopped_at_budget,
            "createdSummary": keys.get(s.created_summary_id) if s.created_summary_id else None,
        }
        for s in sweeps
    ]


def _created(summary_ids: Sequence[str], replay: Replay, keys: Mapping[str, str],
             summaries: Mapping[str, Summary] | None = None) -> dict[str, Any]:
    created = [(summaries or replay.summaries_by_id)[sid] for sid in summary_ids]
    return {
        "created_summaries": [
            {
                "key": keys[s.summary_id],
                "kind": s.kind,
                "depth": s.depth,
                "token_count": s.token_count,
                "level": s.level,
                "calls": s.summarizer_calls,
            }
            for s in created
        ],
        "levels": [s.level for s in created],
    }


def _turn(record: TurnRecord, replay: Replay, keys: Mapping[str, str]) -> dict[str, Any]:
    deferred = replay.compaction_mode == "deferred"  # afterTurn only records debt: its compaction lists stay empty
    out: dict[str, Any] = {
        "turn": record.turn,
        "lines": list(record.lines) if record.lines else None,
        "input_messages": record.input_messages,
        "input_persistable_messages": record.input_persistable_messages,
        "ingested_seqs": list(record.ingested_seqs),
        "ingested_count": len(record.ingested_seqs),
        "skipped_input_lines": None,
        "stored_tokens_before": record.stored_tokens_before,
        "threshold": record.threshold,
        "should_compact": record.should_compact,
        "compact": [dict(record.compact_result)] if record.compact_result else [],
        "sweeps": [] if deferred else _sweeps(record.sweeps, keys),
        "summarizer_calls": [] if deferred else [_call(c) for c in record.calls],
        **_created(() if deferred else record.created_summary_ids, replay, keys),
    }
    if record.spend_backoff_would_open and record.compact_result:
        out["spend_backoff_would_open"] = [record.compact_result["reason"]]
    out["tokens_after"] = record.tokens_after
    out["context_after"] = [_item(i, keys) for i in record.context_after]
    out["logs"] = [] if deferred else list(record.logs)
    if deferred:
        out.update(_deferred_turn(record, replay, keys))
    return out


def _debt(snapshot: DebtSnapshot | None) -> dict[str, Any] | None:
    if snapshot is None:
        return None
    return {
        "pending": snapshot.pending,
        "running": False,
        "reason": snapshot.reason,
        "token_budget": snapshot.token_budget,
        "context_threshold": snapshot.context_threshold,
        "retry_attempts": snapshot.retry_attempts,
        "backoff_active": snapshot.backoff_active,
        "retry_delay_ms": snapshot.retry_delay_ms,
        "last_failure": snapshot.last_failure,
        "next_attempt_after_ms": snapshot.next_attempt_after_ms,
        "last_finished_at_ms": snapshot.last_finished_at_ms,
    }


_SKIPPED_REASON = "deferred compaction backoff active"


def attempt_record(attempt: DrainAttempt, replay: Replay, keys: Mapping[str, str],
                   summaries: Mapping[str, Summary] | None = None) -> dict[str, Any]:
    """A deferred-compaction attempt in the deferred set's format (README §4 "Attempt record");
    ``summaries`` resolves the summaries it created (default: the replay's)."""
    compact = attempt.compact_result
    reason = compact["reason"] if compact else _SKIPPED_REASON
    changed = bool(compact and compact["compacted"])
    out: dict[str, Any] = {}
    if attempt.phase == "drain":
        out["scheduled"] = {"tokenBudget": attempt.token_budget, "currentTokenCount": None, "reason": "threshold"}
    elif attempt.phase == "host_maintain":
        out.update(changed=changed, reason=reason)
    call = {"force": attempt.force, "tokenBudget": attempt.token_budget, "currentTokenCount": attempt.current_token_count}
    out.update({
        "outcome": attempt.outcome,
        "ran": attempt.ran,
        "consume": [{**call, "with_runtime_context": attempt.phase == "host_maintain",
                     "result": {"changed": changed, "reason": reason, "exhausted": attempt.outcome == "exhausted"}}],
        "evaluate": [] if compact is None else [{
            "storedTokens": attempt.stored_tokens, "threshold": attempt.threshold,
            "shouldCompact": (attempt.stored_tokens or 0) > (attempt.threshold or 0),
        }],
        "compact": [] if compact is None else [{"compactionTarget": "threshold", **call, **compact}],
        "sweeps": _sweeps(attempt.sweeps, keys),
        "summarizer_calls": [_call(c) for c in attempt.calls],
        **_created(attempt.created_summary_ids, replay, keys, summaries),
    })  # fmt: skip
    if compact and compact["compacted"] and not compact["ok"]:
        out["spend_backoff_would_open"] = [compact["reason"]]
    out["debt_before"] = _debt(attempt.debt_before)
    out["debt_after"] = _debt(attempt.debt_after)
    if not attempt.ran:
        before = attempt.debt_before
        finished = before.last_finished_at_ms
        out["backoff"] = {
            "retry_attempts": before.retry_attempts,
            "retry_delay_ms": before.retry_delay_ms,
            "transcript_ms_since_failure": None if finished is None else attempt.now_ms - finished,
            "transcript_time_would_retry": False,
            "now_ms": attempt.now_ms,
            "next_attempt_after_ms": before.next_attempt_after_ms,
            "remaining_ms": (before.next_attempt_after_ms or 0) - attempt.now_ms,
        }
    out["tokens_after"] = attempt.tokens_after
    out["context_after"] = [_item(i, keys) for i in attempt.context_after]
    if attempt.logs:
        out["logs"] = list(attempt.logs)
    return out


def _deferred_turn(record: TurnRecord, replay: Replay, keys: Mapping[str, str]) -> dict[str, Any]:
    maintain = record.host_maintain
    return {
        "time_ms": list(record.time_ms) if record.time_ms else None,
        "clock_ms": list(record.clock_ms) if record.clock_ms else None,
        "debt_recorded": record.debt_recorded,
        "debt_before": _debt(record.debt_before),
        "drain_ran": bool(record.drain and record.drain.ran),
        "drain": None if record.drain is None else attempt_record(record.drain, replay, keys),
        "host_maintain": (
            {"changed": False, "reason": "transcript GC disabled"}
            if maintain is None
            else attempt_record(maintain, replay, keys)
        ),
        "debt_after": _debt(record.debt_after),
        "tokens_end": record.final_tokens,
        "context_end": [_item(i, keys) for i in record.final_context],
    }


def deferred_totals(replay: Replay, paths: Sequence[str]) -> dict[str, Any]:
    """``totals.deferred``: drain, maintenance and emergency counts and outcomes, paths, creators."""
    turns = replay.turns
    drains = [t.drain for t in turns if t.drain is not None]
    maintains = [t.host_maintain for t in turns if t.host_maintain is not None]
    emergencies = [t.emergency_drain for t in turns if t.emergency_drain is not None]
    every = [*drains, *maintains, *emergencies]
    calls = {"afterTurn": 0, "drain": 0, "host_maintain": 0, "emergency_drain": 0}
    for attempt in every:
        calls[attempt.phase] += len(attempt.calls)
    pending_before = [False, *(bool(t.debt_after and t.debt_after.pending) for t in turns[:-1])]
    return {
        "drains_scheduled": len(drains),
        "drains_ran": sum(1 for a in drains if a.ran),
        "drain_outcomes": dict(Counter(a.outcome for a in drains)),
        "host_maintain_consumed": len(maintains),
        "host_maintain_ran": sum(1 for a in maintains if a.ran),
        "host_maintain_outcomes": dict(Counter(a.outcome for a in maintains)),
        "emergency_drains_reached": len(emergencies),
        "emergency_drains_ran": sum(1 for a in emergencies if a.ran),
        "emergency_outcomes": dict(Counter(a.outcome for a in emergencies)),
        "per_turn_paths": dict(Counter(paths)),
        "degraded_turns": sum(1 for p in paths if p.startswith("degraded:")),
        "turns_pending_debt_at_assemble": sum(pending_before),
        "backoff_skips": sum(1 for a in every if not a.ran),
        "backoff_skips_transcript_time_would_retry": 0,
        "first_turn_transcript_time_would_differ": None,
        "summaries_by_creator": dict(Counter(s.created_by for s in replay.summaries if s.created_by)),
        "summarizer_calls_by_phase": calls,
        "drain_errors": 0,
    }


def canonical_message_json(message: Mapping[str, Any], keys: Mapping[str, str]) -> str:
    """``JSON.stringify(message)`` with summary ids → ``keys`` and file ids canonical (README §4)."""
    text = js_stringify(message)
    for sid, key in keys.items():
        if sid in text:
            text = text.replace(sid, key)
    return canon(text)


class CanonicalJson:
    """:func:`canonical_message_json` remembering each (kind, ref) message while it stays equal."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self.keys = keys
        self._seen: dict[tuple[str, Any], tuple[Mapping[str, Any], str]] = {}

    def __call__(self, item: AssembledItem) -> str:
        key = (item.kind, item.ref)
        hit = self._seen.get(key)
        if hit is not None and item.kind != "synthetic" and hit[0] == item.message:
            return hit[1]
        text = canonical_message_json(item.message, self.keys)
        self._seen[key] = (item.message, text)
        return text

    def sha256(self, items: Sequence[AssembledItem]) -> str:
        """The hash of the canonical JSON of a whole output list (reference-runs-engine README §4)."""
        body = ",".join(self(item) for item in items)
        return hashlib.sha256(f"[{body}]".encode()).hexdigest()


def _items(items: Sequence[AssembledItem], keys: Mapping[str, str]) -> list[list[Any]]:
    return [[i.role, i.kind, keys.get(str(i.ref), i.ref) if i.kind == "summary" else i.ref] for i in items]


def assembly_record(assembly: Assembly, keys: Mapping[str, str]) -> dict[str, Any]:
    """An assembly in the trace's ``assembled[i]`` shape (summary ids → ``keys``, file ids canonical)."""
    items = _items(assembly.items, keys)
    return {
        "tokenBudget": assembly.token_budget,
        "estimatedTokens": assembly.estimated_tokens,
        "selectionMode": assembly.selection_mode,
        "freshTailOrdinal": assembly.fresh_tail_ordinal,
        "tailTokens": assembly.tail_tokens,
        "remainingBudget": assembly.remaining_budget,
        "evictableTotalTokens": assembly.evictable_total_tokens,
        "stats": dict(assembly.stats),
        "items": items,
        "messages_canonical_json": [canonical_message_json(item.message, keys) for item in assembly.items],
    }


def sent_record(sent: SentContext, canonical: CanonicalJson, *, canonical_json: bool = False) -> dict[str, Any]:
    """An engine-level assembly in the ``engine_assembled_per_turn[k]`` / ``engine_assembled[i]`` shape."""
    keys = canonical.keys
    out: dict[str, Any] = {}
    if sent.turn is not None:
        out["turn"] = sent.turn
        out["prompt_line"] = sent.prompt.ref if sent.prompt is not None else None
    else:
        out["tokenBudget"] = sent.token_budget
    sha = canonical.sha256(sent.items)
    bare = sent.bare
    bare_sha = None if bare is None else canonical.sha256(bare.items)
    logged = sent.serialized_before is not None
    out.update({
        "path": sent.path,
        "clamped": sent.clamped,
        "estimatedTokens": sent.estimated_tokens,
        "n_messages": len(sent.items),
        "messages_sha256": sha,
        "live_messages_in": sent.live_messages_in,
        "serializedTokensBefore": sent.serialized_before,
        "evictedMessages": (sent.evicted if logged else 0) if bare is not None and not sent.degraded else None,
        "internalEstimatedTokens": bare.estimated_tokens if bare is not None and sent.path == "assembled" else None,
        "promptRecallMatches": 0,
        "volatileLiveInputsAppended": 0,
        "emergency_drain_would_run": sent.emergency_drain_reached and sent.emergency_drain is None,
        "bare": None if bare is None else {
            "estimatedTokens": bare.estimated_tokens, "n_messages": len(bare.items), "messages_sha256": bare_sha,
        },
        "differs_from_bare": None if bare is None else sha != bare_sha,
        "items": _items(sent.items, keys),
    })  # fmt: skip
    if canonical_json:
        out["messages_canonical_json"] = [canonical(item) for item in sent.items]
    return out


def question_turn_record(replay: Replay, sent: SentContext) -> dict[str, Any]:
    """A question turn (:meth:`Replay.ask`) as the reference-runs-question set records it, the
    trace's ``engine_assembled_per_turn[-1]`` (``messages_canonical_json`` and the emergency drain
    included). S-keys follow creation order over the summaries that existed before the question's
    turn, then the ones its drain created.

    ``prompt_line`` is ``None``: the question is not a line of the replayed input.
    """
    if sent.turn is None:
        raise ValueError("question_turn_record takes the result of Replay.ask (a per-turn call)")
    before = [s for s in replay.summaries if s.created_turn is None or s.created_turn < sent.turn]
    keys = {s.summary_id: f"S{i}" for i, s in enumerate([*before, *sent.created_summaries], start=1)}
    summaries = {s.summary_id: s for s in [*before, *sent.created_summaries]}
    out = sent_record(sent, CanonicalJson(keys), canonical_json=True)
    if replay.compaction_mode == "deferred":
        drain = sent.emergency_drain
        out["emergency_drain"] = None if drain is None else attempt_record(drain, replay, keys, summaries)
    return out


def reference_trace(
    replay: Replay,
    *,
    tight_budget: int | None = None,
    input_label: str | None = None,
    input_file: str | None = None,
    input_sha256: str | None = None,
    run_id: str | None = None,
    config_name: str | None = None,
    plugin_config: Mapping[str, Any] | None = None,
    engine_level: bool = True,
) -> dict[str, Any]:
    """The replay as an ``lcref-trace-v1`` document (assembled at the run and tight budgets).

    ``engine_level`` adds what ``engine.assemble`` returns per turn and at the end
    (``engine_assembled_per_turn``, ``engine_assembled``), as the engine-level reference set does.
    """
    keys = summary_keys(replay)
    budget = replay.token_budget
    tight = budget // 4 if tight_budget is None else tight_budget
    summaries = replay.summaries
    levels = Counter(s.level for s in summaries if s.level)
    final = replay.final_context
    assembled = [assembly_record(replay.assemble(budget=b), keys) for b in (budget, tight)]
    calls = sum(len(t.calls) for t in replay.turns)
    canonical = CanonicalJson(keys)
    per_turn = [replay.sent(k) for k in range(len(replay.turns))] if engine_level else []
    deferred = replay.compaction_mode == "deferred"
    at_end = [replay.sent(None, b) for b in (budget, tight)] if engine_level else []
    return {
        "trace_format": TRACE_FORMAT,
        "input": input_label,
        "input_file": input_file,
        "input_sha256": input_sha256,
        "engine": {"repo": "lcm_lab", "commit": None, "package_version": _version()},
        "driver": {
            "protocol": "afterTurn-runtime-batch",
            "description": "lcm_lab.engine.replay.driver: ingest each turn, evaluate stored tokens, threshold-compact inline",
            "single_turn": bool(replay.meta.get("single_turn")),
            "stub_variant": replay.summarizer,
        },
        "summarizer": replay.summarizer,
        "run_id": run_id or replay.run_id,
        "config_name": config_name,
        "plugin_config": dict(plugin_config or {}),
        "harness_config": (
            {"proactiveThresholdCompactionMode": "inline", "spendGuard": "disabled"}
            if replay.compaction_mode == "inline"
            else {"spendGuard": "disabled"}
        ),
        "resolved_config": replay.config.to_plugin_config() if hasattr(replay.config, "to_plugin_config") else {},
        "token_budget": budget,
        "tight_budget": tight,
        "session_id": replay.conversation.session_id,
        "conversation": {
            "conversation_id": 1,
            "session_id": replay.conversation.session_id,
            "session_key": replay.conversation.session_key,
            "title": None,
            "bootstrapped_at": None,
        },
        "turn_count": len(replay.turns),
        "totals": {
            "summarizer_calls": calls,
            "summaries": len(summaries),
            "leaves": sum(1 for s in summaries if s.kind == "leaf"),
            "condensed": sum(1 for s in summaries if s.kind == "condensed"),
            "max_depth": max((s.depth for s in summaries), default=-1),
            "compacting_turns": sum(1 for t in replay.turns if t.should_compact),
            "levels": dict(levels),
            "final_stored_tokens": replay.final_tokens,
            "row_counts": {
                "messages": len(replay.messages),
                "message_parts": sum(len(m.parts) for m in replay.messages),
                "summaries": len(summaries),
                "summary_messages": sum(len(s.source_message_seqs) for s in summaries),
                "summary_parents": sum(len(s.source_summary_ids) for s in summaries),
                "context_items": len(final),
                "large_files": len(replay.large_files),
            },
            **({"deferred": deferred_totals(replay, [x.path for x in per_turn])} if deferred and engine_level else {}),
        },
        "turns": [_turn(t, replay, keys) for t in replay.turns],
        "summaries": [
            {
                "key": keys[s.summary_id],
                "summary_id": s.summary_id,
                "created_turn": s.created_turn,
                **({"created_by": s.created_by} if deferred else {}),
                "level": s.level,
                "kind": s.kind,
                "depth": s.depth,
                "token_count": s.token_count,
                "source_message_seqs": list(s.source_message_seqs),
                "parent_keys": [keys[p] for p in s.source_summary_ids],
                "earliest_at": s.earliest_at,
                "latest_at": s.latest_at,
                "descendant_count": s.descendant_count,
                "descendant_token_count": s.descendant_token_count,
                "source_message_token_count": s.source_message_token_count,
                "file_ids": canon(js_stringify(list(s.file_ids))),
                "model": s.model,
                "content": s.content,
            }
            for s in summaries
        ],
        "messages": [_message(m) for m in replay.messages],
        "large_files": [
            {
                "file_id": canon(f.file_id),
                "file_name": f.file_name,
                "mime_type": f.mime_type,
                "byte_size": f.byte_size,
                "line_count": f.line_count,
                "exploration_summary_sha256": canon_sha256(f.exploration_summary or ""),
            }
            for f in replay.large_files
        ],
        "assembled": assembled,
        "engine_assembly": {
            "mode": "openclaw",
            "per_turn_call": "engine.assemble({sessionId, messages: <message objects of turns 0..k-1>, "
            "tokenBudget: <run budget>, prompt: <text of turn k's user message>, availableTools: new Set()}) "
            "before afterTurn of turn k",
            "end_call": "engine.assemble({sessionId, messages: <all input message objects>, "
            "tokenBudget: <run budget | tight budget>}) after the last afterTurn",
            "emergency_drain_would_run_calls": sum(
                1 for s in [*per_turn, *at_end] if s.emergency_drain_reached and s.emergency_drain is None
            ),
        },
        **(
            {
                "engine_assembled_per_turn": [
                    {**sent_record(s, canonical), **(
                        {"emergency_drain": None if s.emergency_drain is None
                         else attempt_record(s.emergency_drain, replay, keys)} if deferred else {}
                    )}
                    for s in per_turn
                ],  # fmt: skip
                "engine_assembled": [sent_record(s, canonical, canonical_json=True) for s in at_end],
            }
            if engine_level
            else {}
        ),
        "crosscheck": {},
        "log_counts": dict(Counter(line for t in replay.turns for line in t.logs)),
        "log_samples": {},
    }


def _message(m: Any) -> dict[str, Any]:
    out = {
        "seq": m.seq,
        "role": m.role,
        "token_count": m.token_count,
        "content_sha256": canon_sha256(m.content),
        "content_chars": len(m.content),
        "created_at": m.created_at,
        "transcript_entry_id": m.transcript_entry_id,
        "sender": m.sender_metadata,
        "stable_event_key": m.stable_event_key,
        "parts": len(m.parts),
    }
    if any(marker in m.content for marker in _EXTERNALISED):
        out["content_canonical"] = canon(m.content)
    return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lcm_lab")
    except PackageNotFoundError:
        return "0+unknown"


# -- comparison -------------------------------------------------------------------------------------

# Fields that describe the harness or the machine, not compaction behaviour.
_IGNORED_TOP = {
    "engine", "driver", "summarizer", "harness_config", "resolved_config", "crosscheck", "log_counts",
    "log_samples", "input", "input_file", "input_sha256", "run_id", "config_name", "plugin_config",
    "engine_assembly", "deferred_protocol",
}  # fmt: skip
# Recorded by the engine-level and deferred reference sets only.
_NEWER_FIELDS = {"engine_assembled_per_turn", "engine_assembled"}
_HARNESS_LOG = re.compile(r"bootstrap checkpoint refresh failed")
_DIGITS = re.compile(r"elapsedMs=\d+")


def _normalise_logs(lines: Sequence[str]) -> list[str]:
    return [_DIGITS.sub("elapsedMs=#", line) for line in lines if not _HARNESS_LOG.search(line)]


def compare_traces(got: Mapping[str, Any], expected: Mapping[str, Any], limit: int = 20) -> list[str]:
    """Differences between two traces as readable lines (empty when they match).

    Summary ids, wall-clock fields and harness log lines are ignored; everything the engine
    decides (turn records, calls, summaries, messages, assembled output) is compared.
    """
    diffs: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(diffs) >= limit:
            return
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in sorted(set(a) | set(b)):
                if path == "" and key in _IGNORED_TOP:
                    continue
                if key in ("summary_id", "wall_ms"):
                    continue
                if key == "logs":
                    walk(_normalise_logs(a.get(key) or []), _normalise_logs(b.get(key) or []), f"{path}.{key}")
                    continue
                if path == "" and key in _NEWER_FIELDS and key not in b:
                    continue  # an older reference set that did not record it
                if key not in a or key not in b:
                    diffs.append(f"{path}.{key}: {'missing' if key not in a else 'unexpected'}")
                    continue
                walk(a[key], b[key], f"{path}.{key}")
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                diffs.append(f"{path}: length {len(a)} != expected {len(b)}")
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                walk(x, y, f"{path}[{i}]")
        elif a != b:
            diffs.append(f"{path}: {str(a)[:160]!r} != expected {str(b)[:160]!r}")

    walk(got, expected, "")
    return diffs
