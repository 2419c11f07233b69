"""Compaction operations built on full sweeps (spec §4.12-4.14): chained threshold sweeps
(``engine.compact`` with a threshold target, also what every deferred drain runs),
``compactUntilUnder`` and ``compactLeaf``.

:class:`CompactionOperations` is mixed into :class:`lcm_lab.engine.compaction.sweep.Compactor`, which
provides the passes and the sweep these operations chain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lcm_lab.engine.types import Level, SweepRecord

if TYPE_CHECKING:
    from lcm_lab.engine.compaction.sweep import Compactor


@dataclass
class SweepResult:
    action_taken: bool
    tokens_before: int
    tokens_after: int
    condensed: bool = False
    level: Level | None = None
    created_summary_id: str | None = None
    auth_failure: bool = False
    stopped_at_budget: bool = False
    passes: int = 0


@dataclass
class CompactResult:
    """What ``engine.compact({compactionTarget: "threshold"})`` reports."""

    ok: bool
    compacted: bool
    reason: str
    tokens_before: int
    tokens_after: int
    rounds: int
    sweeps: list[SweepRecord] = field(default_factory=list)


class CompactionOperations:
    """Threshold compaction, ``compactUntilUnder`` and ``compactLeaf`` over a compactor's sweeps."""

    def compact_threshold(
        self: Compactor,
        token_budget: int,
        *,
        fresh_tail_count: int | None = None,
        leaf_chunk_tokens: int | None = None,
        force: bool = False,
        observed_tokens: int | None = None,
    ) -> CompactResult:
        """``engine.compact`` with a threshold target: chained full sweeps (§4.14, README §1.2).

        ``fresh_tail_count``/``leaf_chunk_tokens`` are per-call overrides (from
        ``contextThresholdOverrides`` rules); the threshold fraction comes from ``self.config``.
        ``force`` passes ``force`` to every sweep (the emergency drain); an ``observed_tokens``
        count (the live context the caller saw) only changes the reason of a sweep that cannot act.
        """
        threshold = self.config.threshold_tokens(token_budget)
        started = self.clock()
        records: list[SweepRecord] = []
        results: list[SweepResult] = []
        while True:
            stored_before = self.state.stored_tokens()
            sweep = self.full_sweep(
                token_budget, force=force, fresh_tail_count=fresh_tail_count, leaf_chunk_tokens=leaf_chunk_tokens
            )
            results.append(sweep)
            records.append(_sweep_record(sweep, stored_before, fresh_tail_count, leaf_chunk_tokens, force=force))
            if not sweep.action_taken or sweep.tokens_after <= threshold:
                break
            if len(results) >= 2 and not sweep.tokens_after < results[-2].tokens_after:
                break
            if len(results) >= self.config.max_sweep_iterations:
                break
            if self.clock() - started >= self.config.compact_until_under_deadline_ms:
                break
        acted = any(r.action_taken for r in results)
        after = results[-1].tokens_after
        if not acted:
            reason = (
                "live context still exceeds target"
                if observed_tokens is None
                else "stored compaction exhausted but live context still exceeds target; transcript reset required"
            )
            return CompactResult(False, False, reason, results[0].tokens_before, after, 0, records)
        ok = after <= threshold
        reason = "compacted" if ok else "compacted but still over target"
        return CompactResult(ok, True, reason, results[0].tokens_before, after, len(results), records)

    def compact_until_under(
        self: Compactor, token_budget: int, target_tokens: int | None = None, current_tokens: int | None = None
    ) -> tuple[bool, int, int]:
        """Forced sweeps until at most ``target`` tokens (§4.12): (success, rounds, final tokens)."""
        target = math.floor(target_tokens) if target_tokens and target_tokens > 0 else token_budget
        live = math.floor(current_tokens) if current_tokens and current_tokens > 0 else 0
        last = max(self.state.stored_tokens(), live)
        if last < target or (self.fixed and last == target):  # QUIRK 4: equality still compacts
            return True, 0, last
        started = self.clock()
        operation_deadline = started + self.config.compact_until_under_deadline_ms
        for round_number in range(1, self.config.max_rounds + 1):
            if round_number > 1 and self.clock() >= operation_deadline:
                return last <= target, round_number - 1, last
            sweep = self.full_sweep(token_budget, force=True, operation_deadline_ms=operation_deadline)
            if sweep.auth_failure:
                return False, round_number, sweep.tokens_after
            if sweep.tokens_after <= target:
                return True, round_number, sweep.tokens_after
            if not sweep.action_taken or sweep.tokens_after >= last:
                return False, round_number, sweep.tokens_after
            last = sweep.tokens_after
        return last <= target, self.config.max_rounds, last

    def compact_leaf(self: Compactor, token_budget: int, force: bool = False) -> SweepResult:
        """One leaf pass (plus shallow condensation), as ``compactLeaf`` (§4.13)."""
        before = self.state.stored_tokens()
        threshold = self.config.threshold_tokens(token_budget)
        leaf_trigger = self.raw_tokens_outside_tail() >= self.config.leaf_chunk_tokens
        if not force and before <= threshold and not leaf_trigger:
            return SweepResult(False, before, before)
        chunk = self.select_leaf_chunk()
        if not chunk:
            return SweepResult(False, before, before)
        outcome = self.leaf_pass(chunk, self.prior_summary_context(chunk[0], None))
        if outcome.summary is None:
            return SweepResult(False, before, before, auth_failure=not outcome.skipped)
        result = SweepResult(False, before, max(0, before - outcome.removed_tokens + outcome.added_tokens), passes=1)
        self._note(result, outcome.summary)
        running = result.tokens_after
        max_depth = math.inf if self.config.sweep_max_depth < 0 else self.config.sweep_max_depth
        depth = 0
        while depth < max_depth:
            chunk_positions, tokens, meaningful = self.select_chunk_at_depth(depth, self.tail_start())
            if meaningful < self.fanout(depth, False) or tokens < self.config.condensed_min_chunk_tokens():
                break
            pass_before = running
            condensed = self.condensed_pass(chunk_positions, depth)
            if condensed.summary is None:
                break
            running = max(0, pass_before - condensed.removed_tokens + condensed.added_tokens)
            self._note(result, condensed.summary)
            result.condensed = True
            result.passes += 1
            if running >= pass_before:
                break
            depth += 1
        result.tokens_after = running
        return result


def _sweep_record(
    sweep: SweepResult,
    stored_before: int,
    fresh_tail_count: int | None = None,
    leaf_chunk_tokens: int | None = None,
    *,
    force: bool = False,
) -> SweepRecord:
    return SweepRecord(
        force=force,
        stop_at_tokens=None,
        stored_before=stored_before,
        action_taken=sweep.action_taken,
        tokens_before=sweep.tokens_before,
        tokens_after=sweep.tokens_after,
        condensed=sweep.condensed,
        level=sweep.level,
        auth_failure=sweep.auth_failure,
        stopped_at_budget=sweep.stopped_at_budget,
        created_summary_id=sweep.created_summary_id,
        passes=sweep.passes,
        fresh_tail_count=fresh_tail_count,
        leaf_chunk_tokens=leaf_chunk_tokens,
    )

