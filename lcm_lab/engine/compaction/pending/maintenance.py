"""When 1.0 compacts: the debt row, the pending pipeline's core loop, its legacy fallback, and the
background drains (lossless-claw 1.0, ``src/engine.ts``).

* ``evaluatePostTurnCompaction``: over threshold → a debt row, a threshold publication
  opportunity (``publish-ready-only``) and a debt drain (``publish-if-ready``); otherwise the leaf
  trigger (raw tokens outside the tail ≥ ``leafChunkTokens``) schedules a preparation drain
  (``prepare-only``). Both drains re-schedule themselves; the harness runs them to quiescence, so
  here they are loops (``drainDeferredCompactionDebtIfIdle``, ``drainPendingSummaryPreparationIfIdle``).
* ``consumeDeferredCompactionDebt``: the 0.15.3 backoff, force and retry schedule, plus the
  debt-clear rule (a threshold row with no active batch and a batch published at or after its
  ``requested_at`` is re-evaluated and cleared once under threshold), the pending core as the work,
  and "still pending" results that keep the row pending without a failure.
* ``executePendingCompactionCore``: up to ``maxSweepIterations`` coordinator steps; the 0.15.3
  threshold sweep (:meth:`Compactor.compact_threshold`) runs when the planner finds nothing.

Every call is recorded in the current :class:`PhaseRecord` (reference-runs-v1 README §3.2).
Time is the transcript clock the caller sets in :attr:`PendingEngine.now_ms`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lcm_lab.engine.compaction.deferred import DebtRow, retry_delay_ms
from lcm_lab.engine.compaction.pending.coordinator import Coordinator, settings_for
from lcm_lab.engine.compaction.pending.store import PendingNode, PendingStore
from lcm_lab.engine.types import SummarizerCall, Summary, SweepRecord

if TYPE_CHECKING:
    from lcm_lab.engine.compaction.sweep import Compactor

__all__ = ["FORCED_EMERGENCY_ATTEMPTS", "PendingEngine", "PhaseRecord"]

FORCED_EMERGENCY_ATTEMPTS = 3  # ASSEMBLE_FORCE_MAX_RETRY_ATTEMPTS
NEAR_BUDGET_RATIO = 0.75  # DEFERRED_ASSEMBLY_DEGRADED_PRESSURE_RATIO
DRAIN_CAP = 10_000  # re-schedules of one drain before the lab gives up (the harness caps its pump too)
READY = "pending summaries ready for publish"
PUBLISHED = "pending summaries published"
SATISFIED = "pending summary publication satisfied stored threshold"
BACKOFF = "deferred compaction backoff active"
# failures that keep the debt pending without a backoff (shouldBackOffDeferredCompactionFailure)
_NO_BACKOFF = re.compile(r"\b(provider auth failure|summary provider circuit breaker is open)\b", re.IGNORECASE)
LEGACY_REASONS = ("no compactable context outside fresh tail", "no pending summary nodes planned")


@dataclass(slots=True)
class PhaseRecord:
    """Everything the engine did in one phase of a turn, in call order."""

    scheduled: dict[str, int] = field(default_factory=lambda: {"threshold_publication": 0, "deferred_drain": 0, "prep_drain": 0})
    drains_run: dict[str, int] = field(default_factory=lambda: {"deferred_drain": 0, "prep_drain": 0})
    evaluate: list[dict[str, Any]] = field(default_factory=list)
    leaf_trigger: list[dict[str, Any]] = field(default_factory=list)
    consume: list[dict[str, Any]] = field(default_factory=list)
    pending_core: list[dict[str, Any]] = field(default_factory=list)
    coordinator_steps: list[dict[str, Any]] = field(default_factory=list)
    legacy_core: list[dict[str, Any]] = field(default_factory=list)
    sweeps: list[SweepRecord] = field(default_factory=list)
    calls: list[tuple[str, SummarizerCall]] = field(default_factory=list)  # (pipeline, call)
    created: list[Summary] = field(default_factory=list)
    spend_backoff_would_open: list[str] = field(default_factory=list)
    capped: int = 0  # drains the lab stopped re-scheduling (DRAIN_CAP)


class PendingEngine:
    """One conversation's 1.0 compaction machinery over a :class:`Compactor`'s state."""

    def __init__(self, compactor: Compactor, overrides: dict[str, int] | None = None) -> None:
        self.compactor = compactor
        self.state = compactor.state
        self.config = compactor.config
        self.overrides = dict(overrides or {})
        self.store = PendingStore()
        self.row: DebtRow | None = None
        self.requested_at_ms: int | None = None
        self.now_ms = 0
        self.turn: int | None = None
        self.phase: str | None = None  # summaries' created_by
        self.record = PhaseRecord()
        self._raw_rewrites, self._raw_sums = -1, [0]
        self.coordinator = Coordinator(
            compactor,
            self.store,
            settings_for(self.config, self.overrides.get("fresh_tail_count"), self.overrides.get("leaf_chunk_tokens")),
            self,
        )

    # -- bookkeeping ---------------------------------------------------------------------------
    def begin(self, phase: str | None) -> PhaseRecord:
        self.phase = phase
        self.compactor.phase = phase
        self.compactor.turn = self.turn
        self.record = PhaseRecord()
        return self.record

    @property
    def pending(self) -> bool:
        return self.row is not None and self.row.pending

    def note_created(self, summary: Summary) -> None:
        self.record.created.append(summary)
        self.compactor.created.append(summary)

    def summarize_pending(self, source: str, node: PendingNode) -> str:
        """One pending-pipeline call: no previous summary, never aggressive (``prepareOne``)."""
        depth = node.depth if node.kind == "condensed" else 0
        before = len(self.compactor.calls)
        text = self.compactor._call(source, node.kind, depth, False, None)
        for call in self.compactor.calls[before:]:
            self.record.calls.append(("pending", call))
        return text or ""

    def stored(self) -> int:
        return self.state.stored_tokens()

    def evaluate(self, budget: int, observed: int | None = None) -> tuple[int, int, bool]:
        """``CompactionEngine.evaluate``: stored (or observed) tokens against floor(threshold × budget)."""
        stored = self.stored()
        live = observed if observed is not None and observed > 0 else 0
        threshold = self.config.threshold_tokens(budget)
        should = max(stored, live) > threshold
        self.record.evaluate.append({"storedTokens": stored, "threshold": threshold, "shouldCompact": should})
        return stored, threshold, should

    def raw_tokens_outside_tail(self) -> int:
        """``countRawTokensOutsideFreshTail`` from running sums over the context, kept while the
        context only grows at its end (the compactor's own count walks the whole prefix)."""
        state = self.state
        if state.rewrites != self._raw_rewrites:
            self._raw_rewrites, self._raw_sums = state.rewrites, [0]
        sums = self._raw_sums
        for item in state.context[len(sums) - 1 :]:
            sums.append(sums[-1] + (state.message_source_tokens(int(item.ref)) if item.kind == "message" else 0))
        return sums[min(self.compactor.tail_start(), len(state.context))]

    def leaf_trigger(self) -> dict[str, Any]:
        raw = self.raw_tokens_outside_tail()
        threshold = self.config.leaf_chunk_tokens
        out = {"rawTokensOutsideTail": raw, "threshold": threshold, "shouldPrepare": raw >= threshold}
        self.record.leaf_trigger.append(out)
        return out

    # -- debt ----------------------------------------------------------------------------------
    def record_debt(self, budget: int) -> None:
        """``requestProactiveCompactionDebt`` (reason ``threshold``; retries and backoff kept)."""
        if self.row is None:
            self.row = DebtRow(budget, self.config.context_threshold)
        self.row.pending = True
        self.row.token_budget = budget
        self.row.context_threshold = self.config.context_threshold
        self.requested_at_ms = self.now_ms

    def _finish(self, failure: str | None, keep_pending: bool) -> None:
        """``markProactiveCompactionFinished``."""
        row = self.row
        assert row is not None
        if failure is not None and not _NO_BACKOFF.search(failure):
            row.retry_attempts += 1
            row.next_attempt_after_ms = self.now_ms + retry_delay_ms(row.retry_attempts)
        else:
            row.retry_attempts = 0
            row.next_attempt_after_ms = None
        row.pending = keep_pending
        row.last_failure = failure
        row.last_finished_at_ms = self.now_ms

    def consume(self, policy: str, budget: int, current: int | None, *, force: bool = False) -> dict[str, Any] | None:
        """``consumeDeferredCompactionDebt``: None when no row is pending."""
        entry: dict[str, Any] = {"policy": policy, "force": force, "tokenBudget": budget, "currentTokenCount": current, "result": None}
        self.record.consume.append(entry)
        result = self._consume(policy, budget, current, force)
        entry["result"] = result
        return result

    def _consume(self, policy: str, budget: int, current: int | None, force: bool) -> dict[str, Any] | None:
        row = self.row
        if row is None or not row.pending:
            return None
        work_budget = min(budget, row.token_budget) if row.token_budget and row.token_budget > 0 else budget
        if self.requested_at_ms is not None and self.store.active() is None and self.store.published_since(self.requested_at_ms):
            _, _, should = self.evaluate(work_budget)
            if not should:
                self._finish(None, False)
                return {"changed": False, "reason": SATISFIED, "exhausted": False}
        if not force and row.backoff_active(self.now_ms):
            return {"changed": False, "reason": BACKOFF, "exhausted": False}
        row.pending = False  # markProactiveCompactionRunning
        result = self.pending_core(policy, work_budget, current, "threshold", force)
        pressure = False
        if policy == "publish-ready-only" and result["compacted"]:
            pressure = self.evaluate(work_budget)[2]
        exhausted = bool(result.get("exhausted"))
        keep = bool(result.get("pending")) or pressure or (not result["ok"] and not exhausted)
        self._finish(None if result["ok"] or exhausted else result["reason"] or "deferred compaction failed", keep)
        return {"changed": result["compacted"], "reason": result["reason"], "exhausted": exhausted}

    # -- the pending core ------------------------------------------------------------------------
    def pending_core(self, policy: str, budget: int, current: int | None, target: str | None, force: bool) -> dict[str, Any]:
        """``executePendingCompactionCore``: coordinator steps, the legacy sweep as fallback."""
        entry: dict[str, Any] = {
            "publishPolicy": policy, "compactionTarget": target, "force": force, "tokenBudget": budget,
            "currentTokenCount": current,
        }  # fmt: skip
        self.record.pending_core.append(entry)
        before = None if policy == "prepare-only" else self.stored()
        out = self._pending_steps(policy, budget, current, target, force, before)
        entry.update({
            "ok": out["ok"], "compacted": out["compacted"], "pending": bool(out.get("pending")), "reason": out["reason"],
            "tokensBefore": out.get("tokensBefore"), "tokensAfter": out.get("tokensAfter"),
        })  # fmt: skip
        return out

    def _pending_steps(
        self, policy: str, budget: int, current: int | None, target: str | None, force: bool, before: int | None
    ) -> dict[str, Any]:
        steps = max(1, math.floor(self.config.max_sweep_iterations))
        for _ in range(steps):
            result = self.coordinator.run_once(policy)
            self._note_step(policy, result)
            status = result["status"]
            if status == "published":
                after = self.stored()
                return {"ok": True, "compacted": True, "pending": bool(result.get("remainingCompactableWork")),
                        "reason": PUBLISHED, "tokensBefore": after if before is None else before, "tokensAfter": after}  # fmt: skip
            if status == "failed":
                return {"ok": False, "compacted": False, "reason": "provider auth failure" if result.get("authFailure")
                        else result["failureSummary"]}  # fmt: skip
            if status == "ready":
                return {"ok": True, "compacted": False, "pending": True, "reason": result["reason"]}
            if status == "idle":
                reason = result["reason"]
                if policy == "publish-ready-only" or reason == "no claimable pending summary nodes":
                    return {"ok": True, "compacted": False, "pending": True, "reason": reason}
                if reason in LEGACY_REASONS:
                    if policy == "prepare-only":
                        return {"ok": True, "compacted": False, "reason": reason}
                    return self.legacy_core(budget, current, force)
                return {"ok": True, "compacted": False, "reason": reason}
        return {"ok": True, "compacted": False, "pending": True, "reason": "pending summary work remains"}

    def _note_step(self, policy: str, result: dict[str, Any]) -> None:
        step: dict[str, Any] = {"policy": policy, "status": result["status"]}
        if "reason" in result:
            step["reason"] = result["reason"]
        if result["status"] == "planned":
            step["nodeCount"] = result["nodeCount"]
        if result["status"] == "published":
            step["frontier"] = result["frontier"]
            step["remainingCompactableWork"] = bool(result.get("remainingCompactableWork"))
        if result["status"] == "prepared":
            step["node"] = result["node"]
        self.record.coordinator_steps.append(step)

    def legacy_core(self, budget: int, current: int | None, force: bool) -> dict[str, Any]:
        """The 0.15.3 ``executeCompactionCore`` with a threshold target (chained full sweeps)."""
        compactor = self.compactor
        stored, threshold, should = self.evaluate(budget, current)
        live = current if current is not None and current > 0 else 0
        tokens_before = max(stored, live)
        entry: dict[str, Any] = {"compactionTarget": "threshold", "force": force, "tokenBudget": budget, "currentTokenCount": current}
        self.record.legacy_core.append(entry)
        if not force and not should:
            out = {"ok": True, "compacted": False, "reason": "below threshold", "exhausted": False,
                   "tokensBefore": tokens_before, "tokensAfter": None, "rounds": None}  # fmt: skip
            entry.update(out)
            return out
        # Raw backlog with an observed count forces the sweeps (projectedRawBacklogPressure).
        backlog = live > 0 and max(stored, live) > threshold and self.raw_tokens_outside_tail() > 0
        calls_before, created_before = len(compactor.calls), len(compactor.created)
        result = compactor.compact_threshold(
            budget, force=force or backlog, observed_tokens=current if live > 0 else None, **self.overrides
        )
        self.record.sweeps.extend(result.sweeps)
        for call in compactor.calls[calls_before:]:
            self.record.calls.append(("legacy", call))
        self.record.created.extend(compactor.created[created_before:])
        exhausted = False
        reason = result.reason
        ok = result.ok
        if not result.compacted:
            if result.tokens_after <= threshold:
                reason, ok = "already under target", True
            else:
                exhausted, ok = True, False
        if result.compacted and not result.ok:
            self.record.spend_backoff_would_open.append(result.reason)
        out = {"ok": ok, "compacted": result.compacted, "reason": reason, "exhausted": exhausted,
               "tokensBefore": tokens_before, "tokensAfter": result.tokens_after, "rounds": result.rounds}  # fmt: skip
        entry.update(out)
        return out

    # -- what the host triggers ------------------------------------------------------------------
    def after_commit(self, budget: int) -> dict[str, Any]:
        """``evaluatePostTurnCompaction`` (phase ``commitTurn``): returns what it scheduled."""
        stored, threshold, should = self.evaluate(budget)
        decision: dict[str, Any] = {"stored": stored, "threshold": threshold, "should": should, "leaf": None}
        record = self.record
        if should:
            self.record_debt(budget)
            record.scheduled["threshold_publication"] += 1
            record.scheduled["deferred_drain"] += 1
        else:
            decision["leaf"] = self.leaf_trigger()
            if decision["leaf"]["shouldPrepare"]:
                record.scheduled["prep_drain"] += 1
        return decision

    def run_background(self, decision: dict[str, Any], budget: int) -> None:
        """Everything :meth:`after_commit` scheduled, run to quiescence."""
        if decision["should"]:
            self.consume("publish-ready-only", budget, None)
            self._deferred_drains(budget, None)
        elif decision["leaf"] and decision["leaf"]["shouldPrepare"]:
            self._prep_drains(budget, None)

    def _deferred_drains(self, budget: int, current: int | None) -> None:
        for _ in range(DRAIN_CAP):
            self.record.drains_run["deferred_drain"] += 1
            if self.row is None or not self.row.pending:
                return
            result = self.consume("publish-if-ready", budget, current)
            row = self.row
            if not row.pending or row.backoff_active(self.now_ms) or (result is not None and result["reason"] == READY):
                return
            if result is not None and result["changed"] and result["reason"] == PUBLISHED:
                current = self.stored()
            self.record.scheduled["deferred_drain"] += 1
        self.record.capped += 1

    def _prep_drains(self, budget: int, current: int | None) -> None:
        for _ in range(DRAIN_CAP):
            self.record.drains_run["prep_drain"] += 1
            result = self.pending_core("prepare-only", budget, current, None, False)
            if not result.get("pending") or result["reason"] in (READY, "circuit breaker open"):
                return
            self.record.scheduled["prep_drain"] += 1
        self.record.capped += 1

    def maintain(self, budget: int) -> tuple[bool, str]:
        """``maintain`` with ``allowDeferredCompactionExecution``: one unforced consume when pending."""
        if self.row is None or not self.row.pending:
            return False, "no deferred maintenance work"
        result = self.consume("publish-if-ready", budget, None)
        assert result is not None
        return bool(result["changed"]), str(result["reason"])

    def emergency(self, budget: int) -> tuple[str | None, bool]:
        """The emergency drain inside ``assemble`` (stored tokens over budget with debt pending):
        the degraded path it leads to (None: normal assembly) and whether it ran."""
        before = self.stored()
        if not self.pending or before <= budget:
            if self.pending and before > math.floor(NEAR_BUDGET_RATIO * budget):
                return "degraded:near-budget", False
            return None, False
        force = (self.row.retry_attempts if self.row else 0) < FORCED_EMERGENCY_ATTEMPTS
        result = self.consume("publish-if-ready", budget, before, force=force)
        pressure = math.floor(NEAR_BUDGET_RATIO * budget)
        if self.pending:
            return ("degraded:emergency-debt-still-pending" if self.stored() > pressure else None), True
        if result is not None and result.get("exhausted") and before > pressure:
            return "degraded:emergency-debt-exhausted", True
        return None, True
