"""Compaction exactly as lossless-claw runs it (spec §4): leaf passes, condensed passes and the full
sweep with its two condensation loops. The operations built on them (chained threshold sweeps,
``compactUntilUnder``, ``compactLeaf``) are in :mod:`lcm_lab.engine.compaction.operations`.

Faithful by default. Each documented quirk (spec §4.16) that the lab can switch off is guarded
by ``fidelity == "fixed"`` and marked ``QUIRK`` in the code, so a researcher can measure what a
fix would change.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Literal

from lcm_lab.engine.compaction.fallback import MIN_FALLBACK_MAX_TOKENS, cap_summary, deterministic_fallback
from lcm_lab.engine.compaction.operations import CompactionOperations, SweepResult
from lcm_lab.engine.compaction.source_text import (
    condensed_source_text,
    file_ids_in,
    leaf_block,
    leaf_message_content,
    meaningful_summary_text,
)
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.js.strings import js_trim
from lcm_lab.engine.protocol import Summarizer, SummarizerAuthError, SummaryRequest, SummaryResult
from lcm_lab.engine.state import EngineState
from lcm_lab.engine.tail import fresh_tail_start
from lcm_lab.engine.timefmt import to_iso_ms
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import Level, SummarizerCall, Summary

Fidelity = Literal["faithful", "fixed"]
PassStatus = Literal["progress", "no-progress", "no-candidate", "depth-cap", "budget", "auth-failure"]


class SimulatedClock:
    """Milliseconds that advance only by the latency summarizers report (no wall clock)."""

    def __init__(self, start_ms: float = 0.0) -> None:
        self.now_ms = start_ms

    def __call__(self) -> float:
        return self.now_ms

    def advance(self, ms: float | None) -> None:
        if ms:
            self.now_ms += ms


@dataclass
class PassOutcome:
    summary: Summary | None  # None: auth failure
    skipped: bool = False
    removed_tokens: int = 0
    added_tokens: int = 0


def shorter_than_input(summary: str, input_tokens: int) -> bool:
    """The escalation's test (§4.7, ``src/compaction.ts`` ``summarizeWithEscalation``): a summary is
    kept only when its estimate is below ``input_tokens`` (the trimmed source's, at least 1); else
    the pass asks again aggressively, then falls back to a truncation of the source."""
    return estimate_tokens(summary) < input_tokens


def kept_by_escalation(call: SummarizerCall) -> bool:
    """Whether :func:`shorter_than_input` kept a recorded escalation call's output (the call holds
    the trimmed source's estimate and the untrimmed output, as the pass saw them)."""
    return shorter_than_input(js_trim(call.output), max(1, call.source_tokens))


def prompt_targets(config: LcmConfig, kind: str, aggressive: bool, input_tokens: int) -> tuple[int, int]:
    """Target tokens named in the prompt and the completion cap (spec §5.8)."""
    if kind == "condensed":
        target = max(512, config.condensed_target_tokens)
    else:
        limit = max(192, config.leaf_target_tokens)
        if aggressive:
            cap = max(96, min(limit, math.floor(limit * 0.55)))
            target = max(96, min(cap, math.floor(input_tokens * 0.2)))
        else:
            target = max(192, min(limit, math.floor(input_tokens * 0.35)))
    return target, target + 2048 if config.enable_summary_thinking else target


class Compactor(CompactionOperations):
    """Runs compaction passes over one conversation's :class:`EngineState`.

    Every summarizer call and every created summary is appended to ``calls`` / ``created`` for
    the caller to record.
    """

    def __init__(
        self,
        state: EngineState,
        config: LcmConfig,
        summarizer: Summarizer,
        *,
        session_id: str = "session",
        fidelity: Fidelity = "faithful",
        clock: SimulatedClock | None = None,
    ) -> None:
        self.state = state
        self.config = config
        self.summarizer = summarizer
        self.session_id = session_id
        self.fidelity = fidelity
        self.fixed = fidelity == "fixed"
        state.include_sender_tokens = not self.fixed  # QUIRK 6
        self.clock = clock or SimulatedClock()
        self.calls: list[SummarizerCall] = []
        self.created: list[Summary] = []
        self.logs: list[str] = []
        self.turn: int | None = None
        self.phase: str | None = None  # deferred mode: which attempt is compacting (summaries' created_by)
        self._last_model = "unknown"  # model of the latest call, recorded on the summary it produced
        self._tail_key: tuple[int, int] | None = None
        self._tail_memo: dict[int, int] = {}

    # -- fresh tail, chunks --------------------------------------------------------------------
    def tail_start(self, fresh_tail_count: int | None = None) -> int:
        count = fresh_tail_count if fresh_tail_count is not None and fresh_tail_count > 0 else self.config.fresh_tail_count
        state = self.state
        # A sweep asks for the tail before every chunk and pressure test; it only moves when the
        # state does (messages and their token counts never change once stored).
        key = (state.version, len(state.context))
        if self._tail_key != key:
            self._tail_key, self._tail_memo = key, {}
        found = self._tail_memo.get(count)
        if found is None:
            found = self._tail_memo[count] = self._compute_tail_start(count)
        return found

    def _compute_tail_start(self, count: int) -> int:
        # fresh_tail_start walks the raw messages newest first and stops once the newest user
        # message is in and ``count`` are protected, so it only ever reads the suffix that holds
        # count + 1 raw messages and the newest user message: gather just that (the whole
        # context otherwise, e.g. with no user message at all).
        state = self.state
        context, messages = state.context, state.messages
        raw: list[tuple[int, bool]] = []
        seqs: list[int] = []
        seen_user = False
        for i in range(len(context) - 1, -1, -1):
            item = context[i]
            if item.kind != "message":
                continue
            seq = int(item.ref)
            message = messages.get(seq)
            if message is None:
                continue
            is_user = message.role == "user"
            raw.append((i, is_user))
            seqs.append(seq)
            seen_user = seen_user or is_user
            if seen_user and len(raw) > count:
                break
        raw.reverse()
        seqs.reverse()
        return fresh_tail_start(
            raw, lambda k: state.message_source_tokens(seqs[k]), count, self.config.fresh_tail_max_tokens
        )

    def raw_tokens_outside_tail(self) -> int:
        tail = self.tail_start()
        return sum(
            self.state.message_source_tokens(int(item.ref))
            for item in self.state.context[: min(tail, len(self.state.context))]
            if item.kind == "message"
        )

    def summary_tokens_outside_tail(self, fresh_tail_count: int | None = None) -> int:
        tail = self.tail_start(fresh_tail_count)
        return sum(
            self.state.summary_tokens(str(item.ref))
            for item in self.state.context[: min(tail, len(self.state.context))]
            if item.kind == "summary"
        )

    def select_leaf_chunk(
        self, after: int | None = None, leaf_chunk_tokens: int | None = None, fresh_tail_count: int | None = None
    ) -> list[int]:
        """Context positions of the oldest contiguous raw run outside the tail (§4.5)."""
        tail = self.tail_start(fresh_tail_count)
        limit = leaf_chunk_tokens if leaf_chunk_tokens and leaf_chunk_tokens > 0 else self.config.leaf_chunk_tokens
        chunk: list[int] = []
        total = 0
        started = False
        for i, item in enumerate(self.state.context):
            if i >= tail:
                break
            if after is not None and i <= after:
                continue
            if not started:
                if item.kind != "message":
                    continue
                started = True
            elif item.kind != "message":
                break
            tokens = self.state.message_source_tokens(int(item.ref))
            if chunk and total + tokens > limit:
                break
            chunk.append(i)
            total += tokens
            if total >= limit:
                break
        return chunk

    def select_chunk_at_depth(self, depth: int, tail: int) -> tuple[list[int], int, int]:
        """Oldest contiguous same-depth summary run outside the tail: (positions, tokens, meaningful)."""
        chunk: list[int] = []
        tokens = 0
        meaningful_count = 0
        budget = self.config.leaf_chunk_tokens
        for i, item in enumerate(self.state.context):
            if i >= tail:
                break
            summary = self.state.summaries.get(str(item.ref)) if item.kind == "summary" else None
            if summary is None or summary.depth != depth:
                if chunk:
                    break
                continue
            meaningful = bool(js_trim(meaningful_summary_text(summary.content)))
            if not meaningful and not chunk:
                continue
            t = self.state.summary_tokens(summary.summary_id)
            if meaningful and chunk and tokens + t > budget:
                break
            chunk.append(i)
            if meaningful:
                meaningful_count += 1
                tokens += t
            if tokens >= budget:
                break
        return chunk, tokens, meaningful_count

    def fanout(self, depth: int, hard: bool) -> int:
        if hard:
            return self.config.condensed_min_fanout_hard
        return self.config.leaf_min_fanout if depth == 0 else self.config.condensed_min_fanout

    def condensation_candidate(self, hard: bool, fresh_tail_count: int | None = None) -> tuple[int, list[int]] | None:
        """Shallowest depth with an eligible chunk (§4.9)."""
        # QUIRK 5: the plugin ignores a per-call fresh-tail override here.
        tail = self.tail_start(fresh_tail_count if self.fixed else None)
        min_chunk = self.config.condensed_min_chunk_tokens()
        depths = sorted(
            {
                self.state.summaries[str(item.ref)].depth
                for item in self.state.context[: min(tail, len(self.state.context))]
                if item.kind == "summary" and str(item.ref) in self.state.summaries
            }
        )
        for depth in depths:
            chunk, tokens, meaningful = self.select_chunk_at_depth(depth, tail)
            if meaningful < self.fanout(depth, hard) or tokens < min_chunk:
                continue
            return depth, chunk
        return None

    # -- previous context (§4.15) ----------------------------------------------------------------
    def prior_summary_context(self, start: int, depth: int | None) -> str | None:
        """Up to two nearest summaries before position ``start`` (at ``depth`` when given)."""
        contents: list[str] = []
        for item in reversed(self.state.context[:start]):
            if item.kind != "summary":
                continue
            summary = self.state.summaries.get(str(item.ref))
            if summary is None or (depth is not None and summary.depth != depth):
                continue
            cleaned = js_trim(meaningful_summary_text(summary.content))
            if cleaned:
                contents.append(cleaned)
                if len(contents) >= 2:
                    break
        return "\n\n".join(reversed(contents)) if contents else None

    # -- summarizing -----------------------------------------------------------------------------
    def _call(self, source: str, kind: str, depth: int, aggressive: bool, previous: str | None) -> str | None:
        """One summarizer call; returns trimmed text (None when empty). Raises on auth failure."""
        input_tokens = estimate_tokens(source)
        target, max_tokens = prompt_targets(self.config, kind, aggressive, input_tokens)
        request = SummaryRequest(
            source_text=source,
            kind="leaf" if kind == "leaf" else "condensed",
            depth=depth,
            aggressive=aggressive,
            previous_summary=previous,
            target_tokens=target,
            max_tokens=max_tokens,
            custom_instructions=self.config.custom_instructions,
        )
        raw = self.summarizer.summarize(request)
        result = raw if isinstance(raw, SummaryResult) else SummaryResult(text=str(raw))
        self.clock.advance(result.latency_ms)
        self.calls.append(
            SummarizerCall(
                kind=request.kind,
                depth=depth,
                aggressive=aggressive,
                source_text=source,
                source_tokens=input_tokens,
                previous_summary=previous,
                output=result.text,
                output_tokens=estimate_tokens(result.text),
                target_tokens=target,
                max_tokens=max_tokens,
                model=result.model,
                template_hash=result.template_hash,
                latency_ms=result.latency_ms,
                cost_usd=result.cost_usd,
                cached=result.cached,
                failure=str(result.extra["fallback"]) if result.extra.get("fallback") else None,
            )
        )
        self._last_model = result.model
        trimmed = js_trim(result.text)
        return trimmed or None

    def summarize_with_escalation(
        self, source: str, kind: str, depth: int, previous: str | None
    ) -> tuple[str, Level] | None:
        """normal → aggressive → deterministic fallback → hard cap (§4.7); None on auth failure."""
        text = js_trim(source)
        input_tokens = max(1, estimate_tokens(text))
        self._last_model = "unknown"

        def fallback() -> tuple[str, Level]:
            configured = self.config.fallback_max_tokens
            limit = configured if configured >= MIN_FALLBACK_MAX_TOKENS else 512  # the plugin's rule
            return deterministic_fallback(text, input_tokens, limit), "fallback"

        try:
            summary = self._call(text, kind, depth, False, previous)
            if summary is None:
                return fallback()
            level: Level = "normal"
            if not shorter_than_input(summary, input_tokens):
                summary = self._call(text, kind, depth, True, previous)
                if summary is None:
                    return fallback()
                level = "aggressive"
                if not shorter_than_input(summary, input_tokens):
                    return fallback()
        except SummarizerAuthError:
            return None
        # QUIRK 8: the cap uses the configured target, not the per-call prompt target.
        configured = self.config.leaf_target_tokens if kind == "leaf" else self.config.condensed_target_tokens
        if self.fixed:
            configured = prompt_targets(self.config, kind, level == "aggressive", input_tokens)[0]
        cap = math.ceil(configured * self.config.summary_max_overage_factor)
        tokens = estimate_tokens(summary)
        if tokens > math.ceil(configured * 1.5):
            over = math.floor((tokens / configured - 1) * 100 + 0.5)  # JavaScript Math.round
            self.logs.append(f"warn: [lcm] summary exceeds target by {over}%: {tokens} tokens vs target {configured}")
        if tokens > cap:
            summary = cap_summary(summary, tokens, cap)
            level = "capped"
        return summary, level

    def _new_summary_id(self, content: str) -> str:
        # Deterministic (the plugin's are random): conversation, creation index and content.
        seed = f"{self.session_id}\0{len(self.state.summaries)}\0{content}"
        return "sum_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]

    # -- passes ------------------------------------------------------------------------------------
    def leaf_pass(self, positions: list[int], previous: str | None) -> PassOutcome:
        state = self.state
        messages = [state.messages[int(state.context[i].ref)] for i in positions]
        contents = [leaf_message_content(m, fixed=self.fixed) for m in messages]
        blocks = [
            leaf_block(m, c, self.config.timezone, self.config.strip_injected_context_tags)
            for m, c in zip(messages, contents, strict=True)
        ]
        source = "\n\n".join(b for b in blocks if b is not None)
        if not js_trim(source):
            return PassOutcome(summary=None, skipped=True)
        calls_before = len(self.calls)
        outcome = self.summarize_with_escalation(source, "leaf", 0, previous)
        if outcome is None:
            return PassOutcome(summary=None)
        content, level = outcome
        removed = sum(max(0, state.message_source_tokens(m.seq)) for m in messages)
        times = [to_iso_ms(m.created_at) for m in messages if m.created_at]
        summary = Summary(
            summary_id=self._new_summary_id(content),
            kind="leaf",
            depth=0,
            content=content,
            token_count=estimate_tokens(content),
            earliest_at=min(times) if times else None,
            latest_at=max(times) if times else None,
            source_message_token_count=removed,
            file_ids=file_ids_in(contents),
            model=self._last_model,
            source_message_seqs=tuple(m.seq for m in messages),
            level=level,
            created_turn=self.turn,
            created_by=self.phase,
            summarizer_calls=len(self.calls) - calls_before,
        )
        state.add_summary(summary, positions[0], positions[-1])
        self.created.append(summary)
        return PassOutcome(summary=summary, removed_tokens=removed, added_tokens=summary.token_count)

    def condensed_pass(self, positions: list[int], depth: int) -> PassOutcome:
        state = self.state
        inputs = [state.summaries[str(state.context[i].ref)] for i in positions]
        source = condensed_source_text(inputs, self.config.timezone)
        if not js_trim(source):
            return PassOutcome(summary=None, skipped=True)
        file_ids = file_ids_in([" ".join(s.file_ids) for s in inputs] + [s.content for s in inputs])
        previous = self.prior_summary_context(positions[0], depth) if depth == 0 else None
        calls_before = len(self.calls)
        outcome = self.summarize_with_escalation(source, "condensed", depth + 1, previous)
        if outcome is None:
            return PassOutcome(summary=None)
        content, level = outcome
        starts = [s.earliest_at or s.created_at for s in inputs]
        ends = [s.latest_at or s.created_at for s in inputs]
        earliest = [to_iso_ms(t) for t in starts if t]
        latest = [to_iso_ms(t) for t in ends if t]
        summary = Summary(
            summary_id=self._new_summary_id(content),
            kind="condensed",
            depth=depth + 1,
            content=content,
            token_count=estimate_tokens(content),
            earliest_at=min(earliest) if earliest else None,
            latest_at=max(latest) if latest else None,
            descendant_count=sum(max(0, s.descendant_count) + 1 for s in inputs),
            descendant_token_count=sum(max(0, s.token_count) + max(0, s.descendant_token_count) for s in inputs),
            source_message_token_count=sum(max(0, s.source_message_token_count) for s in inputs),
            file_ids=file_ids,
            model=self._last_model,
            source_summary_ids=tuple(s.summary_id for s in inputs),
            level=level,
            created_turn=self.turn,
            created_by=self.phase,
            summarizer_calls=len(self.calls) - calls_before,
        )
        removed = sum(max(0, s.token_count) for s in inputs)
        state.add_summary(summary, positions[0], positions[-1])
        self.created.append(summary)
        return PassOutcome(summary=summary, removed_tokens=removed, added_tokens=summary.token_count)

    # -- the full sweep (§4.11) ----------------------------------------------------------------------
    def full_sweep(
        self,
        token_budget: int,
        *,
        force: bool = False,
        hard_trigger: bool = False,
        stop_at_tokens: int | None = None,
        operation_deadline_ms: float | None = None,
        fresh_tail_count: int | None = None,
        leaf_chunk_tokens: int | None = None,
    ) -> SweepResult:
        config = self.config
        before = self.state.stored_tokens()
        threshold = config.threshold_tokens(token_budget)
        stop = math.floor(stop_at_tokens) if stop_at_tokens is not None and stop_at_tokens > 0 else None
        if not force and before <= threshold and (stop is None or before <= stop):
            return SweepResult(False, before, before)
        if not self.state.context:
            return SweepResult(False, before, before)

        result = SweepResult(False, before, before)
        started = self.clock()
        own_deadline = started + config.sweep_deadline_ms
        deadline = min(own_deadline, operation_deadline_ms) if operation_deadline_ms is not None else own_deadline
        running = before
        previous_tokens = before
        previous_summary: str | None = None
        no_progress = False

        def exhausted(phase: str) -> bool:
            if result.stopped_at_budget:
                return True
            hit_cap = result.passes >= config.max_sweep_iterations
            hit_deadline = self.clock() >= deadline
            if not (hit_cap or hit_deadline):
                return False
            result.stopped_at_budget = True
            if hit_cap:
                limit = f"iteration cap {config.max_sweep_iterations}"
            elif deadline < own_deadline:
                limit = "compactUntilUnder operation deadline"
            else:
                limit = f"wall-clock deadline {config.sweep_deadline_ms}ms"
            self.logs.append(
                f"warn: [lcm] compactFullSweep stopped at {limit} in {phase} phase: conversation=1 "
                f"passes={result.passes} elapsedMs={int(self.clock() - started)} tokensBefore={before} "
                f"tokensSoFar={running} (returning partial result)"
            )
            return True

        # Phase 1: leaf passes over the whole raw backlog outside the tail (QUIRK 2).
        scan_after: int | None = None
        while True:
            if exhausted("leaf"):
                break
            chunk = self.select_leaf_chunk(scan_after, leaf_chunk_tokens, fresh_tail_count)
            if not chunk or exhausted("leaf"):
                break
            result.passes += 1
            pass_before = running
            context: str | None
            if previous_summary is not None:
                context = previous_summary
            elif scan_after is not None or self.fixed:
                context = self.prior_summary_context(chunk[0], None)
            else:
                context = None  # QUIRK 3: the first leaf pass of a sweep gets no previous context.
            outcome = self.leaf_pass(chunk, context)
            if outcome.skipped:
                scan_after = chunk[-1]
                continue
            if outcome.summary is None:
                result.auth_failure = True
                break
            after = max(0, pass_before - outcome.removed_tokens + outcome.added_tokens)
            self._note(result, outcome.summary)
            previous_summary = outcome.summary.content
            running = after
            if stop is not None and running <= stop:
                break
            if self.fixed and not force and running <= threshold:
                break  # QUIRK 2 fixed: stop once under the threshold
            if after >= pass_before or after >= previous_tokens:
                break
            previous_tokens = after

        # Phase 2: condensation while the summarised prefix (or a stop target) is under pressure.
        max_depth = config.sweep_max_depth
        preferred_depth = math.inf if max_depth < 0 else max_depth
        prefix_target = config.prefix_target_tokens(token_budget)

        def pressure() -> bool:
            if stop is not None and running > stop:
                return True
            return self.summary_tokens_outside_tail(fresh_tail_count) > prefix_target

        def condense(enforce_depth: bool, hard: bool) -> PassStatus:
            nonlocal running, previous_tokens
            candidate = self.condensation_candidate(hard, fresh_tail_count)
            if candidate is None:
                return "no-candidate"
            depth, chunk = candidate
            if enforce_depth and depth >= preferred_depth:
                return "depth-cap"
            if exhausted("condensed"):
                return "budget"
            result.passes += 1
            pass_before = running
            outcome = self.condensed_pass(chunk, depth)
            if outcome.skipped:
                return "no-progress"
            if outcome.summary is None:
                result.auth_failure = True
                return "auth-failure"
            after = max(0, pass_before - outcome.removed_tokens + outcome.added_tokens)
            self._note(result, outcome.summary)
            result.condensed = True
            running = after
            if stop is not None and after <= stop:
                previous_tokens = after
                return "progress"
            if not force and after <= threshold:
                previous_tokens = after
                return "progress"
            if after >= pass_before or after >= previous_tokens:
                return "no-progress"
            previous_tokens = after
            return "progress"

        while pressure():
            if exhausted("condensed"):
                break
            status = condense(True, hard_trigger)
            if status != "progress":
                no_progress = status == "no-progress"
                break
        while not result.auth_failure and not no_progress and not result.stopped_at_budget and pressure():
            if exhausted("condensed"):
                break
            status = condense(False, True)
            if status != "progress":
                no_progress = status == "no-progress"
                break

        result.tokens_after = running
        return result

    @staticmethod
    def _note(result: SweepResult, summary: Summary) -> None:
        result.action_taken = True
        result.created_summary_id = summary.summary_id
        result.level = summary.level
