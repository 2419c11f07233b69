"""Deferred threshold compaction, the plugin's default ``proactiveThresholdCompactionMode``.

In this mode ``afterTurn`` never compacts: when stored tokens exceed the threshold it records a
*debt* (one ``conversation_compaction_maintenance`` row per conversation), and the debt is
*drained* later, by the same chained threshold sweeps inline mode runs:

* the **post-turn drain**, right after ``afterTurn`` (scheduled with no delay);
* **host maintenance** (``maintain``), at the same instant, one more unforced attempt;
* the **emergency drain** inside the next ``assemble`` when the stored context exceeds the
  budget, forced (ignoring the backoff, forcing every sweep) while ``retry_attempts < 3``.

A drain that compacts but ends over target stays pending and backs off:
``delay(n) = min(5 min × min(2^(n-1), 64), 30 min)`` after the n-th failure in a row; while the
backoff is active, unforced attempts are skipped. Time is transcript time, passed in by the
caller (reference-runs-deferred README §1-§3); nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from lcm_lab.engine.types import DebtSnapshot, DrainAttempt

if TYPE_CHECKING:
    from collections.abc import Mapping

    from lcm_lab.engine.compaction.sweep import Compactor

__all__ = ["FORCED_EMERGENCY_ATTEMPTS", "DeferredCompaction", "DebtRow", "retry_delay_ms"]

BACKOFF_BASE_MS = 5 * 60_000
BACKOFF_MAX_MS = 30 * 60_000
FORCED_EMERGENCY_ATTEMPTS = 3  # emergency drains are forced while retry_attempts is below this
STILL_OVER_TARGET = "compacted but still over target"

Phase = Literal["drain", "host_maintain", "emergency_drain"]


def retry_delay_ms(attempts: int) -> int:
    """Backoff after the ``attempts``-th failure in a row (n ≥ 1): 5, 10, 20, then 30 minutes.

    >>> [retry_delay_ms(n) // 60_000 for n in (1, 2, 3, 4, 9)]
    [5, 10, 20, 30, 30]
    """
    return int(min(BACKOFF_BASE_MS * min(2 ** (attempts - 1), 64), BACKOFF_MAX_MS))


def iso_ms(epoch_ms: int) -> str:
    """``new Date(ms).toISOString()``."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=epoch_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class DebtRow:
    """The mutable debt row (``conversation_compaction_maintenance``)."""

    token_budget: int
    context_threshold: float
    pending: bool = False
    retry_attempts: int = 0
    next_attempt_after_ms: int | None = None
    last_finished_at_ms: int | None = None
    last_failure: str | None = None

    def snapshot(self, now_ms: int) -> DebtSnapshot:
        return DebtSnapshot(
            pending=self.pending,
            token_budget=self.token_budget,
            context_threshold=self.context_threshold,
            retry_attempts=self.retry_attempts,
            next_attempt_after_ms=self.next_attempt_after_ms,
            last_finished_at_ms=self.last_finished_at_ms,
            last_failure=self.last_failure,
            now_ms=now_ms,
        )

    def backoff_active(self, now_ms: int) -> bool:
        return self.next_attempt_after_ms is not None and self.next_attempt_after_ms > now_ms

    def clear(self) -> None:
        self.pending = False
        self.retry_attempts = 0
        self.next_attempt_after_ms = None
        self.last_failure = None


class DeferredCompaction:
    """One conversation's compaction debt and the attempts that drain it."""

    def __init__(self, compactor: Compactor, overrides: Mapping[str, int] | None = None) -> None:
        self.compactor = compactor
        self.overrides = dict(overrides or {})
        self.row: DebtRow | None = None

    @property
    def pending(self) -> bool:
        return self.row is not None and self.row.pending

    @property
    def retry_attempts(self) -> int:
        return self.row.retry_attempts if self.row is not None else 0

    def snapshot(self, now_ms: int) -> DebtSnapshot | None:
        return None if self.row is None else self.row.snapshot(now_ms)

    def record(self, token_budget: int) -> None:
        """``afterTurn`` found stored tokens over the threshold: the debt is pending (retries kept)."""
        if self.row is None:
            self.row = DebtRow(token_budget, self.compactor.config.context_threshold)
        self.row.pending = True
        self.row.token_budget = token_budget
        self.row.context_threshold = self.compactor.config.context_threshold

    def attempt(
        self,
        phase: Phase,
        token_budget: int,
        now_ms: int,
        *,
        force: bool = False,
        force_sweeps: bool = False,
        observed_tokens: int | None = None,
    ) -> DrainAttempt | None:
        """One drain attempt at ``now_ms`` (None when no debt is pending: nothing is attempted).

        ``force`` ignores an active backoff; ``force_sweeps`` forces every sweep (the emergency
        drain always does); ``observed_tokens`` is the live context size the caller saw.
        """
        row = self.row
        if row is None or not row.pending:
            return None
        compactor = self.compactor
        state = compactor.state
        before = row.snapshot(now_ms)
        if row.backoff_active(now_ms) and not force:
            return DrainAttempt(
                phase, "skipped-backoff", force, token_budget, observed_tokens, now_ms, before, before,
                tokens_after=state.stored_tokens(), context_after=tuple(state.context),
            )  # fmt: skip
        logs_start = len(compactor.logs)
        if row.backoff_active(now_ms):
            compactor.logs.append(
                f"warn: [lcm] consumeDeferredCompactionDebt: force=true skipping backoff conversation=1 "
                f"session={compactor.session_id} retryAttempts={row.retry_attempts} "
                f"nextAttemptAfter={iso_ms(row.next_attempt_after_ms or 0)}"
            )
        budget = min(token_budget, row.token_budget)
        stored = state.stored_tokens()
        threshold = compactor.config.threshold_tokens(budget)
        calls_before, created_before = len(compactor.calls), len(compactor.created)
        compactor.phase = phase
        try:
            result = compactor.compact_threshold(
                budget, force=force_sweeps, observed_tokens=observed_tokens, **self.overrides
            )
        finally:
            compactor.phase = None
        outcome: Literal["compacted", "exhausted", "compacted-still-over-target"]
        if not result.compacted and stored <= threshold:
            outcome = "compacted"  # nothing to do any more: the debt is settled (not seen in the references)
        elif not result.compacted:
            outcome = "exhausted"
        else:
            outcome = "compacted" if result.ok else "compacted-still-over-target"
        if outcome == "compacted-still-over-target":
            row.retry_attempts += 1
            row.next_attempt_after_ms = now_ms + retry_delay_ms(row.retry_attempts)
            row.last_failure = STILL_OVER_TARGET
        else:
            row.clear()
        row.last_finished_at_ms = now_ms
        if outcome == "exhausted" and observed_tokens is not None:
            compactor.logs.append(
                f"warn: [lcm] compact: transcript wedge detected conversation=1 session={compactor.session_id} "
                f"storedTokensAfter={result.tokens_after} targetTokens={threshold} observedTokens={observed_tokens} "
                f"observedRuntimeOverhead=0 projectedTokensAfter={observed_tokens} — stored compaction cannot "
                "reduce the live transcript; reset the session (/new) or re-bootstrap"
            )
        logs = tuple(line for line in compactor.logs[logs_start:] if line.startswith(("warn", "error")))
        return DrainAttempt(
            phase,
            outcome,
            force,
            token_budget,
            observed_tokens,
            now_ms,
            before,
            row.snapshot(now_ms),
            stored_tokens=stored,
            threshold=threshold,
            compact_result={
                "ok": result.ok, "compacted": result.compacted, "reason": result.reason,
                "exhausted": outcome == "exhausted", "tokensBefore": result.tokens_before,
                "tokensAfter": result.tokens_after, "rounds": result.rounds,
            },  # fmt: skip
            sweeps=tuple(result.sweeps),
            calls=tuple(compactor.calls[calls_before:]),
            created_summary_ids=tuple(s.summary_id for s in compactor.created[created_before:]),
            tokens_after=state.stored_tokens(),
            context_after=tuple(state.context),
            logs=logs,
        )

    def emergency_path(self, attempt: DrainAttempt, token_budget: int) -> str | None:
        """The degraded path ``assemble`` takes after its emergency drain, or None for normal assembly."""
        if attempt.outcome == "exhausted":
            return "degraded:emergency-debt-exhausted"  # compares the pre-drain size, always over budget
        if self.pending and attempt.tokens_after > math.floor(0.75 * token_budget):
            return "degraded:emergency-debt-still-pending"
        return None
